#include "parallel/pipeline/pipeline_executor.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <stdexcept>

namespace ff {

namespace {

constexpr int64_t kTagLimit = int64_t(1) << 29;  // Comm's user tags are [0, 2^29)

bool is_recv(PipeOp op) { return op == PipeOp::recv_act || op == PipeOp::recv_grad; }
bool is_send(PipeOp op) { return op == PipeOp::send_act || op == PipeOp::send_grad; }

// The clock Tracer uses, so the stats and the trace agree.
double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

void PipelineStageCompute::backward_input(int, int, const float*, float*) {
  throw std::logic_error("this model does not split its backward (backward_input); use a schedule other than zb_h1");
}

void PipelineStageCompute::backward_weight(int, int) {
  throw std::logic_error("this model does not split its backward (backward_weight); use a schedule other than zb_h1");
}

PipelineExecutor::PipelineExecutor(const PipeScheduleSpec& spec, const Comm& pipe, Tracer* tracer)
    : spec_(spec), pipe_(pipe), tracer_(tracer), rank_(pipe.rank()) {
  validate_schedule_spec(spec);
  if (pipe.size() != spec.stages)
    throw std::invalid_argument("pipeline executor: the pipeline group has " + std::to_string(pipe.size()) +
                                " ranks but the schedule has " + std::to_string(spec.stages) + " stages");
  const int64_t tags = int64_t(spec.microbatches) * spec.stages * spec.chunks * 2;
  if (tags > kTagLimit)
    throw std::invalid_argument("pipeline executor: microbatches x stages x chunks x 2 = " + std::to_string(tags) +
                                " message tags, more than the 2^29 a Comm allows; use fewer microbatches");
  actions_ = make_schedule(spec)[size_t(rank_)];
  next_compute_.assign(actions_.size(), actions_.size());
  for (size_t i = actions_.size(), next = actions_.size(); i-- > 0;) {
    next_compute_[i] = next;
    if (!is_recv(actions_[i].op) && !is_send(actions_[i].op)) next = i;
  }
}

// Unique per message of a step: the receiving virtual stage and direction name the boundary, so
// two messages between the same ranks (interleaved chunks, both directions) never match up wrongly.
int PipelineExecutor::message_tag(const PipeScheduleSpec& spec, int microbatch, int receiving_stage, bool grad) {
  return (microbatch * spec.stages * spec.chunks + receiving_stage) * 2 + (grad ? 1 : 0);
}

std::string PipelineExecutor::name(const char* what, const PipeAction& a) const {
  return std::string(what) + " mb" + std::to_string(a.microbatch) + " c" + std::to_string(a.chunk);
}

PipelineExecutor::Slot& PipelineExecutor::slot(const PipeAction& a) {
  return slots_[size_t(a.microbatch * spec_.chunks + a.chunk)];
}

void PipelineExecutor::run(PipelineStageCompute& compute) {
  if (broken_)
    throw std::logic_error("pipeline executor: an earlier run failed with transfers in flight; end the job");
  stats_ = {};
  inflight_ = 0;
  slots_.clear();
  slots_.resize(size_t(spec_.microbatches * spec_.chunks));
  try {
    walk(compute);
  } catch (...) {
    abandon();
    throw;
  }
}

void PipelineExecutor::walk(PipelineStageCompute& compute) {
  size_t posted = 0;  // the receives among actions [0, posted) are posted
  auto post_before = [&](size_t end) {
    for (; posted < end; ++posted)
      if (is_recv(actions_[posted].op)) post_recv(actions_[posted], compute);
  };
  for (size_t i = 0; i < actions_.size(); ++i) {
    const PipeAction& a = actions_[i];
    if (is_recv(a.op)) {
      post_before(i + 1);
    } else if (is_send(a.op)) {
      send(a);
    } else {
      // One compute of look-ahead: the next compute's inputs travel while this one waits and
      // runs. Posting further ahead would only hold more receive buffers.
      post_before(next_compute_[i]);
      run_compute(a, compute);
    }
  }
  while (!sends_.empty()) finish_send(sends_.size() - 1);
  for (const Slot& s : slots_)
    if (!s.act_in.empty() || !s.grad_in.empty() || !s.act_out.empty() || !s.grad_out.empty())
      throw std::logic_error("pipeline executor: the schedule ended with a boundary buffer still held");
}

void PipelineExecutor::post_recv(const PipeAction& a, PipelineStageCompute& compute) {
  Slot& s = slot(a);
  const bool grad = a.op == PipeOp::recv_grad;
  BoundaryBuffer& buffer = grad ? s.grad_in : s.act_in;
  if (!buffer.empty()) throw std::logic_error("pipeline executor: " + name("received twice:", a));
  const size_t n = grad ? compute.output_size(a.chunk) : compute.input_size(a.chunk);
  buffer = pool_.acquire(n, grad ? BoundaryUse::gradient_in : BoundaryUse::activation_in);
  (grad ? s.grad_in_req : s.act_in_req) =
      pipe_.recv_async(buffer.data(), n, a.peer_rank, message_tag(spec_, a.microbatch, stage(a.chunk), grad));
}

void PipelineExecutor::send(const PipeAction& a) {
  Slot& s = slot(a);
  const bool grad = a.op == PipeOp::send_grad;
  BoundaryBuffer& buffer = grad ? s.grad_out : s.act_out;
  if (buffer.empty()) throw std::logic_error("pipeline executor: " + name("nothing computed to send:", a));
  const int to = stage(a.chunk) + (grad ? -1 : 1);
  CommRequest req = pipe_.send_async(buffer.data(), buffer.memory.size(), a.peer_rank, message_tag(spec_, a.microbatch, to, grad));
  const int owner = grad ? -1 : a.microbatch * spec_.chunks + a.chunk;
  sends_.push_back({std::move(buffer), std::move(req), owner, name(grad ? "send grad" : "send act", a)});
}

void PipelineExecutor::await(CommRequest& req, const std::string& what, const std::string& transfer) {
  if (!req.test()) {
    const double t0 = now_us();
    req.wait();
    const double t1 = now_us();
    stats_.wait_us += t1 - t0;
    if (tracer_) tracer_->span(what, "compute", t0, t1);
  }
  req.wait();  // complete by now; keeps the timestamps
  if (tracer_ && req.completed_us() > 0)
    tracer_->span(transfer, transfer.rfind("send", 0) == 0 ? "send" : "recv", req.started_us(), req.completed_us());
}

void PipelineExecutor::finish_send(size_t i) {
  Transit& t = sends_[i];
  await(t.req, "wait " + t.name, t.name);
  pool_.release(t.buffer);
  sends_.erase(sends_.begin() + std::ptrdiff_t(i));
}

// Sends found complete give their buffers back early; test() makes no MPI call, so this is cheap.
void PipelineExecutor::reap_sends() {
  for (size_t i = sends_.size(); i-- > 0;)
    if (sends_[i].req.test()) finish_send(i);
}

void PipelineExecutor::release_slot(Slot& s) {
  pool_.release(s.act_in);
  pool_.release(s.grad_in);
}

void PipelineExecutor::run_compute(const PipeAction& a, PipelineStageCompute& compute) {
  reap_sends();
  Slot& s = slot(a);
  const int st = stage(a.chunk), last = spec_.stages * spec_.chunks - 1;
  const bool backward = a.op == PipeOp::backward || a.op == PipeOp::backward_input;
  if (a.op == PipeOp::forward && st > 0) await(s.act_in_req, name("wait act", a), name("recv act", a));
  if (backward && st < last) {
    await(s.grad_in_req, name("wait grad", a), name("recv grad", a));
    // The gradient came back, so the peer has consumed this chunk's activation: its send is
    // complete or about to be, and waiting here frees the buffer at no cost.
    const int owner = a.microbatch * spec_.chunks + a.chunk;
    for (size_t i = 0; i < sends_.size(); ++i)
      if (sends_[i].slot == owner) {
        finish_send(i);
        break;
      }
  }
  const double t0 = now_us();
  {
    TraceScope scope(tracer_, name(to_string(a.op), a), "compute");
    if (a.op == PipeOp::forward) {
      float* out = nullptr;
      if (st < last) {
        s.act_out = pool_.acquire(compute.output_size(a.chunk), BoundaryUse::activation_out);
        out = s.act_out.data();
      }
      compute.forward(a.microbatch, a.chunk, st > 0 ? s.act_in.data() : nullptr, out);
      stats_.peak_inflight = std::max(stats_.peak_inflight, ++inflight_);
    } else if (backward) {
      float* grad_input = nullptr;
      if (st > 0) {
        s.grad_out = pool_.acquire(compute.input_size(a.chunk), BoundaryUse::gradient_out);
        grad_input = s.grad_out.data();
      }
      const float* grad_output = st < last ? s.grad_in.data() : nullptr;
      if (a.op == PipeOp::backward) {
        compute.backward(a.microbatch, a.chunk, grad_output, grad_input);
        release_slot(s);
        --inflight_;
      } else {
        // Split: the stashed input stays held until backward_weight, so it stays in flight too.
        compute.backward_input(a.microbatch, a.chunk, grad_output, grad_input);
      }
    } else {
      compute.backward_weight(a.microbatch, a.chunk);
      release_slot(s);
      --inflight_;
    }
  }
  stats_.compute_us += now_us() - t0;
}

// A CommRequest's destructor waits, so MPI never writes into freed memory. After a failure that
// wait may never end (the peer may have failed too), so the requests still in flight and their
// buffers go to an object that is never freed: the exception reaches the caller, which ends the
// job, instead of hanging here.
void PipelineExecutor::abandon() {
  broken_ = true;
  struct Abandoned {
    std::vector<Slot> slots;
    std::vector<Transit> sends;
  };
  static_cast<void>(new Abandoned{std::move(slots_), std::move(sends_)});
  slots_.clear();
  sends_.clear();
}

}  // namespace ff
