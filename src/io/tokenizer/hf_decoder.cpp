#include "io/tokenizer/hf_decoder.h"

#include "io/tokenizer/hf_text_stages.h"
#include "io/utf8.h"

namespace ff {

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// The byte a "<0xXX>" token stands for, or -1.
int fallback_byte(const std::string& t) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
  const int hi = hex_digit(t[3]), lo = hex_digit(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

}  // namespace

HfDecoder::HfDecoder(const nlohmann::json* spec, const HfJsonPlace& where) {
  if (spec) parse(*spec, where);
}

void HfDecoder::parse(const nlohmann::json& spec, const HfJsonPlace& where) {
  const std::string type = hf_type(spec, where);
  if (type == "Sequence") {
    const nlohmann::json* list = hf_field(spec, "decoders");
    if (!list || !list->is_array()) refuse_hf_json(where.at("decoders"), list ? *list : nlohmann::json(), "a list");
    for (size_t i = 0; i < list->size(); ++i) parse((*list)[i], where.at("decoders").at(i));
  } else if (type == "ByteLevel") {
    steps_.push_back({Step::byte_level, "", ""});
  } else if (type == "Replace") {
    const nlohmann::json* p = hf_field(spec, "pattern");
    const nlohmann::json* s = p ? hf_field(*p, "String") : nullptr;
    if (!s || !s->is_string()) refuse_hf_json(where.at("pattern"), p ? *p : nlohmann::json(), "{\"String\": text}");
    steps_.push_back({Step::replace, s->get<std::string>(), hf_string(spec, "content", where)});
  } else if (type == "ByteFallback") {
    steps_.push_back({Step::byte_fallback, "", ""});
  } else if (type == "Fuse") {
    steps_.push_back({Step::fuse, "", ""});
  } else if (type == "Strip") {
    Step s{Step::strip, hf_string(spec, "content", where), ""};
    if (utf8_char_length(static_cast<unsigned char>(s.from.empty() ? 0 : s.from[0])) != s.from.size())
      refuse_hf_json(where.at("content"), s.from, "one character");
    s.start = int(hf_int(spec, "start", where));
    s.stop = int(hf_int(spec, "stop", where));
    steps_.push_back(s);
  } else if (type == "Metaspace") {
    Step s{Step::metaspace, hf_string(spec, "replacement", where), " "};
    if (const auto* scheme = hf_field(spec, "prepend_scheme"))
      s.drop_first = !(scheme->is_string() && scheme->get<std::string>() == "never");
    else
      s.drop_first = hf_bool(spec, "add_prefix_space", true, where);
    steps_.push_back(s);
  } else {
    refuse_hf_json(where.at("type"), type, "decoder Sequence, ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace or null");
  }
}

std::string HfDecoder::decode(std::vector<std::string> tokens) const {
  for (const Step& s : steps_) {
    std::vector<std::string> out;
    switch (s.kind) {
      case Step::byte_level: {
        // All tokens become one text; a token outside the byte alphabet (an added token written
        // plainly) keeps its own bytes.
        std::string bytes;
        for (const auto& t : tokens) {
          const auto b = bytes_.decode(t);
          bytes += b ? *b : t;
        }
        out.push_back(utf8_lossy(bytes));
        break;
      }
      case Step::replace:
        for (const auto& t : tokens) out.push_back(replace_all(t, s.from, s.to));
        break;
      case Step::byte_fallback: {
        // A run of <0xXX> tokens is one byte string: valid UTF-8 stays, otherwise each byte
        // becomes U+FFFD.
        std::string run;
        size_t run_len = 0;
        const auto flush = [&] {
          if (run_len == 0) return;
          if (first_invalid_utf8(run) == std::string::npos) {
            out.push_back(run);
          } else {
            for (size_t k = 0; k < run_len; ++k) out.push_back("\xEF\xBF\xBD");
          }
          run.clear();
          run_len = 0;
        };
        for (const auto& t : tokens) {
          const int b = fallback_byte(t);
          if (b < 0) {
            flush();
            out.push_back(t);
          } else {
            run += char(b);
            ++run_len;
          }
        }
        flush();
        break;
      }
      case Step::fuse: {
        std::string all;
        for (const auto& t : tokens) all += t;
        out.push_back(std::move(all));
        break;
      }
      case Step::strip:
        for (std::string t : tokens) {
          for (int k = 0; k < s.start && t.compare(0, s.from.size(), s.from) == 0; ++k) t.erase(0, s.from.size());
          for (int k = 0; k < s.stop && t.size() >= s.from.size() &&
                          t.compare(t.size() - s.from.size(), s.from.size(), s.from) == 0;
               ++k)
            t.resize(t.size() - s.from.size());
          out.push_back(std::move(t));
        }
        break;
      case Step::metaspace:
        for (size_t i = 0; i < tokens.size(); ++i) {
          std::string t = tokens[i];
          if (i == 0 && s.drop_first && t.compare(0, s.from.size(), s.from) == 0) t.erase(0, s.from.size());
          out.push_back(replace_all(t, s.from, s.to));
        }
        break;
    }
    tokens = std::move(out);
  }
  std::string text;
  for (const auto& t : tokens) text += t;
  return text;
}

namespace {

void read_processor(const nlohmann::json& spec, const HfJsonPlace& where,
                    const std::function<int32_t(const std::string&)>& id_of, HfDocumentTokens& doc) {
  const std::string type = hf_type(spec, where);
  if (type == "Sequence") {
    const nlohmann::json* list = hf_field(spec, "processors");
    if (!list || !list->is_array()) refuse_hf_json(where.at("processors"), list ? *list : nlohmann::json(), "a list");
    for (size_t i = 0; i < list->size(); ++i) read_processor((*list)[i], where.at("processors").at(i), id_of, doc);
  } else if (type == "ByteLevel") {
    // Only adjusts offsets; adds no token.
  } else if (type == "TemplateProcessing") {
    const HfJsonPlace single = where.at("single");
    const nlohmann::json* items = hf_field(spec, "single");
    if (!items || !items->is_array()) refuse_hf_json(single, items ? *items : nlohmann::json(), "a list");
    const nlohmann::json* specials = hf_field(spec, "special_tokens");
    HfDocumentTokens here;
    bool seen_sequence = false;
    for (size_t i = 0; i < items->size(); ++i) {
      const nlohmann::json& item = (*items)[i];
      if (const auto* seq = hf_field(item, "Sequence")) {
        if (seen_sequence || hf_string(*seq, "id", single.at(i).at("Sequence")) != "A")
          refuse_hf_json(single.at(i), item, "a single-sequence template with one Sequence A");
        seen_sequence = true;
        continue;
      }
      const auto* special = hf_field(item, "SpecialToken");
      if (!special) refuse_hf_json(single.at(i), item, "template items SpecialToken or Sequence");
      const std::string name = hf_string(*special, "id", single.at(i).at("SpecialToken"));
      std::vector<int32_t> ids;
      const nlohmann::json* entry = specials ? hf_field(*specials, name.c_str()) : nullptr;
      if (entry) {
        const auto* list = hf_field(*entry, "ids");
        if (!list || !list->is_array()) refuse_hf_json(where.at("special_tokens").at(name).at("ids"), list ? *list : nlohmann::json(), "a list of ids");
        for (const auto& v : *list) {
          if (!v.is_number_integer()) refuse_hf_json(where.at("special_tokens").at(name).at("ids"), *list, "a list of ids");
          ids.push_back(v.get<int32_t>());
        }
      } else if (const int32_t id = id_of(name); id >= 0) {
        ids.push_back(id);
      } else {
        refuse_hf_json(single.at(i), item, "special tokens listed in special_tokens or the vocabulary");
      }
      auto& side = seen_sequence ? here.suffix : here.prefix;
      side.insert(side.end(), ids.begin(), ids.end());
    }
    if (!seen_sequence) refuse_hf_json(single, *items, "a single-sequence template with one Sequence A");
    // A later template wraps what the earlier ones made.
    doc.prefix.insert(doc.prefix.begin(), here.prefix.begin(), here.prefix.end());
    doc.suffix.insert(doc.suffix.end(), here.suffix.begin(), here.suffix.end());
  } else {
    refuse_hf_json(where.at("type"), type, "post-processor Sequence, TemplateProcessing, ByteLevel or null");
  }
}

}  // namespace

HfDocumentTokens read_hf_post_processor(const nlohmann::json* spec, const HfJsonPlace& where,
                                        const std::function<int32_t(const std::string&)>& id_of) {
  HfDocumentTokens doc;
  if (spec) read_processor(*spec, where, id_of, doc);
  return doc;
}

}  // namespace ff
