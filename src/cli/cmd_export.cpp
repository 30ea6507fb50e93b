#include <cstdio>
#include <filesystem>

#include "ckpt/export_hf.h"
#include "ckpt/trained_model.h"
#include "cli/commands.h"
#include "io/output_dir.h"

namespace ff::cli {

int cmd_export(const Args& a) {
  const char* usage = "fivefold export --ckpt DIR --out DIR [--dtype fp32|bf16]";
  if (a.help) return std::puts(usage), 0;
  a.only({"ckpt", "out", "dtype"}, usage);
  const DType dtype = parse_export_dtype(a.get("dtype", "fp32"));  // before any heavy work
  const std::string out = a.require("out", usage);
  ensure_output_dir(out, "--out");
  TrainedModel t = load_trained_model(a.require("ckpt", usage), 1);
  export_hugging_face(out, t.model->config(), t.model->layout(), t.params.data(), t.tokenizer_path,
                      t.tokenizer->bos_id(), t.tokenizer->eos_id(), dtype);
  std::printf("exported step %d to %s (model.safetensors in %s, config.json, %s)\n", t.state.step, out.c_str(),
              dtype == DType::bf16 ? "bf16" : "fp32", std::filesystem::path(t.tokenizer_path).filename().c_str());
  return 0;
}

}  // namespace ff::cli
