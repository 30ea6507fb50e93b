#include "model/documents.h"

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

}  // namespace ff
