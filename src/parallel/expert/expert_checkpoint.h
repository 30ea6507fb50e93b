#pragma once
// Checkpoints stay layout-free under expert parallelism: a rank's layout holds only its experts
// (ModelParts::expert_first/count), and these turn its flat buffer into the same model parts with
// every expert (collective over ep) and back, so a run saved at one ep loads at any other.
#include "comm/comm.h"
#include "model/parameters.h"

namespace ff {

// Every tensor of `local` into `all` (laid out by all_layout: the same parts, all experts); each
// MoE block's expert segment gathered over ep, whose ranks hold consecutive, equal shares.
void assemble_experts(const Comm& ep, const ParamLayout& local_layout, const float* local,
                      const ParamLayout& all_layout, float* all);
// This rank's tensors (its experts among them) out of `all`.
void extract_experts(const ParamLayout& all_layout, const float* all, const ParamLayout& local_layout,
                     float* local);

}  // namespace ff
