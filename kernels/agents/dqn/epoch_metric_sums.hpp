#pragma once
// Learner metrics summed over an epoch on the device: one single-thread
// launch per update adds the update's metrics View to the sums, so the
// trainer reads them back once per epoch instead of once per update.

#include "views/agents/dqn/learner_metrics.hpp"

#include <Kokkos_Core.hpp>

namespace foxrl {

/// Learner metrics summed over an epoch's updates, on the device. A
/// rejected update adds only to the update count and sums(rejected): its
/// loss may be NaN or a spike, and it changed nothing.
template <class ExecSpace>
struct EpochMetricSums {
  Kokkos::View<double*, typename ExecSpace::memory_space> sums;  ///< [LearnerMetrics::count + 1]: last = updates

  explicit EpochMetricSums(const ExecSpace& space)
      : sums(Kokkos::view_alloc(space, "foxrl::DqnTrainer::epoch_metric_sums"), LearnerMetrics::count + 1) {}

  void add(const ExecSpace& space, const Kokkos::View<float*, typename ExecSpace::memory_space>& metrics) const {
    const auto s = sums;
    Kokkos::parallel_for(
        "foxrl::DqnTrainer::accumulate_metrics", Kokkos::RangePolicy<ExecSpace>(space, 0, 1), KOKKOS_LAMBDA(int) {
          const bool rejected = metrics(LearnerMetrics::rejected) != 0.0f;
          for (int k = 0; k < LearnerMetrics::count; ++k)
            if (!rejected || k == LearnerMetrics::rejected) s(k) += static_cast<double>(metrics(k));
          s(LearnerMetrics::count) += 1.0;
        });
  }
  void clear(const ExecSpace& space) const { Kokkos::deep_copy(space, sums, 0.0); }
};

}  // namespace foxrl
