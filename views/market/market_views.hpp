#pragma once
// Market data model on the device: the OHLCV series (double, so log returns
// of long series keep their precision), the per-bar features derived from it
// (float), and the SoA state of N market-replay envs.

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl {

/// OHLCV bars on the device; bar i is known at the close of bar i.
template <class MemorySpace>
struct MarketBars {
  using vector = Kokkos::View<double*, MemorySpace>;
  vector open, high, low, close, volume;  ///< [L]
  int size() const { return static_cast<int>(close.extent(0)); }
};

/// Per-bar features; entry t uses bars <= t only (see kernels/market/features.hpp).
template <class MemorySpace>
struct BarFeatures {
  using vector = Kokkos::View<float*, MemorySpace>;
  vector log_return;  ///< [L] log(close[t] / close[t-1]); bar 0: log(close[0] / open[0])
  vector range;       ///< [L] log(high[t] / low[t])
  vector volume_z;    ///< [L] z-score of log1p(volume[t]) over the trailing window (0 if flat)
  vector volatility;  ///< [L] std of log_return over the trailing window
  int size() const { return static_cast<int>(log_return.extent(0)); }
};

/// SoA state of N market-replay envs.
template <class MemorySpace>
struct MarketState {
  Kokkos::View<std::int32_t*, MemorySpace> time;           ///< [N] decision bar index t
  Kokkos::View<std::int32_t*, MemorySpace> position;       ///< [N] -1, 0, +1
  Kokkos::View<std::int32_t*, MemorySpace> episode_steps;  ///< [N]
  Kokkos::View<std::uint64_t*, MemorySpace> episodes;      ///< [N] keys the start-offset RNG
  int size() const { return static_cast<int>(time.extent(0)); }
};

}  // namespace foxrl
