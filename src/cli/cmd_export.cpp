#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "ckpt/export_hf.h"
#include "ckpt/trained_model.h"
#include "cli/commands.h"
#include "io/output_dir.h"

namespace ff::cli {

int cmd_export(const Args& a) {
  const char* usage =
      "fivefold export --ckpt DIR --out DIR [--dtype fp32|bf16] [--max-shard-mib 2048] [--overwrite]\n"
      "  --overwrite: replace the export DIR already holds; without it such a DIR is refused\n"
      "  --max-shard-mib: above this the weights go to model-0000i-of-0000N.safetensors shards and an index";
  if (a.help) return std::puts(usage), 0;
  a.only({"ckpt", "out", "dtype", "max-shard-mib", "overwrite"}, usage);
  const DType dtype = parse_export_dtype(a.get("dtype", "fp32"));  // before any heavy work
  const double shard_mib = a.get_double("max-shard-mib", double(kExportShardBytes >> 20));
  if (!(shard_mib > 0) || !std::isfinite(shard_mib) || shard_mib > 1e9)
    throw std::runtime_error("--max-shard-mib is " + a.get("max-shard-mib") +
                             "; give a positive size in MiB (fractions allowed), e.g. 2048");
  const std::string out = a.require("out", usage);
  const OutputFolder folder =
      claim_output_dir(out, "--out", {FolderKind::export_model, "export", false, a.get_flag("overwrite")});
  TrainedModel t = load_trained_model(a.require("ckpt", usage), 1);
  export_hugging_face(out, t.model->config(), t.model->layout(), t.params.data(), t.tokenizer_path,
                      t.tokenizer->bos_id(), t.tokenizer->eos_id(), dtype, uint64_t(shard_mib * 1048576.0));
  const bool sharded = std::filesystem::exists(std::filesystem::path(out) / "model.safetensors.index.json");
  std::printf("exported step %d to %s (%s in %s, config.json, %s)\n", t.state.step, out.c_str(),
              sharded ? "sharded safetensors with model.safetensors.index.json" : "model.safetensors",
              dtype == DType::bf16 ? "bf16" : "fp32", std::filesystem::path(t.tokenizer_path).filename().c_str());
  return 0;
}

}  // namespace ff::cli
