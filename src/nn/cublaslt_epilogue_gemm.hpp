#pragma once
// EpilogueGemm on CUDA: cuBLASLt with fused epilogues on the stream of the
// run's Kokkos::Cuda instance (see epilogue_gemm.hpp). One plan per product
// shape (epilogue, transposes, sizes, leading dimensions and the operands'
// alignments): its descriptors and the algorithm cuBLASLt's heuristics
// ranked first, looked up once and kept, so a call after the first makes no
// heuristic query. Pointers (operands, bias, bitmask) are set per call:
// plans are shared by every buffer of the same shape and alignment. The
// workspace is the layers' cuBLAS handle's (one stream, so the two never
// use it at once): a call allocates nothing and can be captured in a CUDA
// graph.
// Only compiled when Kokkos has CUDA (epilogue_gemm.hpp includes it).

#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_CUDA

#include "core/error.hpp"
#include "nn/cublas_handle.hpp"
#include "nn/epilogue_gemm.hpp"

#include <cublasLt.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>

namespace foxrl {

namespace detail {

/// Owns one cuBLASLt object (descriptor, layout or preference) and destroys
/// it with `destroy`.
template <class T, cublasStatus_t (*destroy)(T)>
class LtObject {
 public:
  LtObject() = default;
  explicit LtObject(T object) : object_(object) {}
  LtObject(const LtObject&) = delete;
  LtObject& operator=(const LtObject&) = delete;
  LtObject(LtObject&& o) noexcept : object_(o.object_) { o.object_ = nullptr; }
  LtObject& operator=(LtObject&& o) noexcept {
    std::swap(object_, o.object_);
    return *this;
  }
  ~LtObject() {
    if (object_ != nullptr) destroy(object_);
  }
  T get() const { return object_; }

 private:
  T object_ = nullptr;
};

using LtMatmulDesc = LtObject<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>;
using LtLayout = LtObject<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;
using LtPreference = LtObject<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>;

/// The largest power of two (at most 256) dividing the address and, for a
/// matrix, its row stride in bytes: what cuBLASLt may assume of every
/// column it reads.
inline std::uint32_t lt_alignment(const void* p, std::int64_t row_stride_bytes = 256) {
  std::uint64_t bits = reinterpret_cast<std::uintptr_t>(p) | std::uint64_t(row_stride_bytes) | 256u;
  return static_cast<std::uint32_t>(bits & (~bits + 1));
}

/// `p` moved by `elements` floats (possibly into another allocation: the
/// batch strides of EpilogueGemm::forward_pair span buffers).
inline const void* float_offset(const void* p, std::int64_t elements) {
  return reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(p) +
                                       static_cast<std::uintptr_t>(elements * std::int64_t(sizeof(float))));
}

/// The distance in floats from `from` to `to`, two float buffers of one
/// device (a signed batch stride).
inline std::int64_t float_distance(const float* from, const float* to) {
  return (static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(to)) -
          static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(from))) /
         std::int64_t(sizeof(float));
}

}  // namespace detail

template <>
class EpilogueGemm<Kokkos::Cuda> {
 public:
  using memory_space = Kokkos::Cuda::memory_space;
  static constexpr bool available = true;

  /// The bf16 mode has no plans (its products read bf16 copies of the
  /// operands, RowMajorGemm): every call then reports that it did not run.
  /// `workspace`: CublasHandle::workspace_bytes of 256-byte aligned device
  /// memory that outlives this object, used only by calls on the stream its
  /// owner's calls use (the layers' cuBLAS handle's: RowMajorGemm::workspace).
  EpilogueGemm(const Kokkos::Cuda& /*space*/, MatmulPrecision precision, void* workspace)
      : precision_(precision), workspace_(workspace) {
    if (workspace_ == nullptr) throw LogicError("foxrl::EpilogueGemm: no workspace");
    detail::check_cublas(cublasLtCreate(&handle_), "cublasLtCreate");
  }
  EpilogueGemm(const EpilogueGemm&) = delete;
  EpilogueGemm& operator=(const EpilogueGemm&) = delete;
  ~EpilogueGemm() {
    plans_.clear();
    if (handle_ != nullptr) cublasLtDestroy(handle_);
  }

  /// Y[M, N] = act(X[M, K] W[N, K]^T + b) with act = ReLU when `relu`; with
  /// `mask` (needs relu and mask.rows >= M) the ReLU's bitmask too. `run`
  /// false only asks whether the call would run. Returns whether it ran.
  bool forward(const Kokkos::Cuda& space, const ConstMatrix<memory_space>& x, const ConstMatrix<memory_space>& w,
               const ConstVector<memory_space>& bias, bool relu, const MutableMatrix<memory_space>& y,
               const ReluBitmask& mask, bool run = true) {
    const int M = static_cast<int>(x.extent(0)), K = static_cast<int>(x.extent(1)), N = static_cast<int>(w.extent(0));
    if (M == 0) return true;
    if (mask.bits != nullptr && (!relu || mask.rows < M || mask.ld_bits < N || mask.ld_bits % 128 != 0))
      throw LogicError("foxrl::EpilogueGemm::forward: a ReLU bitmask of " + std::to_string(mask.rows) + " rows and " +
                       std::to_string(mask.ld_bits) + " bits per row for a ReLU layer of " + std::to_string(M) +
                       " rows and " + std::to_string(N) + " outputs");
    const cublasLtEpilogue_t epilogue = mask.bits != nullptr ? CUBLASLT_EPILOGUE_RELU_AUX_BIAS
                                        : relu               ? CUBLASLT_EPILOGUE_RELU_BIAS
                                                             : CUBLASLT_EPILOGUE_BIAS;
    // Column-major: D[N, M] = W^T(op T of W's [K, N]) X(op N of X's [K, M]).
    const Operands o = operands(w, x, y, bias.data(), mask);
    return launch(space, Key{epilogue, true, false, N, M, K, o}, o, run);
  }

  /// Two parameter sets over the same input in one call: Y_i[M, N] =
  /// act(X[M, K] W_i[N, K]^T + b_i) for i = 1, 2 (act = ReLU when `relu`),
  /// as a strided batch of two whose strides are the distances between the
  /// two W's, b's and Y's (two buffers each, anywhere on the device) and 0
  /// for X. The set at the lower addresses goes first: cuBLASLt takes
  /// negative strides, but measured 1.9x slower with them (H100); sets
  /// whose buffers lie in different orders are not paired. Y_2 has Y_1's
  /// row stride. `run` false only asks. Returns whether it ran (not:
  /// cuBLASLt has no batched algorithm for the shape, or the operands'
  /// shapes or order differ).
  bool forward_pair(const Kokkos::Cuda& space, const ConstMatrix<memory_space>& x, const ConstMatrix<memory_space>& w1,
                    const ConstVector<memory_space>& b1, const MutableMatrix<memory_space>& y1,
                    const ConstMatrix<memory_space>& w2, const ConstVector<memory_space>& b2,
                    const MutableMatrix<memory_space>& y2, bool relu, bool run = true) {
    const int M = static_cast<int>(x.extent(0)), K = static_cast<int>(x.extent(1)), N = static_cast<int>(w1.extent(0));
    if (M == 0 || w2.extent(0) != w1.extent(0) || w2.extent(1) != w1.extent(1) || w2.stride(0) != w1.stride(0) ||
        y2.extent(0) != y1.extent(0) || y2.extent(1) != y1.extent(1) || y2.stride(0) != y1.stride(0) ||
        b2.extent(0) != b1.extent(0))
      return false;
    const cublasLtEpilogue_t epilogue = relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
    const bool second_first = detail::float_distance(w1.data(), w2.data()) < 0;
    const auto& w_first = second_first ? w2 : w1;
    const auto& b_first = second_first ? b2 : b1;
    const auto& y_first = second_first ? y2 : y1;
    Operands o = operands(w_first, x, y_first, b_first.data(), ReluBitmask());
    o.batch = 2;
    o.stride_a = detail::float_distance(w_first.data(), second_first ? w1.data() : w2.data());
    o.stride_d = detail::float_distance(y_first.data(), second_first ? y1.data() : y2.data());
    o.stride_bias = detail::float_distance(b_first.data(), second_first ? b1.data() : b2.data());
    if (o.stride_a <= 0 || o.stride_d <= 0 || o.stride_bias <= 0) return false;
    return launch(space, Key{epilogue, true, false, N, M, K, o}, o, run);
  }

  /// dX[M, K] = (dY[M, N] W[N, K]) * [mask] and db[K] = sum over rows of
  /// dX, `mask` being the ReLU bitmask the forward of dX's layer input
  /// wrote (mask.rows >= M). `run` false only asks. Returns whether it ran.
  bool backward_input(const Kokkos::Cuda& space, const ConstMatrix<memory_space>& dy,
                      const ConstMatrix<memory_space>& w, const ReluBitmask& mask,
                      const MutableMatrix<memory_space>& dx, const MutableVector<memory_space>& db, bool run = true) {
    const int M = static_cast<int>(dy.extent(0)), N = static_cast<int>(w.extent(0)), K = static_cast<int>(w.extent(1));
    if (mask.bits == nullptr || mask.rows < M || mask.ld_bits < K || mask.ld_bits % 128 != 0)
      throw LogicError("foxrl::EpilogueGemm::backward_input: a ReLU bitmask of " + std::to_string(mask.rows) +
                       " rows and " + std::to_string(mask.ld_bits) + " bits per row for " + std::to_string(M) +
                       " rows of " + std::to_string(K) + " features");
    if (M == 0) return false;  // db must still be zeroed: the caller's kernels do it
    // Column-major: dX^T[K, M] = W^T(op N of W's [K, N]) dY^T(op N of dY's [N, M]).
    const Operands o = operands(w, dy, dx, db.data(), mask);
    return launch(space, Key{CUBLASLT_EPILOGUE_DRELU_BGRAD, false, false, K, M, N, o}, o, run);
  }

  /// Plans looked up so far, and how many of them cuBLASLt had no
  /// algorithm for (diagnostics for the benchmarks).
  std::size_t plans() const { return plans_.size(); }
  std::size_t unsupported_plans() const {
    std::size_t n = 0;
    for (const auto& p : plans_) n += p.second.supported ? 0 : 1;
    return n;
  }

 private:
  /// Column-major operands of D = op(A) op(B) (+ bias, aux).
  struct Operands {
    const float* a = nullptr;
    std::int64_t lda = 0;
    const float* b = nullptr;
    std::int64_t ldb = 0;
    float* d = nullptr;
    std::int64_t ldd = 0;
    const void* bias = nullptr;  // read by BIAS epilogues, written by BGRAD
    std::uint8_t* aux = nullptr;
    std::int64_t aux_ld = 0;
    /// A strided batch (forward_pair): the count and the distances, in
    /// elements, from one product's A, B, D and bias to the next's.
    int batch = 1;
    std::int64_t stride_a = 0, stride_b = 0, stride_d = 0, stride_bias = 0;
  };

  /// cuBLASLt's A, B and D: our B, A and C (see the file comment of
  /// epilogue_gemm.hpp), each with its row stride.
  static Operands operands(const ConstMatrix<memory_space>& lt_a, const ConstMatrix<memory_space>& lt_b,
                           const MutableMatrix<memory_space>& d, const void* bias, const ReluBitmask& mask) {
    Operands o;
    o.a = lt_a.data();
    o.lda = static_cast<std::int64_t>(lt_a.stride(0));
    o.b = lt_b.data();
    o.ldb = static_cast<std::int64_t>(lt_b.stride(0));
    o.d = d.data();
    o.ldd = static_cast<std::int64_t>(d.stride(0));
    o.bias = bias;
    o.aux = mask.bits;
    o.aux_ld = mask.ld_bits;
    return o;
  }

  /// What a plan depends on.
  struct Key {
    cublasLtEpilogue_t epilogue;
    bool trans_a, trans_b;
    int m, n, k;
    std::int64_t lda, ldb, ldd, aux_ld;
    int batch;
    std::int64_t stride_a, stride_b, stride_d, stride_bias;
    std::uint32_t align_a, align_b, align_d, align_bias, align_aux;

    Key(cublasLtEpilogue_t e, bool ta, bool tb, int m_, int n_, int k_, const Operands& o)
        : epilogue(e),
          trans_a(ta),
          trans_b(tb),
          m(m_),
          n(n_),
          k(k_),
          lda(o.lda),
          ldb(o.ldb),
          ldd(o.ldd),
          aux_ld(o.aux_ld),
          batch(o.batch),
          stride_a(o.stride_a),
          stride_b(o.stride_b),
          stride_d(o.stride_d),
          stride_bias(o.stride_bias),
          // Every product of a batch reads its operands at the first one's
          // address plus its strides: the alignment covers both.
          align_a(std::min(detail::lt_alignment(o.a, o.lda * 4),
                           detail::lt_alignment(detail::float_offset(o.a, o.stride_a), o.lda * 4))),
          align_b(std::min(detail::lt_alignment(o.b, o.ldb * 4),
                           detail::lt_alignment(detail::float_offset(o.b, o.stride_b), o.ldb * 4))),
          align_d(std::min(detail::lt_alignment(o.d, o.ldd * 4),
                           detail::lt_alignment(detail::float_offset(o.d, o.stride_d), o.ldd * 4))),
          align_bias(std::min(detail::lt_alignment(o.bias),
                              detail::lt_alignment(detail::float_offset(o.bias, o.stride_bias)))),
          align_aux(o.aux != nullptr ? detail::lt_alignment(o.aux, o.aux_ld / 8) : 0) {}

    bool operator<(const Key& o) const {
      return std::tie(epilogue, trans_a, trans_b, m, n, k, lda, ldb, ldd, aux_ld, batch, stride_a, stride_b, stride_d,
                      stride_bias, align_a, align_b, align_d, align_bias,
                      align_aux) < std::tie(o.epilogue, o.trans_a, o.trans_b, o.m, o.n, o.k, o.lda, o.ldb, o.ldd,
                                            o.aux_ld, o.batch, o.stride_a, o.stride_b, o.stride_d, o.stride_bias,
                                            o.align_a, o.align_b, o.align_d, o.align_bias, o.align_aux);
    }
  };

  struct Plan {
    bool supported = false;
    detail::LtMatmulDesc desc;
    detail::LtLayout a, b, d;
    cublasLtMatmulAlgo_t algo{};
  };

  bool launch(const Kokkos::Cuda& space, const Key& key, const Operands& o, bool run) {
    if (precision_ == MatmulPrecision::bf16) return false;
    auto it = plans_.find(key);
    if (it == plans_.end()) it = plans_.emplace(key, make_plan(key, o)).first;
    Plan& p = it->second;
    if (!p.supported || !run) return p.supported;
    set(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, o.bias);
    if (o.aux != nullptr) set(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, o.aux);
    const float alpha = 1.0f, beta = 0.0f;
    detail::check_cublas(
        cublasLtMatmul(handle_, p.desc.get(), &alpha, o.a, p.a.get(), o.b, p.b.get(), &beta, o.d, p.d.get(), o.d,
                       p.d.get(), &p.algo, workspace(), CublasHandle::workspace_bytes, space.cuda_stream()),
        "cublasLtMatmul");
    return true;
  }

  template <class T>
  static void set(const detail::LtMatmulDesc& desc, cublasLtMatmulDescAttributes_t attribute, const T& value) {
    detail::check_cublas(cublasLtMatmulDescSetAttribute(desc.get(), attribute, &value, sizeof(value)),
                         "cublasLtMatmulDescSetAttribute");
  }

  /// Column-major layout of a stored [rows, cols] fp32 matrix.
  static detail::LtLayout layout(int rows, int cols, std::int64_t ld) {
    cublasLtMatrixLayout_t l = nullptr;
    detail::check_cublas(cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, rows, cols, ld), "cublasLtMatrixLayoutCreate");
    return detail::LtLayout(l);
  }

  /// Makes `l` a strided batch of `count` matrices `stride` elements apart.
  static void batched(const detail::LtLayout& l, int count, std::int64_t stride) {
    detail::check_cublas(
        cublasLtMatrixLayoutSetAttribute(l.get(), CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
        "cublasLtMatrixLayoutSetAttribute");
    detail::check_cublas(
        cublasLtMatrixLayoutSetAttribute(l.get(), CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)),
        "cublasLtMatrixLayoutSetAttribute");
  }

  Plan make_plan(const Key& key, const Operands& o) {
    Plan p;
    cublasLtMatmulDesc_t desc = nullptr;
    const cublasComputeType_t compute =
        precision_ == MatmulPrecision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    detail::check_cublas(cublasLtMatmulDescCreate(&desc, compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
    p.desc = detail::LtMatmulDesc(desc);
    const cublasOperation_t ta = key.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = key.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    set(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, ta);
    set(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, tb);
    set(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, key.epilogue);
    // The heuristics read the bias and bitmask pointers for their alignment
    // only; the call sets them again.
    set(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, o.bias);
    if (o.aux != nullptr) {
      set(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, o.aux);
      set(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, key.aux_ld);
    }
    p.a = key.trans_a ? layout(key.k, key.m, key.lda) : layout(key.m, key.k, key.lda);
    p.b = key.trans_b ? layout(key.n, key.k, key.ldb) : layout(key.k, key.n, key.ldb);
    p.d = layout(key.m, key.n, key.ldd);
    if (key.batch > 1) {
      batched(p.a, key.batch, key.stride_a);
      batched(p.b, key.batch, key.stride_b);
      batched(p.d, key.batch, key.stride_d);
      set(p.desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, key.stride_bias);
    }

    cublasLtMatmulPreference_t pref = nullptr;
    detail::check_cublas(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
    const detail::LtPreference preference(pref);
    const auto set_pref = [&](cublasLtMatmulPreferenceAttributes_t attribute, auto value) {
      detail::check_cublas(cublasLtMatmulPreferenceSetAttribute(pref, attribute, &value, sizeof(value)),
                           "cublasLtMatmulPreferenceSetAttribute");
    };
    set_pref(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, std::uint64_t(CublasHandle::workspace_bytes));
    set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_a);
    set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_b);
    set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_d);
    set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_d);

    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle_, p.desc.get(), p.a.get(), p.b.get(), p.d.get(),
                                                                 p.d.get(), pref, 1, &result, &found);
    // NOT_SUPPORTED (or no result): this epilogue, type and shape have no
    // algorithm; the caller's launch sequence runs instead.
    if (status == CUBLAS_STATUS_NOT_SUPPORTED || (status == CUBLAS_STATUS_SUCCESS && found == 0)) return p;
    detail::check_cublas(status, "cublasLtMatmulAlgoGetHeuristic");
    if (result.state != CUBLAS_STATUS_SUCCESS) return p;
    p.algo = result.algo;
    p.supported = true;
    return p;
  }

  void* workspace() const { return workspace_; }

  MatmulPrecision precision_;
  void* workspace_ = nullptr;  ///< shared with the layers' cuBLAS handle (same stream)
  cublasLtHandle_t handle_ = nullptr;
  std::map<Key, Plan> plans_;
};

}  // namespace foxrl

#endif  // KOKKOS_ENABLE_CUDA
