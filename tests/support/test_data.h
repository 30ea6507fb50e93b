#pragma once
// Test corpora made on the spot: a deterministic pseudo-text with enough structure (a small
// vocabulary of words in verse-like lines) for a model to learn from in a few steps.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "temp_dirs.h"

namespace ff::testkit {

// Writes `lines` lines of text to `path`.
void write_corpus_text(const std::string& path, int lines, uint64_t seed);
// A prepared data folder (tokenizer + shards) under a fresh temporary directory, made once per
// test program and reused.
const std::string& tiny_data_dir();
// The one shard of a prepared folder's split ("train" or "val"): the test corpora are small enough
// that prepare writes one; more is a test setup error, thrown as such.
std::string only_shard(const std::string& dir, const std::string& split);
// A copy of tiny_data_dir (tokenizer and tokens) whose shards carry a loss mask: loss_mask(split
// "train" or "val", token count) returns one 0/1 byte per token (1: a loss target).
using LossMaskMaker = std::function<std::vector<uint8_t>(const std::string& split, size_t tokens)>;
std::string masked_copy_of_tiny_data(const LossMaskMaker& loss_mask);
// tiny_data_dir's tokenizer and tokens with a loss mask, as fine-tuning data would carry: the
// stream is cut into examples of a prompt (1 to 48 tokens, not targets) and a completion (1 to 16
// tokens, targets), so the masked-in fraction differs from row to row (whole rows may have none).
const std::string& tiny_masked_data_dir();
// The repository's configs/ folder.
std::string config_path(const std::string& name);

}  // namespace ff::testkit
