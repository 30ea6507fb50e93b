#include <cstdio>

#include "ckpt/import_hf.h"
#include "cli/commands.h"
#include "io/output_dir.h"

namespace ff::cli {

int cmd_import(const Args& a) {
  const char* usage = "fivefold import --hf DIR --out RUN   (then: fivefold train --out RUN --data DATA ... to fine-tune)";
  if (a.help) return std::puts(usage), 0;
  a.only({"hf", "out"}, usage);
  const std::string out = a.require("out", usage);
  ensure_output_dir(out, "--out");
  const size_t n = import_hugging_face(a.require("hf", usage), out);
  std::printf("imported %zu parameters into %s (step 0, zero AdamW moments)\n", n, out.c_str());
  return 0;
}

}  // namespace ff::cli
