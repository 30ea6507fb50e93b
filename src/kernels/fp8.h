#pragma once
// fp8 emulated by quantise -> dequantise (no fp8 units on these CPUs): a value is scaled, rounded
// to the nearest fp8 number (ties to even, saturating at the largest finite one, as Transformer
// Engine casts) and scaled back, so the fp32 GEMM then sees exactly the values an fp8 GEMM would.
//   e4m3 (OCP "FN"): bias 7, 3 mantissa bits, largest 448, smallest subnormal 2^-9, no infinity
//   e5m2:            bias 15, 2 mantissa bits, largest 57344, smallest subnormal 2^-16
// Forward GEMM inputs use e4m3, backward (gradient) inputs e5m2, each tensor with its own
// delayed scale (Transformer Engine's default recipe: amax history 1024, margin 0).
#include <cstddef>
#include <vector>

namespace ff {

enum class Fp8Format { e4m3, e5m2 };

float fp8_max(Fp8Format f);
// x rounded to the nearest value of the format (saturating; NaN stays NaN).
float round_to_fp8(float x, Fp8Format f);
// x[i] = round_to_fp8(x[i] * scale) / scale, in place; returns max |x[i]| before quantising.
float fake_quantise_fp8(float* x, size_t n, float scale, Fp8Format f);

// Per-tensor delayed scaling: the scale used for a step comes from the amax of the steps before
// it, scale = fp8_max / max(history) / 2^margin; a history of zeros (or a non-finite amax) keeps
// the previous scale (which starts at 1).
class Fp8DelayedScale {
 public:
  explicit Fp8DelayedScale(Fp8Format f, int history = 1024, int margin = 0);
  float scale() const { return scale_; }
  // Quantises x with the current scale, records its amax and recomputes the scale for next time.
  void quantise(float* x, size_t n);
  // Records an amax (what quantise does after rounding) and recomputes the scale.
  void record(float amax);

  // The whole state as floats, for checkpoints: [scale, next slot, history ring...]; restore()
  // takes what state() gave (a ring of another length is refused by name).
  std::vector<float> state() const;
  void restore(const std::vector<float>& s);

 private:
  Fp8Format f_;
  int margin_;
  std::vector<float> history_;  // ring buffer of the last `history` amaxes
  size_t next_ = 0;
  float scale_ = 1.0f;
};

}  // namespace ff
