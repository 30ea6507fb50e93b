// `fivefold tokenize`: a tokenizer file applied to each line of a text file, so fivefold's ids
// can be compared with another implementation's line by line (and its throughput measured).
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "io/atomic_file.h"
#include "io/tokenizer/tokenizer.h"
#include "train/train_config.h"

namespace ff::cli {

namespace {

// The file's lines, split at '\n' only ('\r' stays part of its line); a final '\n' ends the
// last line rather than starting an empty one.
std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("--input " + path + " cannot be opened; check the path");
  const std::string all{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::vector<std::string> lines;
  size_t at = 0;
  while (at < all.size()) {
    size_t nl = all.find('\n', at);
    if (nl == std::string::npos) nl = all.size();
    lines.push_back(all.substr(at, nl - at));
    at = nl + 1;
  }
  return lines;
}

std::vector<int32_t> parse_ids(const std::string& line, const std::string& path, size_t line_no) {
  std::vector<int32_t> ids;
  std::istringstream words(line);
  for (std::string w; words >> w;) {
    size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(w, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != w.size() || v < 0 || v > INT32_MAX)
      throw std::runtime_error(path + ":" + std::to_string(line_no) + ": '" + w +
                               "' is not a token id; --decode reads lines of space-separated ids");
    ids.push_back(int32_t(v));
  }
  return ids;
}

// Runs work(i) for every line on the OpenMP threads; the first exception is rethrown after the
// loop (one escaping an OpenMP region would abort).
template <class Work>
void for_each_line(size_t n, const Work& work) {
  std::string error;
#pragma omp parallel for schedule(dynamic, 64)
  for (int64_t i = 0; i < int64_t(n); ++i) {
    try {
      work(size_t(i));
    } catch (const std::exception& e) {
#pragma omp critical(ff_tokenize_error)
      if (error.empty()) error = "line " + std::to_string(i + 1) + ": " + e.what();
    }
  }
  if (!error.empty()) throw std::runtime_error(error);
}

// A file is replaced atomically; a device or pipe (/dev/null, a FIFO) is written in place, since
// renaming a new file over it would replace the device itself.
void write_output(const std::string& path, const std::string& text) {
  if (path.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return;
  }
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status) || std::filesystem::is_regular_file(status)) return write_file_atomic(path, text);
  std::ofstream out(path, std::ios::binary);
  out.write(text.data(), std::streamsize(text.size()));
  if (!out) throw std::runtime_error("cannot write to " + path + "; check that it is writable");
}

}  // namespace

int cmd_tokenize(const Args& a) {
  const char* usage =
      "fivefold tokenize --tokenizer FILE --input FILE [--ids-out FILE] [--threads N]\n"
      "    one line of space-separated ids per input line (no BOS/EOS); stdout without --ids-out\n"
      "fivefold tokenize --decode --tokenizer FILE --input IDS [--text-out FILE] [--threads N]\n"
      "    each line of ids back to its text line\n"
      "Throughput (bytes/s, tokens/s of the encoding or decoding alone) goes to stderr.";
  if (a.help) return std::puts(usage), 0;
  a.only({"tokenizer", "input", "ids-out", "text-out", "threads", "decode"}, usage);
  const int threads = a.get_int("threads", 1, 1, max_useful_threads(), "threads encoding lines, at most 4 per core");
  omp_set_num_threads(threads);
  const bool decode = a.has("decode") && a.get("decode") != "false";
  const std::string input = a.require("input", usage);
  const std::unique_ptr<TextTokenizer> tok = open_tokenizer(a.require("tokenizer", usage));
  const std::vector<std::string> lines = read_lines(input);
  std::vector<std::string> out(lines.size());
  size_t tokens = 0, bytes = 0;

  const auto t0 = std::chrono::steady_clock::now();
  if (decode) {
    std::vector<size_t> counts(lines.size());
    for_each_line(lines.size(), [&](size_t i) {
      const std::vector<int32_t> ids = parse_ids(lines[i], input, i + 1);
      counts[i] = ids.size();
      out[i] = tok->decode(ids);
    });
    for (size_t i = 0; i < lines.size(); ++i) tokens += counts[i], bytes += out[i].size();
  } else {
    std::vector<size_t> counts(lines.size());
    for_each_line(lines.size(), [&](size_t i) {
      const std::vector<int32_t> ids = tok->encode(lines[i]);
      counts[i] = ids.size();
      std::string& s = out[i];
      for (size_t k = 0; k < ids.size(); ++k) {
        if (k) s += ' ';
        s += std::to_string(ids[k]);
      }
    });
    for (size_t i = 0; i < lines.size(); ++i) tokens += counts[i], bytes += lines[i].size();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::string text;
  for (const std::string& s : out) text += s, text += '\n';
  write_output(a.get(decode ? "text-out" : "ids-out"), text);
  std::fprintf(stderr,
               "tokenize: %s %zu lines, %zu bytes, %zu tokens in %.3f s on %d threads: %.0f bytes/s, %.0f tokens/s "
               "(%s)\n",
               decode ? "decoded" : "encoded", lines.size(), bytes, tokens, seconds, threads,
               seconds > 0 ? double(bytes) / seconds : 0.0, seconds > 0 ? double(tokens) / seconds : 0.0,
               tokenizer_kind_name(tok->kind()));
  return 0;
}

}  // namespace ff::cli
