// safetensors: a damaged copy is refused naming the file, or its header passes an independent
// check that the tensors are known dtypes whose bytes tile the data region exactly.
#include <algorithm>
#include <vector>

#include "fuzz_util.h"
#include "ckpt/safetensors.h"

using namespace ff;
using namespace ff::fuzz;

namespace {

// Restated from the format, with 128-bit products so no element count can wrap.
void expect_consistent(const nlohmann::json& h, uint64_t data_bytes, int i) {
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (const auto& [name, t] : h.items()) {
    if (name == "__metadata__") {
      ASSERT_TRUE(t.is_object()) << "case " << i;
      continue;
    }
    const std::string dtype = t.at("dtype").get<std::string>();
    const unsigned __int128 size = dtype == "F32" || dtype == "I32"    ? 4
                                   : dtype == "BF16" || dtype == "F16" ? 2
                                   : dtype == "I64"                    ? 8
                                                                       : 0;
    ASSERT_NE(size, 0u) << "case " << i << " dtype " << dtype;
    unsigned __int128 count = 1;
    for (const auto& d : t.at("shape")) {
      ASSERT_GE(d.get<int64_t>(), 0);
      count *= uint64_t(d.get<int64_t>());
      ASSERT_LE(count, (unsigned __int128)data_bytes + 1) << "case " << i;
    }
    const uint64_t b = t.at("data_offsets")[0].get<uint64_t>(), e = t.at("data_offsets")[1].get<uint64_t>();
    ASSERT_EQ(count * size, (unsigned __int128)(e - b)) << "case " << i << " tensor " << name;
    spans.emplace_back(b, e);
  }
  std::sort(spans.begin(), spans.end());
  uint64_t at = 0;
  for (const auto& [b, e] : spans) {
    ASSERT_EQ(b, at) << "case " << i;
    at = e;
  }
  ASSERT_EQ(at, data_bytes) << "case " << i;
}

}  // namespace

TEST(FuzzSafeTensors, DamagedFilesAreRefusedOrConsistent) {
  const Scratch scratch;
  const std::string dir = scratch.path(), good_path = dir + "/good.safetensors";
  const std::string path = dir + "/case.safetensors";
  const std::vector<float> w(12, 1.5f);
  const std::vector<uint16_t> n(4, 0x3F80);
  write_safetensors(good_path, {{"w", "F32", {3, 4}, w.data(), 48}, {"norm", "BF16", {4}, n.data(), 8}},
                    {{"format", "pt"}});
  const std::string good = read_bytes(good_path);
  RngState rng{16006, 0};
  for (int i = 0; i < 1500; ++i) {
    write_bytes(path, mutate(good, rng));
    nlohmann::json h;
    uint64_t start = 0;
    if (run_case(path, [&] {
          h = read_safetensors_header(path);
          start = safetensors_data_start(path);
        }) == Outcome::accepted) {
      expect_consistent(h, read_bytes(path).size() - start, i);
    }
  }
}
