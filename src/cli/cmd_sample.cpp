#include <omp.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "ckpt/trained_model.h"
#include "cli/commands.h"
#include "comm/comm.h"
#include "comm/comm_world.h"
#include "io/atomic_file.h"
#include "train/generate.h"
#include "train/train_config.h"

namespace ff::cli {

int cmd_sample(const Args& a) {
  const char* usage =
      "fivefold sample --ckpt DIR --prompt TEXT [--max-tokens 200 --temperature 0.8 --top-k 40 "
      "--seed 1 --threads 2 --ids-out FILE]\n"
      "  --temperature 0: greedy (the most likely token each step)\n"
      "  --ids-out: also write the token ids as JSON {\"prefix\", \"prompt\", \"continuation\"}";
  if (a.help) return std::puts(usage), 0;
  a.only({"ckpt", "prompt", "max-tokens", "temperature", "top-k", "seed", "threads", "ids-out"}, usage);
  omp_set_num_threads(a.get_int("threads", 2, 1, max_useful_threads(), "OpenMP threads, at most 4 per core"));
  TrainedModel t = load_trained_model(a.require("ckpt", usage), 1);
  SampleOptions opt;
  opt.max_tokens = a.get_int("max-tokens", opt.max_tokens);
  opt.temperature = float(a.get_double("temperature", opt.temperature));
  opt.top_k = a.get_int("top-k", opt.top_k);
  opt.seed = uint64_t(a.get_int("seed", int(opt.seed)));
  const GeneratedIds g = generate_ids(*t.model, t.params.data(), *t.tokenizer, a.get("prompt"), opt);
  std::vector<int32_t> text = g.prompt;
  text.insert(text.end(), g.continuation.begin(), g.continuation.end());
  std::printf("%s\n", t.tokenizer->decode(text).c_str());
  if (a.has("ids-out") && comm_world().rank() == 0) {
    const nlohmann::json ids = {{"prefix", g.prefix}, {"prompt", g.prompt}, {"continuation", g.continuation}};
    write_file_atomic(a.get("ids-out"), ids.dump() + "\n");
  }
  return 0;
}

}  // namespace ff::cli
