#pragma once
// The stages of a tokenizer.json after the model: the decoder that turns token texts back into
// text (ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace, Sequence) and the
// post-processor's tokens around a document (TemplateProcessing, ByteLevel, Sequence).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "io/tokenizer/byte_level_map.h"
#include "io/tokenizer/hf_json.h"

namespace ff {

class HfDecoder {
 public:
  HfDecoder(const nlohmann::json* spec, const HfJsonPlace& where);
  std::string decode(std::vector<std::string> tokens) const;

 private:
  struct Step {
    enum Kind { byte_level, replace, byte_fallback, fuse, strip, metaspace } kind;
    std::string from, to;     // replace; metaspace: from is the replacement character
    int start = 0, stop = 0;  // strip
    bool drop_first = false;  // metaspace: the prefix it added comes off the first token
  };
  void parse(const nlohmann::json& spec, const HfJsonPlace& where);
  std::vector<Step> steps_;
  ByteLevelMap bytes_;
};

struct HfDocumentTokens {
  std::vector<int32_t> prefix, suffix;
};
// The ids a single sequence gets before and after its tokens. id_of resolves a token's text
// (-1 when unknown).
HfDocumentTokens read_hf_post_processor(const nlohmann::json* spec, const HfJsonPlace& where,
                                        const std::function<int32_t(const std::string&)>& id_of);

}  // namespace ff
