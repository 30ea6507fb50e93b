#pragma once
// The folder a command writes into (--out), checked before any work so a bad path is one clear
// sentence instead of a raw `filesystem error` minutes later, and so no command writes over a
// folder it does not own.
//
// Every folder fivefold writes is of one kind, told by the files it holds:
//   run     (train, import): step_N/, latest, config.toml, metrics.jsonl
//   data    (prepare):       meta.json, train*.bin, val*.bin
//   export  (export):        config.json, *.safetensors, model.safetensors.index.json
// Tokenizer files are in all three and tell nothing; other files are the user's and are left alone.
#include <memory>
#include <string>
#include <vector>

namespace ff {

class FolderLock;

enum class FolderKind { run, data, export_model };

// "run folder", "data folder", "export folder".
const char* folder_kind_name(FolderKind kind);

// One kind found in a folder and the files that show it (sorted, at most a few).
struct FolderKindFound {
  FolderKind kind;
  std::vector<std::string> evidence;
};

// The kinds dir holds (none when it is absent, empty or holds only other files).
std::vector<FolderKindFound> folder_kinds_in(const std::string& dir);

// How a command writes its kind of folder.
struct OutputFolderUse {
  FolderKind kind;
  std::string command;      // "train", named in refusals and in the lock record
  bool continues = false;   // a folder of its kind is continued (train resumes), not replaced
  bool overwrite = false;   // --overwrite: a folder of its kind may be replaced
};

// A claimed output folder: the kind checked, the folder created and writable, and its lock held
// (io/folder_lock.h) until this object is destroyed. Hold it for the command's whole life.
class OutputFolder {
 public:
  OutputFolder(std::string dir, std::unique_ptr<FolderLock> lock);
  ~OutputFolder();
  OutputFolder(OutputFolder&&) noexcept;
  OutputFolder& operator=(OutputFolder&&) noexcept;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::unique_ptr<FolderLock> lock_;
};

// Refuses, naming `option`, the path and the fix: a file; a folder of another kind (even with
// --overwrite: the two would mix); a folder of its own kind that the command would replace,
// unless use.overwrite; a folder another fivefold process holds. Then creates dir when absent,
// checks that it accepts a new file, and takes its lock (a stale one is taken over, said on stderr).
OutputFolder claim_output_dir(const std::string& dir, const std::string& option, const OutputFolderUse& use);

// The files a run folder keeps about the training that made it (config.toml, config.step_N.toml,
// metrics.jsonl, TensorBoard event files): removed when an import replaces the run, so they do not
// sit beside weights they do not describe.
void remove_run_history(const std::string& dir);

}  // namespace ff
