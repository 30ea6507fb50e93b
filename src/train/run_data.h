#pragma once
// What a run reads from its data folder (`data`, written by `fivefold prepare`): the tokenizer
// that made the shards, whose vocabulary the model must have, and the train and validation token
// streams, checked against that vocabulary and tokenizer before any model memory is allocated.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "train/train_config.h"

namespace ff {

struct RunTokenizer {
  std::string path;  // DATA/tokenizer.model
  uint64_t checksum = 0;
  int vocab_size = 0;
  int bos_id = -1, eos_id = -1;  // -1: the tokenizer has none
};

// Reads DATA/tokenizer.model; a missing folder or file names the `prepare` command that makes it.
RunTokenizer open_run_tokenizer(const TrainConfig& c);

struct RunTokens {
  std::shared_ptr<const std::vector<int32_t>> train, val;
};

// DATA/train.bin and DATA/val.bin, refused (naming the file and the fix) when made by another
// tokenizer or holding an id outside the vocabulary.
RunTokens read_run_tokens(const TrainConfig& c, const RunTokenizer& tokenizer);

}  // namespace ff
