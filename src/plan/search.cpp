#include "plan/search.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "parallel/context/context_layout.h"
#include "parallel/pipeline/pipeline_schedule.h"
#include "parallel/tensor/tensor_plan.h"

namespace ff {

std::vector<int> divisors(int n) {
  std::vector<int> d;
  for (int i = 1; i <= n; ++i)
    if (n % i == 0) d.push_back(i);
  return d;
}

void rank_by_step_time(std::vector<LayoutPrediction>& ranked) {
  std::stable_sort(ranked.begin(), ranked.end(), [](const LayoutPrediction& a, const LayoutPrediction& b) {
    if (a.step_seconds != b.step_seconds) return a.step_seconds < b.step_seconds;
    return a.memory.peak() < b.memory.peak();
  });
}

namespace {

// Whether the engine (or, at paper scale, Megatron's rules) can cut the model this way.
bool tp_valid(const ModelConfig& c, const LayoutSpec& L, bool engine) {
  if (L.tp == 1) return true;
  if (c.n_heads % L.tp || c.ffn_dim % L.tp) return false;
  if (L.sp && c.seq_len % L.tp) return false;
  if (!engine) return true;
  try {
    validate_tensor_parallel(c, L.tp, L.sp);
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

bool schedule_valid(const ModelConfig& c, const LayoutSpec& L) {
  if (L.pp == 1) return true;
  if (L.pp * L.chunks > c.n_layers) return false;
  const PipeScheduleSpec spec{L.schedule, L.pp, L.grad_accum, L.chunks};
  try {
    validate_schedule_spec(spec);
  } catch (const std::exception&) {
    return false;
  }
  return schedule_fills_pipeline(spec);  // what the trainer would refuse is never recommended
}

bool cp_valid(const ModelConfig& c, const LayoutSpec& L) {
  if (L.cp == 1) return true;
  try {
    validate_context_parallel(L.cp, L.cp_comm, c.seq_len, c.n_heads, c.n_kv_heads, L.tp);
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

// The context-parallel variants (engine only: the paper model has no cp attention cost), the
// expert-parallel degrees (MoE models: dividing dp x cp and the experts) and the precisions.
struct Variant {
  int cp;
  CpComm cp_comm;
};
std::vector<Variant> cp_variants(int ranks_left, bool engine) {
  std::vector<Variant> v = {{1, CpComm::ring}};
  if (!engine) return v;
  for (int cp : divisors(ranks_left))
    if (cp > 1)
      for (CpComm mode : {CpComm::ring, CpComm::allgather, CpComm::a2a}) v.push_back({cp, mode});
  return v;
}
std::vector<int> ep_degrees(const ModelConfig& c, int dp_cp) {
  std::vector<int> v = {1};
  if (!c.moe.enabled()) return v;
  for (int ep : divisors(dp_cp))
    if (ep > 1 && c.moe.n_experts % ep == 0) v.push_back(ep);
  return v;
}

}  // namespace

PlanResult search_layouts(const ModelConfig& c, const ClusterSpec& cl, const PlanRequest& req) {
  PlanResult out;
  out.global_batch = req.global_batch;
  const std::vector<PipeSchedule> schedules = {PipeSchedule::one_f_one_b, PipeSchedule::gpipe,
                                               PipeSchedule::interleaved, PipeSchedule::zb_h1};
  const std::vector<Precision> precisions =
      cl.engine ? std::vector<Precision>{Precision::fp32, Precision::bf16} : std::vector<Precision>{Precision::fp32};
  auto consider = [&](LayoutSpec L) {
    for (Recompute rc : {Recompute::none, Recompute::selective, Recompute::full})
      for (bool sp : L.tp > 1 ? std::vector<bool>{false, true} : std::vector<bool>{false})
        for (Precision p : precisions) {
          L.recompute = rc, L.sp = sp, L.gemm = p;
          if (!tp_valid(c, L, cl.engine) || !schedule_valid(c, L) || !cp_valid(c, L)) continue;
          ++out.considered;
          LayoutPrediction pred = predict_layout(c, L, cl, req.threads);
          if (!pred.fits) {
            ++out.dropped_memory;
            continue;
          }
          out.ranked.push_back(std::move(pred));
        }
  };
  for (int tp : divisors(req.ranks)) {
    if (tp > cl.devices_per_node) continue;  // tensor parallelism stays on the fast links
    for (const Variant& cv : cp_variants(req.ranks / tp, cl.engine)) {
      if ((req.ranks / tp) % cv.cp) continue;
      for (int pp : divisors(req.ranks / (tp * cv.cp))) {
        if (pp > c.n_layers) continue;
        const int dp = req.ranks / (tp * cv.cp * pp);
        const int G = req.global_batch > 0 ? req.global_batch : dp;
        if (G % dp) {
          ++out.dropped_batch;
          out.smallest_dp_dropped = out.smallest_dp_dropped ? std::min(out.smallest_dp_dropped, dp) : dp;
          continue;
        }
        const int per_replica = G / dp;
        for (int mb = 1; mb <= std::min(req.max_micro_batch, per_replica); mb *= 2) {
          if (per_replica % mb) continue;
          for (PipeSchedule sched : pp > 1 ? schedules : std::vector<PipeSchedule>{PipeSchedule::one_f_one_b})
            for (int chunks : sched == PipeSchedule::interleaved ? std::vector<int>{2, 4} : std::vector<int>{1})
              for (int zero = 0; zero <= (dp * cv.cp > 1 ? 3 : 0); ++zero)
                for (int ep : ep_degrees(c, dp * cv.cp)) {
                  LayoutSpec L;
                  L.dp = dp, L.tp = tp, L.pp = pp, L.cp = cv.cp, L.cp_comm = cv.cp_comm, L.ep = ep;
                  L.schedule = sched, L.chunks = chunks, L.micro_batch = mb, L.grad_accum = per_replica / mb;
                  L.zero = zero, L.precision = cl.precision;
                  consider(L);
                }
        }
      }
    }
  }
  rank_by_step_time(out.ranked);
  return out;
}

namespace {
std::string seconds(double s) {
  if (s >= 1) return fmt::format("{:.2f} s", s);
  if (s >= 1e-3) return fmt::format("{:.1f} ms", s * 1e3);
  return fmt::format("{:.0f} us", s * 1e6);
}
}  // namespace

namespace {
// Why nothing fits, and the fix: the batch when no split of the ranks divides it, else memory.
std::string no_layout_advice(const PlanResult& r) {
  if (r.considered == 0 && r.dropped_batch > 0)
    return fmt::format("no layout fits: the global batch of {} sequences does not divide over the data-parallel "
                       "replicas of any split of the ranks (at least {}); pass --global-batch as a multiple of {}\n",
                       r.global_batch, r.smallest_dp_dropped, r.smallest_dp_dropped);
  return "no layout fits: more ranks, a smaller model or a shorter sequence\n";
}
}  // namespace

std::string plan_table(const PlanResult& r, const ClusterSpec& cl, int k) {
  std::string t = fmt::format("{} layouts considered on {}, {} dropped for memory (budget {} per rank), {} fit.\n\n",
                              r.considered, cl.name, r.dropped_memory, format_bytes(int64_t(cl.memory_bytes)),
                              r.ranked.size());
  if (r.ranked.empty()) return t + no_layout_advice(r);
  t += fmt::format("{:>2}  {:<64} {:>10} {:>10} {:>9} {:>6} | {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n", "#", "layout",
                   "step", "tokens/s", "memory", "MFU", "compute", "bubble", "tp comm", "pp comm", "dp comm", "cores");
  for (int i = 0; i < std::min<int>(k, int(r.ranked.size())); ++i) {
    const LayoutPrediction& p = r.ranked[size_t(i)];
    t += fmt::format("{:>2}  {:<64} {:>10} {:>10.0f} {:>9} {:>5.1f}% | {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n", i + 1,
                     p.layout.str(), seconds(p.step_seconds), p.tokens_per_s, format_bytes(p.memory.peak()),
                     100 * p.mfu, seconds(p.compute), seconds(p.bubble), seconds(p.tp_comm), seconds(p.pp_comm),
                     seconds(p.dp_comm), seconds(p.core_sharing));
  }
  const LayoutPrediction& best = r.ranked.front();
  t += fmt::format("\n#1 per rank: {}\n", best.memory.describe());
  t += "step = compute + bubble + tp comm + pp comm + the dp comm the backward does not hide + the wait for cores "
       "the ranks outnumber or the link's kernel work takes (cores); ";
  if (cl.engine) t += "tp comm counts cp's and ep's collectives too; ";
  t += "memory is the largest rank's peak (checkpoint read staging included).\n";
  bool ep = false;
  for (int i = 0; i < std::min<int>(k, int(r.ranked.size())); ++i) ep = ep || r.ranked[size_t(i)].layout.ep > 1;
  if (ep) t += cl.routing.explain() + "\n";
  bool sixteen = false;
  for (int i = 0; i < std::min<int>(k, int(r.ranked.size())); ++i)
    sixteen = sixteen || r.ranked[size_t(i)].layout.gemm != Precision::fp32;
  if (sixteen && cl.engine) {  // the packed copies or widened operands its memory counts
    const EngineHost h = cl.engine_host(1);
    t += fmt::format("16-bit GEMMs: bf16 {}, fp16 {} ({}).\n",
                     h.tile_gemm ? "on fivefold's tile GEMM" : h.native_bf16 ? "in oneDNN" : "widened to fp32",
                     h.native_fp16 ? "in oneDNN" : "widened to fp32",
                     cl.bf16_gemm.empty() && cl.fp16_gemm.empty() ? "this machine's: the cluster file does not say"
                     : cl.bf16_gemm.empty() || cl.fp16_gemm.empty()
                         ? "the cluster file names one of them; the other is this machine's"
                         : "as the cluster file says");
  }
  return t;
}

std::string plan_json(const PlanResult& r, int k) {
  std::string s;
  for (int i = 0; i < std::min<int>(k, int(r.ranked.size())); ++i) {
    const LayoutPrediction& p = r.ranked[size_t(i)];
    nlohmann::json j = {{"rank", i + 1}, {"layout", p.layout.str()}, {"step_seconds", p.step_seconds},
                        {"tokens_per_s", p.tokens_per_s}, {"mfu", p.mfu}, {"compute", p.compute},
                        {"bubble", p.bubble}, {"tp_comm", p.tp_comm}, {"pp_comm", p.pp_comm},
                        {"dp_comm", p.dp_comm}, {"core_sharing", p.core_sharing}, {"peak_bytes", p.memory.peak()}, {"fits", p.fits},
                        {"largest_pp_rank", p.memory.pp_rank}};
    if (p.layout.threads > 0) j["threads"] = p.layout.threads, j["ranks"] = p.layout.ranks();  // a node split
    if (p.link_cpu > 0) j["link_cpu"] = p.link_cpu;  // across nodes: the kernel's CPU for hidden link bytes
    for (int c = 0; c < kMemCategories; ++c) j["bytes"][mem_category_name(MemCategory(c))] = p.memory.bytes[size_t(c)];
    if (p.gemm > 0)  // engine clusters: the compute by kind (bench/plan/profile_terms.py compares it)
      j["terms"] = {{"gemm", p.gemm}, {"attention", p.attention}, {"elementwise", p.elementwise},
                    {"optimizer", p.optimizer}};
    s += j.dump() + "\n";
  }
  return s;
}

}  // namespace ff
