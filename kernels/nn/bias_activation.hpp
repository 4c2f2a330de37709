#pragma once
// The bias + activation epilogue of a library gemm (the blas dense backend):
// y = act(y + bias) in place.

#include "core/error.hpp"
#include "views/nn/matrix.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace foxrl {
namespace kernels {

/// bias_activation's kernel: element i of the flat [M, N] matrix plus its
/// column's bias, through ReLU when `relu`. A named functor, not a
/// KOKKOS_LAMBDA (see RecordStepInOneTeam in kernels/collect/record_step.hpp).
struct BiasActivationKernel {
  float* out;
  const float* b;
  int N;
  bool relu;
  KOKKOS_INLINE_FUNCTION void operator()(int i) const {
    const float v = out[i] + b[i % N];
    out[i] = relu && !(v > 0.0f) ? 0.0f : v;
  }
};

/// y = act(y + bias) over a row-major [M, N] matrix: one flat launch, one
/// thread per element (the gemm epilogue of the blas backend). 32-bit
/// indices: a 64-bit modulo per element costs more than the memory traffic.
template <class ExecSpace, class MemorySpace>
void bias_activation(const ExecSpace& space, const MutableMatrix<MemorySpace>& y, const ConstVector<MemorySpace>& bias,
                     bool relu) {
  const std::size_t cols = y.extent(1);
  const std::size_t total = y.extent(0) * cols;
  if (total == 0) return;
  if (y.stride(0) != cols || bias.extent(0) != cols)
    throw LogicError("foxrl::kernels::bias_activation: y must be contiguous [M, N] and bias [N]");
  if (total > std::size_t(2147483647)) throw LogicError("foxrl::kernels::bias_activation: more than 2^31 - 1 elements");
  float* out = y.data();
  const float* b = bias.data();
  const int N = static_cast<int>(cols);
  Kokkos::parallel_for("foxrl::kernels::bias_activation",
                       Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<int>>(space, 0, static_cast<int>(total)),
                       BiasActivationKernel{out, b, N, relu});
}

}  // namespace kernels
}  // namespace foxrl
