#include "io/tokenizer/hf_tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "io/checksum.h"
#include "io/utf8.h"

namespace ff {

namespace {

// More ids than any released vocabulary (the largest hold about 260k); a larger one is a damaged
// file, refused before the id tables are allocated.
constexpr int64_t kMaxVocabulary = 1 << 22;

// End-of-text tokens in the order they are preferred when the post-processor adds none: the
// token a model trained with this tokenizer ends documents (and generations) with.
const char* const kEndOfTextNames[] = {"<|end_of_text|>", "</s>", "<|endoftext|>"};

std::string read_file_bytes(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw std::runtime_error("tokenizer " + path + " not found; pass the path of an existing tokenizer.json");
  std::ifstream in(path, std::ios::binary);
  std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (!in.good() && !in.eof()) throw std::runtime_error("tokenizer " + path + " cannot be read; check its permissions");
  return bytes;
}

int32_t checked_id(const nlohmann::json& v, const HfJsonPlace& where) {
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= kMaxVocabulary)
    refuse_hf_json(where, v, "an id from 0 to " + std::to_string(kMaxVocabulary - 1));
  return v.get<int32_t>();
}

// One merge: "a b" or ["a", "b"].
std::pair<std::string, std::string> merge_halves(const nlohmann::json& m, const HfJsonPlace& where) {
  if (m.is_string()) {
    const std::string s = m.get<std::string>();
    const size_t space = s.find(' ');
    if (space != std::string::npos && s.find(' ', space + 1) == std::string::npos && space > 0 &&
        space + 1 < s.size())
      return {s.substr(0, space), s.substr(space + 1)};
  } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
    return {m[0].get<std::string>(), m[1].get<std::string>()};
  }
  refuse_hf_json(where, m, "merges written \"a b\" or [\"a\", \"b\"]");
}

}  // namespace

HfTokenizer::HfTokenizer(const std::string& path, bool jit) : path_(path) {
  const std::string bytes = read_file_bytes(path);
  checksum_ = checksum64(bytes.data(), bytes.size());
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(bytes);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::runtime_error("tokenizer " + path + " is not valid JSON (" + e.what() +
                             "); pass an intact tokenizer.json");
  }
  const HfJsonPlace top{path_, ""};
  if (!root.is_object()) refuse_hf_json(top, root, "a tokenizer.json object");
  for (const char* unsupported : {"truncation", "padding"})
    if (const auto* v = hf_field(root, unsupported)) refuse_hf_json(top.at(unsupported), *v, std::string(unsupported) + " null");
  const nlohmann::json* model = hf_field(root, "model");
  if (!model) refuse_hf_json(top.at("model"), nullptr, "a BPE model");
  read_model(*model, top.at("model"));
  read_added_tokens(root, top.at("added_tokens"));
  // Released vocabularies number their tokens densely; ids far past the count are damage.
  const size_t named = model_->vocab().size() + added_.size();
  if (token_text_.size() > 2 * named + 1024)
    refuse_hf_json(top.at("model").at("vocab"), int64_t(token_text_.size()) - 1,
                   "ids numbered densely (the largest id is far beyond the " + std::to_string(named) + " tokens)");
  normalizer_ = std::make_unique<HfNormalizer>(hf_field(root, "normalizer"), top.at("normalizer"));
  pre_tokenizer_ = std::make_unique<HfPreTokenizer>(hf_field(root, "pre_tokenizer"), top.at("pre_tokenizer"), jit);
  decoder_ = std::make_unique<HfDecoder>(hf_field(root, "decoder"), top.at("decoder"));
  document_ = read_hf_post_processor(hf_field(root, "post_processor"), top.at("post_processor"),
                                     [this](const std::string& t) { return id_of_text(t); });
  for (int32_t id : document_.prefix)
    if (id < 0 || id >= vocab_size() || !has_id_[size_t(id)]) refuse_hf_json(top.at("post_processor"), id, "ids in the vocabulary");
  for (int32_t id : document_.suffix)
    if (id < 0 || id >= vocab_size() || !has_id_[size_t(id)]) refuse_hf_json(top.at("post_processor"), id, "ids in the vocabulary");
  // A token matched on normalized text would need a second matching pass after normalization.
  if (!normalizer_->empty()) {
    const nlohmann::json& list = root["added_tokens"];
    for (size_t i = 0; i < list.size(); ++i)
      if (hf_bool(list[i], "normalized", false, top.at("added_tokens").at(i)))
        refuse_hf_json(top.at("added_tokens").at(i).at("normalized"), true,
                       "normalized false for added tokens when the tokenizer has a normalizer");
  }

  kind_ = pre_tokenizer_->byte_level() ? TokenizerKind::hf_byte_level_bpe : TokenizerKind::hf_sentencepiece_bpe;
  if (kind_ == TokenizerKind::hf_byte_level_bpe) {
    newline_id_ = model_->id_of(ByteLevelMap().char_of('\n'));
  } else {
    newline_id_ = model_->id_of("\n");
    if (newline_id_ < 0) newline_id_ = model_->id_of("<0x0A>");
  }
  bos_id_ = document_.prefix.empty() ? -1 : document_.prefix.front();
  eos_id_ = document_.suffix.empty() ? -1 : document_.suffix.back();
  for (const char* name : kEndOfTextNames) {
    if (eos_id_ >= 0) break;
    for (const AddedToken& a : added_)
      if (a.content == name) eos_id_ = a.id;
  }
}

HfTokenizer::~HfTokenizer() = default;

void HfTokenizer::read_model(const nlohmann::json& model, const HfJsonPlace& where) {
  const std::string type = hf_type(model, where);
  if (type != "BPE") refuse_hf_json(where.at("type"), type, "model type BPE");
  if (const auto* d = hf_field(model, "dropout"); d && !(d->is_number() && d->get<double>() == 0.0))
    refuse_hf_json(where.at("dropout"), *d, "dropout null (deterministic encoding)");
  for (const char* affix : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (const auto* v = hf_field(model, affix); v && !(v->is_string() && v->get<std::string>().empty()))
      refuse_hf_json(where.at(affix), *v, std::string(affix) + " null");

  const nlohmann::json* vocab_json = hf_field(model, "vocab");
  if (!vocab_json || !vocab_json->is_object())
    refuse_hf_json(where.at("vocab"), vocab_json ? *vocab_json : nlohmann::json(), "an object of token -> id");
  StringMap<int32_t> vocab;
  vocab.reserve(vocab_json->size());
  for (const auto& [token, id] : vocab_json->items()) vocab[token] = checked_id(id, where.at("vocab").at(token));
  for (const auto& [token, id] : vocab) {
    if (size_t(id) >= token_text_.size()) token_text_.resize(size_t(id) + 1), has_id_.resize(size_t(id) + 1);
    token_text_[size_t(id)] = token;
    has_id_[size_t(id)] = true;
  }

  const nlohmann::json* merges_json = hf_field(model, "merges");
  std::vector<std::pair<int32_t, int32_t>> merges;
  std::vector<int32_t> merged;
  if (merges_json && !merges_json->is_array()) refuse_hf_json(where.at("merges"), *merges_json, "a list of merges");
  const auto lookup = [&](const std::string& t, const HfJsonPlace& at, const nlohmann::json& shown) {
    const auto it = vocab.find(t);
    if (it == vocab.end()) refuse_hf_json(at, shown, "merges whose halves and result are in the vocabulary (\"" + t + "\" is not)");
    return it->second;
  };
  if (merges_json) {
    merges.reserve(merges_json->size());
    merged.reserve(merges_json->size());
    for (size_t i = 0; i < merges_json->size(); ++i) {
      const HfJsonPlace at = where.at("merges").at(i);
      const auto [a, b] = merge_halves((*merges_json)[i], at);
      merges.emplace_back(lookup(a, at, (*merges_json)[i]), lookup(b, at, (*merges_json)[i]));
      merged.push_back(lookup(a + b, at, (*merges_json)[i]));
    }
  }
  BpeOptions options;
  options.byte_fallback = hf_bool(model, "byte_fallback", false, where);
  options.fuse_unk = hf_bool(model, "fuse_unk", false, where);
  options.ignore_merges = hf_bool(model, "ignore_merges", false, where);
  if (const auto* unk = hf_field(model, "unk_token")) {
    if (!unk->is_string()) refuse_hf_json(where.at("unk_token"), *unk, "a token string or null");
    options.unk_id = lookup(unk->get<std::string>(), where.at("unk_token"), *unk);
  }
  model_ = std::make_unique<BpeModel>(std::move(vocab), merges, merged, options);
}

void HfTokenizer::read_added_tokens(const nlohmann::json& root, const HfJsonPlace& where) {
  const nlohmann::json* list = hf_field(root, "added_tokens");
  if (!list) return;
  if (!list->is_array()) refuse_hf_json(where, *list, "a list of added tokens");
  for (size_t i = 0; i < list->size(); ++i) {
    const nlohmann::json& t = (*list)[i];
    const HfJsonPlace at = where.at(i);
    if (!t.is_object()) refuse_hf_json(at, t, "an added token object");
    if (hf_bool(t, "single_word", false, at)) refuse_hf_json(at.at("single_word"), true, "single_word false");
    AddedToken a{hf_string(t, "content", at), checked_id(t.contains("id") ? t["id"] : nlohmann::json(), at.at("id")),
                 hf_bool(t, "lstrip", false, at), hf_bool(t, "rstrip", false, at)};
    if (a.content.empty() || first_invalid_utf8(a.content) != std::string::npos)
      refuse_hf_json(at.at("content"), t["content"], "non-empty UTF-8 text");
    if (size_t(a.id) >= token_text_.size()) token_text_.resize(size_t(a.id) + 1), has_id_.resize(size_t(a.id) + 1);
    token_text_[size_t(a.id)] = a.content;
    has_id_[size_t(a.id)] = true;
    added_.push_back(std::move(a));
  }
  added_by_first_byte_.assign(256, {});
  for (size_t i = 0; i < added_.size(); ++i)
    added_by_first_byte_[static_cast<unsigned char>(added_[i].content[0])].push_back(i);
  for (auto& bucket : added_by_first_byte_)
    std::stable_sort(bucket.begin(), bucket.end(),
                     [&](size_t x, size_t y) { return added_[x].content.size() > added_[y].content.size(); });
}

int32_t HfTokenizer::id_of_text(const std::string& text) const {
  for (const AddedToken& a : added_)
    if (a.content == text) return a.id;
  return model_->id_of(text);
}

HfTokenizer::AddedMatch HfTokenizer::next_added(std::string_view text, size_t from) const {
  if (added_.empty()) return {std::string_view::npos, 0, -1};
  for (size_t i = from; i < text.size(); ++i) {
    for (size_t k : added_by_first_byte_[static_cast<unsigned char>(text[i])]) {
      const AddedToken& a = added_[k];
      if (text.compare(i, a.content.size(), a.content) != 0) continue;
      size_t begin = i, end = i + a.content.size();
      // lstrip/rstrip: the token takes the whitespace beside it with it.
      while (a.lstrip && begin > from) {
        size_t prev = begin - 1;
        while (prev > from && (static_cast<unsigned char>(text[prev]) & 0xC0) == 0x80) --prev;
        if (!is_unicode_whitespace(decode_utf8_at(text, prev))) break;
        begin = prev;
      }
      while (a.rstrip && end < text.size() && is_unicode_whitespace(decode_utf8_at(text, end)))
        end += utf8_char_length(static_cast<unsigned char>(text[end]));
      return {begin, end, a.id};
    }
  }
  return {std::string_view::npos, 0, -1};
}

void HfTokenizer::encode_text(std::string_view text, bool at_text_start, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  std::vector<std::string> words;
  if (normalizer_->empty()) {
    pre_tokenizer_->apply(text, at_text_start, words);
  } else {
    const std::string normalized = normalizer_->apply(std::string(text));
    pre_tokenizer_->apply(normalized, at_text_start, words);
  }
  for (const std::string& w : words) {
    if (cache_.find(w, out)) continue;
    const size_t first = out.size();
    model_->encode_word(w, out);
    cache_.remember(w, out.data() + first, out.size() - first);
  }
}

std::vector<int32_t> HfTokenizer::encode(std::string_view text) const {
  if (const size_t bad = first_invalid_utf8(text); bad != std::string_view::npos)
    throw std::runtime_error("tokenizer " + path_ + ": the text is not valid UTF-8 at byte " + std::to_string(bad) +
                             "; convert the input to UTF-8 first");
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  size_t pos = 0;
  for (;;) {
    const AddedMatch m = next_added(text, pos);
    if (m.begin == std::string_view::npos) {
      encode_text(text.substr(pos), pos == 0, out);
      return out;
    }
    encode_text(text.substr(pos, m.begin - pos), pos == 0, out);
    out.push_back(m.id);
    pos = m.end;
  }
}

std::string HfTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size() || !has_id_[size_t(id)])
      throw std::runtime_error("tokenizer " + path_ + ": cannot decode id " + std::to_string(id) +
                               ", it is not in the vocabulary of " + std::to_string(vocab_size()) +
                               " ids; check the ids came from this tokenizer");
    tokens.push_back(token_text_[size_t(id)]);
  }
  return decoder_->decode(std::move(tokens));
}

}  // namespace ff
