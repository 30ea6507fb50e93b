#pragma once
// Linear warmup from 0 to the peak, then half a cosine down to peak * min_ratio at the last step
// (the schedule of GPT-3, LLaMA and nanoGPT).
namespace ff {

struct LrSchedule {
  float peak;
  float min_ratio;
  int warmup;
  int total;
  float at(int step) const;  // step is 1-based: the step about to be taken
};

}  // namespace ff
