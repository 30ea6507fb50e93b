#include "io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

namespace ff {

AtomicFileWriter::AtomicFileWriter(const std::string& path) : path_(path), tmp_(path + ".tmp") {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw std::runtime_error("cannot create " + tmp_ + ": " + std::strerror(errno) +
                             "; check that the directory exists and is writable");
  }
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
  }
}

void AtomicFileWriter::write(const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::write(fd_, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      throw std::runtime_error("writing " + tmp_ + " failed after " + std::to_string(written_) +
                               " bytes: " + std::strerror(errno) +
                               "; free disk space (or fix permissions) and retry");
    }
    p += n;
    bytes -= size_t(n);
    written_ += uint64_t(n);
  }
}

void AtomicFileWriter::write_zeros(size_t bytes) {
  static const std::vector<char> zeros(4096, 0);
  while (bytes > 0) {
    size_t n = std::min(bytes, zeros.size());
    write(zeros.data(), n);
    bytes -= n;
  }
}

void AtomicFileWriter::write_at(uint64_t offset, const void* data, size_t bytes) {
  if (offset + bytes > written_)
    throw std::logic_error("AtomicFileWriter::write_at past the bytes written to " + tmp_);
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::pwrite(fd_, p, bytes, off_t(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw std::runtime_error("writing " + tmp_ + " failed: " + std::strerror(errno) +
                               "; free disk space (or fix permissions) and retry");
    p += n, bytes -= size_t(n), offset += uint64_t(n);
  }
}

void AtomicFileWriter::commit() {
  if (::fsync(fd_) != 0) {
    throw std::runtime_error("fsync of " + tmp_ + " failed: " + std::strerror(errno) +
                             "; the disk may be full or failing, retry after checking it");
  }
  int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) {
    ::unlink(tmp_.c_str());
    throw std::runtime_error("closing " + tmp_ + " failed: " + std::strerror(errno) +
                             "; the data may not be on disk, retry after checking the disk");
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp_.c_str());
    throw std::runtime_error("cannot rename " + tmp_ + " to " + path_ + ": " + std::strerror(err) +
                             "; check permissions on the target directory");
  }
  const std::string dir = std::filesystem::path(path_).parent_path().string();
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    // Best effort: some filesystems refuse fsync on directories, and the data itself is safe.
    ::fsync(dfd);
    ::close(dfd);
  }
}

void write_file_atomic(const std::string& path, const std::string& contents) {
  AtomicFileWriter w(path);
  w.write(contents.data(), contents.size());
  w.commit();
}

}  // namespace ff
