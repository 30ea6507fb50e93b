#pragma once
// Runs the real `fivefold` binary the way a user would and captures what it prints.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/wait.h>

namespace ff::testkit {

struct CliResult {
  int exit_code;
  std::string output;  // stdout and stderr together
};

// `PREFIX fivefold ARGS` (a launcher such as mpirun before the binary).
inline CliResult run_fivefold_with(const std::string& prefix, const std::string& args) {
  std::string cmd = prefix + " " + std::string(FIVEFOLD_BIN) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

inline CliResult run_fivefold(const std::string& args) { return run_fivefold_with("", args); }

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// Flips one byte in the middle of a file.
inline void flip_byte(const std::string& path, double where = 0.6) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(0, std::ios::end);
  auto pos = std::streamoff(double(f.tellg()) * where);
  f.seekg(pos);
  char c;
  f.read(&c, 1);
  c = char(c ^ 0x5a);
  f.seekp(pos);
  f.write(&c, 1);
}

}  // namespace ff::testkit
