#include <cstdio>

#include "cli/commands.h"
#include "io/output_dir.h"
#include "io/prepare.h"

namespace ff::cli {

int cmd_prepare(const Args& a) {
  const char* usage = "fivefold prepare --text FILE --vocab N --out DIR [--val-fraction 0.05]";
  if (a.help) return std::puts(usage), 0;
  a.only({"text", "vocab", "out", "val-fraction"}, usage);
  const std::string text = a.require("text", usage), out = a.require("out", usage);
  const int vocab = a.get_int("vocab", 4096);
  ensure_output_dir(out, "--out");
  PrepareResult r = prepare_corpus(text, vocab, out, a.get_double("val-fraction", 0.05));
  std::printf("prepared %s: vocab %d, %llu train tokens, %llu val tokens\n", out.c_str(), vocab,
              (unsigned long long)r.train_tokens, (unsigned long long)r.val_tokens);
  return 0;
}

}  // namespace ff::cli
