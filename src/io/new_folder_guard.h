#pragma once
// A command's output folder that the command itself creates: when the command ends having written
// nothing into it (it failed its checks), the empty folder goes again, so a failed start leaves
// no trace. A folder that existed before is never removed, nor one holding anything.
#include <string>

namespace ff {

class NewFolderGuard {
 public:
  // Call before the folder is created.
  explicit NewFolderGuard(std::string dir);
  ~NewFolderGuard();
  NewFolderGuard(const NewFolderGuard&) = delete;
  NewFolderGuard& operator=(const NewFolderGuard&) = delete;

 private:
  std::string dir_;
  bool existed_;
};

}  // namespace ff
