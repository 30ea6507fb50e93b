// PCRE2's JIT against its interpreter for the pre-tokenizer split patterns (GPT-2's and Llama 3's)
// over the lines of a text file, and for whole tokenizer.json encoding, one thread, best of
// --repeats passes. Prints one markdown row per case.
//
//   bench_tokenizer_regex TEXT [TOKENIZER.json ...] [--repeats 5]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "io/tokenizer/hf_tokenizer.h"
#include "io/tokenizer/regex_splitter.h"

namespace {

constexpr const char* kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr const char* kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

double best_seconds(int repeats, const std::function<void()>& pass) {
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    pass();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return std::fprintf(stderr, "usage: bench_tokenizer_regex TEXT [TOKENIZER.json ...] [--repeats N]\n"), 2;
  int repeats = 5;
  std::vector<std::string> tokenizers;
  for (int i = 2; i < argc; ++i) {
    if (std::string(argv[i]) == "--repeats" && i + 1 < argc) repeats = std::stoi(argv[++i]);
    else tokenizers.push_back(argv[i]);
  }
  const std::vector<std::string> lines = lines_of(argv[1]);
  size_t bytes = 0;
  for (const auto& l : lines) bytes += l.size() + 1;
  std::printf("| case | JIT MB/s | no JIT MB/s | JIT speed-up |\n|---|---:|---:|---:|\n");
  for (const auto& [name, pattern] : {std::pair{"split, GPT-2 pattern", kGpt2}, std::pair{"split, Llama 3 pattern", kLlama3}}) {
    double mbs[2];
    for (int jit = 1; jit >= 0; --jit) {
      const ff::RegexSplitter re(pattern, false, jit, "bench");
      std::vector<std::string> pieces;
      mbs[1 - jit] = bytes / 1e6 / best_seconds(repeats, [&] {
        for (const auto& l : lines) {
          pieces.clear();
          re.split_isolated(l + "\n", pieces);
        }
      });
    }
    std::printf("| %s | %.1f | %.1f | %.2fx |\n", name, mbs[0], mbs[1], mbs[0] / mbs[1]);
  }
  for (const std::string& path : tokenizers) {
    double mbs[2];
    size_t tokens = 0;
    for (int jit = 1; jit >= 0; --jit) {
      const ff::HfTokenizer tok(path, jit);
      mbs[1 - jit] = bytes / 1e6 / best_seconds(repeats, [&] {
        tokens = 0;
        for (const auto& l : lines) tokens += tok.encode(l + "\n").size();
      });
    }
    std::printf("| encode, %s (%zu tokens) | %.1f | %.1f | %.2fx |\n", path.substr(path.find_last_of('/') + 1).c_str(),
                tokens, mbs[0], mbs[1], mbs[0] / mbs[1]);
  }
  return 0;
}
