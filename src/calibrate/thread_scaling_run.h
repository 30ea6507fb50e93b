#pragma once
// Measures plan/thread_scaling.h's curves on this node: how much of a core each thread of one
// rank is worth, by kind of work, against ranks of one thread. Every core is kept busy: at T
// threads, cores / T groups (std::threads, each its own OpenMP team of T) run the same kernels at
// once, as cores / T ranks of T threads would, so shared caches and memory bandwidth weigh on
// every count alike.
#include <vector>

#include "plan/thread_scaling.h"

namespace ff {

// The thread counts measured: the powers of two that divide the cores, and the cores.
std::vector<int> scaling_thread_counts(int cores);

// Each efficiency the median of `sweeps` sweeps; rates_threads: the threads per rank the
// calibration's per-core rates are measured with (stored beside the curves).
ThreadScaling measure_thread_scaling(int cores, int rates_threads, int sweeps);

}  // namespace ff
