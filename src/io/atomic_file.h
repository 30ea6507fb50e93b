#pragma once
// Every file the engine writes goes through here: bytes land in path + ".tmp", are fsynced, and
// only then renamed over path. A crash at any moment leaves either the previous file or the
// complete new one at path, never a torn one that a resumed run would trust.
#include <cstddef>
#include <cstdint>
#include <string>

namespace ff {

class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(const std::string& path);
  ~AtomicFileWriter();  // an uncommitted temporary is removed, so failures leave no litter
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, size_t bytes);
  void write_zeros(size_t bytes);
  // Overwrites bytes already written (a header whose fields are known only at the end).
  void write_at(uint64_t offset, const void* data, size_t bytes);
  uint64_t bytes_written() const { return written_; }
  // fsync, rename over the target, then fsync the directory so the rename itself is durable.
  void commit();

 private:
  std::string path_;
  std::string tmp_;
  int fd_ = -1;
  uint64_t written_ = 0;
};

// Convenience for small text files (meta.json and the like).
void write_file_atomic(const std::string& path, const std::string& contents);

}  // namespace ff
