#pragma once
// Optimizer kernels over the flat parameter View: the global gradient norm
// (reduced into a device View), and one fused launch that clips, applies
// Adam and (optionally) the Polyak target update.

#include "compat.hpp"
#include "learner_metrics.hpp"
#include "weights.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl {

/// How weight decay enters Adam.
enum class WeightDecayMode {
  decoupled,  ///< AdamW: p -= lr * wd * p before the Adam step (torch.optim.AdamW)
  l2,         ///< L2 penalty: g += wd * p before the moments (torch.optim.Adam)
};

/// Hyperparameters of one optimizer step.
struct AdamHyper {
  float lr = 2.5e-4f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  WeightDecayMode weight_decay_mode = WeightDecayMode::decoupled;
  /// Global gradient-norm clip (torch.nn.utils.clip_grad_norm_); <= 0: off.
  float max_grad_norm = 0.0f;
};

namespace kernels {

/// metrics(grad_sq) = sum_i grads(i)^2, on the device (no host read-back).
template <class ExecSpace, class MemorySpace>
void gradient_sq_norm(const ExecSpace& space, const FlatParams<MemorySpace>& grads,
                      const Kokkos::View<float*, MemorySpace>& metrics) {
  auto result = Kokkos::subview(metrics, static_cast<int>(LearnerMetrics::grad_sq));
  Kokkos::parallel_reduce(
      "foxrl::kernels::gradient_sq_norm", Kokkos::RangePolicy<ExecSpace>(space, 0, grads.extent(0)),
      KOKKOS_LAMBDA(std::size_t i, float& acc) { acc += grads(i) * grads(i); }, result);
}

/// Clip + Adam (+ Polyak) in one pass over the flat buffers. `step` must
/// already count this step (t >= 1); metrics(grad_sq) must hold the squared
/// gradient norm; metrics(grad_norm) receives its root. `target` is updated
/// as tau * p + (1 - tau) * target when tau > 0 (pass an empty View
/// otherwise). Torch's formulas (single-tensor Adam), bias corrections in
/// double.
template <class ExecSpace, class MemorySpace>
void adam_update(const ExecSpace& space, const AdamHyper& hyper, const FlatParams<MemorySpace>& params,
                 const FlatParams<MemorySpace>& grads, const FlatParams<MemorySpace>& m,
                 const FlatParams<MemorySpace>& v, const Kokkos::View<std::int64_t, MemorySpace>& step,
                 const Kokkos::View<float*, MemorySpace>& metrics, const FlatParams<MemorySpace>& target,
                 float polyak_tau) {
  const AdamHyper h = hyper;
  const bool polyak = polyak_tau > 0.0f && target.extent(0) == params.extent(0);
  const float tau = polyak_tau;
  Kokkos::parallel_for(
      "foxrl::kernels::adam_update", Kokkos::RangePolicy<ExecSpace>(space, 0, params.extent(0)),
      KOKKOS_LAMBDA(std::size_t i) {
        const float norm = math::sqrt(metrics(LearnerMetrics::grad_sq));
        if (i == 0) metrics(LearnerMetrics::grad_norm) = norm;
        float coef = 1.0f;
        if (h.max_grad_norm > 0.0f) {
          coef = h.max_grad_norm / (norm + 1e-6f);
          coef = coef < 1.0f ? coef : 1.0f;
        }
        const double t = static_cast<double>(step());
        const double bc1 = 1.0 - math::pow(static_cast<double>(h.beta1), t);
        const double bc2 = 1.0 - math::pow(static_cast<double>(h.beta2), t);
        const float step_size = static_cast<float>(static_cast<double>(h.lr) / bc1);
        const float bc2_sqrt = static_cast<float>(math::sqrt(bc2));

        float p = params(i);
        float g = grads(i) * coef;
        if (h.weight_decay != 0.0f) {
          if (h.weight_decay_mode == WeightDecayMode::l2) g += h.weight_decay * p;
          else p *= 1.0f - h.lr * h.weight_decay;
        }
        float mi = m(i);
        mi += (1.0f - h.beta1) * (g - mi);
        const float vi = v(i) * h.beta2 + (1.0f - h.beta2) * g * g;
        const float denom = math::sqrt(vi) / bc2_sqrt + h.eps;
        p -= step_size * (mi / denom);
        m(i) = mi;
        v(i) = vi;
        params(i) = p;
        if (polyak) target(i) = tau * p + (1.0f - tau) * target(i);
      });
}

/// target = tau * online + (1 - tau) * target (a standalone Polyak update).
template <class ExecSpace, class MemorySpace>
void polyak_update(const ExecSpace& space, const FlatParams<MemorySpace>& online, const FlatParams<MemorySpace>& target,
                   float tau) {
  Kokkos::parallel_for(
      "foxrl::kernels::polyak_update", Kokkos::RangePolicy<ExecSpace>(space, 0, online.extent(0)),
      KOKKOS_LAMBDA(std::size_t i) { target(i) = tau * online(i) + (1.0f - tau) * target(i); });
}

}  // namespace kernels
}  // namespace foxrl
