#include "io/corpus/input_paths.h"

#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

namespace ff {

namespace {

namespace fs = std::filesystem;

bool hidden(const fs::path& p) {
  const std::string name = p.filename().string();
  return !name.empty() && name[0] == '.';
}

void add_folder(const fs::path& dir, std::vector<std::string>& out) {
  std::vector<std::string> files;
  std::error_code ec;
  auto it = fs::recursive_directory_iterator(dir, fs::directory_options::follow_directory_symlink, ec);
  if (ec) {
    throw std::runtime_error("corpus folder " + dir.string() + " cannot be listed (" +
                             ec.message() + "); check its permissions");
  }
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) {
      throw std::runtime_error("corpus folder " + dir.string() + " cannot be listed (" +
                               ec.message() + "); check its permissions");
    }
    if (hidden(it->path())) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file()) files.push_back(it->path().string());
  }
  std::sort(files.begin(), files.end());
  out.insert(out.end(), files.begin(), files.end());
}

void add_path(const fs::path& p, std::vector<std::string>& out) {
  if (fs::is_directory(p)) {
    add_folder(p, out);
  } else {
    out.push_back(p.string());
  }
}

bool is_glob(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

}  // namespace

std::vector<std::string> expand_inputs(const std::vector<std::string>& specs) {
  if (specs.empty()) {
    throw std::runtime_error("prepare: no input given; pass files, folders or globs (--input PATH)");
  }
  std::vector<std::string> files;
  for (const std::string& spec : specs) {
    const size_t before = files.size();
    std::error_code ec;
    if (fs::exists(spec, ec)) {
      add_path(spec, files);
    } else if (is_glob(spec)) {
      glob_t g{};
      // glob(3) sorts its matches.
      if (::glob(spec.c_str(), 0, nullptr, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; ++i) add_path(g.gl_pathv[i], files);
      }
      globfree(&g);
      if (files.size() == before) {
        throw std::runtime_error("corpus input " + spec +
                                 " matches no file; check the pattern (quote it so the shell "
                                 "does not expand it first)");
      }
    } else {
      throw std::runtime_error("corpus input " + spec +
                               " not found; pass an existing file, folder or glob");
    }
    if (files.size() == before) {
      throw std::runtime_error("corpus folder " + spec +
                               " holds no file; pass a folder with corpus files in it");
    }
  }
  return files;
}

}  // namespace ff
