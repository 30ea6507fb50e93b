#pragma once
// The `bench` model's GEMMs as the GEMM benches time them (configs/bench.toml: 8 x 256 tokens,
// dim 384, q/k/v 1152, gate/up 2 x 1024, ffn 1024, vocab 4096): each linear layer's forward
// x W^T, input gradient dy W and weight gradient dy^T x, layer by layer. `tokens` replaces
// 8 x 256 and `scale` divides every other dimension (a bench's check on a slow path).
#include <string>
#include <vector>

namespace ffbench {

struct Product {
  std::string name;
  int M, N, K;
  bool trans_a, trans_b;
};

inline std::vector<Product> bench_model_products(int tokens = 8 * 256, int scale = 1) {
  struct Linear {
    const char* name;
    int out, in;
  };
  const Linear layers[] = {{"qkv", 1152, 384}, {"o", 384, 384}, {"gate_up", 2048, 384}, {"down", 384, 1024},
                           {"lm_head", 4096, 384}};
  std::vector<Product> products;
  for (const Linear& l : layers) {
    const int out = l.out / scale, in = l.in / scale;
    const std::string n = l.name;
    products.push_back({n + " fwd x W^T", tokens, out, in, false, true});
    products.push_back({n + " dx = dy W", tokens, in, out, false, false});
    products.push_back({n + " dW = dy^T x", out, in, tokens, true, false});
  }
  return products;
}

}  // namespace ffbench
