#include <omp.h>

#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>

#include "ckpt/trained_model.h"
#include "cli/commands.h"
#include "comm/comm.h"
#include "comm/comm_world.h"
#include "io/tokens/token_shard.h"
#include "io/tokens/token_stream.h"
#include "train/evaluate.h"
#include "train/train_config.h"

namespace ff::cli {

int cmd_eval(const Args& a) {
  const char* usage =
      "fivefold eval --ckpt DIR --data FILE [--batch 8 --max-windows 0 --threads 2 --doc-mask true|false --logits FILE]\n"
      "  --doc-mask: attention within each document of a window (default: as the checkpoint's run trained)\n"
      "  --logits: also write the windows' logits as float32 .npy, shape (windows, seq_len, vocab_size)";
  if (a.help) return std::puts(usage), 0;
  // Activations are allocated for the whole batch up front, so a huge one fails as bad_alloc.
  a.check({text_option("ckpt"), text_option("data"), text_option("doc-mask"), text_option("logits"),
           int_option("batch", 1, 4096, "windows evaluated together; 8 is plenty"),
           int_option("max-windows", 0, std::numeric_limits<int>::max(), "windows to read; 0 = the whole shard"),
           int_option("threads", 1, max_useful_threads(), "OpenMP threads, at most 4 per core")},
          usage);
  omp_set_num_threads(a.get_int("threads", 2));
  const std::string data = a.require("data", usage);
  const int batch = a.get_int("batch", 8);
  TrainedModel t = load_trained_model(a.require("ckpt", usage), batch);
  const std::string doc_mask = a.get("doc-mask", saved_doc_mask(t.state.config_toml) ? "true" : "false");
  if (doc_mask != "true" && doc_mask != "false")
    throw std::runtime_error("--doc-mask is '" + doc_mask + "'; it takes true or false");
  if (doc_mask == "true") t.model->set_document_breaks({t.tokenizer->bos_id(), t.tokenizer->eos_id()});
  // The shard was made with the tokenizer, whose ids all have rows (a model may pad past it).
  const TokenShardExpect expect{t.tokenizer->vocab_size(), t.tokenizer->checksum(),
                                "the checkpoint's tokenizer " + t.tokenizer_path};
  // Read in windows (a shard larger than memory evaluates too); a loss mask is honoured.
  const auto tokens = open_token_shards({data}, expect);
  EvalResult r = evaluate_stream(*t.model, t.params.data(), *tokens, batch, a.get_int("max-windows", 0));
  if (a.has("logits") && comm_world().rank() == 0)
    write_window_logits(*t.model, t.params.data(), *tokens, batch, a.get_int("max-windows", 0), a.get("logits"));
  std::printf("eval %s: loss %.6f over %lld %s (checkpoint step %d%s)\n", data.c_str(), r.mean_loss,
              (long long)r.tokens, tokens->has_loss_mask() ? "loss targets" : "tokens", t.state.step,
              doc_mask == "true" ? ", document masks" : "");
  return 0;
}

}  // namespace ff::cli
