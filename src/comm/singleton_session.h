#pragma once
// The Open MPI session directory base a plain ./fivefold (a singleton) gives itself:
// /tmp/fivefold-mpi-<pid>, so that two singletons never share one (comm/engine.cpp says why).
// MPI_Finalize empties it and the engine removes it; a process killed before that (a second
// Ctrl-C, SIGKILL) leaves an empty tree behind, which the next singleton sweeps.
#include <string>

namespace ff::detail {

// The base for the process with this pid, under root.
std::string singleton_session_dir(const std::string& root, long pid);

// Removes, under root, the empty directories of every fivefold-mpi-<pid> tree whose process is
// gone (no such pid here), the tree's top included once it is empty. Never a file, never a live
// process's tree, never a symbolic link; errors are ignored (another singleton may sweep the same
// tree at once). Returns how many directories it removed.
int remove_stale_singleton_sessions(const std::string& root);

}  // namespace ff::detail
