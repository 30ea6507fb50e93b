#pragma once
// Runs one rank's action list from make_schedule (principle 9, docs/principles.md: the schedule is
// data, this only walks it) over the pipeline group, against the model through
// PipelineStageCompute.
//
// Overlap: every transfer is asynchronous. The receives that feed the next compute action are
// posted before the current one runs, so they travel while this rank computes; a send is waited
// only when its buffer is needed back (an activation's at its microbatch-chunk's backward, when
// the returned gradient proves the peer has it), when it is found complete, or at the end.
#include <cstddef>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "io/trace.h"
#include "parallel/pipeline/pipeline_buffers.h"
#include "parallel/pipeline/pipeline_schedule.h"

namespace ff {

// One rank's model chunks (chunk c = virtual stage c * p + rank). The executor owns every buffer
// passed in; the model only reads or writes through the pointers, within these lifetimes:
//   - input (forward) and grad_output (backward, backward_input) stay valid and unchanged until
//     the last backward action of that (microbatch, chunk) returns, i.e. backward, or
//     backward_weight when split: the model may keep the pointers as stashed tensors instead of
//     copying. They are null on the first virtual stage (the model reads its own tokens) and the
//     last (the model computes the loss and its gradient itself).
//   - output (forward) and grad_input (backward, backward_input) must be written completely before
//     the call returns; afterwards they belong to the executor. Null on the last / first stage.
// Gradients of the model's own parameters are the model's business (accumulated, as usual).
class PipelineStageCompute {
 public:
  virtual ~PipelineStageCompute() = default;
  // Floats in the activation entering / leaving `chunk`, the same for the gradient at that
  // boundary. Must equal what the neighbouring stage uses and stay fixed during a run. input_size
  // is never asked on the first virtual stage, output_size never on the last.
  virtual size_t input_size(int chunk) const = 0;
  virtual size_t output_size(int chunk) const = 0;
  virtual void forward(int microbatch, int chunk, const float* input, float* output) = 0;
  // Input and weight gradients together (every schedule except zb_h1).
  virtual void backward(int microbatch, int chunk, const float* grad_output, float* grad_input) = 0;
  // zb_h1 splits backward into these two; the defaults throw std::logic_error.
  virtual void backward_input(int microbatch, int chunk, const float* grad_output, float* grad_input);
  virtual void backward_weight(int microbatch, int chunk);
};

struct PipelineRunStats {
  int peak_inflight = 0;  // microbatch-chunks forwarded but not yet backwarded (W when split): the
                          // stashed activations, counted as schedule_sim counts them
  double compute_us = 0;  // in PipelineStageCompute calls
  double wait_us = 0;     // blocked on a receive or a send: this rank's bubble plus transfers
};

class PipelineExecutor {
 public:
  // `pipe` is the pipeline group (rank r = pipeline stage r); it must outlive the executor. Throws
  // std::invalid_argument if the spec is invalid, the group size is not spec.stages, or the
  // message tags would not fit. Set CommOptions::timeout_s on `pipe` to turn a dead peer into an
  // abort instead of a hang.
  PipelineExecutor(const PipeScheduleSpec& spec, const Comm& pipe, Tracer* tracer = nullptr);

  // One optimizer step's forwards and backwards. Every rank of the group must call it. An
  // exception from the model or the Comm propagates; the transfers still in flight are then
  // abandoned (never waited, their buffers never freed), because their peers may have failed
  // too and waiting could hang: the caller must end the job (cli/main does), and this executor
  // refuses further runs.
  void run(PipelineStageCompute& compute);

  // The tag of the message that carries microbatch's activation (grad = false) or gradient into
  // virtual stage receiving_stage: unique within a step, in [0, 2^29).
  static int message_tag(const PipeScheduleSpec& spec, int microbatch, int receiving_stage, bool grad);

  const std::vector<PipeAction>& actions() const { return actions_; }
  const PipelineRunStats& last_run() const { return stats_; }
  const BoundaryPoolStats& pool_stats() const { return pool_.stats(); }

 private:
  // One microbatch-chunk's receives and outputs during a run. Buffers are declared before the
  // requests writing into or reading from them, so a request is destroyed (waited) first.
  struct Slot {
    BoundaryBuffer act_in, grad_in, act_out, grad_out;
    CommRequest act_in_req, grad_in_req;
  };
  struct Transit {  // a posted send, with the buffer it reads
    BoundaryBuffer buffer;
    CommRequest req;
    int slot;  // the sending microbatch-chunk, for an activation; -1 for a gradient
    std::string name;
  };

  void walk(PipelineStageCompute& compute);
  void post_recv(const PipeAction& a, PipelineStageCompute& compute);
  void send(const PipeAction& a);
  void run_compute(const PipeAction& a, PipelineStageCompute& compute);
  void await(CommRequest& req, const std::string& what, const std::string& transfer);
  void finish_send(size_t i);
  void reap_sends();
  void release_slot(Slot& slot);
  void abandon();
  Slot& slot(const PipeAction& a);
  int stage(int chunk) const { return chunk * spec_.stages + rank_; }
  std::string name(const char* what, const PipeAction& a) const;

  PipeScheduleSpec spec_;
  const Comm& pipe_;
  Tracer* tracer_;
  int rank_;
  std::vector<PipeAction> actions_;
  std::vector<size_t> next_compute_;  // index of the first compute action after each action
  BoundaryPool pool_;
  std::vector<Slot> slots_;       // microbatch * v + chunk, this run's state
  std::vector<Transit> sends_;    // sends not yet known complete
  PipelineRunStats stats_;
  int inflight_ = 0;
  bool broken_ = false;
};

}  // namespace ff
