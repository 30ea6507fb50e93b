#pragma once
// The token shards a data folder (`fivefold prepare --out DIR`) holds, in order: the lists
// `train_shards` and `val_shards` of DIR/meta.json (a prepare that streams a large corpus writes
// many shards), or DIR/train.bin and DIR/val.bin for folders prepared before those lists existed
// (and folders whose meta.json lacks them). Only names are resolved here; the shards are opened
// and verified by open_token_shards.
#include <string>
#include <vector>

namespace ff {

struct DataFolderShards {
  std::vector<std::string> train, val;  // paths, in stream order
};

// Throws naming the file and the fix when meta.json is not JSON, a list is not a non-empty list
// of file names, or a shard (listed or the fallback) is missing.
DataFolderShards data_folder_shards(const std::string& dir);

}  // namespace ff
