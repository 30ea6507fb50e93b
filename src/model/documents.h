#pragma once
// Documents inside a packed row of tokens (Megatron's packed sequences): where each document
// starts is read off the tokens themselves, so a shard needs no extra data. A new document starts
// at position t > 0 where tokens[t] is the tokenizer's BOS, or tokens[t-1] its EOS.
#include <cstdint>

namespace ff {

// The tokenizer's boundary ids; -1 where it has none.
struct DocumentBreaks {
  int32_t bos = -1, eos = -1;
};

// Whether a document starts at position t > 0 of the row (t = 0 always starts one).
bool document_starts_at(const int32_t* tokens, int t, const DocumentBreaks& breaks);

// For one row of T tokens: doc[t], the document's index in the row (0, 1, ...: monotone, what the
// attention kernels compare), and pos[t] = t minus its document's first position (RoPE's position).
void mark_documents(const int32_t* tokens, int T, const DocumentBreaks& breaks, int32_t* doc, int32_t* pos);

// Who tells the model the documents of a micro-batch (B, T) of tokens: doc (B, T) ids, monotone
// along each sequence and comparable wherever the attention compares them, and pos (B, T), each
// token's position in its document. The default reads each row on its own (mark_documents); a
// rank holding pieces of longer sequences (context parallelism) answers from the whole rows.
class DocumentMarker {
 public:
  virtual ~DocumentMarker() = default;
  virtual void mark(const int32_t* tokens, int B, int T, int32_t* doc, int32_t* pos) const = 0;
};

class RowDocumentMarker final : public DocumentMarker {
 public:
  explicit RowDocumentMarker(const DocumentBreaks& breaks) : breaks_(breaks) {}
  void mark(const int32_t* tokens, int B, int T, int32_t* doc, int32_t* pos) const override;

 private:
  DocumentBreaks breaks_;
};

}  // namespace ff
