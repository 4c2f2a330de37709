#pragma once
// Epoch sums of an offline learner's per-update metrics, on the device: one
// small launch per update adds the update's OfflineMetrics to a float64 sum
// View, so the trainer reads the epoch's means once, at its end, instead of
// reading back after every update.

#include <Kokkos_Core.hpp>

namespace foxrl {
namespace kernels {

/// sums(k) += metrics(k) for every slot k (float64 sums: an epoch adds up
/// to millions of updates).
template <class ExecSpace, class MemorySpace>
void accumulate_metrics(const ExecSpace& space, const Kokkos::View<const float*, MemorySpace>& metrics,
                        const Kokkos::View<double*, MemorySpace>& sums) {
  const auto metrics_ = metrics;
  const auto sums_ = sums;
  Kokkos::parallel_for(
      "foxrl::OfflineTrainer::accumulate_metrics",
      Kokkos::RangePolicy<ExecSpace>(space, 0, static_cast<int>(sums.extent(0))),
      KOKKOS_LAMBDA(const int k) { sums_(k) += static_cast<double>(metrics_(k)); });
}

}  // namespace kernels
}  // namespace foxrl
