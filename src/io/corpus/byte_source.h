#pragma once
// A corpus file's bytes, decompressed when the content says so: gzip (zlib) or zstd, chosen by
// the magic bytes rather than the name, so a renamed or extension-less file still reads right.
// Decompression streams through fixed buffers, so a file of any size costs the same memory.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace ff {

enum class Compression { none, gzip, zstd };

const char* compression_name(Compression c);
// From the first bytes of the file; a missing or unreadable file throws naming it.
Compression detect_compression(const std::string& path);

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Up to n bytes of (decompressed) content into buf; 0 only at the end. A damaged or truncated
  // stream throws a message naming the problem and the fix (the caller adds file and line).
  virtual size_t read(char* buf, size_t n) = 0;
  // Bytes taken from the file so far (compressed bytes for a compressed file): the progress
  // measure that agrees with the file sizes on disk.
  virtual uint64_t file_bytes_read() const = 0;
};

std::unique_ptr<ByteSource> open_byte_source(const std::string& path);

}  // namespace ff
