#pragma once
// Two tokenizer.json files small enough that every expected id can be worked out by hand
// (tests/io/test_hf_tokenizer.cpp shows the working): a GPT-2-style byte-level BPE and a
// Llama-2-style SentencePiece BPE with byte fallback. The fuzz loop mutates them too.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ff::testing {

// Byte-level alphabet: "Ġ" is the space, "Ċ" the newline.
inline nlohmann::json tiny_byte_level_tokenizer_json() {
  const std::vector<std::string> tokens = {"h",  "e",  "l",   "o",  "Ġ",  "w",  "r",  "d",   "ll",  "he",
                                           "llo", "Ġw", "or", "hello", "'", "S", "H", "E", "'S", "1",
                                           "2",  "3",  "4",   "5",  "34", "12", "123", "45", "Ġworld", "Ċ"};
  nlohmann::json vocab = nlohmann::json::object();
  for (size_t i = 0; i < tokens.size(); ++i) vocab[tokens[i]] = i;
  return {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens",
       {{{"id", 30}, {"content", "<|endoftext|>"}, {"single_word", false}, {"lstrip", false},
         {"rstrip", false}, {"normalized", true}, {"special", true}}}},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
      {"post_processor", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}}},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", ""},
        {"end_of_word_suffix", ""},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", false},
        {"vocab", vocab},
        {"merges", {"l l", "h e", "ll o", "Ġ w", "o r", "he llo", "' S", "3 4", "1 2", "12 3", "4 5"}}}},
  };
}

// Llama 3's split pattern.
inline const char* llama3_split_pattern() {
  return R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
}

// ids: <unk> 0, <s> 1, </s> 2, <0x00>..<0xFF> 3..258, "▁" 259, "h" 260, "i" 261, "▁h" 262, "▁hi" 263.
inline nlohmann::json tiny_sentencepiece_tokenizer_json() {
  nlohmann::json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    vocab[name] = 3 + b;
  }
  vocab["▁"] = 259, vocab["h"] = 260, vocab["i"] = 261, vocab["▁h"] = 262, vocab["▁hi"] = 263;
  nlohmann::json added = nlohmann::json::array();
  const char* specials[] = {"<unk>", "<s>", "</s>"};
  for (int i = 0; i < 3; ++i)
    added.push_back({{"id", i}, {"content", specials[i]}, {"single_word", false}, {"lstrip", false},
                     {"rstrip", false}, {"normalized", false}, {"special", true}});
  return {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer",
       {{"type", "Sequence"},
        {"normalizers",
         {{{"type", "Prepend"}, {"prepend", "▁"}},
          {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "▁"}}}}}},
      {"pre_tokenizer", nullptr},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"pair", nlohmann::json::array()},
        {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}},
      {"decoder",
       {{"type", "Sequence"},
        {"decoders",
         {{{"type", "Replace"}, {"pattern", {{"String", "▁"}}}, {"content", " "}},
          {{"type", "ByteFallback"}},
          {{"type", "Fuse"}},
          {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", "<unk>"},
        {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr},
        {"fuse_unk", true},
        {"byte_fallback", true},
        {"vocab", vocab},
        {"merges", nlohmann::json::array({nlohmann::json::array({"▁", "h"}), nlohmann::json::array({"▁h", "i"})})}}},
  };
}

}  // namespace ff::testing
