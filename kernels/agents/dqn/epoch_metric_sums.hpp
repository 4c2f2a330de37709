#pragma once
// Learner metrics summed over an epoch on the device: one single-thread
// launch per update adds the update's metrics View to the sums, so the
// trainer reads them back once per epoch instead of once per update.

#include "kernels/core/call_once.hpp"
#include "views/agents/dqn/learner_metrics.hpp"

#include <Kokkos_Core.hpp>

namespace foxrl {

/// Learner metrics summed over an epoch's updates, on the device. A
/// rejected update adds only to the update count and sums(rejected): its
/// loss may be NaN or a spike, and it changed nothing.
template <class ExecSpace>
struct EpochMetricSums {
  using memory_space = typename ExecSpace::memory_space;
  Kokkos::View<double*, memory_space> sums;  ///< [LearnerMetrics::count + 1]: last = updates

  explicit EpochMetricSums(const ExecSpace& space)
      : sums(Kokkos::view_alloc(space, "foxrl::DqnTrainer::epoch_metric_sums"), LearnerMetrics::count + 1) {}

  /// One update's metrics added to the sums, as device work (one thread).
  struct Adder {
    Kokkos::View<double*, memory_space> sums;
    Kokkos::View<float*, memory_space> metrics;
    KOKKOS_INLINE_FUNCTION void operator()() const {
      const bool rejected = metrics(LearnerMetrics::rejected) != 0.0f;
      for (int k = 0; k < LearnerMetrics::count; ++k)
        if (!rejected || k == LearnerMetrics::rejected) sums(k) += static_cast<double>(metrics(k));
      sums(LearnerMetrics::count) += 1.0;
    }
  };
  Adder adder(const Kokkos::View<float*, memory_space>& metrics) const { return {sums, metrics}; }

  /// Adds `metrics` in a launch of its own.
  void add(const ExecSpace& space, const Kokkos::View<float*, memory_space>& metrics) const {
    kernels::call_once(space, "foxrl::DqnTrainer::accumulate_metrics", adder(metrics));
  }
  void clear(const ExecSpace& space) const { Kokkos::deep_copy(space, sums, 0.0); }
};

}  // namespace foxrl
