#include "parallel/pipeline/schedule_sim.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

namespace ff {

namespace {

// A message is named by what it carries, not by who sent it: (is_grad, microbatch, the virtual
// stage that receives it). The sender's rank is kept to check the recv's peer_rank.
using MsgKey = std::tuple<bool, int, int>;
struct Msg {
  double arrival;
  int sender;
  bool consumed = false;
};

// Per-rank bookkeeping to check that compute only uses data the rank actually has.
struct RankState {
  size_t pc = 0;
  double clock = 0;
  double busy = 0;
  int inflight = 0;
  int peak = 0;
  std::set<std::pair<int, int>> act_in, grad_in, fwd, bwd, wgt;  // (microbatch, virtual stage)
};

std::string where(int rank, const PipeAction& a, int stage) {
  return "rank " + std::to_string(rank) + ": " + to_string(a.op) + " of microbatch " +
         std::to_string(a.microbatch) + " at virtual stage " + std::to_string(stage);
}

}  // namespace

SimResult simulate_schedule(const PipeScheduleSpec& spec,
                            const std::vector<std::vector<PipeAction>>& schedule,
                            double t_forward, double t_backward, double t_comm) {
  const std::vector<RankCosts> costs(size_t(std::max(spec.stages, 0)),
                                     RankCosts{t_forward, t_backward, t_backward / 2});
  return simulate_schedule(spec, schedule, costs, t_comm);
}

SimResult simulate_schedule(const PipeScheduleSpec& spec,
                            const std::vector<std::vector<PipeAction>>& schedule,
                            const std::vector<RankCosts>& costs, double t_comm) {
  const int p = spec.stages, m = spec.microbatches, v = std::max(spec.chunks, 1);
  const int last = p * v - 1;
  SimResult res;
  if (static_cast<int>(schedule.size()) != p) {
    res.error = "schedule has " + std::to_string(schedule.size()) + " ranks, spec has " +
                std::to_string(p);
    return res;
  }
  if (static_cast<int>(costs.size()) != p) {
    res.error = "costs for " + std::to_string(costs.size()) + " ranks, spec has " + std::to_string(p);
    return res;
  }
  std::vector<RankState> st(p);
  std::map<MsgKey, Msg> msgs;
  res.spans.resize(p);

  // Runs rank r's next action; returns false if it is a recv still waiting for its send.
  auto step = [&](int r) -> bool {
    RankState& rs = st[r];
    const PipeAction& a = schedule[r][rs.pc];
    const int s = a.chunk * p + r;
    const std::pair<int, int> id{a.microbatch, s};
    if (a.chunk < 0 || a.chunk >= v || a.microbatch < 0 || a.microbatch >= m) {
      res.error = where(r, a, s) + ": microbatch or chunk out of range";
      return true;
    }
    const double tf = costs[size_t(r)].forward / v, tb = costs[size_t(r)].backward / v;
    const double tw = costs[size_t(r)].weight / v;  // a split backward: B = tb - tw, then W = tw
    auto compute = [&](double cost) {
      res.spans[r].push_back({rs.pc, rs.clock, rs.clock + cost});
      rs.clock += cost;
      rs.busy += cost;
    };
    switch (a.op) {
      case PipeOp::send_act:
      case PipeOp::send_grad: {
        const bool grad = a.op == PipeOp::send_grad;
        const int to = grad ? s - 1 : s + 1;
        if (to < 0 || to > last || a.peer_rank != (to % p + p) % p) {
          res.error = where(r, a, s) + ": no such neighbour at peer " + std::to_string(a.peer_rank);
        } else if (!(grad ? rs.bwd.count(id) : rs.fwd.count(id))) {
          res.error = where(r, a, s) + ": sends data not computed yet";
        } else if (!msgs.emplace(MsgKey{grad, a.microbatch, to}, Msg{rs.clock + t_comm, r}).second) {
          res.error = where(r, a, s) + ": sent twice";
        }
        break;
      }
      case PipeOp::recv_act:
      case PipeOp::recv_grad: {
        const bool grad = a.op == PipeOp::recv_grad;
        auto it = msgs.find(MsgKey{grad, a.microbatch, s});
        if (it == msgs.end()) return false;
        if (it->second.consumed) {
          res.error = where(r, a, s) + ": received twice";
        } else if (it->second.sender != a.peer_rank) {
          res.error = where(r, a, s) + ": expects peer " + std::to_string(a.peer_rank) +
                      " but rank " + std::to_string(it->second.sender) + " sent it";
        }
        it->second.consumed = true;
        rs.clock = std::max(rs.clock, it->second.arrival);
        (grad ? rs.grad_in : rs.act_in).insert(id);
        break;
      }
      case PipeOp::forward:
        if (s > 0 && !rs.act_in.count(id)) res.error = where(r, a, s) + ": input not received";
        if (!rs.fwd.insert(id).second) res.error = where(r, a, s) + ": repeated";
        compute(tf);
        rs.peak = std::max(rs.peak, ++rs.inflight);
        break;
      case PipeOp::backward:
      case PipeOp::backward_input:
        if (!rs.fwd.count(id)) res.error = where(r, a, s) + ": before its forward";
        if (s < last && !rs.grad_in.count(id)) res.error = where(r, a, s) + ": gradient not received";
        if (!rs.bwd.insert(id).second) res.error = where(r, a, s) + ": repeated";
        compute(a.op == PipeOp::backward ? tb : tb - tw);
        // A split B still leaves W needing the stashed input: in flight until the W below.
        if (a.op == PipeOp::backward) --rs.inflight;
        break;
      case PipeOp::backward_weight:
        if (!rs.bwd.count(id)) res.error = where(r, a, s) + ": before its input gradient";
        if (!rs.wgt.insert(id).second) res.error = where(r, a, s) + ": repeated";
        compute(tw);
        --rs.inflight;
        break;
    }
    return true;
  };

  // Sweep ranks until a full pass moves nothing. Timing does not depend on the sweep order:
  // each action's time comes only from its rank's clock and the stamped arrival of its message.
  for (bool progress = true; progress && res.error.empty();) {
    progress = false;
    for (int r = 0; r < p && res.error.empty(); ++r) {
      while (st[r].pc < schedule[r].size() && res.error.empty() && step(r)) {
        ++st[r].pc;
        progress = true;
      }
    }
  }
  for (int r = 0; r < p; ++r) {
    res.makespan = std::max(res.makespan, st[r].clock);
    res.busy_per_rank.push_back(st[r].busy);
    res.peak_inflight_per_rank.push_back(st[r].peak);
  }
  if (!res.error.empty()) return res;
  for (int r = 0; r < p; ++r) {
    if (st[r].pc < schedule[r].size()) {
      res.deadlock = true;
      const PipeAction& a = schedule[r][st[r].pc];
      res.error += (res.error.empty() ? "deadlock: " : "; ") +
                   where(r, a, a.chunk * p + r) + " waits forever";
    }
  }
  if (res.deadlock) return res;
  for (const auto& [key, msg] : msgs)
    if (!msg.consumed) {
      res.error = "message for microbatch " + std::to_string(std::get<1>(key)) +
                  " to virtual stage " + std::to_string(std::get<2>(key)) + " never received";
      return res;
    }
  double busy = 0;
  for (double b : res.busy_per_rank) busy += b;
  res.bubble_fraction = res.makespan > 0 ? 1.0 - busy / (p * res.makespan) : 0.0;
  return res;
}

char compute_letter(const PipeAction& a) {
  const char letter = a.op == PipeOp::forward ? 'F' : a.op == PipeOp::backward_weight ? 'W' : 'B';
  return a.chunk > 0 ? static_cast<char>(letter - 'A' + 'a') : letter;
}

std::string render_schedule_text(const PipeScheduleSpec& spec,
                                 const std::vector<std::vector<PipeAction>>& schedule) {
  const int p = spec.stages, v = std::max(spec.chunks, 1);
  // Scaling costs by v makes every chunk action a whole number of slots (F = 1, B = 2).
  const SimResult sim = simulate_schedule(spec, schedule, v, 2.0 * v, 0);
  if (!sim.error.empty()) return "cannot render: " + sim.error + "\n";
  const int slots = static_cast<int>(std::lround(sim.makespan));
  std::string out;
  std::vector<std::string> rows(p, std::string(2 * slots, '.'));
  for (int r = 0; r < p; ++r) {
    for (const ComputeSpan& span : sim.spans[r]) {
      const PipeAction& a = schedule[r][span.action];
      const int first = static_cast<int>(std::lround(span.start));
      const int last = static_cast<int>(std::lround(span.end));
      for (int k = first; k < last && k < slots; ++k) {
        rows[r][2 * k] = compute_letter(a);
        rows[r][2 * k + 1] = static_cast<char>('0' + a.microbatch % 10);
      }
    }
  }
  for (int r = 0; r < p; ++r) out += "rank " + std::to_string(r) + " | " + rows[r] + "\n";
  char line[96];
  std::snprintf(line, sizeof line, "bubble fraction %.4f (%s, p=%d, m=%d, v=%d)\n",
                sim.bubble_fraction, to_string(spec.kind), p, spec.microbatches, v);
  return out + line;
}

}  // namespace ff
