// Dumps one training step on loss-masked data for tests/oracle/check_loss_mask.py: the weights the
// step starts from, its global batch (targets the mask leaves out are -1), and the loss and gradient
// norm the trainer reports. The checker recomputes both in float64 PyTorch with ignore_index = -1.
//   loss_mask_oracle_dump DIR
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../model/oracle_dump_util.h"
#include "io/tokens/data_loader.h"
#include "io/tokens/token_shard.h"
#include "io/tokens/token_stream.h"
#include "train/trainer.h"
#include "train_fixtures.h"

using namespace ff;

int main(int argc, char** argv) {
  if (argc != 2) return std::fprintf(stderr, "usage: loss_mask_oracle_dump DIR\n"), 2;
  const std::string dir = argv[1];
  std::filesystem::create_directories(dir);
  TrainConfig c = testkit::tiny_config(testkit::tiny_masked_data_dir());
  c.micro_batch = 2, c.grad_accum = 3;  // the global batch: three micro-batches of 2 sequences
  Trainer trainer(c, testkit::temp_dir("mask-oracle"), nullptr);
  trainer.quiet = true;
  const std::vector<float> params = trainer.full_params();
  const StepRecord step = trainer.train_step();

  // The step's batch: the first global batch of a loader on the same stream and seed.
  const ModelConfig& m = trainer.config().model;
  const int B = c.micro_batch * c.grad_accum, T = m.seq_len;
  const std::string shard = testkit::only_shard(c.data, "train");
  DataLoader loader(open_token_shards({shard}, TokenShardExpect{m.vocab_size, 0, "the test"}), T, c.seed);
  std::vector<int32_t> inputs(size_t(B) * T), targets(size_t(B) * T);
  const uint64_t count = loader.next_batch(B, 0, B, inputs.data(), targets.data());

  nlohmann::json manifest;
  manifest["config"] = testkit::oracle_config_json(m);
  manifest["batch"] = {{"B", B}, {"T", T}};
  manifest["loss"] = step.loss;
  manifest["grad_norm"] = step.grad_norm;
  manifest["loss_targets"] = count;
  for (const auto& v : trainer.model().layout().views())  // serial: the whole model's layout
    manifest["params"].push_back({{"name", v.name}, {"shape", v.shape}, {"offset", v.offset}});
  std::ofstream(dir + "/manifest.json") << manifest.dump(1);
  testkit::write_bin(dir + "/params.bin", params.data(), params.size() * 4);
  testkit::write_bin(dir + "/inputs.bin", inputs.data(), inputs.size() * 4);
  testkit::write_bin(dir + "/targets.bin", targets.data(), targets.size() * 4);
  std::printf("step 1 on %d x %d tokens, %llu loss targets: loss %.8f, gradient norm %.8f\n", B, T,
              (unsigned long long)count, step.loss, step.grad_norm);
  return 0;
}
