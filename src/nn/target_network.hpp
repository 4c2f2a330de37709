#pragma once
// TargetNetwork: a second ParameterSet that trails an online network, by
// hard copies or Polyak averaging. An optimizer step can update it in its
// own launch (fused(tau) -> AdamOptimizer::apply); the standalone updates
// below are for callers outside the training step.

#include "kernels/nn/adam.hpp"
#include "kernels/nn/guard_kernels.hpp"
#include "views/nn/parameter_set.hpp"

#include <Kokkos_Core.hpp>

#include <string>

namespace foxrl {

/// The target copy of one network; see the file comment.
template <class ExecSpace>
class TargetNetwork {
 public:
  using memory_space = typename ExecSpace::memory_space;

  TargetNetwork() = default;

  /// Allocates the target (zero) for `layout`.
  TargetNetwork(const ExecSpace& space, const NetworkLayout& layout, const std::string& label)
      : params_(space, layout, label) {}

  /// The target over `params` (e.g. the second half of alloc_flat_pair,
  /// beside the online network's parameters).
  explicit TargetNetwork(const ParameterSet<memory_space>& params) : params_(params) {}

  /// target = online, element by element where online is finite (a hard
  /// copy that cannot carry a NaN or Inf of the online network over).
  void hard_update(const ExecSpace& space, const FlatParams<memory_space>& online) const {
    kernels::finite_copy(space, online, params_.flat);
  }

  /// target = tau online + (1 - tau) target.
  void soft_update(const ExecSpace& space, const FlatParams<memory_space>& online, float tau) const {
    kernels::polyak_update(space, online, params_.flat, tau);
  }

  /// The update an optimizer step applies in its own launch: Polyak with
  /// `tau`, a hard copy with tau = 1, none with tau = 0.
  kernels::TargetUpdate<memory_space> fused(float tau) const { return {params_.flat, tau}; }

  const ParameterSet<memory_space>& params() const { return params_; }

 private:
  ParameterSet<memory_space> params_;
};

}  // namespace foxrl
