#include <omp.h>

#include <cstdint>
#include <cstdio>
#include <limits>

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
      "  --temperature 0: greedy (the most likely token each step); --top-k 0: the whole vocabulary\n"
      "  --ids-out: also write the token ids as JSON {\"prefix\", \"prompt\", \"continuation\"}";
  if (a.help) return std::puts(usage), 0;
  constexpr double kIntMax = std::numeric_limits<int>::max();
  a.check({text_option("ckpt"), text_option("prompt"), text_option("ids-out"),
           int_option("max-tokens", 1, kIntMax, "tokens to generate after the prompt"),
           number_option("temperature", 0, 100, "0 is greedy, 0.8 usual; above 100 is noise"),
           int_option("top-k", 0, kIntMax, "candidates per step; 0 = the whole vocabulary"),
           int_option("seed", 0, kIntMax, "the sampler's random stream"),
           int_option("threads", 1, max_useful_threads(), "OpenMP threads, at most 4 per core")},
          usage);
  const std::string ckpt = a.require("ckpt", usage);
  const std::string prompt = a.require("prompt", usage);
  omp_set_num_threads(a.get_int("threads", 2));
  SampleOptions opt;
  opt.max_tokens = a.get_int("max-tokens", opt.max_tokens);
  opt.temperature = float(a.get_double("temperature", opt.temperature));
  opt.top_k = a.get_int("top-k", opt.top_k);
  opt.seed = uint64_t(a.get_int("seed", int(opt.seed)));
  TrainedModel t = load_trained_model(ckpt, 1);
  const bool printer = comm_world().rank() == 0;
  // The text is printed as it is generated (a long sample otherwise says nothing for hours).
  const std::vector<int32_t> prompt_ids = t.tokenizer->encode(prompt);
  TextStream stream(*t.tokenizer, prompt_ids);
  if (printer) std::fputs(t.tokenizer->decode(prompt_ids).c_str(), stdout), std::fflush(stdout);
  const GeneratedIds g = generate_ids(*t.model, t.params.data(), *t.tokenizer, prompt, opt, [&](int32_t id) {
    if (!printer) return;
    const std::string piece = stream.push(id);
    if (!piece.empty()) std::fputs(piece.c_str(), stdout), std::fflush(stdout);
  });
  if (printer) std::printf("%s\n", stream.finish().c_str());
  if (a.has("ids-out") && printer) {
    const nlohmann::json ids = {{"prefix", g.prefix}, {"prompt", g.prompt}, {"continuation", g.continuation}};
    write_file_atomic(a.get("ids-out"), ids.dump() + "\n");
  }
  return 0;
}

}  // namespace ff::cli
