#include "kernels/packed_weights.h"

#include <map>
#include <mutex>
#include <tuple>

#include "core/memory.h"

#if defined(FIVEFOLD_GEMM_ONEDNN)
#include "kernels/onednn_common.h"
#endif

namespace ff {

#if defined(FIVEFOLD_GEMM_ONEDNN)
struct PackedWeights::Impl {
  // The products run with one packing of a weight: they differ in M, strides, alpha, beta, C's type.
  using ProductKey = std::tuple<int, int, int, float, float, DType>;  // M, lda, ldc, alpha, beta, C's type
  struct Packed {
    dnnl::memory::desc layout;  // oneDNN's blocked layout, chosen by the first product's primitive
    TrackedBuffer<unsigned char> storage;
    uint64_t generation = 0;
    bool packed = false;
    std::map<ProductKey, dnnl::matmul> products;
    std::map<ProductKey, bool> refused;  // products oneDNN cannot run on this layout: plain
  };
  // A weight and the order a product reads it in: (twin, trans_w, K, N, dtype).
  using WeightKey = std::tuple<const void*, bool, int, int, DType>;

  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::mutex mu;
  std::map<WeightKey, Packed> weights;
  std::map<WeightKey, bool> refused;  // no blocked layout for this weight: always plain
  size_t bytes = 0, packings = 0;
};

namespace {
namespace packed_weights_detail {

using onednn::type_16bit;

// The weight as the product's (K, N) operand over its plain storage.
dnnl::memory::desc plain_weight(bool trans_w, int K, int N, DType t) {
  const dnnl::memory::dims strides = trans_w ? dnnl::memory::dims{1, K} : dnnl::memory::dims{N, 1};
  return dnnl::memory::desc({K, N}, type_16bit(t), strides);
}

// C as the product writes it: fp32, or rounded to its 16-bit type on the way out.
dnnl::memory::desc output(const PackedProduct& p) {
  const dnnl::memory::data_type t =
      p.c_dtype == DType::f32 ? dnnl::memory::data_type::f32 : type_16bit(p.c_dtype);
  return dnnl::memory::desc({p.M, p.N}, t, dnnl::memory::dims{p.ldc, 1});
}

dnnl::matmul::primitive_desc product_desc(const PackedProduct& p, DType t, const dnnl::memory::desc& weight,
                                          const dnnl::engine& engine) {
  const dnnl::primitive_attr attr = onednn::alpha_beta_attr(p.alpha, p.beta);
  const dnnl::memory::desc a({p.M, p.K}, type_16bit(t), dnnl::memory::dims{p.lda, 1});
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, weight, output(p)), attr, engine);
}

}  // namespace packed_weights_detail
}  // namespace

PackedWeights::PackedWeights() : impl_(std::make_unique<Impl>()) {}
PackedWeights::~PackedWeights() = default;
size_t PackedWeights::bytes() const { return impl_->bytes; }
size_t PackedWeights::packings() const { return impl_->packings; }

bool PackedWeights::multiply(const void* w16, DType t, uint64_t generation, const PackedProduct& p) {
  namespace d = packed_weights_detail;
  if ((t != DType::bf16 && t != DType::f16) || p.M <= 0 || p.N <= 0 || p.K <= 0) return false;
  if (p.c_dtype != DType::f32 && (p.c_dtype != t || p.beta != 0.0f)) return false;  // no 16-bit accumulation
  Impl& s = *impl_;
  // Held while looking up, building and packing, not while multiplying (nodes of std::map stay put).
  std::unique_lock<std::mutex> lock(s.mu);
  const Impl::WeightKey wk{w16, p.trans_w, p.K, p.N, t};
  if (s.refused.count(wk)) return false;
  const Impl::ProductKey pk{p.M, p.lda, p.ldc, p.alpha, p.beta, p.c_dtype};
  auto it = s.weights.find(wk);
  try {
    if (it == s.weights.end()) {
      // The first product picks the blocked layout (format any); later ones (another M: an
      // evaluation batch, a last micro-batch) must accept that same layout or run plain.
      const dnnl::memory::desc any({p.K, p.N}, d::type_16bit(t), dnnl::memory::format_tag::any);
      const dnnl::matmul::primitive_desc pd = d::product_desc(p, t, any, s.engine);
      Impl::Packed packed;
      packed.layout = pd.weights_desc();
      packed.storage.allocate(packed.layout.get_size(), MemCategory::params);
      packed.products.emplace(pk, dnnl::matmul(pd));
      s.bytes += packed.storage.bytes();
      it = s.weights.emplace(wk, std::move(packed)).first;
    } else if (!it->second.products.count(pk)) {
      if (it->second.refused.count(pk)) return false;
      it->second.products.emplace(pk, dnnl::matmul(d::product_desc(p, t, it->second.layout, s.engine)));
    }
  } catch (const dnnl::error&) {
    if (it == s.weights.end())
      s.refused.emplace(wk, true);
    else
      it->second.refused.emplace(pk, true);
    return false;
  }
  Impl::Packed& w = it->second;
  dnnl::stream stream(s.engine);
  if (!w.packed || w.generation != generation) {
    dnnl::memory plain(d::plain_weight(p.trans_w, p.K, p.N, t), s.engine, const_cast<void*>(w16));
    dnnl::memory blocked(w.layout, s.engine, w.storage.data());
    dnnl::reorder(plain, blocked).execute(stream, plain, blocked);
    stream.wait();
    w.generation = generation, w.packed = true;
    ++s.packings;
  }
  const dnnl::matmul& product = w.products.at(pk);
  lock.unlock();
  const dnnl::memory a({{p.M, p.K}, d::type_16bit(t), dnnl::memory::dims{p.lda, 1}}, s.engine,
                       const_cast<void*>(p.A));
  const dnnl::memory b(w.layout, s.engine, w.storage.data());
  const dnnl::memory c(d::output(p), s.engine, p.C);
  product.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
  stream.wait();
  return true;
}
#else
struct PackedWeights::Impl {};
PackedWeights::PackedWeights() : impl_(std::make_unique<Impl>()) {}
PackedWeights::~PackedWeights() = default;
size_t PackedWeights::bytes() const { return 0; }
size_t PackedWeights::packings() const { return 0; }
bool PackedWeights::multiply(const void*, DType, uint64_t, const PackedProduct&) { return false; }
#endif

}  // namespace ff
