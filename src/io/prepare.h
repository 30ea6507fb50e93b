#pragma once
// `fivefold prepare`: text file in, everything training needs out.
//
// out_dir/tokenizer.model  BPE tokenizer trained on the whole text file
// out_dir/train.bin        token shard: every training line as BOS, its tokens, "\n"
// out_dir/val.bin          the same for the last val_fraction of the lines
// out_dir/meta.json        vocab_size, token and line counts, source file, special ids
//
// Each line is a small document: BOS opens it, as in LLaMA, so a sampler that starts from BOS
// (plus an optional prompt) is in distribution, and the newline piece closes it, so decoded
// samples come out one verse (paragraph) per line, exactly as in the source, and sampling runs
// on across verses instead of stopping as it would at EOS. The split takes the last lines rather
// than a random subset, so it is deterministic and validation text never interleaves with
// training text inside a window.
#include <cstdint>
#include <string>

namespace ff {

struct PrepareResult {
  std::string tokenizer_path;
  std::string train_path;
  std::string val_path;
  std::string meta_path;
  int vocab_size = 0;
  int bos_id = -1;
  int eos_id = -1;
  int newline_id = -1;
  uint64_t train_lines = 0;
  uint64_t val_lines = 0;
  uint64_t train_tokens = 0;
  uint64_t val_tokens = 0;
  double tokenizer_seconds = 0;  // training the tokenizer
  double encode_seconds = 0;     // encoding and writing the shards
};

PrepareResult prepare_corpus(const std::string& text_file, int vocab_size,
                             const std::string& out_dir, double val_fraction = 0.05);

}  // namespace ff
