#pragma once
// Positioned reads for the binary formats, with every failure phrased as
// "<kind> <path>: <problem>; <fix>" so the reader code states only the problem.
#include <cstddef>
#include <cstdint>
#include <string>

namespace ff {

// The most a reader of large binary files holds beyond its caller's buffers by default: one
// staging buffer of this size (the sharded checkpoint reader's, ckpt/sharded_reader.h). Here
// rather than there so the planner's memory model, which does not build on checkpoints, counts
// the same bytes for a resume.
constexpr uint64_t kReadStagingBytes = uint64_t(4) << 20;

class FileReader {
 public:
  // kind names the format ("token shard"); fix says what to do when the file is bad, and
  // missing_fix what to do when it does not exist (defaults to fix).
  FileReader(const std::string& path, std::string kind, std::string fix,
             std::string missing_fix = "");
  ~FileReader();
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Reads exactly bytes at offset; a short file is reported as truncated.
  void read_at(uint64_t offset, void* dst, size_t bytes) const;
  [[noreturn]] void fail(const std::string& problem) const;

 private:
  std::string path_;
  std::string kind_;
  std::string fix_;
  std::string missing_fix_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace ff
