#include "parallel/context/context_parallel.h"

#include <algorithm>
#include <cstddef>
#include <stdexcept>

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
  if (rows_marker_) {
    const size_t whole = size_t(B) * size_t(layout_.seq_len());
    std::vector<int32_t> doc(whole), pos(whole);
    rows_marker_->mark(inputs, B, layout_.seq_len(), doc.data(), pos.data());
    doc_.resize(n), pos_.resize(n);
    layout_.take_rows(doc.data(), B, doc_.data());
    layout_.take_rows(pos.data(), B, pos_.data());
  }
  return {inputs_.data(), targets_.data()};
}

void ContextParallel::set_document_breaks(const DocumentBreaks& breaks) {
  rows_marker_ = std::make_unique<RowDocumentMarker>(breaks);
}

void ContextParallel::mark(const int32_t* tokens, int B, int T, int32_t* doc, int32_t* pos) const {
  const ptrdiff_t at = tokens - inputs_.data();
  const size_t n = size_t(B) * size_t(T);
  if (!rows_marker_ || T != layout_.local_len() || at < 0 || size_t(at) + n > doc_.size())
    throw std::logic_error("context parallel documents: asked for rows take_rows did not hand out");
  std::copy(doc_.begin() + at, doc_.begin() + at + ptrdiff_t(n), doc);
  std::copy(pos_.begin() + at, pos_.begin() + at + ptrdiff_t(n), pos);
}

}  // namespace ff
