#pragma once
// A synthetic model and engine cluster the step model's tests predict on: 64 cores, GEMMs at 1e10 FLOP/s
// (bf16 inputs 2e10), streams at `bandwidth` bytes/s, every calibrated per-element kernel at
// `kernel_seconds` each, attention at 1 s per unit until a test sets its tables, free links.
#include "model/model_config.h"
#include "plan/cluster.h"

// A 4-layer model of width 64 with grouped-query attention (4 heads over 2 KV heads).
inline ff::ModelConfig synthetic_model() {
  ff::ModelConfig c;
  c.vocab_size = 256, c.dim = 64, c.n_layers = 4, c.n_heads = 4, c.n_kv_heads = 2, c.ffn_dim = 160, c.seq_len = 32;
  c.tied_embeddings = false;
  c.validate();
  return c;
}

inline ff::ClusterSpec synthetic_engine_cluster(double bandwidth = 1e30, double kernel_seconds = 1e-9) {
  ff::ClusterSpec cl;
  cl.name = "synthetic", cl.engine = true, cl.devices_per_node = 64, cl.memory_bytes = 1e15, cl.peak_flops = 1e12;
  cl.rates.cores = 64;
  cl.rates.gemm_fp32.add(1, 1, 1e10);
  cl.rates.gemm_bf16.add(1, 1, 2e10);
  cl.rates.attention.points = {{1, 1.0}};
  cl.rates.bandwidth.points = {{1, bandwidth}};
  for (ff::RateCurve* k : {&cl.rates.optimizer, &cl.rates.rmsnorm, &cl.rates.rope, &cl.rates.swiglu,
                           &cl.rates.cross_entropy, &cl.rates.weight_copy})
    k->points = {{1, kernel_seconds}};
  cl.same_node = cl.across_nodes = ff::LinkClass::uniform(1e-30, 1e30);
  return cl;
}
