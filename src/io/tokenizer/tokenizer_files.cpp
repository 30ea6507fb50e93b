#include "io/tokenizer/tokenizer_files.h"

#include <filesystem>
#include <stdexcept>

namespace ff {

namespace fs = std::filesystem;

const std::vector<std::string>& tokenizer_side_files() {
  static const std::vector<std::string> names = {"tokenizer_config.json", "special_tokens_map.json"};
  return names;
}

void copy_tokenizer_files(const std::string& tokenizer_path, const std::string& to_dir,
                          const std::string& stored_name) {
  const fs::path source(tokenizer_path), from = source.parent_path().empty() ? fs::path(".") : source.parent_path();
  std::error_code ec;
  if (fs::equivalent(from, to_dir, ec)) return;
  if (stored_name != "tokenizer.json" && stored_name != "tokenizer.model")
    throw std::logic_error("copy_tokenizer_files: stored_name must be tokenizer.json or tokenizer.model");
  for (const char* kind : {"tokenizer.json", "tokenizer.model"})
    if (stored_name != kind) fs::remove(fs::path(to_dir) / kind);
  fs::copy_file(source, fs::path(to_dir) / stored_name, fs::copy_options::overwrite_existing);
  for (const std::string& side : tokenizer_side_files()) {
    const fs::path there = from / side, here = fs::path(to_dir) / side;
    if (fs::is_regular_file(there, ec)) fs::copy_file(there, here, fs::copy_options::overwrite_existing);
    else fs::remove(here);
  }
}

}  // namespace ff
