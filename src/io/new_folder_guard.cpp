#include "io/new_folder_guard.h"

#include <filesystem>
#include <system_error>

namespace fs = std::filesystem;

namespace ff {

NewFolderGuard::NewFolderGuard(std::string dir) : dir_(std::move(dir)) {
  std::error_code ec;
  existed_ = fs::exists(dir_, ec) || ec;  // unknown counts as existing: never remove what may be the user's
}

NewFolderGuard::~NewFolderGuard() {
  if (existed_) return;
  std::error_code ec;
  // fs::remove deletes a folder only when it is empty; another rank may have removed it first.
  if (fs::is_directory(dir_, ec) && fs::is_empty(dir_, ec) && !ec) fs::remove(dir_, ec);
}

}  // namespace ff
