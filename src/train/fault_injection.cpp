#include "train/fault_injection.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "io/atomic_file.h"

namespace ff {

void inject_planned_fault(int world_rank, int next_step) {
  const char* plan = std::getenv("FF_FAULT_PLAN");
  if (!plan) return;
  std::ifstream f(plan);
  std::string first, rest, line;
  if (!std::getline(f, first)) return;
  while (std::getline(f, line)) rest += line + "\n";
  std::istringstream words(first);
  std::string sig;
  int rank = -1, step = 0;
  if (!(words >> sig >> rank >> step) || rank != world_rank || next_step < step) return;
  write_file_atomic(plan, rest);  // consumed before the signal: the restarted job sees the next one
  std::fprintf(stderr, "fault plan: rank %d sends itself SIG%s before step %d\n", world_rank, sig.c_str(),
               next_step);
  std::fflush(stderr);
  std::raise(sig == "STOP" ? SIGSTOP : SIGKILL);
}

}  // namespace ff
