#include "parallel/context/context_parallel.h"

namespace ff {

ContextParallel::ContextParallel(const Mesh& mesh, int seq_len, CpComm comm, CpBalance balance, Tracer* tracer)
    : layout_(mesh.degrees().cp, mesh.rank(MeshGroup::cp), seq_len, balance),
      attention_(std::make_unique<ContextAttention>(mesh.group(MeshGroup::cp), layout_, comm, tracer)) {}

ModelConfig ContextParallel::local_model(const ModelConfig& full) const {
  ModelConfig m = full;
  m.seq_len = layout_.local_len();
  return m;
}

ContextParallel::Rows ContextParallel::take_rows(const int32_t* inputs, const int32_t* targets, int B) {
  const size_t n = size_t(B) * size_t(layout_.local_len());
  inputs_.resize(n), targets_.resize(n);
  layout_.take_rows(inputs, B, inputs_.data());
  layout_.take_rows(targets, B, targets_.data());
  return {inputs_.data(), targets_.data()};
}

}  // namespace ff
