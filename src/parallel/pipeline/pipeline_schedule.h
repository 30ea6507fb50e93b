#pragma once
// Pipeline schedules as data (principle 9, docs/principles.md): a generator returns, per rank, the
// ordered list of compute and point-to-point actions; an executor only walks the list. Keeping the
// schedule a pure value lets it be checked (matching sends, no deadlock, bubble size) without MPI.
//
// Model split: with v chunks per rank the model is cut into p*v virtual stages; virtual stage s
// lives on rank s % p as chunk s / p (Megatron's interleaving), so consecutive stages are always on
// different ranks and every stage boundary is a real send/recv.
#include <string>
#include <vector>

#include "core/enum_table.h"

namespace ff {

enum class PipeSchedule { gpipe, one_f_one_b, interleaved, zb_h1 };
// gpipe | 1f1b | interleaved | zb-h1 (the paper's spelling; zb_h1 is taken too): the config key
// `schedule`, `fivefold schedule --schedule` and the planner's layouts.
const EnumTable<PipeSchedule>& pipe_schedule_names();

enum class PipeOp {
  forward,
  backward,         // full backward (input and weight gradients) in the unsplit schedules
  backward_input,   // ZB-H1 "B": the input gradient, on the critical path to the previous stage
  backward_weight,  // ZB-H1 "W": the weight gradient, local only, free to fill bubbles
  send_act,
  recv_act,
  send_grad,
  recv_grad
};

struct PipeAction {
  PipeOp op;
  int microbatch;
  int chunk;      // virtual stage index on this rank, 0..v-1
  int peer_rank;  // the other end of a send/recv; -1 for compute
};

struct PipeScheduleSpec {
  PipeSchedule kind;
  int stages;        // p: pipeline ranks, >= 2
  int microbatches;  // m per optimizer step
  int chunks = 1;    // v: model chunks per rank; 1 unless interleaved
};

// Throws std::invalid_argument whose message names the offending numbers.
void validate_schedule_spec(const PipeScheduleSpec& spec);

// What a training run asks beyond a valid spec: 1F1B with at least as many micro-batches as
// stages. With fewer, 1F1B never reaches its steady state and is GPipe under another name; the
// generators still make it (the schedule tests walk it), but the trainer refuses it and the
// planner does not propose it.
bool schedule_fills_pipeline(const PipeScheduleSpec& spec);

// One action list per rank. Each recv sits directly before the compute that consumes it and each
// send directly after the compute that produces it, so an executor can post them asynchronously.
std::vector<std::vector<PipeAction>> make_schedule(const PipeScheduleSpec& spec);

// The enumerator's name (zb_h1), as the simulator's and the SVG's labels show it.
const char* to_string(PipeSchedule kind);
const char* to_string(PipeOp op);

}  // namespace ff
