#pragma once
// Data folders for mixture and multi-shard tests, made from the tiny folder's tokens and tokenizer.
#include <cstdint>
#include <string>
#include <vector>

namespace ff::testkit {

// A fresh data folder with `tokenizer_from`'s tokenizer.model and the given tokens cut into
// `shards` train shards and 2 validation shards, listed in meta.json (train_shards, val_shards).
// Shards record `tokenizer_checksum`.
std::string make_sharded_folder(const std::string& tag, const std::string& tokenizer_from,
                                const std::vector<int32_t>& train, const std::vector<int32_t>& val, int shards,
                                uint64_t tokenizer_checksum);
// tiny_data_dir()'s tokens in 3 train shards: the same stream, so training on it equals the tiny folder.
const std::string& tiny_sharded_dir();
// A second folder for mixtures: tiny's tokenizer, its train and val tokens each reversed (a
// different text, the same vocabulary), in 3 train shards. Made once per test program.
const std::string& mixture_partner_dir();

}  // namespace ff::testkit
