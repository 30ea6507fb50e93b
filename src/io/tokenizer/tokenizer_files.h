#pragma once
// A tokenizer travels as a set of files: the one that makes the ids (tokenizer.json or
// tokenizer.model) and the Hugging Face files beside it that tell `transformers` how to use it
// (tokenizer_config.json: the class, chat template, added-token flags; special_tokens_map.json).
// Import, prepare, train and export move them together and byte for byte, so a model handed back
// to the Hugging Face tools is used with exactly the tokenizer it came with.
#include <string>
#include <vector>

namespace ff {

// The side files fivefold carries but never reads, in the order they are copied.
const std::vector<std::string>& tokenizer_side_files();

// Copies tokenizer_path into to_dir as stored_name ("tokenizer.json" or "tokenizer.model") and the
// side files present beside it (replacing any there), and removes from to_dir the tokenizer file of
// the other kind and any side file the source lacks, so to_dir ends with exactly the source's set.
// A no-op when to_dir is the source's own folder.
void copy_tokenizer_files(const std::string& tokenizer_path, const std::string& to_dir,
                          const std::string& stored_name);

}  // namespace ff
