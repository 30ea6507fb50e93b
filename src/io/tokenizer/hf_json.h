#pragma once
// Reading a tokenizer.json: every refusal names the file, the JSON path, the value found and
// what fivefold supports there, so a user can tell at once whether their tokenizer can be used.
#include <nlohmann/json.hpp>
#include <string>

namespace ff {

struct HfJsonPlace {
  const std::string& file;
  std::string path;  // e.g. pre_tokenizer.pretokenizers[1].behavior
  HfJsonPlace at(const std::string& key) const { return {file, path.empty() ? key : path + "." + key}; }
  HfJsonPlace at(size_t index) const { return {file, path + "[" + std::to_string(index) + "]"}; }
};

[[noreturn]] void refuse_hf_json(const HfJsonPlace& where, const nlohmann::json& value, const std::string& supported);

// j[key] when present and not null, else nullptr.
const nlohmann::json* hf_field(const nlohmann::json& j, const char* key);
// The typed value of j[key], refused by name when missing or of another type.
std::string hf_string(const nlohmann::json& j, const char* key, const HfJsonPlace& where);
bool hf_bool(const nlohmann::json& j, const char* key, bool fallback, const HfJsonPlace& where);
int64_t hf_int(const nlohmann::json& j, const char* key, const HfJsonPlace& where);
// j's "type", refused when absent.
std::string hf_type(const nlohmann::json& j, const HfJsonPlace& where);

}  // namespace ff
