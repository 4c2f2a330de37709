#pragma once
// narrow_dense_forward: Y = act(X W^T + b) for a layer with a narrow input
// (at most narrow_dense_max_inputs columns: CartPole's 4 observations), one
// thread per output element. Such a product is a write of Y with a few
// multiply-adds per element; a gemm library's tiles (built to reuse operands
// over a long K) spend most of their time on the tile setup: on an H100 a
// 4,096 x 4 -> 256 product with bias + ReLU took 3.6-5.1 us in cuBLASLt
// (perf/results/h100-gemm-survey.md) where writing its 4 MB takes about 1.4.

#include "core/compat.hpp"
#include "core/error.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace foxrl::kernels {

/// The widest input narrow_dense_forward takes.
inline constexpr int narrow_dense_max_inputs = 8;

/// Operands of narrow_dense_forward: X = [X1; X2] stacked by rows (rows at
/// or past `split` come from x2), W [outputs, inputs], b [outputs], Y
/// [rows, outputs], all row-major with their row strides in floats.
struct NarrowDenseArgs {
  int rows = 0, inputs = 0, outputs = 0;
  const float* x1 = nullptr;
  const float* x2 = nullptr;
  int split = 0;
  std::ptrdiff_t x_ld = 0;
  const float* w = nullptr;
  std::ptrdiff_t w_ld = 0;
  const float* b = nullptr;
  float* y = nullptr;
  std::ptrdiff_t y_ld = 0;
  bool relu = false;
};

/// Element (r, n) of Y: the inputs added in increasing order, then the
/// bias; a ReLU maps NaN to 0, as bias_activation does. Consecutive threads
/// take consecutive outputs of a row, so Y's stores are coalesced and the
/// row of X is one broadcast load per input.
struct NarrowDenseElement {
  NarrowDenseArgs a;
  KOKKOS_INLINE_FUNCTION void operator()(int idx) const {
    const int r = idx / a.outputs;
    const int n = idx - r * a.outputs;
    const float* x = r < a.split ? a.x1 + r * a.x_ld : a.x2 + (r - a.split) * a.x_ld;
    const float* w = a.w + n * a.w_ld;
    float acc = 0.0f;
    for (int k = 0; k < narrow_dense_max_inputs; ++k)
      if (k < a.inputs) acc += x[k] * w[k];
    const float v = acc + a.b[n];
    a.y[r * a.y_ld + n] = a.relu ? (v > 0.0f ? v : 0.0f) : v;
  }
};

/// Whether narrow_dense_forward takes a product of `rows` x `inputs` ->
/// `outputs` (a 32-bit element index).
inline bool narrow_dense_fits(int rows, int inputs, int outputs) {
  return inputs >= 1 && inputs <= narrow_dense_max_inputs &&
         static_cast<std::int64_t>(rows) * outputs <= std::int64_t(0x7fffffff);
}

/// Launches narrow_dense_forward ("foxrl::kernels::narrow_dense_forward")
/// on `space`; needs narrow_dense_fits(a.rows, a.inputs, a.outputs).
template <class ExecSpace>
void narrow_dense_forward(const ExecSpace& space, const NarrowDenseArgs& a) {
  if (!narrow_dense_fits(a.rows, a.inputs, a.outputs))
    throw LogicError("foxrl::kernels::narrow_dense_forward: " + std::to_string(a.rows) + " x " +
                     std::to_string(a.inputs) + " -> " + std::to_string(a.outputs) + " is not a narrow product");
  const int elements = a.rows * a.outputs;
  if (elements == 0) return;
  Kokkos::parallel_for("foxrl::kernels::narrow_dense_forward",
                       compat::light(Kokkos::RangePolicy<ExecSpace>(space, 0, elements)), NarrowDenseElement{a});
}

}  // namespace foxrl::kernels
