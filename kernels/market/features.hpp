#pragma once
// Market features on the device. Two stages:
//  1. compute_bar_features: per-bar features from OHLCV, once per series.
//     Entry t uses bars <= t only.
//  2. observation_value / build_observations: the observation of an env that
//     is about to decide at bar t (after bar t-1 closed, before bar t) uses
//     the features of bars t-window .. t-1 and its position. Bar t, whose log
//     return pays the decision, is never read: no lookahead.

#include "core/compat.hpp"
#include "views/market/market_views.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>

namespace foxrl {

/// Which observation an env hands out.
enum class FeatureSet {
  /// [r[t-W] ... r[t-1], position]: the benchmark's market observation (W = 64).
  returns,
  /// [r[t-W] ... r[t-1], range[t-1], volume_z[t-1], volatility[t-1], position].
  ohlcv,
};

/// Observation layout: feature set and lookback window W.
struct ObservationSpec {
  FeatureSet set = FeatureSet::returns;
  int window = 64;
  /// Trailing window of the per-bar rolling statistics (volume z-score,
  /// volatility); 0 means `window`.
  int stats_window = 0;

  int obs_dim() const { return window + (set == FeatureSet::returns ? 1 : 4); }
  int rolling_window() const { return stats_window > 0 ? stats_window : window; }
  /// Earliest decision bar: r[t - W] must exist.
  int min_decision_bar() const { return window; }
};

namespace kernels {

/// One observation entry j of an env deciding at bar t holding `position`.
template <class MemorySpace>
KOKKOS_INLINE_FUNCTION float observation_value(const BarFeatures<MemorySpace>& f, FeatureSet set, int window, int t,
                                               int position, int j) {
  if (j < window) return f.log_return(t - window + j);
  const int k = j - window;
  if (set == FeatureSet::ohlcv) {
    if (k == 0) return f.range(t - 1);
    if (k == 1) return f.volume_z(t - 1);
    if (k == 2) return f.volatility(t - 1);
  }
  return static_cast<float>(position);
}

/// compute_bar_features' first kernel: bar t's log return and range, and log1p of its volume.
/// A named functor, not a KOKKOS_LAMBDA (see RecordStepInOneTeam in kernels/collect/record_step.hpp).
template <class MemorySpace>
struct BarFeaturesKernel {
  MarketBars<MemorySpace> b;
  BarFeatures<MemorySpace> f;
  Kokkos::View<double*, MemorySpace> log_volume;
  KOKKOS_INLINE_FUNCTION void operator()(int t) const {
    const double prev = t == 0 ? b.open(0) : b.close(t - 1);
    f.log_return(t) = static_cast<float>(math::log(b.close(t) / prev));
    f.range(t) = static_cast<float>(math::log(b.high(t) / b.low(t)));
    log_volume(t) = math::log1p(b.volume(t));
  }
};

/// compute_bar_features' second kernel: bar t's volatility and volume z-score over the trailing W bars.
template <class MemorySpace>
struct RollingFeaturesKernel {
  BarFeatures<MemorySpace> f;
  Kokkos::View<double*, MemorySpace> log_volume;
  int W;
  KOKKOS_INLINE_FUNCTION void operator()(int t) const {
    const int first = t - W + 1 < 0 ? 0 : t - W + 1;
    const double n = static_cast<double>(t - first + 1);
    double sr = 0, sv = 0;
    for (int s = first; s <= t; ++s) {
      sr += f.log_return(s);
      sv += log_volume(s);
    }
    const double mr = sr / n, mv = sv / n;
    double qr = 0, qv = 0;
    for (int s = first; s <= t; ++s) {
      const double dr = f.log_return(s) - mr, dv = log_volume(s) - mv;
      qr += dr * dr;
      qv += dv * dv;
    }
    f.volatility(t) = static_cast<float>(math::sqrt(qr / n));
    const double sd = math::sqrt(qv / n);
    // Flat volume (no volume in the data, e.g. FX or an index) gives 0.
    f.volume_z(t) = sd > 1e-12 ? static_cast<float>((log_volume(t) - mv) / sd) : 0.0f;
  }
};

/// Fills `features` ([L] each, allocated by the caller) from `bars`; two
/// launches on `space`, meant for setup (not the hot path).
template <class ExecSpace>
void compute_bar_features(const ExecSpace& space, const MarketBars<typename ExecSpace::memory_space>& bars,
                          int stats_window, const BarFeatures<typename ExecSpace::memory_space>& features) {
  using Mem = typename ExecSpace::memory_space;
  const int L = bars.size();
  Kokkos::View<double*, Mem> log_volume(
      Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::Features::log_volume"), L);
  const auto b = bars;
  const auto f = features;
  Kokkos::parallel_for("foxrl::Features::bar", compat::light(Kokkos::RangePolicy<ExecSpace>(space, 0, L)),
                       BarFeaturesKernel<Mem>{b, f, log_volume});
  const int W = stats_window;
  Kokkos::parallel_for("foxrl::Features::rolling", compat::light(Kokkos::RangePolicy<ExecSpace>(space, 0, L)),
                       RollingFeaturesKernel<Mem>{f, log_volume, W});
}

/// build_observations' kernel: entry j of env i's observation, deciding at times(i) with positions(i).
template <class MemorySpace>
struct BuildObservationsKernel {
  BarFeatures<MemorySpace> f;
  FeatureSet set;
  int W, D;
  Kokkos::View<const std::int32_t*, MemorySpace> times, positions;
  Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace> obs;
  KOKKOS_INLINE_FUNCTION void operator()(int idx) const {
    const int i = idx / D, j = idx % D;
    obs(i, j) = kernels::observation_value(f, set, W, times(i), positions(i), j);
  }
};

/// Writes obs(i, :) for an env deciding at times(i) with positions(i):
/// one launch, one thread per entry (coalesced rows).
template <class ExecSpace>
void build_observations(const ExecSpace& space, const BarFeatures<typename ExecSpace::memory_space>& features,
                        const ObservationSpec& spec,
                        const Kokkos::View<const std::int32_t*, typename ExecSpace::memory_space>& times,
                        const Kokkos::View<const std::int32_t*, typename ExecSpace::memory_space>& positions,
                        const Kokkos::View<float**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& obs) {
  const auto f = features;
  const FeatureSet set = spec.set;
  const int W = spec.window;
  const int D = spec.obs_dim();
  const int n = static_cast<int>(times.extent(0));
  Kokkos::parallel_for("foxrl::Features::observations", compat::light(Kokkos::RangePolicy<ExecSpace>(space, 0, n * D)),
                       BuildObservationsKernel<typename ExecSpace::memory_space>{f, set, W, D, times, positions, obs});
}

}  // namespace kernels
}  // namespace foxrl
