#pragma once
// Measures plan/thread_scaling.h's curves on this node: how much of a core each thread of one
// rank is worth, by kind of work, against ranks of one thread. Every core is kept busy: at T
// threads, cores / T groups (std::threads, each its own OpenMP team of T) run the same kernels at
// once, as cores / T ranks of T threads would, so shared caches and memory bandwidth weigh on
// every count alike. The same again with the cores filled twice over (2 x cores threads), the
// splits the planner weighs where other work shares the machine.
#include <functional>
#include <vector>

#include "plan/thread_scaling.h"

namespace ff {

// The work of one rank-sized group, built inside its own thread (so its buffers are first touched
// there) and run `calls` times per timing.
using Work = std::function<void()>;
using MakeWork = std::function<Work()>;

// Wall seconds from a common start until the last of `groups` groups of `threads` OpenMP threads
// each has run `calls` calls of its work, all at once. Each group first builds its work and runs
// it once untimed (first touch of its buffers, its OpenMP team's start-up).
double concurrent_seconds(int groups, int threads, const MakeWork& make, int calls);

// The thread counts measured: the powers of two that divide the cores, and the cores.
std::vector<int> scaling_thread_counts(int cores);

// The curves' points, every efficiency 0: what measure_thread_scaling fills in on a node of
// `cores` (the shape the other ranks receive it into).
ThreadScaling thread_scaling_shape(int cores);
// Each efficiency of both curves of every kind, in one fixed order (to send them as one array).
void for_each_efficiency(ThreadScaling& s, const std::function<void(double&)>& visit);

// Each efficiency the median of `sweeps` sweeps; rates_threads: the threads per rank the
// calibration's per-core rates are measured with (stored beside the curves).
ThreadScaling measure_thread_scaling(int cores, int rates_threads, int sweeps);

}  // namespace ff
