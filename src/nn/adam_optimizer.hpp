#pragma once
// AdamOptimizer: Adam (or AdamW) over one flat parameter View: owns the
// moments m and v (laid out like the parameters) and the device-resident
// step counter, and applies gradient clipping + the Adam step in one launch
// (kernels/nn/adam.hpp), with an optional target-network update and the
// training guard's verdict fused into the same launch. The squared gradient
// norm comes from a reduction before it (gradient_sq_norm_then, which also
// runs the guard's decision), so an optimizer step is two launches.

#include "core/error.hpp"
#include "kernels/nn/adam.hpp"
#include "views/nn/parameter_set.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace foxrl {

/// Adam state and update of one parameter buffer; see the file comment.
template <class ExecSpace>
class AdamOptimizer {
 public:
  using memory_space = typename ExecSpace::memory_space;
  using flat = FlatParams<memory_space>;
  using step_view = Kokkos::View<std::int64_t, memory_space>;

  AdamOptimizer() = default;

  /// Zero moments and step counter for `n` parameters; `label` prefixes the
  /// allocations ("<label>::adam_m", ...).
  AdamOptimizer(const ExecSpace& space, std::size_t n, const AdamHyper& hyper, const std::string& label)
      : hyper_(hyper),
        m_(Kokkos::view_alloc(space, label + "::adam_m"), n),
        v_(Kokkos::view_alloc(space, label + "::adam_v"), n),
        step_(Kokkos::view_alloc(space, label + "::adam_step")) {}

  /// Clip + Adam step of `params` with `grads` on `space`, one launch.
  /// Needs: step() already counts this step (the caller's loss kernel
  /// advances it, or count_step()), metrics(LearnerMetrics::grad_sq) holds
  /// the squared gradient norm (metrics(grad_norm) receives its root).
  /// `target` is updated in the same pass (tau 1: hard copy); `guard`
  /// carries out the training guard's verdict instead of a plain step.
  void apply(const ExecSpace& space, const flat& params, const flat& grads,
             const Kokkos::View<float*, memory_space>& metrics,
             const kernels::TargetUpdate<memory_space>& target = kernels::TargetUpdate<memory_space>(),
             const kernels::GuardedStep<memory_space>& guard = kernels::GuardedStep<memory_space>()) const {
    if (params.extent(0) != m_.extent(0))
      throw LogicError("foxrl::AdamOptimizer::apply: " + std::to_string(params.extent(0)) +
                       " parameters, the optimizer holds moments for " + std::to_string(m_.extent(0)));
    kernels::adam_update(space, hyper_, params, grads, m_, v_, step_, metrics, target, guard);
  }

  /// Advances the step counter by one (one tiny launch; learners whose loss
  /// kernel does it in passing do not call this).
  void count_step(const ExecSpace& space) const {
    const auto s = step_;
    Kokkos::parallel_for(
        "foxrl::AdamOptimizer::count_step", Kokkos::RangePolicy<ExecSpace>(space, 0, 1),
        KOKKOS_LAMBDA(int) { s() += 1; });
  }

  const flat& m() const { return m_; }             ///< first moment
  const flat& v() const { return v_; }             ///< second moment
  const step_view& step() const { return step_; }  ///< steps taken
  const AdamHyper& hyper() const { return hyper_; }

 private:
  AdamHyper hyper_;
  flat m_, v_;
  step_view step_;
};

}  // namespace foxrl
