#pragma once
// Planned faults for the tests of the supervisor and the hang watchdog. With FF_FAULT_PLAN=FILE in
// the environment, FILE holds lines "SIGNAL RANK STEP" (SIGNAL: KILL or STOP); the rank RANK about
// to run a step >= STEP removes the first line (so a restarted job moves on to the next fault) and
// sends itself the signal. Without the variable this does nothing.
namespace ff {

void inject_planned_fault(int world_rank, int next_step);

}  // namespace ff
