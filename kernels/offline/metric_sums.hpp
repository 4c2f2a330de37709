#pragma once
// Epoch sums of an offline learner's per-update metrics, on the device: one
// small launch per update adds the update's OfflineMetrics to a float64 sum
// View, so the trainer reads the epoch's means once, at its end, instead of
// reading back after every update.

#include <Kokkos_Core.hpp>

namespace foxrl {
namespace kernels {

/// Slot k of accumulate_metrics: sums(k) += metrics(k) in float64. A named
/// functor, not a KOKKOS_LAMBDA (see RecordStepInOneTeam in
/// kernels/collect/record_step.hpp).
template <class MemorySpace>
struct AccumulateMetricsKernel {
  Kokkos::View<const float*, MemorySpace> metrics;
  Kokkos::View<double*, MemorySpace> sums;
  KOKKOS_INLINE_FUNCTION void operator()(const int k) const { sums(k) += static_cast<double>(metrics(k)); }
};

/// sums(k) += metrics(k) for every slot k (float64 sums: an epoch adds up
/// to millions of updates).
template <class ExecSpace, class MemorySpace>
void accumulate_metrics(const ExecSpace& space, const Kokkos::View<const float*, MemorySpace>& metrics,
                        const Kokkos::View<double*, MemorySpace>& sums) {
  const auto metrics_ = metrics;
  const auto sums_ = sums;
  Kokkos::parallel_for("foxrl::OfflineTrainer::accumulate_metrics",
                       Kokkos::RangePolicy<ExecSpace>(space, 0, static_cast<int>(sums.extent(0))),
                       AccumulateMetricsKernel<MemorySpace>{metrics_, sums_});
}

}  // namespace kernels
}  // namespace foxrl
