#include "model/documents.h"

#include <cstddef>

namespace ff {

bool document_starts_at(const int32_t* tokens, int t, const DocumentBreaks& breaks) {
  if (t <= 0) return t == 0;
  return (breaks.bos >= 0 && tokens[t] == breaks.bos) || (breaks.eos >= 0 && tokens[t - 1] == breaks.eos);
}

void mark_documents(const int32_t* tokens, int T, const DocumentBreaks& breaks, int32_t* doc, int32_t* pos) {
  int32_t id = 0, start = 0;
  for (int t = 0; t < T; ++t) {
    if (t > 0 && document_starts_at(tokens, t, breaks)) ++id, start = t;
    doc[t] = id;
    pos[t] = t - start;
  }
}

void RowDocumentMarker::mark(const int32_t* tokens, int B, int T, int32_t* doc, int32_t* pos) const {
  for (int b = 0; b < B; ++b) {
    const size_t r = size_t(b) * size_t(T);
    mark_documents(tokens + r, T, breaks_, doc + r, pos + r);
  }
}

}  // namespace ff
