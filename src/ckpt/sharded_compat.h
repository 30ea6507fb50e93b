#pragma once
// What a loader checks before trusting a checkpoint folder: that it is not the old single-file
// format, and that it was saved by the same model.
#include <nlohmann/json.hpp>
#include <string>

namespace ff {

// True when path is a file starting with the old format's magic (FFCHKPNT).
bool is_single_file_checkpoint(const std::string& path);
// Throws, with what to do, when path is an old-format checkpoint file or a folder holding one
// (checkpoint.bin); returns quietly otherwise.
void refuse_single_file_checkpoint(const std::string& path);

// Empty when equal; otherwise one line per difference, "model.dim: 1024 in the checkpoint, 512
// in this run", walking objects key by key (at most max_lines lines, then "... and N more").
std::string describe_config_difference(const nlohmann::json& saved, const nlohmann::json& current,
                                       size_t max_lines = 8);
// Throws naming the checkpoint folder, the differences and the fix when the configs differ.
void require_same_config(const std::string& step_dir, const nlohmann::json& saved,
                         const nlohmann::json& current);

}  // namespace ff
