// Precision across checkpoints:
//   - an fp16 run saved mid-way (with overflows in flight: the hysteresis counter and the clean-step
//     count at values a fresh scaler would not have) resumes onto the same loss-scale trajectory
//     and the same losses and weights, bit for bit, as the run that never stopped;
//   - the fp32 master weights make a checkpoint precision-free: bf16 -> fp32, fp32 -> bf16 and
//     fp32 -> fp16 resume with exactly the saved weights and go on training (fp16 from the
//     initial scale, as its trajectory did not exist);
//   - `export --dtype bf16` writes every parameter as its fp32 value rounded to nearest even,
//     computed here by integer arithmetic apart from core/dtype.h.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "ckpt/safetensors.h"
#include "test_data.h"
#include "ckpt/export_hf.h"
#include "train/trainer.h"
#include "train_fixtures.h"

namespace {

using namespace ff;

// fp16 `tiny` with an inf forced into the gradients at the given steps (1-based).
void poison(Trainer& t, const std::vector<int>& steps) {
  t.after_grads_reduced = [&t, steps](ModelState& s) {
    for (int k : steps)
      if (t.step() + 1 == k) {  // step() counts the steps done
        size_t n = 0;
        float* g = s.segment_grads(t.model().layout().head_segment(), &n);
        g[n / 2] = std::numeric_limits<float>::infinity();
      }
  };
}

TEST(PrecisionResume, Fp16ResumeContinuesTheLossScaleTrajectoryBitwise) {
  TrainConfig c = testkit::tiny_config(testkit::tiny_data_dir());
  c.steps = 10;
  c.precision = Precision::fp16;
  // Overflows at 3 and 4 spend the hysteresis (2) and halve the scale at 4; at the save (step 5)
  // the scaler holds scale 512, one clean step, hysteresis 0: all three differ from a fresh
  // scaler's, so a resume that forgot any of them leaves the trajectory (growth at step 7,
  // then the overflow at 8 must not halve).
  c.loss_scale = {1024.0f, 3, 2};
  const std::vector<int> overflows = {3, 4, 8};
  Trainer straight(c, testkit::temp_dir("fp16_straight"), nullptr);
  straight.quiet = true;
  poison(straight, overflows);
  straight.run();

  const std::string dir = testkit::temp_dir("fp16_split");
  TrainConfig first = c;
  first.stop_at = 5;
  std::vector<StepRecord> h;
  {
    Trainer t(first, dir, nullptr);
    t.quiet = true;
    poison(t, overflows);
    t.run();
    ASSERT_EQ(t.step(), 5);
    h = t.history();
  }
  Trainer second(c, dir, nullptr);
  second.quiet = true;
  poison(second, overflows);
  ASSERT_EQ(second.step(), 5);
  second.run();
  h.insert(h.end(), second.history().begin(), second.history().end());

  const std::vector<StepRecord>& want = straight.history();
  ASSERT_EQ(h.size(), want.size());
  const double scales[10] = {1024, 1024, 1024, 1024, 512, 512, 512, 1024, 1024, 1024};  // the rule, by hand
  for (size_t i = 0; i < h.size(); ++i) {
    EXPECT_EQ(double(want[i].loss_scale), scales[i]) << "step " << i + 1;
    EXPECT_EQ(h[i].loss_scale, want[i].loss_scale) << "step " << i + 1;
    EXPECT_EQ(h[i].skipped, want[i].skipped) << "step " << i + 1;
    EXPECT_EQ(std::memcmp(&h[i].loss, &want[i].loss, sizeof(double)), 0) << "step " << i + 1;
  }
  const std::vector<float> a = second.full_params(), b = straight.full_params();
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0);
}

// Saves at step 3 under `from`, resumes under `to`: the weights loaded are the saved fp32 master
// weights bit for bit, and training goes on with a finite, falling loss.
void change_precision(const std::string& from, const std::string& to) {
  TrainConfig c = testkit::tiny_config(testkit::tiny_data_dir());
  c.steps = 6;
  c.precision = precision_names().parse(from, "precision");
  c.stop_at = 3;
  const std::string dir = testkit::temp_dir("precision_" + from + "_" + to);
  std::vector<float> saved;
  double first_loss = 0;
  {
    Trainer t(c, dir, nullptr);
    t.quiet = true;
    t.run();
    saved = t.full_params();
    first_loss = t.history().front().loss;
  }
  c.precision = precision_names().parse(to, "precision");
  c.stop_at = 0;
  c.loss_scale.init = 1024.0f;  // fp16: where a fresh trajectory starts
  Trainer t(c, dir, nullptr);
  t.quiet = true;
  ASSERT_EQ(t.step(), 3) << from << " -> " << to;
  const std::vector<float> loaded = t.full_params();
  ASSERT_EQ(loaded.size(), saved.size());
  EXPECT_EQ(std::memcmp(loaded.data(), saved.data(), saved.size() * 4), 0) << from << " -> " << to;
  t.run();
  ASSERT_EQ(t.history().size(), 3u);
  for (const StepRecord& r : t.history()) {
    EXPECT_TRUE(std::isfinite(r.loss) && std::isfinite(r.grad_norm)) << from << " -> " << to;
    EXPECT_LT(r.loss, first_loss) << from << " -> " << to << ": training went on from the saved weights";
    EXPECT_EQ(double(r.loss_scale), to == "fp16" ? 1024.0 : 0.0) << "the scale of a run that had none";
  }
}

TEST(PrecisionResume, Bf16CheckpointResumesInFp32) { change_precision("bf16", "fp32"); }
TEST(PrecisionResume, Fp32CheckpointResumesInBf16) { change_precision("fp32", "bf16"); }
TEST(PrecisionResume, Fp32CheckpointResumesInFp16) { change_precision("fp32", "fp16"); }

// RNE to bf16 by integer arithmetic: add 0x7fff plus the lowest kept bit, drop 16 bits.
uint16_t rne_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

TEST(PrecisionResume, ExportBf16IsTheRoundedMasterWeights) {
  TrainConfig c = testkit::tiny_config(testkit::tiny_data_dir());
  c.steps = 2;
  Trainer t(c, testkit::temp_dir("export_bf16_run"), nullptr);
  t.quiet = true;
  t.run();
  const std::vector<float> p = t.full_params();
  const std::string tok = c.data + "/tokenizer.model";
  for (DType d : {DType::f32, DType::bf16}) {
    const std::string out = testkit::temp_dir(std::string("export_") + dtype_name(d));
    export_hugging_face(out, t.model().config(), t.model().layout(), p.data(), tok, 1, 2, d);
    const std::string file = out + "/model.safetensors";
    const nlohmann::json header = read_safetensors_header(file);
    const uint64_t start = safetensors_data_start(file);
    std::ifstream f(file, std::ios::binary);
    size_t tensors = 0, bad = 0;
    for (const ParamView& v : t.model().layout().views()) {
      const nlohmann::json& e = header.at(v.name);
      ASSERT_EQ(e.at("dtype"), d == DType::bf16 ? "BF16" : "F32") << v.name;
      const uint64_t lo = e.at("data_offsets")[0], hi = e.at("data_offsets")[1];
      ASSERT_EQ(hi - lo, v.numel * dtype_size(d)) << v.name;
      std::vector<char> bytes(hi - lo);
      f.seekg(std::streamoff(start + lo));
      f.read(bytes.data(), std::streamsize(bytes.size()));
      for (size_t i = 0; i < v.numel; ++i) {
        const float x = p[v.offset + i];
        if (d == DType::bf16) {
          uint16_t w;
          std::memcpy(&w, bytes.data() + 2 * i, 2);
          bad += w != rne_bf16(x);
        } else {
          bad += std::memcmp(bytes.data() + 4 * i, &x, 4) != 0;
        }
      }
      ++tensors;
    }
    EXPECT_EQ(bad, 0u) << dtype_name(d);
    EXPECT_EQ(tensors + 1, header.size());  // every tensor, plus __metadata__
  }
  EXPECT_THROW(parse_export_dtype("fp16"), std::runtime_error);
}

}  // namespace
