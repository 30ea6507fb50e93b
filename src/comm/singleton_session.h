#pragma once
// The Open MPI session directory base a plain ./fivefold (a singleton) gives itself:
// /tmp/fivefold-mpi-<pid>, so that two singletons never share one (comm/engine.cpp says why).
// MPI_Finalize empties it and release() removes it. A process killed before that (a second Ctrl-C,
// SIGKILL) leaves its tree behind; the next singleton sweeps it. Whether a tree's process is gone
// is read from a lock, not a pid: the base holds a file `.owner` its process keeps locked (flock)
// while it lives, and the kernel drops that lock when the process dies, in whatever pid
// namespace it ran (containers sharing /tmp see each other's pids as gone).
#include <string>

namespace ff::detail {

class SingletonSession {
 public:
  SingletonSession() = default;
  SingletonSession(const SingletonSession&) = delete;
  SingletonSession& operator=(const SingletonSession&) = delete;
  ~SingletonSession() { release(); }

  // Makes root/fivefold-mpi-<pid> with its locked `.owner`; returns the folder, or "" where it
  // could not be made (Open MPI then uses its default base).
  const std::string& open(const std::string& root);
  // Unlocks and removes `.owner`, then the folder if MPI left it empty.
  void release();
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  int owner_fd_ = -1;
};

// Removes, under root, the trees of singletons that are gone: `.owner` lockable (no process holds
// it), or, for a tree without one, no process with its pid here. Only empty directories and the
// `.owner` file go, never another file or a symbolic link; errors are ignored (another singleton
// may sweep the same tree at once). Returns how many directories it removed.
int remove_stale_singleton_sessions(const std::string& root);

}  // namespace ff::detail
