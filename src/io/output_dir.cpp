#include "io/output_dir.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace ff {

namespace fs = std::filesystem;

void ensure_output_dir(const std::string& dir, const std::string& option) {
  const std::string head = option + " '" + dir + "' ";
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
    throw std::runtime_error(head + "is a file, not a folder; pass a folder path (it is created if absent)");
  }
  fs::create_directories(dir, ec);
  if (ec) {
    throw std::runtime_error(head + "cannot be created (" + ec.message() + "); choose a writable location");
  }
  // Permission bits do not tell the whole truth (root, read-only mounts, full disks): write a file.
  const std::string probe = (fs::path(dir) / (".ff_write_probe." + std::to_string(::getpid()))).string();
  std::FILE* f = std::fopen(probe.c_str(), "wb");
  if (!f) {
    throw std::runtime_error(head + "is not writable (" + std::strerror(errno) +
                             "); choose a folder you can write to");
  }
  std::fclose(f);
  std::remove(probe.c_str());
}

}  // namespace ff
