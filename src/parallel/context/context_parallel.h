#pragma once
// Context parallelism as the trainer uses it: the cp group's layout of each sequence, the
// attention operation handed to the model's hooks, the model shape of one rank (seq_len / cp rows
// per sequence, so activations are 1/cp of the serial run's), and each rank's rows of a batch.
//
// Nothing else changes: the loss stays the sum over this rank's tokens, scaled by 1/(G·T) with
// the global T, so the sum over dp × cp is the global mean; dense parameters average and shard
// over dp_cp (their parameter group's communicator), which sees every token exactly once.
#include <memory>
#include <string>
#include <vector>

#include "comm/mesh.h"
#include "io/trace.h"
#include "model/documents.h"
#include "model/model_config.h"
#include "parallel/context/context_attention.h"
#include "parallel/context/context_layout.h"

namespace ff {

// Also the model's DocumentMarker under document masks: take_rows reads the documents off the
// whole rows, and mark answers for the rows it handed out (ids numbered along the whole
// sequence, positions within each document), which a rank's own tokens could not tell.
class ContextParallel final : public DocumentMarker {
 public:
  ContextParallel(const Mesh& mesh, int seq_len, CpComm comm, CpBalance balance, Tracer* tracer);
  const ContextLayout& layout() const { return layout_; }
  ContextAttention& attention() { return *attention_; }
  // The model one rank runs: seq_len / cp rows per sequence (RoPE positions set separately).
  ModelConfig local_model(const ModelConfig& full) const;
  // This rank's rows of B whole sequences of inputs and targets: pointers valid until the next call.
  struct Rows {
    const int32_t *inputs, *targets;
  };
  Rows take_rows(const int32_t* inputs, const int32_t* targets, int B);
  // Document masks: the tokenizer's boundary ids (model/documents.h).
  void set_document_breaks(const DocumentBreaks& breaks);
  // tokens: rows take_rows returned (B sequences from any of them, T = the local length).
  void mark(const int32_t* tokens, int B, int T, int32_t* doc, int32_t* pos) const override;

 private:
  ContextLayout layout_;
  std::unique_ptr<ContextAttention> attention_;
  std::vector<int32_t> inputs_, targets_;
  std::unique_ptr<RowDocumentMarker> rows_marker_;  // set: document masks
  std::vector<int32_t> doc_, pos_;                  // inputs_'s rows' documents
};

}  // namespace ff
