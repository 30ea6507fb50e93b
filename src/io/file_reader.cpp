#include "io/file_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace ff {

FileReader::FileReader(const std::string& path, std::string kind, std::string fix,
                       std::string missing_fix)
    : path_(path),
      kind_(std::move(kind)),
      fix_(std::move(fix)),
      missing_fix_(std::move(missing_fix)) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    int err = errno;
    if (err == ENOENT) {
      throw std::runtime_error(kind_ + " " + path_ + ": file not found; " +
                               (missing_fix_.empty() ? fix_ : missing_fix_));
    }
    fail(std::string("cannot open: ") + std::strerror(err));
  }
  struct stat st {};
  std::string problem;
  if (::fstat(fd_, &st) != 0) {
    problem = std::string("cannot stat: ") + std::strerror(errno);
  } else if (S_ISDIR(st.st_mode)) {
    problem = "is a directory, expected a file";
  }
  if (!problem.empty()) {
    ::close(fd_);  // the destructor does not run when the constructor throws
    fd_ = -1;
    fail(problem);
  }
  size_ = uint64_t(st.st_size);
}

FileReader::~FileReader() {
  if (fd_ >= 0) ::close(fd_);
}

void FileReader::read_at(uint64_t offset, void* dst, size_t bytes) const {
  if (offset > size_ || bytes > size_ - offset) {
    fail("truncated: needed bytes [" + std::to_string(offset) + ", " +
         std::to_string(offset + bytes) + ") but the file has only " + std::to_string(size_));
  }
  char* p = static_cast<char*>(dst);
  while (bytes > 0) {
    ssize_t n = ::pread(fd_, p, bytes, off_t(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(std::string("read error: ") + std::strerror(errno));
    if (n == 0) fail("truncated while reading (the file shrank during the read)");
    p += n;
    offset += uint64_t(n);
    bytes -= size_t(n);
  }
}

void FileReader::fail(const std::string& problem) const {
  throw std::runtime_error(kind_ + " " + path_ + ": " + problem + "; " + fix_);
}

}  // namespace ff
