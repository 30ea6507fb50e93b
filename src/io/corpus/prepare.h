#pragma once
// `fivefold prepare`: corpus files in, everything training needs out, streamed.
//
// out_dir/tokenizer.model         the tokenizer: a SentencePiece model trained on the corpus (or
//   (or tokenizer.json)           its first tokenizer_sample_mb MB of documents), or a copy of the
//                                 .model or Hugging Face tokenizer.json given
// out_dir/train-00000.bin, ...    token shards, each document the tokenizer's document prefix
//                                 (BOS), its tokens, then its suffix or EOS
// out_dir/val-00000.bin, ...      the validation documents, the same way
// out_dir/meta.json               written last: the shards, counts, tokenizer, how it was made
//
// Documents are read by a reader thread, encoded by `threads` threads and written in corpus
// order, so memory is bounded whatever the corpus size and the output does not depend on the
// thread count. Everything is built in out_dir/.prepare-partial and moved in only when complete:
// an interrupted prepare leaves out_dir as it was, and nothing that looks complete.
//
// Validation takes whole documents: every (1 / val_fraction)-th document, evenly spread and
// deterministic, or the first val_docs documents; a requested split always gets one.
#include <cstdint>
#include <string>
#include <vector>

#include "io/corpus/document_reader.h"

namespace ff {

struct PrepareOptions {
  std::vector<std::string> inputs;  // files, folders, globs (io/corpus/input_paths.h)
  std::string out_dir;
  CorpusOptions corpus;
  std::string tokenizer;            // a SentencePiece .model or tokenizer.json to reuse; empty: train one
  int vocab_size = 4096;            // for a trained tokenizer
  uint64_t tokenizer_sample_bytes = uint64_t(256) << 20;  // text the tokenizer trains on, at most
  double val_fraction = 0.05;
  uint64_t val_docs = 0;            // > 0: the first val_docs documents, instead of the fraction
  int threads = 0;                  // encoder threads; 0: every core
  uint64_t shard_tokens = uint64_t(256) << 20;
  bool progress = false;            // redraw a progress line on stderr
};

struct PrepareResult {
  std::string tokenizer_path;
  std::string meta_path;
  std::vector<std::string> train_paths, val_paths;
  int vocab_size = 0;
  int bos_id = -1;
  int eos_id = -1;
  uint64_t train_documents = 0, val_documents = 0;
  uint64_t train_tokens = 0, val_tokens = 0;
  uint64_t empty_documents = 0, bad_records = 0;
  std::vector<std::string> first_bad_records;
  uint64_t input_bytes = 0;
  double tokenizer_seconds = 0;  // training the tokenizer (0 when one was given)
  double encode_seconds = 0;     // reading, encoding and writing the shards
};

PrepareResult prepare_corpus(const PrepareOptions& options);

// One text file, one line per document: what the tests' tiny corpora are.
PrepareResult prepare_corpus(const std::string& text_file, int vocab_size,
                             const std::string& out_dir, double val_fraction = 0.05);

}  // namespace ff
