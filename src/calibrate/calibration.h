#pragma once
// `fivefold calibrate`: measures what the planner's cost model needs on the ranks it runs on.
// GEMM rate by shape class (square, few rows, wide), memory bandwidth (triad), and for each
// collective the alpha-beta fit t(bytes) = alpha + beta * bytes from two sizes, with the
// nccl-tests bus bandwidth; the result is a cluster.toml the planner reads.
#include <string>
#include <vector>

#include "calibrate/link_cpu.h"
#include "comm/comm.h"
#include "plan/cluster.h"

namespace ff {

struct GemmClass {
  std::string name;
  int M, N, K;
  double flops = 0;  // FLOP/s with this rank's threads
};

struct LinkFit {
  std::string op;      // all_reduce, all_gather, reduce_scatter, all_to_all, p2p
  double alpha = 0;    // seconds
  double beta = 0;     // seconds per byte of the payload
  double busbw = 0;    // bytes/s at the large size (nccl-tests convention)
};

struct Calibration {
  std::vector<GemmClass> gemm;
  double memory_bandwidth = 0;  // bytes/s, triad, this rank's threads
  std::vector<LinkFit> links;   // empty on one rank; across nodes: those of the ranks of one node
  std::vector<LinkFit> across_links;  // the world's across nodes (empty on one node)
  LinkCpu link_cpu;  // the kernel's CPU per byte across nodes (not measured on one node)
  ClusterSpec cluster;
  std::string toml() const;     // the cluster keys, then a [measured] table of everything above
};

// Collective over `world`; every rank measures its GEMMs (at once, as in training) and takes
// part in the collectives; rank 0's numbers are returned everywhere that matters. The kernels'
// rates are measured in `sweeps` sweeps over all shapes, each value the median over sweeps.
Calibration calibrate(const Comm& world, int threads, int ranks_per_machine, int sweeps = 3);

// Element i of the result: the median of element i over the lists (all of one length).
std::vector<double> median_by_position(const std::vector<std::vector<double>>& sweeps);

}  // namespace ff
