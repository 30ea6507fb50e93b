#include <cstdio>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "calibrate/this_machine.h"
#include "cli/commands.h"
#include "plan/cluster.h"
#include "plan/search.h"
#include "train/train_config.h"

namespace ff::cli {

// Searches the layouts of N ranks for a model before any step runs: memory by category per rank,
// predicted step time and its parts, the fitting layouts ranked fastest first.
int cmd_plan(const Args& a) {
  const char* usage =
      "fivefold plan --config MODEL.toml --ranks N [--cluster cluster.toml] [--global-batch B] [--top K] [--json]\n"
      "              [--vocab-size V (when the config takes it from a tokenizer)] [--threads T]\n"
      "              [--layout \"tp=2,pp=2,mb=2,m=4,zero=1\" (predict this one layout only; unnamed mb and m\n"
      "              come from the config's micro_batch and global batch); every printed layout runs as\n"
      "              `fivefold train --layout LAYOUT`";
  if (a.help) {
    std::printf("%s\n\nWithout --cluster the ranks are this machine's (its measured FMA peak, MemAvailable shared "
                "by the ranks, the engine's exact memory model). configs/clusters/ holds A100 and H100 nodes for "
                "paper-scale planning. --global-batch is in sequences (default: the config's micro_batch x "
                "grad_accum x dp).\n",
                usage);
    return 0;
  }
  a.only({"config", "ranks", "cluster", "global-batch", "top", "json", "threads", "vocab-size", "layout"}, usage);
  TrainConfig cfg = load_train_config(a.require("config", usage), {});
  if (a.has("vocab-size")) cfg.model.vocab_size = a.get_int("vocab-size", 0, 1, 1 << 30, "the vocabulary");
  if (cfg.model.vocab_size <= 0)
    throw std::runtime_error(fmt::format("{} has vocab_size = 0 (take it from the tokenizer): the planner needs the "
                                         "number; set vocab_size in the config or pass --vocab-size",
                                         a.get("config")));
  cfg.model.validate();
  const int ranks = a.get_int("ranks", 1, 1, 1 << 20, "the ranks to plan for");
  const ClusterSpec cl = a.has("cluster") ? load_cluster(a.get("cluster")) : this_machine(ranks);
  PlanRequest req;
  req.ranks = ranks;
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  req.threads = a.get_int("threads", std::max(1, cores / ranks), 1, 4096, "OpenMP threads per rank");
  const int dp_default = ranks / (cfg.tp * cfg.pp * cfg.cp);
  req.global_batch = a.get_int("global-batch", cfg.micro_batch * cfg.grad_accum * std::max(1, dp_default), 1, 1 << 24,
                               "sequences per optimizer step");
  const int top = a.get_int("top", 5, 1, 1000000, "layouts to show");
  PlanResult r;
  if (a.has("layout")) {  // one layout, explained (dp: the ranks the others leave)
    std::set<std::string> given;
    LayoutSpec L = parse_layout(a.get("layout"), &given);
    if (!given.count("dp")) L.dp = ranks / (L.tp * L.pp * L.cp);
    if (L.ranks() != ranks)
      throw std::runtime_error(fmt::format("layout {} uses {} ranks, not --ranks {}", L.str(), L.ranks(), ranks));
    // Unnamed batch keys come from the config, as `train --layout` takes them: mb is its micro_batch,
    // and m keeps its global batch (or --global-batch) over this layout's replicas.
    if (!given.count("mb")) L.micro_batch = cfg.micro_batch;
    if (!given.count("m")) {
      const int per_step = L.micro_batch * L.dp;
      if (req.global_batch % per_step)
        throw std::runtime_error(fmt::format(
            "global batch {} sequences does not split into micro-batches of {} over {} data-parallel replicas; "
            "name m= in --layout or pass a --global-batch that is a multiple of {}",
            req.global_batch, L.micro_batch, L.dp, per_step));
      L.grad_accum = req.global_batch / per_step;
    }
    L.precision = cl.precision;
    r.considered = 1;
    LayoutPrediction p = predict_layout(cfg.model, L, cl, req.threads);
    if (!p.fits) r.dropped_memory = 1;
    r.ranked.push_back(p);  // shown even when it does not fit: the user asked for it
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
  if (!a.has("json")) std::printf("%s", plan_table(r, cl, top).c_str());
  return r.ranked.empty() ? 1 : 0;
}

}  // namespace ff::cli
