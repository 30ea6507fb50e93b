#include <cstdio>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "calibrate/this_machine.h"
#include "cli/commands.h"
#include "plan/cluster.h"
#include "plan/node_split.h"
#include "plan/search.h"
#include "train/train_config.h"

namespace ff::cli {

namespace {

// The node split the options fix (0: searched): --ranks-per-node, or --ranks over --nodes, or the
// ranks a --layout naming dp implies; --threads or the layout's threads=.
SplitRequest split_request(const Args& a, const LayoutSpec& asked, const std::set<std::string>& layout_given,
                           int cores, int nodes) {
  SplitRequest split;
  split.nodes = nodes, split.cores = cores;
  split.ranks_per_node = a.has("ranks-per-node") ? a.get_int("ranks-per-node", 1, 1, 1 << 20, "ranks per node") : 0;
  if (a.has("ranks")) {
    const int n = a.get_int("ranks", 1, 1, 1 << 20, "the ranks to plan for");
    if (split.ranks_per_node > 0 && n != split.ranks_per_node * nodes)
      throw std::runtime_error(fmt::format("--ranks {} is not --ranks-per-node {} x --nodes {}; give two of them",
                                           n, split.ranks_per_node, nodes));
    if (n % nodes)
      throw std::runtime_error(fmt::format("--ranks {} does not divide over --nodes {}; give a multiple of {}", n,
                                           nodes, nodes));
    split.ranks_per_node = n / nodes;
  } else if (layout_given.count("dp") && split.ranks_per_node == 0) {
    split.ranks_per_node = asked.ranks() / nodes;  // the layout names every axis: its ranks
  }
  if (a.has("threads") && layout_given.count("threads") && a.get_int("threads", 1, 1, 4096, "") != asked.threads)
    throw std::runtime_error(fmt::format("--threads {} and --layout's threads={} disagree: give one of them",
                                         a.get("threads"), asked.threads));
  split.threads = layout_given.count("threads") ? asked.threads
                  : a.has("threads")              ? a.get_int("threads", 1, 1, 4096, "OpenMP threads per rank")
                                                  : 0;
  return split;
}

}  // namespace

// Searches the layouts of N ranks for a model before any step runs: memory by category per rank,
// predicted step time and its parts, the fitting layouts ranked fastest first.
int cmd_plan(const Args& a) {
  const char* usage =
      "fivefold plan --config MODEL.toml --ranks N [--cluster cluster.toml] [--global-batch B] [--top K] [--json]\n"
      "              [--vocab-size V (when the config takes it from a tokenizer)] [--threads T]\n"
      "fivefold plan --config MODEL.toml [--ranks-per-node R] [--threads T] [--nodes K] [--cores C] ...: the split of\n"
      "              each node's C cores into R ranks x T threads searched too (what is not given; --ranks N fixes\n"
      "              R = N / K); every printed layout carries threads=T and runs as `mpirun -np R*K fivefold train\n"
      "              --layout LAYOUT`\n"
      "              [--layout \"tp=2,pp=2,mb=2,m=4,zero=1\" (predict this one layout only; unnamed mb and m\n"
      "              come from the config's micro_batch and global batch); every printed layout runs as\n"
      "              `fivefold train --layout LAYOUT`";
  if (a.help) {
    std::printf("%s\n\nWithout --cluster the ranks are this machine's (its measured FMA peak, MemAvailable shared "
                "by the ranks, the engine's exact memory model). configs/clusters/ holds A100 and H100 nodes for "
                "paper-scale planning. --global-batch is in sequences (default: the config's micro_batch x "
                "grad_accum x dp).\nRanks x threads: without --ranks (or with --ranks-per-node / --nodes) each node's "
                "--cores (default: the cluster file's, else this machine's) are split into ranks x threads too, from "
                "the thread scaling `calibrate` measured; a fixed split that oversubscribes the cores is predicted "
                "with a warning, more than 4 threads per core refused.\n",
                usage);
    return 0;
  }
  a.only({"config", "ranks", "cluster", "global-batch", "top", "json", "threads", "vocab-size", "layout", "ranks-per-node",
          "nodes", "cores"},
         usage);
  TrainConfig cfg = load_train_config(a.require("config", usage), {});
  if (a.has("vocab-size")) cfg.model.vocab_size = a.get_int("vocab-size", 0, 1, 1 << 30, "the vocabulary");
  if (cfg.model.vocab_size <= 0)
    throw std::runtime_error(fmt::format("{} has vocab_size = 0 (take it from the tokenizer): the planner needs the "
                                         "number; set vocab_size in the config or pass --vocab-size",
                                         a.get("config")));
  cfg.model.validate();
  // Split mode: the ranks per node and threads per rank searched (or fixed) on nodes of C cores;
  // without its flags `--ranks N` plans N ranks of cores / N threads on one node, as always.
  const bool split_mode = !a.has("ranks") || a.has("ranks-per-node") || a.has("nodes");
  const int nodes = a.get_int("nodes", 1, 1, 1 << 16, "the nodes");
  std::set<std::string> layout_given;
  const LayoutSpec asked = a.has("layout") ? parse_layout(a.get("layout"), &layout_given) : LayoutSpec{};
  const ClusterSpec file_cluster = a.has("cluster") ? load_cluster(a.get("cluster")) : this_machine(1);
  const int machine_cores = split_mode && file_cluster.engine && file_cluster.rates.cores > 0
                                ? file_cluster.rates.cores
                                : int(std::max(1u, std::thread::hardware_concurrency()));
  const int cores = a.get_int("cores", machine_cores, 1, 1 << 20, "cores per node");
  SplitRequest split = split_request(a, asked, layout_given, cores, nodes);
  // A fixed count of ranks without threads fills the cores, as train's threads = 0 does, where
  // nothing is searched: --ranks alone, or one --layout.
  if (split.threads == 0 && split.ranks_per_node > 0 && (!split_mode || a.has("layout")))
    split.threads = std::max(1, cores / split.ranks_per_node);
  if (split.threads > 4 * cores)  // as train refuses it (max_useful_threads)
    throw std::runtime_error(fmt::format("--threads {} is more than 4 x the {} cores per node: the threads only "
                                         "time-share them; give at most {} (--cores sets the cores per node)",
                                         split.threads, cores, 4 * cores));
  if (split.ranks_per_node > 0 && split.threads > 0)  // a fixed split: oversubscribing is allowed, and named
    if (const std::string w = oversubscription({split.ranks_per_node, split.threads}, cores); !w.empty())
      std::fprintf(stderr, "fivefold plan: warning: %s\n", w.c_str());
  const int ranks_for_batch = split.ranks_per_node > 0 ? split.ranks_per_node * nodes : 1;
  const ClusterSpec cl = !split_mode ? (a.has("cluster") ? file_cluster : this_machine(ranks_for_batch))
                         : split.ranks_per_node > 0 ? cluster_for_split(file_cluster, split.ranks_per_node)
                                                    : file_cluster;
  PlanRequest req;
  req.ranks = ranks_for_batch;
  req.threads = std::max(1, split.threads);
  // Split mode keeps one global batch for every split (ranks differ), so the splits compare.
  const int dp_default = split_mode ? std::max(1, cfg.dp) : ranks_for_batch / (cfg.tp * cfg.pp * cfg.cp);
  req.global_batch = a.get_int("global-batch", cfg.micro_batch * cfg.grad_accum * std::max(1, dp_default), 1, 1 << 24,
                               "sequences per optimizer step");
  const int top = a.get_int("top", 5, 1, 1000000, "layouts to show");
  PlanResult r;
  if (a.has("layout")) {  // one layout, explained (dp: the ranks the others leave)
    if (split.ranks_per_node == 0)
      throw std::runtime_error("plan --layout needs the ranks: --ranks N, --ranks-per-node R or dp= in the layout");
    const int ranks = req.ranks;
    LayoutSpec L = asked;
    if (!layout_given.count("dp")) L.dp = ranks / (L.tp * L.pp * L.cp);
    if (L.ranks() != ranks)
      throw std::runtime_error(fmt::format("layout {} uses {} ranks, not --ranks {}", L.str(), L.ranks(), ranks));
    // Unnamed batch keys come from the config, as `train --layout` takes them: mb is its micro_batch,
    // and m keeps its global batch (or --global-batch) over this layout's replicas.
    if (!layout_given.count("mb")) L.micro_batch = cfg.micro_batch;
    if (!layout_given.count("m")) {
      const int per_step = L.micro_batch * L.dp;
      if (req.global_batch % per_step)
        throw std::runtime_error(fmt::format(
            "global batch {} sequences does not split into micro-batches of {} over {} data-parallel replicas; "
            "name m= in --layout or pass a --global-batch that is a multiple of {}",
            req.global_batch, L.micro_batch, L.dp, per_step));
      L.grad_accum = req.global_batch / per_step;
    }
    L.precision = cl.precision;
    if (split_mode) L.threads = req.threads;
    r.considered = 1;
    LayoutPrediction p = predict_layout(cfg.model, L, cl, req.threads);
    if (!p.fits) r.dropped_memory = 1;
    r.ranked.push_back(p);  // shown even when it does not fit: the user asked for it
  } else if (split_mode) {
    r = search_splits(cfg.model, file_cluster, split, req);
  } else {
    r = search_layouts(cfg.model, cl, req);
  }
  // --json: JSON lines and nothing else on stdout, so a pipe into jq parses all of it.
  if (a.has("json")) std::printf("%s", plan_json(r, top).c_str());
  if (a.has("json") && a.has("layout") && cl.engine) {  // what each pipeline rank's ledger will show
    std::string totals;
    const EngineHost host = cl.engine_host(req.threads);
    for (int p = 0; p < r.ranked[0].layout.pp; ++p)
      totals += (p ? ", " : "") + std::to_string(estimate_rank_memory(cfg.model, r.ranked[0].layout, p, host).total());
    std::printf("{\"ledger_total_by_pp_rank\": [%s]}\n", totals.c_str());
  }
  if (!a.has("json")) {
    const bool searched = split_mode && !a.has("layout") && !r.ranked.empty();
    const int best_ranks = searched ? r.ranked[0].layout.ranks() / nodes : split.ranks_per_node;
    std::printf("%s", plan_table(r, searched ? cluster_for_split(file_cluster, best_ranks) : cl, top).c_str());
    if (searched)
      if (const std::string w = oversubscription({best_ranks, r.ranked[0].layout.threads}, cores); !w.empty())
        std::printf("#1 %s: other work holds the cores (calibrate's available_cores), and more threads get "
                    "more of them\n",
                    w.c_str());
    if (split_mode && !r.ranked.empty())  // the split travels in the layout string; mpirun takes the ranks
      // Open MPI binds each of 1 or 2 ranks to one core by default, which would pin a rank's threads
      // to it: a rank of several threads runs unbound.
      std::printf("run #1: mpirun -np %d%s%s fivefold train --config %s --layout \"%s\"\n", r.ranked[0].layout.ranks(),
                  nodes > 1 ? fmt::format(" --map-by ppr:{}:node", best_ranks).c_str() : "",
                  r.ranked[0].layout.threads > 1 ? " --bind-to none" : "", a.get("config").c_str(),
                  r.ranked[0].layout.str().c_str());
  }
  return r.ranked.empty() ? 1 : 0;
}

}  // namespace ff::cli
