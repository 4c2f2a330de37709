#pragma once
// DenseOps: the dense-layer products of one backend, instance first:
//   forward           Y  = act([X1; X2] W^T + b)    (bias + ReLU fused)
//   backward_input    dX = (dY W) * [H > 0]          (ReLU mask of the input fused)
//   backward_weights  dW = dY^T X,  db = colsum dY   (bias gradient fused)
// portable: foxrl's tiled team kernel with the epilogues fused
// (kernels/nn/tiled_gemm.hpp). blas: RowMajorGemm (the gemm production
// runs: cuBLAS on CUDA through the handle this object owns, Kokkos Kernels
// elsewhere) followed by foxrl's bandwidth-bound epilogue kernels
// (bias_activation, relu_backward), or, where the library offers them and
// the fused epilogues are on (CUDA; the kernel path gemm_epilogues off turns them
// off), EpilogueGemm (cuBLASLt with the bias and ReLU, and optionally the
// ReLU-mask and bias-gradient work, in the gemm's epilogue:
// nn/epilogue_gemm.hpp). Mlp (src/nn/mlp.hpp)
// builds on these and on the same gemm.

#include "core/error.hpp"
#include "core/kernel_paths.hpp"
#include "kernels/core/reduce_scratch.hpp"
#include "kernels/nn/bias_activation.hpp"
#include "kernels/nn/matmul_precision.hpp"
#include "kernels/nn/relu_backward.hpp"
#include "kernels/nn/tiled_gemm.hpp"
#include "nn/dense_backend.hpp"
#include "nn/epilogue_gemm.hpp"
#include "nn/row_major_gemm.hpp"
#include "views/nn/matrix.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace foxrl {

/// The dense products of one backend (see the file comment). Holds the
/// blas backend's RowMajorGemm (one cuBLAS handle on CUDA), so share one
/// object between the networks of a learner.
template <class ExecSpace>
class DenseOps {
 public:
  using memory_space = typename ExecSpace::memory_space;

  /// The tensor-core precisions (tf32, bf16) run on the blas backend only.
  DenseOps(const ExecSpace& space, DenseBackend backend, MatmulPrecision precision = MatmulPrecision::fp32)
      : backend_(backend) {
    if (backend == DenseBackend::portable && precision != MatmulPrecision::fp32)
      throw UsageError(std::string("foxrl::DenseOps: matmul_precision ") + to_string(precision) +
                       " needs the blas dense backend (the portable one multiplies in fp32)");
    if (backend == DenseBackend::blas) gemm_ = std::make_unique<RowMajorGemm<ExecSpace>>(space, precision);
    set_fused_epilogues(space, kernel_path_on(KernelPath::gemm_epilogues));
  }

  DenseBackend backend() const { return backend_; }

  /// Whether products run with their epilogues fused into the gemm
  /// (EpilogueGemm) where the library offers them.
  bool fused_epilogues() const { return epilogue_ != nullptr; }
  /// Whether networks built on these ops keep ReLU bitmasks, so their
  /// backward masks and forms the bias gradient in the dX product's
  /// epilogue (with fused_epilogues(); off by default: on the H200 cuBLASLt
  /// runs those epilogues as a second kernel, slower than the forward's
  /// bias + ReLU alone with the mask kernel, perf/NOTES.md).
  bool epilogue_masks() const { return epilogue_ != nullptr && epilogue_masks_; }
  /// Set before building networks on these ops (as set_fused_epilogues).
  void set_epilogue_masks(bool on) { epilogue_masks_ = on; }

  /// Turns the fused epilogues on or off (on: only where this backend has
  /// them: blas on CUDA). Networks built on these ops size their ReLU
  /// bitmasks when they are built, so set this first.
  void set_fused_epilogues(const ExecSpace& space, bool on) {
    if (!on || backend_ != DenseBackend::blas || !EpilogueGemm<ExecSpace>::available) {
      epilogue_.reset();
      return;
    }
    if (!epilogue_)
      epilogue_ = std::make_unique<EpilogueGemm<ExecSpace>>(space, gemm().precision(), gemm().workspace());
  }

  /// Whether forward() on the blas backend takes stacked inputs [X1; X2]
  /// whose rows follow each other in memory as one product (on GPUs unless
  /// the kernel path stacked_rows off, off on host backends; the portable kernel
  /// reads both blocks in one launch anyway).
  bool stacked_rows() const { return stacked_rows_; }
  void set_stacked_rows(bool on) { stacked_rows_ = on; }
  /// Whether an Mlp on these ops (blas backend) forms the weight gradient
  /// of a first layer with at most ReluBackwardFunctor::max_small inputs
  /// in its backward's mask pass instead of a gemm (on GPUs, the kernel
  /// path narrow_input: core/kernel_paths.hpp; off on host backends, whose BLAS sums in its
  /// own order: host results keep their bits).
  bool narrow_inputs() const { return narrow_inputs_; }
  void set_narrow_inputs(bool on) { narrow_inputs_ = on; }
  /// Products (library calls or tiled launches) forward() has issued so
  /// far: how a caller tells one product over stacked rows from two.
  std::int64_t forward_products() const { return forward_products_; }

  /// The blas backend's gemm (LogicError on the portable backend).
  RowMajorGemm<ExecSpace>& gemm() {
    if (!gemm_) throw LogicError("foxrl::DenseOps::gemm: the portable backend has no gemm");
    return *gemm_;
  }

  /// Y[M, N] = act(X W^T + b) with X = [X1; X2] stacked by rows (X2 may be
  /// empty; the inputs are not copied: on blas one product where X2's rows
  /// follow X1's in memory (stacked_rows()), else one per block; one
  /// launch reading both on portable). W is [N, K].
  /// With fused epilogues and a ReLU, `mask` (if given) receives the ReLU's
  /// bitmask of X1's rows (of all M rows when one product takes them and
  /// mask.rows >= M) where the library can write it; returns whether it
  /// did (backward_input_masked then takes it).
  bool forward(const ExecSpace& space, const ConstMatrix<memory_space>& x1, const ConstMatrix<memory_space>& x2,
               const ConstMatrix<memory_space>& w, const ConstVector<memory_space>& bias, bool relu,
               const MutableMatrix<memory_space>& y, const ReluBitmask& mask = ReluBitmask()) {
    const int M1 = static_cast<int>(x1.extent(0));
    const int M = static_cast<int>(x1.extent(0) + x2.extent(0));
    const int N = static_cast<int>(w.extent(0));
    const int K = static_cast<int>(w.extent(1));
    detail::check_shapes(
        x1.extent(1) == std::size_t(K) && (x2.extent(0) == 0 || x2.extent(1) == std::size_t(K)) &&
            y.extent(0) == std::size_t(M) && y.extent(1) == std::size_t(N) && bias.extent(0) == std::size_t(N),
        "foxrl::DenseOps::forward",
        "X " + detail::dims(x1.extent(0), x1.extent(1)) + " + " + detail::dims(x2.extent(0), x2.extent(1)) + ", W " +
            detail::dims(N, K) + ", Y " + detail::dims(y.extent(0), y.extent(1)));
    if (backend_ == DenseBackend::portable) {
      kernels::GemmOperand a = kernels::row_major_operand(x1);
      if (x2.extent(0) > 0) {
        if (x2.stride(0) != x1.stride(0))
          throw LogicError("foxrl::DenseOps::forward: stacked inputs need equal row strides");
        a.ptr2 = x2.data();
        a.split = M1;
      }
      kernels::GemmEpilogue ep;
      ep.bias = bias.data();
      ep.relu = relu;
      kernels::tiled_gemm(space, "foxrl::kernels::dense_forward", a, kernels::transposed_operand(w), y.data(),
                          static_cast<std::ptrdiff_t>(y.stride(0)), M, N, K, ep);
      ++forward_products_;
      return false;
    }
    if (M > M1 && stacked_rows_ && rows_follow(x1, x2) && (mask.bits == nullptr || mask.rows >= M)) {
      // X2's rows start where X1's end (the replay's s' rows after its s
      // rows): one product over all M rows instead of one per block; the
      // bitmask, if any, then covers X2's rows too.
      return forward(space, ConstMatrix<memory_space>(x1.data(), M, K), ConstMatrix<memory_space>(), w, bias, relu, y,
                     mask);
    }
    const MutableMatrix<memory_space> y1 = matrix_rows(y, 0, M1), y2 = matrix_rows(y, M1, M);
    if (epilogue_) {
      // Both row blocks through the library or neither (the launch
      // sequence covers all rows); without a bitmask if it cannot write one.
      ReluBitmask m1 = relu ? mask : ReluBitmask();
      bool fused = epilogue_->forward(space, x1, w, bias, relu, y1, m1, false);
      if (!fused && m1.bits != nullptr) {
        m1 = ReluBitmask();
        fused = epilogue_->forward(space, x1, w, bias, relu, y1, m1, false);
      }
      fused = fused && (M == M1 || epilogue_->forward(space, x2, w, bias, relu, y2, ReluBitmask(), false));
      if (fused) {
        epilogue_->forward(space, x1, w, bias, relu, y1, m1);
        if (M > M1) epilogue_->forward(space, x2, w, bias, relu, y2, ReluBitmask());
        forward_products_ += M > M1 ? 2 : 1;
        return m1.bits != nullptr;
      }
    }
    gemm()(space, false, true, x1, w, y1);
    if (M > M1) gemm()(space, false, true, x2, w, y2);
    forward_products_ += M > M1 ? 2 : 1;
    kernels::bias_activation(space, y, bias, relu);
    return false;
  }

  /// Whether two networks' forwards may share library calls
  /// (forward_pair, forward_batched): the blas backend with the fused
  /// epilogues in fp32 and no ReLU bitmasks (the products they replace are
  /// then exactly one library call each).
  bool pairs_forwards() const {
    return epilogue_ != nullptr && !epilogue_masks_ && gemm_ && gemm_->precision() == MatmulPrecision::fp32;
  }

  /// Y_i = act(X W_i^T + b_i) for two parameter sets i = 1, 2 over one
  /// input X, with the bias and ReLU in the product's epilogue, in one
  /// library call (EpilogueGemm::forward_pair). Returns false (nothing ran)
  /// where pairs_forwards() is false or the library has no algorithm; `run`
  /// false only asks.
  bool forward_pair(const ExecSpace& space, const ConstMatrix<memory_space>& x, const ConstMatrix<memory_space>& w1,
                    const ConstVector<memory_space>& b1, const MutableMatrix<memory_space>& y1,
                    const ConstMatrix<memory_space>& w2, const ConstVector<memory_space>& b2,
                    const MutableMatrix<memory_space>& y2, bool relu, bool run = true) {
    if (!pairs_forwards()) return false;
    detail::check_shapes(x.extent(1) == w1.extent(1) && y1.extent(0) == x.extent(0) && y1.extent(1) == w1.extent(0) &&
                             b1.extent(0) == w1.extent(0),
                         "foxrl::DenseOps::forward_pair",
                         "X " + detail::dims(x.extent(0), x.extent(1)) + ", W " +
                             detail::dims(w1.extent(0), w1.extent(1)) + ", Y " +
                             detail::dims(y1.extent(0), y1.extent(1)));
    const bool ran = epilogue_->forward_pair(space, x, w1, b1, y1, w2, b2, y2, relu, run);
    if (ran && run) ++forward_products_;
    return ran;
  }

  /// Plain products Y_j = X_j W_j^T of one shape in one library call
  /// (RowMajorGemm::forward_batched). Returns false (nothing ran) where
  /// pairs_forwards() is false or the library does not batch them.
  bool forward_batched(const ExecSpace& space, const BatchedForward<memory_space>& products) {
    if (!pairs_forwards()) return false;
    const bool ran = gemm_->forward_batched(space, products);
    if (ran) ++forward_products_;
    return ran;
  }

  /// dX[M, K] = (dY[M, N] W[N, K]) * [mask] and db[K] = the column sums of
  /// dX, in one fused product, `mask` being the ReLU bitmask a forward
  /// wrote for dX's rows (forward's return). Returns false (nothing done:
  /// backward_input and a bias-gradient kernel remain) where the fused
  /// epilogues are off or the library has no algorithm.
  bool backward_input_masked(const ExecSpace& space, const ConstMatrix<memory_space>& dy,
                             const ConstMatrix<memory_space>& w, const ReluBitmask& mask,
                             const MutableMatrix<memory_space>& dx, const MutableVector<memory_space>& db) {
    if (!epilogue_ || mask.bits == nullptr || dy.extent(0) == 0) return false;
    detail::check_shapes(dy.extent(1) == w.extent(0) && dx.extent(0) == dy.extent(0) && dx.extent(1) == w.extent(1) &&
                             db.extent(0) == w.extent(1),
                         "foxrl::DenseOps::backward_input_masked",
                         "dY " + detail::dims(dy.extent(0), dy.extent(1)) + ", W " +
                             detail::dims(w.extent(0), w.extent(1)) + ", dX " +
                             detail::dims(dx.extent(0), dx.extent(1)) + ", db [" + std::to_string(db.extent(0)) + "]");
    return epilogue_->backward_input(space, dy, w, mask, dx, db);
  }

  /// dX[M, K] = (dY[M, N] W[N, K]) * [mask > 0]; `mask` (the ReLU output
  /// that was this layer's input, [M, K]) may be empty for no mask.
  void backward_input(const ExecSpace& space, const ConstMatrix<memory_space>& dy, const ConstMatrix<memory_space>& w,
                      const ConstMatrix<memory_space>& mask, const MutableMatrix<memory_space>& dx) {
    const int M = static_cast<int>(dy.extent(0));
    const int N = static_cast<int>(w.extent(0));
    const int K = static_cast<int>(w.extent(1));
    const bool masked = mask.extent(0) > 0;
    detail::check_shapes(dy.extent(1) == std::size_t(N) && dx.extent(0) == std::size_t(M) &&
                             dx.extent(1) == std::size_t(K) &&
                             (!masked || (mask.extent(0) >= std::size_t(M) && mask.extent(1) == std::size_t(K))),
                         "foxrl::DenseOps::backward_input",
                         "dY " + detail::dims(dy.extent(0), dy.extent(1)) + ", W " + detail::dims(N, K) + ", dX " +
                             detail::dims(dx.extent(0), dx.extent(1)));
    if (backend_ == DenseBackend::portable) {
      kernels::GemmEpilogue ep;
      if (masked) {
        ep.mask = mask.data();
        ep.mask_ld = static_cast<std::ptrdiff_t>(mask.stride(0));
      }
      kernels::tiled_gemm(space, "foxrl::kernels::dense_backward_input", kernels::row_major_operand(dy),
                          kernels::row_major_operand(w), dx.data(), static_cast<std::ptrdiff_t>(dx.stride(0)), M, K, N,
                          ep);
      return;
    }
    gemm()(space, false, false, dy, w, dx);
    if (!masked) return;
    kernels::ReluBackwardArgs ra;
    ra.rows = M;
    ra.cols = K;
    ra.src = dx.data();
    ra.src_ld = static_cast<std::ptrdiff_t>(dx.stride(0));
    ra.act = mask.data();
    ra.act_ld = static_cast<std::ptrdiff_t>(mask.stride(0));
    ra.dz = dx.data();
    ra.dz_ld = ra.src_ld;
    kernels::relu_backward(space, ra, kernels::ReduceScratch<memory_space>());
  }

  /// dW[N, K] = dY[M, N]^T X[M, K], db[N] = sum_m dY[m, n] (overwritten, not
  /// accumulated).
  void backward_weights(const ExecSpace& space, const ConstMatrix<memory_space>& dy, const ConstMatrix<memory_space>& x,
                        const MutableMatrix<memory_space>& dw, const MutableVector<memory_space>& db) {
    const int M = static_cast<int>(dy.extent(0));
    const int N = static_cast<int>(dy.extent(1));
    const int K = static_cast<int>(x.extent(1));
    detail::check_shapes(x.extent(0) == std::size_t(M) && dw.extent(0) == std::size_t(N) &&
                             dw.extent(1) == std::size_t(K) && db.extent(0) == std::size_t(N) && M > 0,
                         "foxrl::DenseOps::backward_weights",
                         "dY " + detail::dims(dy.extent(0), dy.extent(1)) + ", X " +
                             detail::dims(x.extent(0), x.extent(1)) + ", dW " +
                             detail::dims(dw.extent(0), dw.extent(1)));
    if (backend_ == DenseBackend::portable) {
      kernels::GemmEpilogue ep;
      ep.a_rowsum = db.data();
      kernels::tiled_gemm(space, "foxrl::kernels::dense_backward_weights", kernels::transposed_operand(dy),
                          kernels::row_major_operand(x), dw.data(), static_cast<std::ptrdiff_t>(dw.stride(0)), N, K, M,
                          ep);
      return;
    }
    gemm()(space, true, false, dy, x, dw);
    bias_gradient(space, dy, db, kernels::ReduceScratch<memory_space>());
  }

  /// db[N] = sum_m dY[m, n] (one relu_backward launch without a mask; with
  /// enough `scratch` the rows spread over several teams).
  static void bias_gradient(const ExecSpace& space, const ConstMatrix<memory_space>& dy,
                            const MutableVector<memory_space>& db,
                            const kernels::ReduceScratch<memory_space>& scratch) {
    detail::check_shapes(
        db.extent(0) == dy.extent(1), "foxrl::DenseOps::bias_gradient",
        "dY " + detail::dims(dy.extent(0), dy.extent(1)) + ", db [" + std::to_string(db.extent(0)) + "]");
    kernels::ReluBackwardArgs ra;
    ra.rows = static_cast<int>(dy.extent(0));
    ra.cols = static_cast<int>(dy.extent(1));
    ra.src = dy.data();
    ra.src_ld = static_cast<std::ptrdiff_t>(dy.stride(0));
    ra.db = db.data();
    kernels::relu_backward(space, ra, scratch);
  }

 private:
  DenseBackend backend_;
  std::unique_ptr<RowMajorGemm<ExecSpace>> gemm_;
  std::unique_ptr<EpilogueGemm<ExecSpace>> epilogue_;
  bool epilogue_masks_ = false;
  bool stacked_rows_ = !Kokkos::SpaceAccessibility<Kokkos::HostSpace, memory_space>::accessible &&
                       kernel_path_on(KernelPath::stacked_rows);
  bool narrow_inputs_ = !Kokkos::SpaceAccessibility<Kokkos::HostSpace, memory_space>::accessible &&
                        kernel_path_on(KernelPath::narrow_input);
  std::int64_t forward_products_ = 0;

  /// Whether x2's rows start right after x1's, at the same unpadded stride
  /// (x1.data() then holds [X1; X2] as one row-major matrix).
  static bool rows_follow(const ConstMatrix<memory_space>& x1, const ConstMatrix<memory_space>& x2) {
    return x1.stride(0) == x1.extent(1) && x2.stride(0) == x1.stride(0) &&
           x2.data() == x1.data() + x1.extent(0) * x1.stride(0);
  }
};

}  // namespace foxrl
