#pragma once
// Test corpora made on the spot: a deterministic pseudo-text with enough structure (a small
// vocabulary of words in verse-like lines) for a model to learn from in a few steps.
#include <cstdint>
#include <string>

namespace ff::testkit {

// Writes `lines` lines of text to `path`.
void write_corpus_text(const std::string& path, int lines, uint64_t seed);
// A prepared data folder (tokenizer + shards) under a fresh temporary directory, made once per
// test program and reused.
const std::string& tiny_data_dir();
// A fresh empty temporary directory.
std::string temp_dir(const std::string& tag);
// The repository's configs/ folder.
std::string config_path(const std::string& name);

}  // namespace ff::testkit
