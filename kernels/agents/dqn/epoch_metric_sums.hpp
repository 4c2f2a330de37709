#pragma once
// Learner metrics summed over an epoch on the device: one single-thread
// launch per update adds the update's metrics View to the sums, so the
// trainer reads them back once per epoch instead of once per update.

#include "views/agents/dqn/learner_metrics.hpp"

#include <Kokkos_Core.hpp>

namespace foxrl {

/// EpochMetricSums::add's kernel: one call of `add_one` (an Adder). A named
/// functor, not a KOKKOS_LAMBDA (see RecordStepInOneTeam in
/// kernels/collect/record_step.hpp).
template <class Add>
struct EpochMetricSumsAddKernel {
  Add add_one;
  KOKKOS_INLINE_FUNCTION void operator()(int) const { add_one(); }
};

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
    const Adder add_one = adder(metrics);
    Kokkos::parallel_for("foxrl::DqnTrainer::accumulate_metrics", Kokkos::RangePolicy<ExecSpace>(space, 0, 1),
                         EpochMetricSumsAddKernel<Adder>{add_one});
  }
  void clear(const ExecSpace& space) const { Kokkos::deep_copy(space, sums, 0.0); }
};

}  // namespace foxrl
