#pragma once
// The streaming heart of prepare: one reader thread takes documents from the corpus in batches,
// `threads` encoder threads turn batches into token ids, and the calling thread consumes the
// results in corpus order. At most a fixed number of batches is alive at once (read, queued,
// encoding or waiting for its turn), so memory is bounded by the batch size and thread count,
// never by the corpus; and the output is the same for every thread count.
#include <cstdint>
#include <functional>

#include "io/corpus/document_reader.h"
#include "io/corpus/shard_series.h"

namespace ff {

// Where the reader stood when it finished a batch: what progress reports.
struct ReadProgress {
  uint64_t file_bytes = 0;
  uint64_t bad_records = 0;
  uint64_t empty_documents = 0;
};

struct EncodePipelineHooks {
  std::function<EncodedDocument(const Document&)> encode;  // thread-safe
  std::function<void(EncodedDocument&&)> consume;          // on the calling thread, in order
  std::function<void(const ReadProgress&)> batch_done;     // after each batch is consumed
};

// Runs until the reader is exhausted. An exception on any thread stops all of them and is
// rethrown here (the first one).
void run_encode_pipeline(DocumentReader& reader, int threads, const EncodePipelineHooks& hooks);

}  // namespace ff
