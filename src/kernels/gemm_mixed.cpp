// The typed GEMM: f32 operands go to the fp32 path; bf16 x bf16 -> f32 and f16 x f16 -> f32 run
// as oneDNN matmul primitives with fp32 accumulation, one primitive cached per shape (creating
// one costs ~100 us, more than a small product), or bf16 on fivefold's tile GEMM where the CPU
// has AMX or FIVEFOLD_AMX_GEMM=emulate asks for its model (gemm_amx.h, cpu_isa.h's gemm_tiles).
// A 16-bit product oneDNN cannot build on this CPU is widened to fp32 and multiplied there: a
// product of two 16-bit values is exact in fp32, so the result is the same up to the order of the
// fp32 additions, only slower.
#include <omp.h>

#include <chrono>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/convert.h"
#include "kernels/cpu_isa.h"
#include "kernels/gemm.h"
#include "kernels/gemm_amx.h"
#include "kernels/scratch.h"

#if defined(FIVEFOLD_GEMM_ONEDNN)
#include "kernels/onednn_common.h"
#endif

namespace ff {
namespace {

void widen_and_multiply(bool trans_a, bool trans_b, int M, int N, int K, float alpha, ConstTypedPtr A,
                        int lda, ConstTypedPtr B, int ldb, float beta, float* C, int ldc) {
  const size_t na = size_t(trans_a ? K : M) * lda, nb = size_t(trans_b ? N : K) * ldb;
  float* a = detail::thread_scratch<float>(na + nb);
  float* b = a + na;
  convert_to_f32(a, A, na);
  convert_to_f32(b, B, nb);
  gemm(trans_a, trans_b, M, N, K, alpha, a, lda, b, ldb, beta, C, ldc);
}

#if defined(FIVEFOLD_GEMM_ONEDNN)
// trans_a, trans_b, M, N, K, lda, ldb, ldc, dtype, alpha, beta, and the OpenMP threads: oneDNN
// sizes a primitive's work split (and so its order of fp32 additions) by the thread count at its
// creation, so a primitive made for another count is another computation: with the count in the
// key, a cached primitive computes what a new one would.
using Key = std::tuple<bool, bool, int, int, int, int, int, int, DType, float, float, int>;

using MatmulCache = onednn::MatmulCache<Key>;

MatmulCache& cache() {
  static MatmulCache c;  // memo: a primitive made for a shape computes what a new one would
  return c;
}

using onednn::type_16bit;

// op(X) of logical shape (rows, cols), stored row-major with row stride ld (transposed: the
// stored matrix is (cols, rows)).
dnnl::memory::desc operand(int rows, int cols, int ld, bool trans, dnnl::memory::data_type t) {
  const dnnl::memory::dims strides = trans ? dnnl::memory::dims{1, ld} : dnnl::memory::dims{ld, 1};
  return dnnl::memory::desc({rows, cols}, t, strides);
}

// The cached primitive, or nullptr when oneDNN has no implementation for these types here.
const dnnl::matmul* primitive(const Key& key) {
  MatmulCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  if (auto it = c.primitives.find(key); it != c.primitives.end()) return &it->second;
  if (c.refused.count(key)) return nullptr;
  const auto [ta, tb, M, N, K, lda, ldb, ldc, t, alpha, beta, threads] = key;
  (void)threads;  // in the key only: the primitive reads it from OpenMP as it is made
  const auto dt = type_16bit(t);
  const dnnl::primitive_attr attr = onednn::alpha_beta_attr(alpha, beta);
  const dnnl::memory::desc c_md({M, N}, dnnl::memory::data_type::f32, dnnl::memory::dims{ldc, 1});
  try {
    const dnnl::matmul::desc d(operand(M, K, lda, ta, dt), operand(K, N, ldb, tb, dt), c_md);
    const dnnl::matmul::primitive_desc pd(d, attr, c.engine);
    return &c.primitives.emplace(key, dnnl::matmul(pd)).first->second;
  } catch (const dnnl::error&) {
    c.refused.emplace(key, true);
    return nullptr;
  }
}

bool onednn_16bit(bool ta, bool tb, int M, int N, int K, float alpha, ConstTypedPtr A, int lda,
                  ConstTypedPtr B, int ldb, float beta, float* C, int ldc) {
  const Key key{ta, tb, M, N, K, lda, ldb, ldc, A.dtype(), alpha, beta, omp_get_max_threads()};
  const dnnl::matmul* mm = primitive(key);
  if (!mm) return false;
  const auto dt = type_16bit(A.dtype());
  dnnl::engine& eng = cache().engine;
  dnnl::memory a(operand(M, K, lda, ta, dt), eng, const_cast<void*>(A.data()));
  dnnl::memory b(operand(K, N, ldb, tb, dt), eng, const_cast<void*>(B.data()));
  dnnl::memory c({{M, N}, dnnl::memory::data_type::f32, dnnl::memory::dims{ldc, 1}}, eng, C);
  dnnl::stream s(eng);
  mm->execute(s, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
  s.wait();
  return true;
}
#endif

}  // namespace

void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, ConstTypedPtr A, int lda,
          ConstTypedPtr B, int ldb, float beta, TypedPtr C, int ldc) {
  const DType ta = A.dtype(), tb = B.dtype(), tc = C.dtype();
  if (ta == DType::f32 && tb == DType::f32 && tc == DType::f32) {
    gemm(trans_a, trans_b, M, N, K, alpha, A.f32(), lda, B.f32(), ldb, beta, C.f32(), ldc);
    return;
  }
  if (ta != tb || ta == DType::f32 || tc != DType::f32)
    throw std::logic_error(std::string("gemm: no kernel for ") + dtype_name(ta) + " x " + dtype_name(tb) +
                           " -> " + dtype_name(tc) +
                           "; supported: f32 x f32, bf16 x bf16 and f16 x f16, each into f32");
  if (M <= 0 || N <= 0) return;
  if (gemm_on_fivefold_tiles(ta)) {
    gemm_bf16_on_tiles(gemm_tiles(), trans_a, trans_b, M, N, K, alpha, static_cast<const uint16_t*>(A.data()), lda,
                       static_cast<const uint16_t*>(B.data()), ldb, beta, C.f32(), ldc);
    return;
  }
#if defined(FIVEFOLD_GEMM_ONEDNN)
  // K = 0 is a valid product (C = beta C) that oneDNN refuses; the fp32 path handles it.
  if (K > 0 && onednn_16bit(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C.f32(), ldc)) return;
#endif
  widen_and_multiply(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C.f32(), ldc);
}

bool gemm_on_fivefold_tiles(DType t) { return t == DType::bf16 && gemm_tiles() != GemmTiles::onednn; }

bool native_16bit_gemm(DType t) {
#if defined(FIVEFOLD_GEMM_ONEDNN)
  const Key key{false, false, 64, 64, 64, 64, 64, 64, t, 1.0f, 0.0f, omp_get_max_threads()};
  return primitive(key) != nullptr;
#else
  (void)t;
  return false;
#endif
}

double measure_gemm_gflops(DType t, int M, int N, int K, bool trans_a, bool trans_b, int threads) {
  const int saved = omp_get_max_threads();
  if (threads > 0) omp_set_num_threads(threads);
  const int lda = trans_a ? M : K, ldb = trans_b ? K : N;
  std::vector<float> a(size_t(M) * K), b(size_t(K) * N), c(size_t(M) * N, 0.0f);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 7) * 0.25f - 0.75f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(i % 5) * 0.5f - 1.0f;
  std::vector<uint16_t> a16(a.size()), b16(b.size());
  convert_from_f32(TypedPtr(a16.data(), t == DType::f32 ? DType::bf16 : t), a.data(), a.size());
  convert_from_f32(TypedPtr(b16.data(), t == DType::f32 ? DType::bf16 : t), b.data(), b.size());
  const ConstTypedPtr A = t == DType::f32 ? ConstTypedPtr(a.data()) : ConstTypedPtr(a16.data(), t);
  const ConstTypedPtr B = t == DType::f32 ? ConstTypedPtr(b.data()) : ConstTypedPtr(b16.data(), t);
  using clock = std::chrono::steady_clock;
  gemm(trans_a, trans_b, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, TypedPtr(c.data()), N);
  double best = 1e30, spent = 0;
  for (int rep = 0; rep < 3 || (spent < 0.3 && rep < 200); ++rep) {
    const auto t0 = clock::now();
    gemm(trans_a, trans_b, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, TypedPtr(c.data()), N);
    const double s = std::chrono::duration<double>(clock::now() - t0).count();
    best = std::min(best, s);
    spent += s;
  }
  if (threads > 0) omp_set_num_threads(saved);
  return 2.0 * M * double(N) * K / best * 1e-9;
}

}  // namespace ff
