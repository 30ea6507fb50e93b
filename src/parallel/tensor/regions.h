#pragma once
// Megatron's communication regions (mappings.py): each forward comes with its fixed backward
// dual, side by side, so a layer that uses one in forward cannot forget the other in backward.
// Layers compose regions; only this file's functions talk to the tensor-parallel group.
//
//   region                  forward                         backward
//   copy_to_tp              identity                        all-reduce
//   reduce_from_tp          all-reduce                      identity
//   gather_from_sp          all-gather the sequence shards  reduce-scatter to them
//   reduce_scatter_to_sp    reduce-scatter to the shards    all-gather them
//
// Shards are the contiguous near-equal chunks of Comm's chunk_range: rank r owns chunk r of the
// n_full elements (rows [r * R, r * R + R) of an (N, width) buffer when t divides N).
// Functions that leave a result in place return where this rank's part of it is.
#include <cstddef>

#include "comm/comm.h"

namespace ff::regions {

inline ConstTypedPtr copy_to_tp_forward(ConstTypedPtr x) { return x; }
void copy_to_tp_backward(const Comm& tp, float* grad, size_t n);

void reduce_from_tp_forward(const Comm& tp, float* x, size_t n);
inline const float* reduce_from_tp_backward(const float* grad) { return grad; }

// full (n_full) = the shards of every rank, in rank order, in the shard's type.
void gather_from_sp_forward(const Comm& tp, ConstTypedPtr shard, TypedPtr full, size_t n_full);
// grad_full (n_full) summed over the group, reduce-scattered in place: returns this rank's chunk.
float* gather_from_sp_backward(const Comm& tp, float* grad_full, size_t n_full);

// x_full (n_full), this rank's partial sum, reduce-scattered in place: returns this rank's chunk.
float* reduce_scatter_to_sp_forward(const Comm& tp, float* x_full, size_t n_full);
// grad_full (n_full) = every rank's gradient shard, in rank order.
void reduce_scatter_to_sp_backward(const Comm& tp, const float* grad_shard, float* grad_full,
                                   size_t n_full);

}  // namespace ff::regions
