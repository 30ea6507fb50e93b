// For tests/oracle/check_export.py (float64 PyTorch, weights read from the exported folder): a
// model trained 5 steps (configs/tiny.toml) is exported, then starts an init_from run on a data
// folder whose training split is exactly one global batch of windows, so the first step's batch
// is every window of that shard (in the loader's order, which a mean does not see) and its loss
// is what the checker computes over the shard. Writes into DIR:
//   hf/           the source model exported (fp32)
//   shard         the path of the one-batch training shard (a copy in DIR)
//   first_loss    the init_from run's first loss (what must match)
//   fresh_loss    the first loss of a run from the initializer on the same batch (must not match)
//   init_from_oracle_dump DIR
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ckpt/export_hf.h"
#include "init_from_fixtures.h"
#include "io/tokens/data_folder.h"
#include "io/tokens/token_shard.h"
#include "mixture_data.h"
#include "test_data.h"
#include "train/trainer.h"

using namespace ff;

namespace {

double first_loss(const TrainConfig& c) {
  Trainer t(c, testkit::temp_dir("oracle-run"));
  t.quiet = true;
  return t.train_step().loss;
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text << "\n"; }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return std::fprintf(stderr, "usage: init_from_oracle_dump DIR\n"), 2;
  const std::string dir = argv[1];
  std::filesystem::create_directories(dir);
  const std::string& data = testkit::tiny_data_dir();

  TrainConfig s = load_train_config(testkit::config_path("tiny.toml"), {});
  s.data = data, s.steps = 5, s.eval_every = 0, s.threads = 1;
  const std::string source = testkit::temp_dir("oracle-source");
  {
    Trainer t(s, source);
    t.quiet = true;
    t.run();
    const ModelConfig& m = t.config().model;
    const std::vector<float> params = t.full_params();
    const std::unique_ptr<TextTokenizer> tok = open_tokenizer(tokenizer_file_in(data));
    export_hugging_face(dir + "/hf", m, ParamLayout(m), params.data(), tokenizer_file_in(data), tok->bos_id(),
                        tok->eos_id());
  }

  // One global batch of windows (G windows of T + 1 tokens, neighbours sharing one) and tiny's
  // validation tokens, with tiny's tokenizer.
  const TrainConfig probe = testkit::init_from_config(data, source, testkit::temp_dir("probe"), 1);
  const size_t tokens = size_t(probe.global_batch()) * size_t(probe.model.seq_len) + 1;
  std::vector<int32_t> train = read_token_shard(testkit::only_shard(data, "train"));
  train.resize(tokens);
  const std::vector<int32_t> val = read_token_shard(testkit::only_shard(data, "val"));
  const std::string one_batch = testkit::make_sharded_folder("one-batch", data, train, val, 1,
                                                             tokenizer_file_checksum(tokenizer_file_in(data)));
  // A copy in DIR: the checker reads it after this program has removed its temporary folders.
  const std::filesystem::path shard = data_folder_shards(one_batch).train.at(0);
  const std::filesystem::path shard_copy = std::filesystem::absolute(dir) / shard.filename();
  std::filesystem::copy_file(shard, shard_copy, std::filesystem::copy_options::overwrite_existing);
  write_text(dir + "/shard", shard_copy.string());

  const TrainConfig c = testkit::init_from_config(one_batch, source, testkit::temp_dir("probe"), 1);
  TrainConfig fresh = c;
  fresh.init_from.clear();
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", first_loss(fresh));
  write_text(dir + "/fresh_loss", buf);
  std::snprintf(buf, sizeof buf, "%.9g", first_loss(c));
  write_text(dir + "/first_loss", buf);
  return 0;
}
