#pragma once
// What a run reads from its data folders (`data`, written by `fivefold prepare`; one folder or a
// weighted mixture, data_mixture.h): the tokenizer that made the shards, whose vocabulary the
// model must have and which every folder of a mixture must share, and each folder's train and
// validation token streams, checked against that vocabulary and tokenizer before any model memory
// is allocated.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ckpt/checkpoint_state.h"
#include "io/tokens/mixture_loader.h"
#include "train/data_mixture.h"
#include "train/train_config.h"

namespace ff {

struct RunTokenizer {
  std::string path;       // DATA/tokenizer.json or DATA/tokenizer.model
  std::string file_name;  // its name, which the run folder's copy keeps
  uint64_t checksum = 0;
  int vocab_size = 0;
  int bos_id = -1, eos_id = -1;  // -1: the tokenizer has none
};

// Reads one data folder's tokenizer (tokenizer_file_in: tokenizer.json or tokenizer.model); a
// missing folder or file names the `prepare` command that makes it.
RunTokenizer open_folder_tokenizer(const std::string& dir);
// The tokenizer of the first folder of `data`; every other folder's tokenizer must have its
// checksum (refused naming both folders and both checksums).
RunTokenizer open_run_tokenizer(const TrainConfig& c);

struct RunTokens {
  std::vector<DataFolder> folders;
  std::vector<MixtureSource> train, val;  // one per folder, weighted as `data` says
  std::vector<size_t> train_shards;       // shards per folder, for the start line
  std::vector<std::string> val_files;     // every folder's validation shards, for errors about them
};

// Each folder's shards (data_folder.h: meta.json's lists, else train.bin and val.bin), read in
// windows (a rank never holds a whole corpus), refused (naming the file and the fix) when made by
// another tokenizer or holding an id outside the vocabulary: every shard is verified before the
// first batch.
RunTokens read_run_tokens(const TrainConfig& c, const RunTokenizer& tokenizer);

// Each folder of `data` with its weight and every shard's header checksum (headers only: cheap),
// recorded in each checkpoint.
std::vector<DataFolderRecord> record_run_data(const std::string& data);
// A resume's data against the checkpoint's record: the same shards (by name and checksum) and
// weights under any path are the same data; otherwise throws naming the folder or shard that
// differs and the fix.
void check_resume_data(const std::vector<DataFolderRecord>& saved, const std::vector<DataFolderRecord>& now,
                       const std::string& checkpoint_dir);

// "data: 2 folders mixed by weight (deficit rule): code 0.300 (1200 windows, 3 shards), ..." for
// the start of a run; empty for a single folder.
std::string describe_data_plan(const RunTokens& tokens, const MixtureLoader& loader);
// Rows each folder gave so far against its weight; empty for a single folder.
std::string describe_data_realised(const RunTokens& tokens, const MixtureLoader& loader);

}  // namespace ff
