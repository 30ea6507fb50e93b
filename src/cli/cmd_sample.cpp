#include <omp.h>

#include <cstdio>

#include "ckpt/trained_model.h"
#include "cli/commands.h"
#include "train/generate.h"
#include "train/train_config.h"

namespace ff::cli {

int cmd_sample(const Args& a) {
  const char* usage =
      "fivefold sample --ckpt DIR --prompt TEXT [--max-tokens 200 --temperature 0.8 --top-k 40 "
      "--seed 1 --threads 2]";
  if (a.help) return std::puts(usage), 0;
  a.only({"ckpt", "prompt", "max-tokens", "temperature", "top-k", "seed", "threads"}, usage);
  omp_set_num_threads(a.get_int("threads", 2, 1, max_useful_threads(), "OpenMP threads, at most 4 per core"));
  TrainedModel t = load_trained_model(a.require("ckpt", usage), 1);
  SampleOptions opt;
  opt.max_tokens = a.get_int("max-tokens", opt.max_tokens);
  opt.temperature = float(a.get_double("temperature", opt.temperature));
  opt.top_k = a.get_int("top-k", opt.top_k);
  opt.seed = uint64_t(a.get_int("seed", int(opt.seed)));
  std::printf("%s\n", generate(*t.model, t.params.data(), *t.tokenizer, a.get("prompt"), opt).c_str());
  return 0;
}

}  // namespace ff::cli
