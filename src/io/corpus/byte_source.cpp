#include "io/corpus/byte_source.h"

#include <zlib.h>
#include <zstd.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace ff {

namespace {

constexpr size_t kInputChunk = size_t(1) << 18;

// The file itself, read forward in chunks, counting what it handed out.
class RawFile {
 public:
  explicit RawFile(const std::string& path) : f_(std::fopen(path.c_str(), "rb")) {
    if (!f_) {
      throw std::runtime_error("corpus file " + path + " cannot be opened (" +
                               std::strerror(errno) + "); check the path and its permissions");
    }
  }
  ~RawFile() { std::fclose(f_); }
  RawFile(const RawFile&) = delete;
  RawFile& operator=(const RawFile&) = delete;

  size_t read(void* buf, size_t n) {
    const size_t got = std::fread(buf, 1, n, f_);
    if (got < n && std::ferror(f_)) {
      throw std::runtime_error(std::string("reading failed (") + std::strerror(errno) +
                               "); check the disk and retry");
    }
    bytes_ += got;
    return got;
  }
  uint64_t bytes() const { return bytes_; }

 private:
  std::FILE* f_;
  uint64_t bytes_ = 0;
};

class PlainSource final : public ByteSource {
 public:
  explicit PlainSource(const std::string& path) : file_(path) {}
  size_t read(char* buf, size_t n) override { return file_.read(buf, n); }
  uint64_t file_bytes_read() const override { return file_.bytes(); }

 private:
  RawFile file_;
};

const char* const kDamagedFix = "re-create or re-download the file, or leave it out of the inputs";

class GzipSource final : public ByteSource {
 public:
  explicit GzipSource(const std::string& path) : file_(path), in_(kInputChunk) {
    // 16 + 15: a gzip wrapper around the largest deflate window.
    if (inflateInit2(&z_, 16 + 15) != Z_OK) throw std::runtime_error("zlib could not start");
  }
  ~GzipSource() override { inflateEnd(&z_); }

  size_t read(char* buf, size_t n) override {
    z_.next_out = reinterpret_cast<Bytef*>(buf);
    z_.avail_out = uInt(n);
    while (z_.avail_out == n) {
      if (z_.avail_in == 0 && !file_eof_) {
        z_.avail_in = uInt(file_.read(in_.data(), in_.size()));
        z_.next_in = in_.data();
        file_eof_ = z_.avail_in == 0;
      }
      if (z_.avail_in == 0 && file_eof_) {
        if (in_member_) {
          throw std::runtime_error(std::string("the gzip stream ends early (truncated); ") +
                                   kDamagedFix);
        }
        break;
      }
      in_member_ = true;
      const int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        // Concatenated members (as `cat a.gz b.gz` makes) are one stream to gunzip; here too.
        in_member_ = false;
        inflateReset(&z_);
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        throw std::runtime_error(std::string("the gzip stream is damaged (") +
                                 (z_.msg ? z_.msg : "zlib error " + std::to_string(rc)) + "); " +
                                 kDamagedFix);
      }
    }
    return n - z_.avail_out;
  }
  uint64_t file_bytes_read() const override { return file_.bytes(); }

 private:
  RawFile file_;
  std::vector<Bytef> in_;
  z_stream z_{};
  bool file_eof_ = false;
  bool in_member_ = false;
};

class ZstdSource final : public ByteSource {
 public:
  explicit ZstdSource(const std::string& path)
      : file_(path), in_(ZSTD_DStreamInSize()), ctx_(ZSTD_createDCtx()) {
    if (!ctx_) throw std::runtime_error("libzstd could not start");
  }
  ~ZstdSource() override { ZSTD_freeDCtx(ctx_); }

  size_t read(char* buf, size_t n) override {
    ZSTD_outBuffer out{buf, n, 0};
    while (out.pos == 0) {
      if (input_.pos == input_.size) {
        input_ = {in_.data(), file_.read(in_.data(), in_.size()), 0};
        if (input_.size == 0) {
          // A frame still open at the end of the file: the tail was cut off.
          if (frame_open_) {
            throw std::runtime_error(std::string("the zstd stream ends early (truncated); ") +
                                     kDamagedFix);
          }
          break;
        }
      }
      const size_t rc = ZSTD_decompressStream(ctx_, &out, &input_);
      if (ZSTD_isError(rc)) {
        throw std::runtime_error(std::string("the zstd stream is damaged (") +
                                 ZSTD_getErrorName(rc) + "); " + kDamagedFix);
      }
      // 0 means a frame just ended and its output is flushed; another may follow.
      frame_open_ = rc != 0;
    }
    return out.pos;
  }
  uint64_t file_bytes_read() const override { return file_.bytes(); }

 private:
  RawFile file_;
  std::vector<char> in_;
  ZSTD_DCtx* ctx_;
  ZSTD_inBuffer input_{nullptr, 0, 0};
  bool frame_open_ = false;
};

}  // namespace

const char* compression_name(Compression c) {
  switch (c) {
    case Compression::gzip: return "gzip";
    case Compression::zstd: return "zstd";
    case Compression::none: break;
  }
  return "none";
}

Compression detect_compression(const std::string& path) {
  RawFile file(path);
  unsigned char magic[4] = {0, 0, 0, 0};
  const size_t got = file.read(magic, sizeof magic);
  if (got >= 2 && magic[0] == 0x1f && magic[1] == 0x8b) return Compression::gzip;
  if (got == 4 && magic[0] == 0x28 && magic[1] == 0xb5 && magic[2] == 0x2f && magic[3] == 0xfd) {
    return Compression::zstd;
  }
  return Compression::none;
}

std::unique_ptr<ByteSource> open_byte_source(const std::string& path) {
  switch (detect_compression(path)) {
    case Compression::gzip: return std::make_unique<GzipSource>(path);
    case Compression::zstd: return std::make_unique<ZstdSource>(path);
    case Compression::none: break;
  }
  return std::make_unique<PlainSource>(path);
}

}  // namespace ff
