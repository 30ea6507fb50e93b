#include "io/output_dir.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "io/folder_lock.h"

namespace ff {

namespace fs = std::filesystem;

namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_step_folder(const fs::directory_entry& e, const std::string& name) {
  return e.is_directory() && starts_with(name, "step_") && name.size() > 5 &&
         std::all_of(name.begin() + 5, name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The kind a folder entry shows, if any: the table of what each command writes.
bool shows_kind(FolderKind kind, const fs::directory_entry& e, const std::string& name) {
  switch (kind) {
    case FolderKind::run:
      return is_step_folder(e, name) || name == "latest" || name == "config.toml" || name == "metrics.jsonl";
    case FolderKind::data:
      return name == "meta.json" ||
             ((starts_with(name, "train") || starts_with(name, "val")) && ends_with(name, ".bin"));
    case FolderKind::export_model:
      return name == "config.json" || ends_with(name, ".safetensors") || name == "model.safetensors.index.json";
  }
  return false;
}

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

std::string a_kind(FolderKind kind) {
  return (kind == FolderKind::export_model ? "an " : "a ") + std::string(folder_kind_name(kind));
}

std::string kind_with_evidence(const FolderKindFound& k) { return a_kind(k.kind) + " (" + joined(k.evidence) + ")"; }

// The path checks and creation, before the kind check looks inside.
void ensure_writable_dir(const std::string& dir, const std::string& head) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
    throw std::runtime_error(head + "is a file, not a folder; pass a folder path (it is created if absent)");
  }
  fs::create_directories(dir, ec);
  if (ec) {
    throw std::runtime_error(head + "cannot be created (" + ec.message() + "); choose a writable location");
  }
  // Permission bits do not tell the whole truth (root, read-only mounts, full disks): write a file.
  const std::string probe = (fs::path(dir) / (".ff_write_probe." + std::to_string(::getpid()))).string();
  std::FILE* f = std::fopen(probe.c_str(), "wb");
  if (!f) {
    throw std::runtime_error(head + "is not writable (" + std::strerror(errno) +
                             "); choose a folder you can write to");
  }
  std::fclose(f);
  std::remove(probe.c_str());
}

// Refuses a folder this use may not write, before anything is created or written.
void check_kind(const std::string& dir, const std::string& head, const OutputFolderUse& use) {
  for (const FolderKindFound& found : folder_kinds_in(dir)) {
    if (found.kind != use.kind)
      throw std::runtime_error(head + "holds " + kind_with_evidence(found) + ", and " + use.command + " writes " +
                               a_kind(use.kind) + "; writing here would mix the two and replace files " +
                               "the other needs: choose a new folder for " + use.command);
    if (!use.continues && !use.overwrite)
      throw std::runtime_error(head + "already holds " + kind_with_evidence(found) + ", which " + use.command +
                               " would replace; choose a new folder, or pass --overwrite to replace it");
  }
}

}  // namespace

const char* folder_kind_name(FolderKind kind) {
  switch (kind) {
    case FolderKind::run: return "run folder";
    case FolderKind::data: return "data folder";
    case FolderKind::export_model: return "export folder";
  }
  return "folder";
}

std::vector<FolderKindFound> folder_kinds_in(const std::string& dir) {
  std::vector<FolderKindFound> found;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return found;
  std::vector<fs::directory_entry> entries(fs::directory_iterator(dir, ec), fs::directory_iterator());
  std::sort(entries.begin(), entries.end());
  for (FolderKind kind : {FolderKind::run, FolderKind::data, FolderKind::export_model}) {
    FolderKindFound k{kind, {}};
    for (const fs::directory_entry& e : entries) {
      const std::string name = e.path().filename().string();
      if (shows_kind(kind, e, name) && k.evidence.size() < 4) k.evidence.push_back(name);
    }
    if (!k.evidence.empty()) found.push_back(std::move(k));
  }
  return found;
}

OutputFolder::OutputFolder(std::string dir, std::unique_ptr<FolderLock> lock)
    : dir_(std::move(dir)), lock_(std::move(lock)) {}
OutputFolder::~OutputFolder() = default;
OutputFolder::OutputFolder(OutputFolder&&) noexcept = default;
OutputFolder& OutputFolder::operator=(OutputFolder&&) noexcept = default;

OutputFolder claim_output_dir(const std::string& dir, const std::string& option, const OutputFolderUse& use) {
  const std::string head = option + " '" + dir + "' ";
  check_kind(dir, head, use);
  ensure_writable_dir(dir, head);
  auto lock = std::make_unique<FolderLock>(dir, use.command, head);
  if (!lock->taken_over().empty())
    std::fprintf(stderr, "%s: taking over the lock %s left by %s, which ended without releasing it\n",
                 use.command.c_str(), lock->path().c_str(), lock->taken_over().c_str());
  // Again under the lock: a writer that held it while we checked may have changed the folder.
  check_kind(dir, head, use);
  return OutputFolder(dir, std::move(lock));
}

void remove_run_history(const std::string& dir) {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const bool history = name == "config.toml" || name == "metrics.jsonl" ||
                         (starts_with(name, "config.step_") && ends_with(name, ".toml")) ||
                         starts_with(name, "events.out.tfevents.");
    if (history && e.is_regular_file()) fs::remove(e.path(), ec);
  }
}

}  // namespace ff
