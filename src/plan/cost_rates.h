#pragma once
// The rates the engine's step-time model reads (plan/engine_step_time.h), as `fivefold calibrate`
// measures them on one core with one thread: GEMM FLOP/s by size (small GEMMs run far below the
// peak) per input precision, attention seconds per unit of work by sequence length, memory
// bandwidth by working-set size (caches vs DRAM), and per link class (same node, across nodes)
// the alpha-beta of every collective normalised to one ring step, so a group of any size is costed.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <toml++/toml.h>

#include "plan/rate_curve.h"
#include "plan/thread_scaling.h"

namespace ff {

enum class Coll { all_reduce, all_gather, reduce_scatter, all_to_all, p2p };
struct NodeFirstForm;
const char* coll_name(Coll op);

// GEMM FLOP/s by shape class: rows (the tokens of a micro-batch) x width (the geometric mean of
// the weight's two sides), log-log interpolated along widths within a row count, then across rows.
struct GemmTable {
  std::vector<std::pair<double, RateCurve>> by_rows;  // ascending rows
  double at(double rows, double width) const;
  bool empty() const { return by_rows.empty(); }
  void add(double rows, double width, double rate);  // in ascending (rows, width) order
};

// One class of links, per collective: alpha per ring step (s) and the bandwidth of one link
// (bytes/s). A ring over n ranks takes passes x ((n-1) alpha + (n-1)/n x bytes / bandwidth), with
// passes 2 for all-reduce, 1 otherwise; an all-to-all (n-1) alpha + (n-1)/n x bytes / bandwidth
// (bytes: the rank's whole send buffer); a point-to-point alpha + bytes / bandwidth.
struct LinkClass {
  double alpha[5] = {5e-6, 5e-6, 5e-6, 5e-6, 5e-6};
  double bandwidth[5] = {5e9, 5e9, 5e9, 5e9, 5e9};
  double seconds(Coll op, double bytes, int n) const;
  // Every op from one latency and bandwidth (published hardware descriptions).
  static LinkClass uniform(double latency, double bandwidth);
  // From a fit t(bytes) = alpha + beta x bytes of `op` measured over n ranks by calibrate (bytes:
  // the all-reduce's buffer, one rank's piece of an all-gather or reduce-scatter, one peer's
  // share of an all-to-all, the message of a point-to-point).
  void set_from_fit(Coll op, double fit_alpha, double fit_beta, int n);
  // Across nodes, calibrate's fits were taken on a group of fit_ranks ranks, fit_ranks_per_node on
  // each node, all sending at once (the point-to-point fit: one pair). The ranks of a node share
  // its link, so what a collective costs there is the bytes the whole node puts on it. 0: not
  // known (a hardware description's per-device link), and shared_by changes nothing.
  int fit_ranks = 0, fit_ranks_per_node = 0;
  // This class as one group of n ranks sees it, group_per_node of them on each node, while
  // busy_per_node ranks of every node send across at once (every group along a mesh axis runs
  // together): each bandwidth scaled by the node's bytes on the link in the fit over those here.
  // A direct exchange sends (n - g) / (n - 1) of a rank's bytes off its node.
  LinkClass shared_by(int n, int group_per_node, int busy_per_node) const;
  // Set on the class one group spanning nodes sees (engine_step_time's axis_link): Comm's
  // node-first forms from their sizes on (plan/node_first.h); seconds() then costs those.
  std::shared_ptr<const NodeFirstForm> node_first;
  // The CPU the kernel spends per byte a node sends to or receives from other nodes over this
  // link (TCP, the driver, the qdisc, softirq), on the cores that node's ranks compute on: across
  // nodes, calibrate measures it (machine-wide system + irq + softirq time over the bytes that
  // crossed). 0: not measured (same-node links, hardware descriptions, older files): no charge.
  double cpu_seconds_per_byte = 0;
  // The bytes one rank of a group of n, group_per_node of them on its node, sends to other nodes
  // in one collective of `bytes` (as seconds() takes them), and receives from them: every
  // collective costed here is symmetric. Comm's flat pairwise exchange sends (n-1)/n of the buffer
  // per phase (two for an all-reduce), (n - g)/(n - 1) of that to ranks off the node; its
  // node-first forms (node_first) 1/g of that; a point-to-point its whole message (the caller
  // counts it only when the pair spans nodes).
  double off_node_bytes(Coll op, double bytes, int n, int group_per_node) const;
};


struct EngineRates {
  int cores = 0;                       // cores the ranks of one node share (0: rates unknown)
  // The cores the job's ranks actually got when all were busy at once (calibrate's busy loop:
  // CPU time over wall time, summed over the ranks): below `cores` when other work shares the
  // machine (0: assume `cores`).
  double available_cores = 0;
  // The job's busy threads per node while available_cores was measured (0: unknown, older files).
  int busy_threads = 0;
  // The cores `threads` busy threads per node get. The scheduler shares the cores thread by thread
  // with the other work on the machine, so what busy_threads got says how many other threads were
  // runnable, and a job of more threads takes a larger share (without busy_threads:
  // available_cores whatever the threads, or the cores where nothing was measured).
  double usable_cores(double threads) const;
  GemmTable gemm_fp32, gemm_bf16;      // FLOP/s per core of a linear's fwd + dgrad + wgrad by (rows, width)
  RateCurve attention;                 // seconds per B x H x T x T x D (causal fwd + bwd) by T
  RateCurve bandwidth;                 // bytes/s per core by working-set bytes
  double step_overhead = 0;            // seconds per step outside the model (data, metrics)
  // Seconds a blocking collective issued mid-step costs beyond its alpha-beta time (the ranks
  // arrive apart after their own compute; the waiting one spins, yields or sleeps), measured by
  // calibrate when the ranks fit the cores (0 otherwise: waiting ranks then lend their core).
  double collective_overhead = 0;
  // The engine's non-GEMM kernels as calibrate times them (calibrate/kernel_rates.h), per core;
  // absent from older files, which cost those kernels as bytes over `bandwidth`.
  RateCurve optimizer;      // s per parameter: zero the gradient, its norm, the clip, AdamW; by parameters
  RateCurve rmsnorm;        // s per element, forward + backward, by elements
  RateCurve rope;           // s per element of q or k, forward + backward, by elements
  RateCurve swiglu;         // s per output element, forward + backward, by elements
  RateCurve cross_entropy;  // s per logit, forward + backward, by logits
  RateCurve weight_copy;    // s per weight rounded to bf16 (once per step in 16-bit runs), by weights
  GemmTable attention_dim;  // s per B H T^2 D of causal attention, fwd + bwd, by (T, head width)
  // The same attention timed in its two passes (absent from older files: the forward is then 2 of
  // the 7 T^2 D products), and the bf16 kernels `precision = bf16` runs (absent: the fp32 rates).
  GemmTable attention_fwd_dim;       // s per unit, the forward alone (fp32)
  GemmTable attention_dim_bf16;      // s per unit, forward + backward, bf16 tile products
  GemmTable attention_fwd_dim_bf16;  // s per unit, the bf16 forward alone
  // Context parallelism's block form (ring, all-gather: parallel/context/context_attention.h): one
  // chunk of queries against one earlier chunk of keys (a full block), its forward, the merge into
  // the chunk's rows and its backward, in s per B H c^2 D by (chunk length c, head width), fp32 and
  // bf16 tile products. Absent from older files (or without the diagonal's): cp is then charged at
  // the whole-sequence rates.
  GemmTable cp_block_dim;
  GemmTable cp_block_dim_bf16;
  // The same for a chunk against itself (the causal diagonal): per B H c^2 D as well, though it
  // sees about half the pairs (a chunk shorter than the kernels' tiles computes them all).
  GemmTable cp_diag_dim;
  GemmTable cp_diag_dim_bf16;
  // One rank's speed-up with its threads, by kind of work (absent from older files: perfect).
  ThreadScaling thread_scaling;
  bool known() const { return cores > 0 && !gemm_fp32.empty(); }
  bool kernels_known() const { return !optimizer.empty() && !rmsnorm.empty() && !cross_entropy.empty(); }
};

// The [rates] table of a cluster.toml; unknown keys throw naming the file.
EngineRates read_rates(const toml::table& t, const std::string& path);
std::string rates_to_toml(const EngineRates& r);
LinkClass read_link_class(const toml::table* t, const LinkClass& fallback, const std::string& path,
                          const char* name);
std::string link_class_to_toml(const LinkClass& l, const char* name);

}  // namespace ff
