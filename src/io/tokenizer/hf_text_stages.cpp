#include "io/tokenizer/hf_text_stages.h"

#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

#include <stdexcept>

namespace ff {

namespace {

// GPT-2's pre-tokenizer pattern, which ByteLevel uses when use_regex is true.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

std::string nfc(const std::string& text) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = icu::Normalizer2::getNFCInstance(status);
  if (U_FAILURE(status)) throw std::runtime_error(std::string("NFC normalizer unavailable: ") + u_errorName(status));
  const icu::UnicodeString u = icu::UnicodeString::fromUTF8(text);
  if (n->isNormalized(u, status) && U_SUCCESS(status)) return text;
  status = U_ZERO_ERROR;
  const icu::UnicodeString normalized = n->normalize(u, status);
  if (U_FAILURE(status)) throw std::runtime_error(std::string("NFC normalization failed: ") + u_errorName(status));
  std::string out;
  normalized.toUTF8String(out);
  return out;
}

// A Replace or Split "pattern": {"String": s} or {"Regex": r}.
struct Pattern {
  std::string text;
  bool regex;
};
Pattern read_pattern(const nlohmann::json& j, const HfJsonPlace& where) {
  const HfJsonPlace p = where.at("pattern");
  const nlohmann::json* v = hf_field(j, "pattern");
  if (v && v->is_object() && v->size() == 1) {
    if (const auto* s = hf_field(*v, "String"); s && s->is_string()) return {s->get<std::string>(), false};
    if (const auto* r = hf_field(*v, "Regex"); r && r->is_string()) return {r->get<std::string>(), true};
  }
  refuse_hf_json(p, v ? *v : nlohmann::json(), "{\"String\": text} or {\"Regex\": pattern}");
}

// The one character Metaspace puts for a space.
std::string read_replacement(const nlohmann::json& j, const HfJsonPlace& where) {
  std::string r = hf_string(j, "replacement", where);
  if (r.empty()) refuse_hf_json(where.at("replacement"), j["replacement"], "one character");
  return r;
}

}  // namespace

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  std::string out;
  out.reserve(s.size());
  size_t at = 0;
  for (size_t hit; (hit = s.find(from, at)) != std::string::npos; at = hit + from.size()) {
    out.append(s, at, hit - at);
    out += to;
  }
  out.append(s, at, std::string::npos);
  return out;
}

HfNormalizer::HfNormalizer(const nlohmann::json* spec, const HfJsonPlace& where) {
  if (spec) parse(*spec, where);
}

void HfNormalizer::parse(const nlohmann::json& spec, const HfJsonPlace& where) {
  const std::string type = hf_type(spec, where);
  if (type == "Sequence") {
    const nlohmann::json* list = hf_field(spec, "normalizers");
    if (!list || !list->is_array()) refuse_hf_json(where.at("normalizers"), list ? *list : nlohmann::json(), "a list");
    for (size_t i = 0; i < list->size(); ++i) parse((*list)[i], where.at("normalizers").at(i));
  } else if (type == "Prepend") {
    steps_.push_back({Step::prepend, "", hf_string(spec, "prepend", where)});
  } else if (type == "Replace") {
    const Pattern p = read_pattern(spec, where);
    if (p.regex) refuse_hf_json(where.at("pattern"), spec["pattern"], "a Replace normalizer with a String pattern");
    steps_.push_back({Step::replace, p.text, hf_string(spec, "content", where)});
  } else if (type == "NFC") {
    steps_.push_back({Step::nfc, "", ""});
  } else {
    refuse_hf_json(where.at("type"), type, "normalizer Sequence, Prepend, Replace (String pattern), NFC or null");
  }
}

std::string HfNormalizer::apply(std::string text) const {
  for (const Step& s : steps_) {
    switch (s.kind) {
      // Prepend leaves empty text empty, so an empty piece between two special tokens stays so.
      case Step::prepend: text = text.empty() ? text : s.to + text; break;
      case Step::replace: text = replace_all(std::move(text), s.from, s.to); break;
      case Step::nfc: text = nfc(text); break;
    }
  }
  return text;
}

HfPreTokenizer::HfPreTokenizer(const nlohmann::json* spec, const HfJsonPlace& where, bool jit) {
  if (spec) parse(*spec, where, jit);
}

void HfPreTokenizer::parse(const nlohmann::json& spec, const HfJsonPlace& where, bool jit) {
  const std::string type = hf_type(spec, where);
  // Later stages would split text already in the byte-level alphabet, which no shipped
  // tokenizer does and which this reader does not model.
  if (byte_level_)
    refuse_hf_json(where.at("type"), type, "ByteLevel as the last pre-tokenizer (nothing after it)");
  if (type == "Sequence") {
    const nlohmann::json* list = hf_field(spec, "pretokenizers");
    if (!list || !list->is_array())
      refuse_hf_json(where.at("pretokenizers"), list ? *list : nlohmann::json(), "a list");
    for (size_t i = 0; i < list->size(); ++i) parse((*list)[i], where.at("pretokenizers").at(i), jit);
  } else if (type == "Split") {
    const Pattern p = read_pattern(spec, where);
    const std::string behavior = hf_string(spec, "behavior", where);
    if (behavior != "Isolated") refuse_hf_json(where.at("behavior"), behavior, "Split behavior Isolated");
    if (hf_bool(spec, "invert", false, where)) refuse_hf_json(where.at("invert"), true, "Split invert false");
    Step s;
    s.kind = Step::split;
    s.regex = std::make_shared<RegexSplitter>(p.text, !p.regex, jit, "tokenizer " + where.file + ": " + where.path);
    steps_.push_back(std::move(s));
  } else if (type == "Digits") {
    // Rust's char::is_numeric is the Unicode N categories; individual digits are single
    // matches, contiguous ones a run.
    Step s;
    s.kind = Step::split;
    const bool individual = hf_bool(spec, "individual_digits", false, where);
    s.regex = std::make_shared<RegexSplitter>(individual ? R"(\p{N})" : R"(\p{N}+)", false, jit,
                                             "tokenizer " + where.file + ": " + where.path);
    steps_.push_back(std::move(s));
  } else if (type == "ByteLevel") {
    Step s;
    s.kind = Step::byte_level;
    s.add_prefix_space = hf_bool(spec, "add_prefix_space", true, where);
    if (hf_bool(spec, "use_regex", true, where))
      s.regex = std::make_shared<RegexSplitter>(kGpt2Pattern, false, jit, "tokenizer " + where.file + ": " + where.path);
    steps_.push_back(std::move(s));
    byte_level_ = true;
  } else if (type == "Metaspace") {
    Step s;
    s.kind = Step::metaspace;
    s.replacement = read_replacement(spec, where);
    if (const auto* scheme = hf_field(spec, "prepend_scheme")) {
      const std::string v = scheme->is_string() ? scheme->get<std::string>() : "";
      if (v == "always") s.prepend = Prepend::always;
      else if (v == "first") s.prepend = Prepend::first;
      else if (v == "never") s.prepend = Prepend::never;
      else refuse_hf_json(where.at("prepend_scheme"), *scheme, "prepend_scheme always, first or never");
    } else {
      s.prepend = hf_bool(spec, "add_prefix_space", true, where) ? Prepend::always : Prepend::never;
    }
    s.split_on_replacement = hf_bool(spec, "split", true, where);
    steps_.push_back(std::move(s));
  } else {
    refuse_hf_json(where.at("type"), type,
                   "pre-tokenizer Sequence, Split (Isolated, not inverted), Digits, ByteLevel, Metaspace or null");
  }
}

void HfPreTokenizer::run_step(const Step& s, std::vector<std::string>& pieces, bool at_text_start) const {
  std::vector<std::string> out;
  out.reserve(pieces.size() * 2);
  for (size_t i = 0; i < pieces.size(); ++i) {
    std::string& piece = pieces[i];
    switch (s.kind) {
      case Step::split: s.regex->split_isolated(piece, out); break;
      case Step::byte_level: {
        if (s.add_prefix_space && piece.rfind(' ', 0) != 0) piece.insert(0, 1, ' ');
        const size_t first = out.size();
        if (s.regex) s.regex->split_isolated(piece, out);
        else out.push_back(std::move(piece));
        for (size_t k = first; k < out.size(); ++k) out[k] = bytes_.encode(out[k]);
        break;
      }
      case Step::metaspace: {
        std::string text = replace_all(std::move(piece), " ", s.replacement);
        const bool prepend = s.prepend == Prepend::always || (s.prepend == Prepend::first && at_text_start && i == 0);
        if (prepend && text.rfind(s.replacement, 0) != 0) text.insert(0, s.replacement);
        if (!s.split_on_replacement) {
          out.push_back(std::move(text));
          break;
        }
        // Each replacement character starts a new piece (Hugging Face's MergedWithNext).
        size_t start = 0;
        for (size_t hit = text.find(s.replacement, 1); hit != std::string::npos;
             hit = text.find(s.replacement, hit + s.replacement.size())) {
          if (hit > start) out.push_back(text.substr(start, hit - start));
          start = hit;
        }
        if (start < text.size()) out.push_back(text.substr(start));
        break;
      }
    }
  }
  pieces = std::move(out);
}

void HfPreTokenizer::apply(std::string_view text, bool at_text_start, std::vector<std::string>& words) const {
  std::vector<std::string> pieces{std::string(text)};
  for (const Step& s : steps_) run_step(s, pieces, at_text_start);
  for (auto& p : pieces)
    if (!p.empty()) words.push_back(std::move(p));
}

}  // namespace ff
