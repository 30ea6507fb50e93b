#include "io/tokenizer/hf_json.h"

#include <stdexcept>

namespace ff {

void refuse_hf_json(const HfJsonPlace& where, const nlohmann::json& value, const std::string& supported) {
  std::string shown = value.is_null() ? "missing" : value.dump();
  if (shown.size() > 120) shown = shown.substr(0, 117) + "...";
  throw std::runtime_error("tokenizer " + where.file + ": " + (where.path.empty() ? "the top level" : where.path) +
                           " is " + shown + ", which fivefold does not implement; supported: " + supported +
                           ". Use a tokenizer.json within that set (or a SentencePiece .model)");
}

const nlohmann::json* hf_field(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

std::string hf_string(const nlohmann::json& j, const char* key, const HfJsonPlace& where) {
  const nlohmann::json* v = hf_field(j, key);
  if (!v || !v->is_string()) refuse_hf_json(where.at(key), v ? *v : nlohmann::json(), "a string");
  return v->get<std::string>();
}

bool hf_bool(const nlohmann::json& j, const char* key, bool fallback, const HfJsonPlace& where) {
  const nlohmann::json* v = hf_field(j, key);
  if (!v) return fallback;
  if (!v->is_boolean()) refuse_hf_json(where.at(key), *v, "true or false");
  return v->get<bool>();
}

int64_t hf_int(const nlohmann::json& j, const char* key, const HfJsonPlace& where) {
  const nlohmann::json* v = hf_field(j, key);
  if (!v || !v->is_number_integer()) refuse_hf_json(where.at(key), v ? *v : nlohmann::json(), "an integer");
  return v->get<int64_t>();
}

std::string hf_type(const nlohmann::json& j, const HfJsonPlace& where) {
  if (!j.is_object()) refuse_hf_json(where, j, "an object with a \"type\"");
  return hf_string(j, "type", where);
}

}  // namespace ff
