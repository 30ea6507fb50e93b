#include "test_data.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "core/rng.h"
#include "io/prepare.h"

namespace ff::testkit {

namespace fs = std::filesystem;

void write_corpus_text(const std::string& path, int lines, uint64_t seed) {
  static const char* words[] = {"and",  "the",   "lord", "said", "unto",  "moses", "in",
                                "land", "of",    "his",  "sons", "people", "shall", "go",
                                "out",  "came",  "to",   "pass", "that",  "earth", "heaven"};
  const int n_words = int(std::size(words));
  RngState rng{seed, 0};
  std::ofstream out(path);
  for (int l = 0; l < lines; ++l) {
    out << (l % 30 + 1) << ":" << (l % 7 + 1) << " And";
    int len = 6 + int(rng.next_below(10));
    // A Markov-ish walk: the next word depends on the previous one, so there is signal to learn.
    int w = int(rng.next_below(n_words));
    for (int i = 0; i < len; ++i) {
      w = (w * 7 + 3 + int(rng.next_below(3))) % n_words;
      out << ' ' << words[w];
    }
    out << ".\n";
  }
}

std::string temp_dir(const std::string& tag) {
  static int counter = 0;
  fs::path p = fs::temp_directory_path() /
               ("fivefold-test-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

const std::string& tiny_data_dir() {
  static const std::string dir = [] {
    std::string d = temp_dir("data");
    write_corpus_text(d + "/corpus.txt", 3000, 7);
    prepare_corpus(d + "/corpus.txt", 320, d + "/prepared", 0.1);
    return d + "/prepared";
  }();
  return dir;
}

std::string config_path(const std::string& name) {
  return std::string(FIVEFOLD_SOURCE_DIR) + "/configs/" + name;
}

}  // namespace ff::testkit
