#include "io/tokens/data_folder.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace ff {

namespace fs = std::filesystem;

namespace {

const char* const kRedo = "re-run `fivefold prepare` for that folder";

std::string existing_shard(const fs::path& dir, const std::string& name, const std::string& listed_in) {
  const fs::path p = dir / name;
  if (!fs::is_regular_file(p))
    throw std::runtime_error("data file '" + p.string() + "' is missing" + listed_in +
                             "; run `fivefold prepare --text FILE --vocab N --out " + dir.string() +
                             "` first (config key 'data' names that folder), or " + kRedo +
                             " if it was moved or deleted in part");
  return p.string();
}

std::vector<std::string> listed_shards(const nlohmann::json& meta, const char* key, const fs::path& dir,
                                       const std::string& meta_path) {
  const nlohmann::json& list = meta.at(key);
  if (!list.is_array() || list.empty())
    throw std::runtime_error("data folder meta " + meta_path + ": '" + key +
                             "' must be a non-empty list of shard file names; " + kRedo);
  std::vector<std::string> paths;
  for (const auto& entry : list) {
    // A name inside the folder only: a list must not reach outside the folder it describes.
    if (!entry.is_string() || entry.get<std::string>().empty() ||
        fs::path(entry.get<std::string>()).has_parent_path())
      throw std::runtime_error("data folder meta " + meta_path + ": '" + key + "' holds " + entry.dump() +
                               ", not a shard file name in the folder; " + kRedo);
    paths.push_back(existing_shard(dir, entry.get<std::string>(), " (listed in " + meta_path + " '" + key + "')"));
  }
  return paths;
}

}  // namespace

DataFolderShards data_folder_shards(const std::string& dir_name) {
  const fs::path dir(dir_name), meta_path = dir / "meta.json";
  nlohmann::json meta = nlohmann::json::object();
  if (fs::is_regular_file(meta_path)) {
    std::ifstream in(meta_path);
    meta = nlohmann::json::parse(in, nullptr, false);
    if (meta.is_discarded() || !meta.is_object())
      throw std::runtime_error("data folder meta " + meta_path.string() + " is not a JSON object; " + kRedo);
  }
  DataFolderShards s;
  const bool listed = meta.contains("train_shards") || meta.contains("val_shards");
  if (listed && !(meta.contains("train_shards") && meta.contains("val_shards")))
    throw std::runtime_error("data folder meta " + meta_path.string() +
                             " lists only one of 'train_shards' and 'val_shards'; " + kRedo);
  if (listed) {
    s.train = listed_shards(meta, "train_shards", dir, meta_path.string());
    s.val = listed_shards(meta, "val_shards", dir, meta_path.string());
  } else {
    s.train = {existing_shard(dir, "train.bin", "")};
    s.val = {existing_shard(dir, "val.bin", "")};
  }
  return s;
}

}  // namespace ff
