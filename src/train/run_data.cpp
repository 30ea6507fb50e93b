#include "train/run_data.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

#include "io/tokens/data_folder.h"
#include "io/tokens/token_shard.h"
#include "io/tokens/token_shard_reader.h"
#include "io/tokens/token_stream.h"
#include "io/tokenizer/tokenizer.h"

namespace ff {

namespace fs = std::filesystem;

namespace {

std::string data_file(const std::string& dir, const char* name) {
  fs::path p = fs::path(dir) / name;
  if (!fs::exists(p))
    throw std::runtime_error(fmt::format(
        "data file '{}' is missing; run `fivefold prepare --text FILE --vocab N --out {}` first "
        "(config key 'data' names that folder)",
        p.string(), dir));
  return p.string();
}

[[noreturn]] void refuse_other_tokenizer(const std::string& dir, const std::string& what, uint64_t checksum,
                                         const std::string& first_dir, const RunTokenizer& first) {
  throw std::runtime_error(fmt::format(
      "config key 'data': folder '{}' ({}) has tokenizer checksum {:016x} but folder '{}' (tokenizer {}) has "
      "{:016x}; every folder of a mixture must be prepared with one tokenizer: re-run `fivefold prepare` for '{}' "
      "with `--tokenizer {}`",
      dir, what, checksum, first_dir, first.path, first.checksum, dir, first.path));
}

}  // namespace

RunTokenizer open_folder_tokenizer(const std::string& dir) {
  RunTokenizer t;
  if (!fs::is_directory(dir)) data_file(dir, "tokenizer.model");  // names the prepare command
  t.path = tokenizer_file_in(dir);
  t.file_name = fs::path(t.path).filename().string();
  const std::unique_ptr<TextTokenizer> tokenizer = open_tokenizer(t.path);
  t.checksum = tokenizer->checksum();
  t.vocab_size = tokenizer->vocab_size();
  t.bos_id = tokenizer->bos_id();
  t.eos_id = tokenizer->eos_id();
  return t;
}

RunTokenizer open_run_tokenizer(const TrainConfig& c) {
  const std::vector<DataFolder> folders = data_folders(c.data);
  const RunTokenizer first = open_folder_tokenizer(folders[0].dir);
  for (size_t i = 1; i < folders.size(); ++i) {
    const RunTokenizer other = open_folder_tokenizer(folders[i].dir);
    if (other.checksum != first.checksum)
      refuse_other_tokenizer(folders[i].dir, "tokenizer " + other.path, other.checksum, folders[0].dir, first);
  }
  return first;
}

RunTokens read_run_tokens(const TrainConfig& c, const RunTokenizer& tokenizer) {
  RunTokens t;
  t.folders = data_folders(c.data);
  std::vector<DataFolderShards> shards;
  for (const auto& f : t.folders) shards.push_back(data_folder_shards(f.dir));  // every name, before any verify
  if (t.folders.size() > 1) {
    // A shard's recorded tokenizer is checked by header before the long verification, and named
    // with both folders (the tokenizer files agreed, so this is a shard from another prepare).
    for (size_t i = 0; i < t.folders.size(); ++i)
      for (const auto* split : {&shards[i].train, &shards[i].val})
        for (const auto& path : *split) {
          const uint64_t recorded = TokenShardReader(path).info().tokenizer_checksum;
          if (recorded != 0 && tokenizer.checksum != 0 && recorded != tokenizer.checksum)
            refuse_other_tokenizer(t.folders[i].dir, "shard " + path, recorded, t.folders[0].dir, tokenizer);
        }
  }
  const TokenShardExpect expect{tokenizer.vocab_size, tokenizer.checksum, "the tokenizer " + tokenizer.path};
  // The shard's vocabulary must be the tokenizer's, which the model's equals (or exceeds: a
  // padded vocabulary, started from its weights), and every id lies below it (verified), so every
  // id indexes the embedding.
  for (size_t i = 0; i < t.folders.size(); ++i) {
    t.train.push_back({open_token_shards(shards[i].train, expect), t.folders[i].weight});
    t.val.push_back({open_token_shards(shards[i].val, expect), t.folders[i].weight});
    t.train_shards.push_back(shards[i].train.size());
    t.val_files.insert(t.val_files.end(), shards[i].val.begin(), shards[i].val.end());
  }
  return t;
}

std::vector<DataFolderRecord> record_run_data(const std::string& data) {
  std::vector<DataFolderRecord> out;
  for (const DataFolder& f : data_folders(data)) {
    const DataFolderShards shards = data_folder_shards(f.dir);
    DataFolderRecord r{f.dir, f.weight, {}};
    for (const auto& [split, paths] : {std::pair{"train", &shards.train}, std::pair{"val", &shards.val}})
      for (const std::string& path : *paths)
        r.shards.push_back({split, fs::path(path).filename().string(), read_token_shard_info(path).checksum});
    out.push_back(std::move(r));
  }
  return out;
}

void check_resume_data(const std::vector<DataFolderRecord>& saved, const std::vector<DataFolderRecord>& now,
                       const std::string& checkpoint_dir) {
  const std::string fix =
      "resume with the data the run was trained on (restore the shard, or point --data at the folder that holds "
      "it), or start a new --out folder (init_from = the checkpoint keeps its weights)";
  if (saved.size() != now.size())
    throw std::runtime_error(fmt::format("cannot resume from '{}': it was trained on {} data folder{} and 'data' "
                                         "now names {}; {}",
                                         checkpoint_dir, saved.size(), saved.size() == 1 ? "" : "s", now.size(), fix));
  for (size_t i = 0; i < saved.size(); ++i) {
    const DataFolderRecord &was = saved[i], &is = now[i];
    // Weights are normalised doubles; the record keeps a float's precision.
    if (std::fabs(was.weight - is.weight) > 1e-6)
      throw std::runtime_error(fmt::format("cannot resume from '{}': data folder '{}' had weight {:g} and '{}' now "
                                           "has {:g}; a new weight changes which rows each step reads; {}",
                                           checkpoint_dir, was.dir, was.weight, is.dir, is.weight, fix));
    for (size_t k = 0; k < std::max(was.shards.size(), is.shards.size()); ++k) {
      const ShardChecksum* a = k < was.shards.size() ? &was.shards[k] : nullptr;
      const ShardChecksum* b = k < is.shards.size() ? &is.shards[k] : nullptr;
      if (a && b && a->split == b->split && a->file == b->file && a->checksum == b->checksum) continue;
      const std::string then = a ? fmt::format("{} shard {} ({}, checksum {:016x})", a->split, k + 1,
                                               (fs::path(was.dir) / a->file).string(), a->checksum)
                                 : "no such shard";
      const std::string today = b ? fmt::format("'{}' with checksum {:016x}", (fs::path(is.dir) / b->file).string(),
                                                b->checksum)
                                  : "no such shard";
      throw std::runtime_error(fmt::format("cannot resume from '{}': the data differs from what it was trained on: "
                                           "the checkpoint recorded {}, the folder now holds {}; {}",
                                           checkpoint_dir, then, today, fix));
    }
  }
}

std::string describe_data_plan(const RunTokens& tokens, const MixtureLoader& loader) {
  if (tokens.folders.size() < 2) return "";
  std::string s = fmt::format("data: {} folders mixed by weight, row by row (deficit rule):", tokens.folders.size());
  for (size_t i = 0; i < tokens.folders.size(); ++i)
    s += fmt::format("{} {} {:.3f} ({} windows of {} tokens, {} shard{})", i ? "," : "", tokens.folders[i].dir,
                     tokens.folders[i].weight, loader.source(i).windows_per_epoch(), loader.source(i).seq_len(),
                     tokens.train_shards[i], tokens.train_shards[i] == 1 ? "" : "s");
  return s;
}

std::string describe_data_realised(const RunTokens& tokens, const MixtureLoader& loader) {
  if (tokens.folders.size() < 2) return "";
  const auto& rows = loader.rows_per_source();
  uint64_t total = 0;
  for (uint64_t r : rows) total += r;
  std::string s = fmt::format("data rows drawn per folder ({} in all):", total);
  for (size_t i = 0; i < rows.size(); ++i)
    s += fmt::format("{} {} {} ({:.4f}, weight {:.4f})", i ? "," : "", tokens.folders[i].dir, rows[i],
                     total ? double(rows[i]) / double(total) : 0.0, tokens.folders[i].weight);
  return s;
}

}  // namespace ff
