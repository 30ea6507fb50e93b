#include "kernels/wgrad_rows.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <stdexcept>
#include <tuple>
#include <vector>

#if defined(FIVEFOLD_GEMM_ONEDNN)
#include "kernels/onednn_common.h"
#endif

namespace ff {

#if defined(FIVEFOLD_GEMM_ONEDNN)
namespace {
namespace wgrad_rows_detail {

constexpr int kRowAlign = 16;  // oneDNN's bf16 row blocking: no block straddles two threads

// One thread's block: rows, N, K, lda, ldb, ldc, dtype, beta, and the thread's slot. Each slot has
// its own primitive even when two blocks have one shape: one primitive executed by two threads at
// once ran ~3x slower here (they share its internal state).
using Key = std::tuple<int, int, int, int, int, int, DType, float, int>;

using Cache = onednn::MatmulCache<Key>;
Cache& cache() {
  static Cache c;  // memo: a primitive made for a shape computes what a new one would
  return c;
}

dnnl::memory::desc a_block(int rows, int K, int lda, DType t) {  // op(A) = A^T: (rows, K), strides (1, lda)
  return dnnl::memory::desc({rows, K}, onednn::type_16bit(t), dnnl::memory::dims{1, lda});
}
dnnl::memory::desc b_plain(int K, int N, int ldb, DType t) {
  return dnnl::memory::desc({K, N}, onednn::type_16bit(t), dnnl::memory::dims{ldb, 1});
}
dnnl::memory::desc c_block(int rows, int N, int ldc) {
  return dnnl::memory::desc({rows, N}, dnnl::memory::data_type::f32, dnnl::memory::dims{ldc, 1});
}

// The single-threaded primitive for one block (null: oneDNN has none). oneDNN sizes a primitive's
// work split by omp_get_max_threads() when it is created, so it is created with that set to 1;
// run later inside a parallel region, it runs on the calling thread alone.
const dnnl::matmul* block_primitive(const Key& key) {
  Cache& c = cache();
  if (auto it = c.primitives.find(key); it != c.primitives.end()) return &it->second;
  if (c.refused.count(key)) return nullptr;
  const auto [rows, N, K, lda, ldb, ldc, t, beta, slot] = key;
  (void)slot;
  struct OneThread {  // restored however the creation ends
    int saved = omp_get_max_threads();
    OneThread() { omp_set_num_threads(1); }
    ~OneThread() { omp_set_num_threads(saved); }
  } one_thread;
  const dnnl::matmul* made = nullptr;
  try {
    const dnnl::matmul::desc d(a_block(rows, K, lda, t), b_plain(K, N, ldb, t), c_block(rows, N, ldc));
    const dnnl::matmul::primitive_desc pd(d, onednn::alpha_beta_attr(1.0f, beta), c.engine);
    made = &c.primitives.emplace(key, dnnl::matmul(pd)).first->second;
  } catch (const dnnl::error&) {
    c.refused.emplace(key, true);
  }
  return made;
}

}  // namespace wgrad_rows_detail
}  // namespace

bool wgrad_rows_per_thread(int M, int N, int K, ConstTypedPtr A, int lda, ConstTypedPtr B, int ldb, float beta,
                           float* C, int ldc) {
  namespace d = wgrad_rows_detail;
  const DType t = A.dtype();
  const int parts = omp_get_max_threads();
  if (parts < 2 || omp_in_parallel() || M <= 0 || N <= 0 || K <= 0 || B.dtype() != t ||
      (t != DType::bf16 && t != DType::f16))
    return false;
  // Whole 16-row blocks dealt out evenly: thread p takes rows [row(p), row(p + 1)).
  const int row_blocks = (M + d::kRowAlign - 1) / d::kRowAlign;
  if (row_blocks < parts) return false;  // too few rows to share
  auto row = [&](int p) { return std::min(M, int(long(p) * row_blocks / parts) * d::kRowAlign); };
  std::vector<const dnnl::matmul*> blocks(size_t(parts), nullptr);
  {
    std::lock_guard<std::mutex> lock(d::cache().mu);
    for (int p = 0; p < parts; ++p) {
      const int r0 = row(p), r = row(p + 1) - r0;
      blocks[size_t(p)] = d::block_primitive(d::Key{r, N, K, lda, ldb, ldc, t, beta, p});
      if (!blocks[size_t(p)]) return false;
    }
  }
  const dnnl::engine& eng = d::cache().engine;
  const auto* a = static_cast<const unsigned char*>(A.data());
  const size_t elem = dtype_size(t);
  std::atomic<bool> failed{false};
#pragma omp parallel num_threads(parts)
  {
    // A team smaller than asked for (a nested or limited runtime) still covers every block.
    for (int p = omp_get_thread_num(); p < parts; p += omp_get_num_threads()) {
      const int r0 = row(p), r = row(p + 1) - r0;
      try {
        dnnl::stream s(eng);
        const dnnl::memory am(d::a_block(r, K, lda, t), eng, const_cast<unsigned char*>(a + size_t(r0) * elem));
        const dnnl::memory bm(d::b_plain(K, N, ldb, t), eng, const_cast<void*>(B.data()));
        const dnnl::memory cm(d::c_block(r, N, ldc), eng, C + size_t(r0) * ldc);
        blocks[size_t(p)]->execute(s, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
        s.wait();
      } catch (const dnnl::error&) {
        failed.store(true);
      }
    }
  }
  if (failed.load()) throw std::runtime_error("wgrad_rows_per_thread: a oneDNN matmul failed while running");
  return true;
}
#else
bool wgrad_rows_per_thread(int, int, int, ConstTypedPtr, int, ConstTypedPtr, int, float, float*, int) {
  return false;
}
#endif

}  // namespace ff
