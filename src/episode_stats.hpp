#pragma once
// EpisodeStats: per-env running returns and a ring of the last 100 finished
// episode returns, kept on the device and updated by one scan per
// iteration. The scan gives every finished episode a deterministic place in
// the ring (env order within a step), so runs are reproducible on every
// backend. Copied to the host once per epoch.

#include "compat.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <vector>

namespace foxrl {

/// Host copy of the episode statistics.
struct EpisodeSummary {
  std::int64_t episodes = 0;           ///< finished episodes since the start
  std::vector<double> last_returns;    ///< returns of up to the last 100, oldest first
  double mean_last_100 = 0;            ///< mean of last_returns (0 when none)
};

template <class ExecSpace>
class EpisodeStats {
 public:
  using memory_space = typename ExecSpace::memory_space;
  static constexpr int window = 100;

  EpisodeStats(const ExecSpace& space, int num_envs)
      : running_(Kokkos::view_alloc(space, "foxrl::EpisodeStats::running"), num_envs),
        ring_(Kokkos::view_alloc(space, "foxrl::EpisodeStats::ring"), window),
        count_(Kokkos::view_alloc(space, "foxrl::EpisodeStats::count")),
        finished_now_(Kokkos::view_alloc(space, "foxrl::EpisodeStats::finished_now")) {}

  /// Adds one step's rewards; episodes that ended (terminated or truncated)
  /// enter the ring in env order after the ones already counted. Two
  /// launches: a device-wide scan places this step's finished episodes,
  /// then one thread advances the count. (A one-launch team scan gave wrong
  /// ring slots on CUDA with a team of 1024 threads;
  /// tests/test_episode_stats.cpp catches that on every backend.)
  void record(const ExecSpace& space, const Kokkos::View<const float*, memory_space>& rewards,
              const Kokkos::View<const std::uint8_t*, memory_space>& terminated,
              const Kokkos::View<const std::uint8_t*, memory_space>& truncated) {
    const auto running = running_;
    const auto ring = ring_;
    const auto count = count_;
    const auto finished_now = finished_now_;
    const int n = static_cast<int>(running.extent(0));
    Kokkos::parallel_scan(
        "foxrl::EpisodeStats::record", Kokkos::RangePolicy<ExecSpace>(space, 0, n),
        KOKKOS_LAMBDA(int i, std::int64_t& finished_before, bool final_pass) {
          const bool done = terminated(i) != 0 || truncated(i) != 0;
          if (final_pass) {
            const float ret = running(i) + rewards(i);
            if (done) {
              ring(static_cast<int>((count() + finished_before) % window)) = ret;
              running(i) = 0.f;
            } else {
              running(i) = ret;
            }
          }
          if (done) finished_before += 1;
          if (final_pass && i == n - 1) finished_now() = finished_before;
        });
    Kokkos::parallel_for(
        "foxrl::EpisodeStats::advance", Kokkos::RangePolicy<ExecSpace>(space, 0, 1),
        KOKKOS_LAMBDA(int) { count() += finished_now(); });
  }

  /// The device state (saved and restored on resume): per-env running
  /// returns, the ring of finished returns, and the finished-episode count.
  const Kokkos::View<float*, memory_space>& running() const { return running_; }
  const Kokkos::View<float*, memory_space>& ring() const { return ring_; }
  const Kokkos::View<std::int64_t, memory_space>& count() const { return count_; }

  /// Copies the statistics to the host (fences the instance: once per epoch).
  EpisodeSummary summary(const ExecSpace& space) const {
    auto ring = Kokkos::create_mirror_view(Kokkos::HostSpace(), ring_);
    auto count = Kokkos::create_mirror_view(Kokkos::HostSpace(), count_);
    Kokkos::deep_copy(space, ring, ring_);
    Kokkos::deep_copy(space, count, count_);
    compat::fence(space, "foxrl::EpisodeStats::summary");
    EpisodeSummary s;
    s.episodes = count();
    const std::int64_t kept = s.episodes < window ? s.episodes : window;
    for (std::int64_t j = s.episodes - kept; j < s.episodes; ++j) s.last_returns.push_back(ring(static_cast<int>(j % window)));
    double total = 0;
    for (double r : s.last_returns) total += r;
    s.mean_last_100 = kept > 0 ? total / static_cast<double>(kept) : 0.0;
    return s;
  }

 private:
  Kokkos::View<float*, memory_space> running_;
  Kokkos::View<float*, memory_space> ring_;
  Kokkos::View<std::int64_t, memory_space> count_;
  Kokkos::View<std::int64_t, memory_space> finished_now_;
};

}  // namespace foxrl
