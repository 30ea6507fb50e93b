#pragma once
// The text stages of a tokenizer.json before the model: its normalizer (Prepend, Replace of a
// string, NFC, Sequence) and its pre-tokenizer (Split with an Isolated regex or string, Digits,
// ByteLevel, Metaspace, Sequence). Anything else is refused by name when the file is read.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "io/tokenizer/byte_level_map.h"
#include "io/tokenizer/hf_json.h"
#include "io/tokenizer/regex_splitter.h"

namespace ff {

// s with every occurrence of from (non-empty) replaced by to, scanning left to right.
std::string replace_all(std::string s, const std::string& from, const std::string& to);

class HfNormalizer {
 public:
  HfNormalizer(const nlohmann::json* spec, const HfJsonPlace& where);
  bool empty() const { return steps_.empty(); }
  std::string apply(std::string text) const;

 private:
  struct Step {
    enum Kind { prepend, replace, nfc } kind;
    std::string from, to;  // prepend: to; replace: from -> to
  };
  void parse(const nlohmann::json& spec, const HfJsonPlace& where);
  std::vector<Step> steps_;
};

class HfPreTokenizer {
 public:
  HfPreTokenizer(const nlohmann::json* spec, const HfJsonPlace& where, bool jit);
  // Splits text into the words the model encodes one by one; with a ByteLevel stage the words
  // come out in the byte-level alphabet. at_text_start: text begins the input (Metaspace's
  // prepend_scheme "first").
  void apply(std::string_view text, bool at_text_start, std::vector<std::string>& words) const;
  bool byte_level() const { return byte_level_; }

 private:
  enum class Prepend { always, first, never };
  struct Step {
    enum Kind { split, byte_level, metaspace } kind = split;
    std::shared_ptr<const RegexSplitter> regex;  // split; byte_level with use_regex
    bool add_prefix_space = false;               // byte_level
    std::string replacement;                     // metaspace
    Prepend prepend = Prepend::always;           // metaspace
    bool split_on_replacement = true;            // metaspace
  };
  void parse(const nlohmann::json& spec, const HfJsonPlace& where, bool jit);
  void run_step(const Step& s, std::vector<std::string>& pieces, bool at_text_start) const;
  std::vector<Step> steps_;
  bool byte_level_ = false;
  ByteLevelMap bytes_;
};

}  // namespace ff
