// The tile GEMM's operand packing (kernels/tile_pack.h) at the `bench` model's products
// (bench_model_products.h), on one thread: what gemm_amx.cpp's multiply packs for each product
// (op(B) always; op(A) where it is not read in place; a weight gradient with fewer columns than
// rows run as its transpose, x^T rather than the wider dy^T), in the packing order it uses now
// (b_tile_in_packing_order) against the order before it, column tile by column tile whatever the
// transpose. Packing needs no AMX, so this runs anywhere. Prints ms a product and the ratio; the
// two orders alternate, best of each.
// Usage: bench_tile_pack
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <utility>
#include <vector>

#include "bench_model_products.h"
#include "best_seconds.h"
#include "kernels/tile_pack.h"

namespace {

using ff::amx::tiles_over;

struct Packing {
  bool ta, tb;
  int M, N, K, lda, ldb;
  const uint16_t *A, *B;
};

// Every tile multiply() packs, op(B)'s in packing order or (column_order) column tile by column tile.
void pack_all(const Packing& p, uint32_t* b, uint32_t* a, bool column_order) {
  const int steps = tiles_over(p.K, ff::amx::kPackStep), col_tiles = tiles_over(p.N, ff::amx::kTileWords);
  for (long q = 0; q < long(col_tiles) * steps; ++q)
    ff::amx::pack_b_tile_at(b,
                            column_order ? ff::amx::TileAt{int(q / steps), int(q % steps)}
                                         : ff::amx::b_tile_in_packing_order(q, p.tb, col_tiles, steps),
                            steps, p.B, p.ldb, p.tb, p.K, p.N);
  if (ff::amx::reads_a_in_place(p.ta, p.M, p.K)) return;
  for (long q = 0; q < long(tiles_over(tiles_over(p.M, ff::amx::kTileRows), 2)) * steps; ++q)
    ff::amx::pack_a_tile_pair(a, q, steps, p.A, p.lda, p.ta, p.M, p.K);
}

}  // namespace

int main() {
  std::printf("one thread\n| product | packed | MiB packed | column order ms | packing order ms | speed-up |\n"
              "|---|---|---:|---:|---:|---:|\n");
  std::mt19937 rng(3);
  double total_before = 0, total_now = 0;
  for (const ffbench::Product& s : ffbench::bench_model_products()) {
    Packing p{s.trans_a, s.trans_b, s.M, s.N, s.K, s.trans_a ? s.M : s.K, s.trans_b ? s.K : s.N, nullptr, nullptr};
    std::vector<uint16_t> a(size_t(s.M) * s.K), b(size_t(s.K) * s.N);
    for (auto& x : a) x = uint16_t(rng());
    for (auto& x : b) x = uint16_t(rng());
    p.A = a.data(), p.B = b.data();
    if (ff::amx::computes_transposed(p.ta, p.tb, p.M, p.N)) {  // C^T = B^T A, as gemm_amx.cpp runs it
      std::swap(p.M, p.N), std::swap(p.lda, p.ldb), std::swap(p.A, p.B);
    }
    const bool packs_a = !ff::amx::reads_a_in_place(p.ta, p.M, p.K);
    std::vector<uint32_t> packed_b(ff::amx::packed_b_words(p.N, p.K)),
        packed_a(ff::amx::packed_a_words(p.ta, p.M, p.K));
    auto before = [&] { pack_all(p, packed_b.data(), packed_a.data(), true); };
    auto now = [&] { pack_all(p, packed_b.data(), packed_a.data(), false); };
    double t_before = 1e30, t_now = 1e30;
    for (int round = 0; round < 3; ++round)
      t_before = std::min(t_before, ffbench::best_seconds(before)), t_now = std::min(t_now, ffbench::best_seconds(now));
    total_before += t_before, total_now += t_now;
    const double mib = 4.0 * double(packed_b.size() + packed_a.size()) / (1 << 20);
    std::printf("| %s | %s%s | %.1f | %.3f | %.3f | %.2fx |\n", s.name.c_str(), p.tb ? "B^T" : "B",
                packs_a ? (p.ta ? ", A^T" : ", A") : "", mib, t_before * 1e3, t_now * 1e3, t_before / t_now);
  }
  std::printf("all products once each: column order %.2f ms, packing order %.2f ms (%.2fx)\n", total_before * 1e3,
              total_now * 1e3, total_before / total_now);
  return 0;
}
