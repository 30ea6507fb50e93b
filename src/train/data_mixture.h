#pragma once
// The config key `data`: one folder written by `fivefold prepare`, or a weighted mixture of
// folders. In a file, `data = "web"` or `data = ["code:0.3", "web:0.7"]`; on the command line
// `--data web` or `--data code:0.3,web:0.7` (the config holds the comma-joined form, so a resolved
// config.toml reads back the same mixture). Weights are normalised; a plain folder weighs 1.
#include <string>
#include <vector>

namespace ff {

struct DataFolder {
  std::string dir;
  double weight = 1;  // normalised: the folders' weights sum to 1
};

// Parses `data` and checks each folder exists (a single folder is left to the reader of its
// files, whose message names the missing file). Throws naming the key, the entry and the fix for
// a weight that is not a positive number, a folder given twice or a missing folder.
std::vector<DataFolder> data_folders(const std::string& data);

}  // namespace ff
