#include <cstdio>

#include "ckpt/import_hf.h"
#include "cli/commands.h"
#include "core/memory.h"
#include "io/output_dir.h"

namespace ff::cli {

int cmd_import(const Args& a) {
  const char* usage =
      "fivefold import --hf DIR --out RUN   (a llama, mistral or qwen2 folder; then: fivefold train --init-from RUN "
      "--data DATA --out NEW ... to fine-tune)\n"
      "  --overwrite: replace the run RUN already holds (its checkpoints and history); without it such a RUN is refused";
  if (a.help) return std::puts(usage), 0;
  a.only({"hf", "out", "overwrite"}, usage);
  const std::string out = a.require("out", usage);
  const bool overwrite = a.get_flag("overwrite");
  const OutputFolder folder = claim_output_dir(out, "--out", {FolderKind::run, "import", false, overwrite});
  const ImportResult r = import_hugging_face(a.require("hf", usage), out);
  // Only once the new step_0 is published: the replaced run's records would describe other weights.
  if (overwrite) remove_run_history(out);
  std::printf("imported %zu parameters (%s) into %s (step 0, weights only: training starts a fresh optimizer; %s)\n",
              r.params, r.hf.family.c_str(), out.c_str(), r.tokenizer_file.c_str());
  if (r.hf.max_position_embeddings > r.hf.model.seq_len)
    std::printf("seq_len %d of the model's context %d (max_position_embeddings): set seq_len when training for "
                "longer windows\n",
                r.hf.model.seq_len, r.hf.max_position_embeddings);
  // What import held at its peak (one chunk of one tensor, not the model), for the memory bench.
  std::printf("%s", MemoryLedger::instance().table().c_str());
  return 0;
}

}  // namespace ff::cli
