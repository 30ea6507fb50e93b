// The pipeline executor under mpirun (p = the number of ranks) with a toy model: virtual stage s
// maps x to y = a_s * x + b_s elementwise on K floats, and the loss of a microbatch is
// 0.5 * ||y_last - target||^2. Every schedule must give the loss and the gradients of every a_s and
// b_s that a plain serial loop gives, and keep no more activations alive than its schedule allows.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "comm/comm.h"
#include "comm/comm_world.h"
#include "io/trace.h"
#include "parallel/pipeline/pipeline_executor.h"
#include "parallel/pipeline/schedule_sim.h"

namespace ff {
namespace {

// The toy's data, functions of (stage or microbatch, element) only, so both sides agree.
double param_a(int s, int k) { return 0.6 + 0.1 * ((3 * s + k) % 5); }
double param_b(int s, int k) { return 0.05 * ((s + 2 * k) % 7) - 0.1; }
double input_x(int mb, int k) { return 0.25 * (mb + 1) - 0.1 * (k % 9); }
double target(int mb, int k) { return 0.5 - 0.03 * ((7 * mb + k) % 11); }

struct Reference {
  double loss = 0;
  std::vector<double> grads;  // (stage, {a, b}, k)
};

// The serial run, written independently of the toy below: whole forward, then whole backward.
Reference serial(int stages, int m, int K) {
  Reference ref;
  ref.grads.assign(size_t(stages) * 2 * K, 0.0);
  for (int mb = 0; mb < m; ++mb) {
    std::vector<std::vector<double>> xs(stages + 1, std::vector<double>(K));
    for (int k = 0; k < K; ++k) xs[0][k] = input_x(mb, k);
    for (int s = 0; s < stages; ++s)
      for (int k = 0; k < K; ++k) xs[s + 1][k] = param_a(s, k) * xs[s][k] + param_b(s, k);
    std::vector<double> g(K);
    for (int k = 0; k < K; ++k) {
      const double d = xs[stages][k] - target(mb, k);
      ref.loss += 0.5 * d * d;
      g[k] = d;
    }
    for (int s = stages - 1; s >= 0; --s)
      for (int k = 0; k < K; ++k) {
        ref.grads[(size_t(s) * 2 + 0) * K + k] += g[k] * xs[s][k];
        ref.grads[(size_t(s) * 2 + 1) * K + k] += g[k];
        g[k] *= param_a(s, k);
      }
  }
  return ref;
}

// One rank's chunks. It keeps the executor's input and grad_output pointers instead of copying
// (the interface allows it until the last backward action), so a buffer the executor recycled too
// early would corrupt the gradients.
class Toy : public PipelineStageCompute {
 public:
  const int K;  // floats per activation
  Toy(int p, int v, int rank, int floats) : K(floats), p_(p), v_(v), rank_(rank) {
    grads_.assign(size_t(v) * 2 * K, 0.0f);
  }
  size_t input_size(int chunk) const override { return check_chunk(chunk), size_t(K); }
  size_t output_size(int chunk) const override { return check_chunk(chunk), size_t(K); }

  void forward(int mb, int chunk, const float* input, float* output) override {
    const int s = stage(chunk);
    Stash& st = stash_[{mb, chunk}];
    if (st.x) throw std::logic_error("forward twice");
    if ((s == 0) != (input == nullptr) || (s == last()) != (output == nullptr))
      throw std::logic_error("null pointer where a buffer belongs or the reverse");
    if (s == 0) {
      st.own_x.resize(size_t(K));
      for (int k = 0; k < K; ++k) st.own_x[k] = float(input_x(mb, k));
      input = st.own_x.data();
    }
    st.x = input;
    std::vector<float> y(static_cast<size_t>(K));
    for (int k = 0; k < K; ++k) y[k] = a(s, k) * input[k] + b(s, k);
    if (s < last()) {
      for (int k = 0; k < K; ++k) output[k] = y[k];
    } else {
      st.own_g.resize(size_t(K));
      for (int k = 0; k < K; ++k) {
        const float d = y[k] - float(target(mb, k));
        loss_ += 0.5 * double(d) * double(d);
        st.own_g[k] = d;
      }
    }
  }
  void backward(int mb, int chunk, const float* grad_output, float* grad_input) override {
    backward_input(mb, chunk, grad_output, grad_input);
    backward_weight(mb, chunk);
  }
  void backward_input(int mb, int chunk, const float* grad_output, float* grad_input) override {
    const int s = stage(chunk);
    Stash& st = stash_.at({mb, chunk});
    if ((s == last()) != (grad_output == nullptr) || (s == 0) != (grad_input == nullptr))
      throw std::logic_error("null pointer where a buffer belongs or the reverse");
    st.g = s == last() ? st.own_g.data() : grad_output;
    if (grad_input)
      for (int k = 0; k < K; ++k) grad_input[k] = a(s, k) * st.g[k];
  }
  void backward_weight(int mb, int chunk) override {
    if (fail_at_ == std::pair{mb, chunk}) throw std::runtime_error("toy fails on purpose");
    auto it = stash_.find({mb, chunk});
    if (it == stash_.end() || !it->second.g) throw std::logic_error("weight gradient before B");
    float* ga = &grads_[size_t(chunk) * 2 * K];
    for (int k = 0; k < K; ++k) {
      ga[k] += it->second.g[k] * it->second.x[k];  // reads the executor's buffers, kept alive
      ga[K + k] += it->second.g[k];
    }
    stash_.erase(it);
  }

  // This rank's gradients at their place in the serial layout, zero elsewhere, for an all-reduce.
  std::vector<double> global_grads() const {
    std::vector<double> out(size_t(p_ * v_) * 2 * K, 0.0);
    for (int c = 0; c < v_; ++c)
      for (int j = 0; j < 2 * K; ++j) out[size_t(stage(c)) * 2 * K + j] = grads_[size_t(c) * 2 * K + j];
    return out;
  }
  double loss() const { return loss_; }
  size_t live() const { return stash_.size(); }
  void fail_at(int mb, int chunk) { fail_at_ = {mb, chunk}; }

 private:
  struct Stash {
    const float* x = nullptr;  // the executor's input buffer, or own_x on stage 0
    const float* g = nullptr;  // the executor's grad_output buffer, or own_g on the last stage
    std::vector<float> own_x, own_g;
  };
  int stage(int chunk) const { return chunk * p_ + rank_; }
  int last() const { return p_ * v_ - 1; }
  void check_chunk(int chunk) const {
    if (chunk < 0 || chunk >= v_) throw std::logic_error("chunk out of range");
  }
  float a(int s, int k) const { return float(param_a(s, k)); }
  float b(int s, int k) const { return float(param_b(s, k)); }

  int p_, v_, rank_;
  std::map<std::pair<int, int>, Stash> stash_;
  std::vector<float> grads_;  // (chunk, {a, b}, k)
  double loss_ = 0;
  std::pair<int, int> fail_at_{-1, -1};
};

std::string label(const PipeScheduleSpec& s) {
  return std::string(to_string(s.kind)) + " p=" + std::to_string(s.stages) + " m=" +
         std::to_string(s.microbatches) + " v=" + std::to_string(s.chunks);
}

std::vector<PipeScheduleSpec> specs_for(int p) {
  std::vector<PipeScheduleSpec> out;
  for (int m : {1, 2, 4, 8}) {
    for (PipeSchedule kind : {PipeSchedule::gpipe, PipeSchedule::one_f_one_b, PipeSchedule::interleaved,
                              PipeSchedule::zb_h1}) {
      PipeScheduleSpec spec{kind, p, m, kind == PipeSchedule::interleaved ? 2 : 1};
      try {
        validate_schedule_spec(spec);
        out.push_back(spec);
      } catch (const std::invalid_argument&) {
      }
    }
  }
  return out;
}

// Runs `steps` steps and checks loss and gradients against `steps` times the serial run.
void check_against_serial(const PipeScheduleSpec& spec, int steps, PipelineExecutor& exec, Toy& toy) {
  const Comm& world = comm_world();
  for (int i = 0; i < steps; ++i) exec.run(toy);
  EXPECT_EQ(toy.live(), 0u) << "a stash was never backwarded";
  const Reference ref = serial(spec.stages * spec.chunks, spec.microbatches, toy.K);
  std::vector<double> grads = toy.global_grads();
  world.all_reduce(grads.data(), grads.size());
  double loss = toy.loss();
  world.all_reduce(&loss, 1);
  EXPECT_NEAR(loss, steps * ref.loss, 1e-5 * (1 + steps * ref.loss));
  for (size_t j = 0; j < grads.size(); ++j)
    EXPECT_NEAR(grads[j], steps * ref.grads[j], 1e-5 * (1 + std::abs(steps * ref.grads[j]))) << "element " << j;
}

TEST(PipelineExecutor, EverySchedulesGradientsEqualTheSerialRun) {
  const Comm& world = comm_world();
  const int p = world.size(), r = world.rank();
  const std::vector<PipeScheduleSpec> specs = specs_for(p);
  ASSERT_EQ(specs.size(), p == 2 ? 14u : 12u);  // the sweep really covers every kind
  for (const PipeScheduleSpec& spec : specs) {
    SCOPED_TRACE(label(spec));
    const int m = spec.microbatches;
    PipelineExecutor exec(spec, world);
    Toy toy(p, spec.chunks, r, 5);  // 20-byte messages: MPI's eager path
    check_against_serial(spec, 1, exec, toy);

    // In-flight activations: exactly what the simulator predicts for this rank's list, and the
    // textbook bounds: all m for GPipe, at most p - r for 1F1B, at most p for ZB-H1 (counted until
    // W, whose delay is what lets later ranks hold up to 1F1B's rank-0 peak).
    const SimResult sim = simulate_schedule(spec, make_schedule(spec));
    const int inflight = exec.last_run().peak_inflight;
    EXPECT_EQ(inflight, sim.peak_inflight_per_rank[size_t(r)]);
    const bool gpipe = spec.kind == PipeSchedule::gpipe, zb = spec.kind == PipeSchedule::zb_h1;
    const bool one_f_one_b = spec.kind == PipeSchedule::one_f_one_b;
    EXPECT_TRUE(!gpipe || inflight == m) << inflight;
    EXPECT_TRUE(!one_f_one_b || inflight <= std::min(m, p - r)) << inflight;
    EXPECT_TRUE(!zb || inflight <= std::min(m, p)) << inflight;
    // The pool's received activations: the stashed inputs plus at most one receive posted ahead,
    // so within m for GPipe and within p for 1F1B (rank 0 receives none).
    const BoundaryPoolStats& pool = exec.pool_stats();
    const int act_in = pool.peak_of(BoundaryUse::activation_in);
    const int act_out = pool.peak_of(BoundaryUse::activation_out);
    EXPECT_TRUE(!gpipe || act_in <= m) << act_in;
    EXPECT_TRUE(!one_f_one_b || act_in <= p) << act_in;
    EXPECT_LE(act_in, inflight + 1);
    EXPECT_TRUE(r > 0 || spec.chunks > 1 || act_in == 0) << act_in;
    // An activation being sent is freed at the latest by its own backward.
    EXPECT_LE(act_out, inflight);
    for (int u = 0; u < kBoundaryUses; ++u) EXPECT_EQ(pool.in_use[size_t(u)], 0) << "use " << u;
    if (r == 1 && m == 8)  // rank 1 both receives and sends activations
      std::printf("%-12s p=%d m=%d: peak in flight %d, activation buffers in %d out %d, all %d\n",
                  to_string(spec.kind), p, m, inflight, act_in, act_out, pool.peak_total);
  }
}

TEST(PipelineExecutor, RunsAgainAndAccumulates) {
  const Comm& world = comm_world();
  const PipeScheduleSpec spec{PipeSchedule::one_f_one_b, world.size(), 4};
  PipelineExecutor exec(spec, world);
  Toy toy(world.size(), 1, world.rank(), 5);
  check_against_serial(spec, 3, exec, toy);  // the same tags each step must not cross over
}

// 200 KB messages go through MPI's rendezvous protocol, where a send completes only once the
// receive is posted: the path on which posting order and send completion really matter.
TEST(PipelineExecutor, LargeMessagesGiveTheSameGradients) {
  const Comm& world = comm_world();
  const int p = world.size();
  for (PipeSchedule kind : {PipeSchedule::gpipe, PipeSchedule::one_f_one_b, PipeSchedule::interleaved,
                            PipeSchedule::zb_h1}) {
    const PipeScheduleSpec spec{kind, p, 2 * p, kind == PipeSchedule::interleaved ? 2 : 1};
    SCOPED_TRACE(label(spec));
    PipelineExecutor exec(spec, world);
    Toy toy(p, spec.chunks, world.rank(), 50000);
    check_against_serial(spec, 2, exec, toy);
  }
}

TEST(PipelineExecutor, TraceShowsEveryComputeWithItsMicrobatch) {
  const Comm& world = comm_world();
  const int p = world.size(), r = world.rank();
  const PipeScheduleSpec spec{PipeSchedule::interleaved, p, 2 * p, 2};
  Tracer tracer(r);
  PipelineExecutor exec(spec, world, &tracer);
  Toy toy(p, 2, r, 5);
  exec.run(toy);
  const std::string json = tracer.events_json();
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = json.find(what); at != std::string::npos; at = json.find(what, at + 1)) ++n;
    return n;
  };
  const size_t per_kind = size_t(spec.microbatches * spec.chunks);
  EXPECT_EQ(count("\"name\":\"forward mb"), per_kind);
  EXPECT_EQ(count("\"name\":\"backward mb"), per_kind);
  EXPECT_EQ(count("\"name\":\"forward mb3 c1\""), 1u);
  // Every boundary of this rank is crossed once per microbatch in each direction.
  const size_t sends = size_t(spec.microbatches) * (r == p - 1 ? 1 : 2) + size_t(spec.microbatches) * (r == 0 ? 1 : 2);
  EXPECT_EQ(count("\"name\":\"send act mb") + count("\"name\":\"send grad mb"), sends);
  EXPECT_EQ(count("\"name\":\"recv act mb") + count("\"name\":\"recv grad mb"), sends);
}

TEST(PipelineExecutor, MessageTagsAreUniqueAndInRange) {
  for (const PipeScheduleSpec& spec : {PipeScheduleSpec{PipeSchedule::interleaved, 4, 8, 3},
                                       PipeScheduleSpec{PipeSchedule::one_f_one_b, 3, 5}}) {
    std::map<int, int> seen;
    const int stages = spec.stages * spec.chunks;
    for (int mb = 0; mb < spec.microbatches; ++mb)
      for (int s = 0; s < stages; ++s)
        for (bool grad : {false, true}) {
          const int tag = PipelineExecutor::message_tag(spec, mb, s, grad);
          EXPECT_GE(tag, 0);
          EXPECT_LT(tag, 1 << 29);
          EXPECT_EQ(seen[tag]++, 0) << "tag " << tag << " reused";
        }
  }
}

TEST(PipelineExecutor, RefusesAGroupOfTheWrongSize) {
  const Comm& world = comm_world();
  try {
    PipelineExecutor exec({PipeSchedule::gpipe, world.size() + 1, 2}, world);
    FAIL() << "accepted a group of the wrong size";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("has " + std::to_string(world.size()) + " ranks"), std::string::npos)
        << e.what();
  }
}

// 1F1B: rank 0 fails in microbatch m-2's backward with the receive of m-1's gradient already
// posted, and rank 1 fails in m-1's backward, so that gradient is never sent. Both errors must
// reach the caller, and rank 0's executor must be destroyable at once, although that receive can
// never complete (a CommRequest's destructor would wait for it; the watchdog would end the job).
// Other ranks have nothing left to exchange with ranks 0 and 1 and finish normally.
TEST(PipelineExecutor, AComputeErrorPropagatesWithoutHanging) {
  const Comm& world = comm_world();
  const Comm group = world.split(0, world.rank());  // the orphaned receive stays off the world group
  const int m = 4, r = group.rank();
  const PipeScheduleSpec spec{PipeSchedule::one_f_one_b, group.size(), m};
  {
    PipelineExecutor exec(spec, group);
    Toy toy(group.size(), 1, r, 5);
    if (r <= 1) {
      toy.fail_at(r == 0 ? m - 2 : m - 1, 0);
      EXPECT_THROW(exec.run(toy), std::runtime_error);
      EXPECT_THROW(exec.run(toy), std::logic_error);  // refuses a second run
    } else {
      EXPECT_NO_THROW(exec.run(toy));
    }
  }
  world.barrier();
  // Now send the missing gradient, so the abandoned receive completes before MPI_Finalize drains.
  const std::vector<float> missing(5, 0.0f);
  if (r == 1) group.send(missing.data(), missing.size(), 0, PipelineExecutor::message_tag(spec, m - 1, 0, true));
  world.barrier();
}

}  // namespace
}  // namespace ff
