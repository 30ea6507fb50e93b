#pragma once
// One writer per output folder: an exclusive flock(2) on DIR/.fivefold.lock, held while the
// command runs, with a one-line JSON record of its holder (command, host, pid, the pid's start
// time, when it took the lock) for the refusal a second writer prints.
//
// The kernel drops a flock when its holder dies, however it dies, so a lock whose record is still
// there but whose flock is free was left by a process that is gone: it is taken over with a
// message. A clean release deletes the file (while still locked; a writer that opened the old
// file meanwhile sees it is no longer the path's and opens again).
//
// Across hosts the flock is as good as the filesystem's: NFSv4, GPFS and Lustre mounted with
// `flock` lock for every client; Lustre's `localflock` only per node. Where flock is refused
// (ENOLCK, EOPNOTSUPP), the record decides: a live pid with the same start time on this host
// holds it; a record from another host cannot be checked and is refused with the file to delete.
#include <string>

namespace ff {

class FolderLock {
 public:
  // Takes the lock on dir (which exists) for `command`, or throws a sentence naming the holder's
  // command, host and pid and the lock file, prefixed by `head` (e.g. "--out 'run' ").
  FolderLock(const std::string& dir, const std::string& command, const std::string& head);
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

  const std::string& path() const { return path_; }
  // Non-empty when a stale lock was taken over: who left it, for the user.
  const std::string& taken_over() const { return taken_over_; }

 private:
  std::string path_;
  std::string taken_over_;
  int fd_ = -1;
};

// The lock file's name inside a folder.
inline constexpr const char* kFolderLockName = ".fivefold.lock";

}  // namespace ff
