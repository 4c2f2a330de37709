#pragma once
// EpisodeStats: per-env running returns and a ring of the last 100 finished
// episode returns, kept on the device and updated by one scan per
// iteration. The scan gives every finished episode a deterministic place in
// the ring (env order within a step), so runs are reproducible on every
// backend. Copied to the host once per epoch.

#include "core/compat.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>
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
        finished_now_(Kokkos::view_alloc(space, "foxrl::EpisodeStats::finished_now")),
        staged_(Kokkos::view_alloc(space, "foxrl::EpisodeStats::staged"), window) {}

  /// Adds one step's rewards; episodes that ended (terminated or truncated)
  /// enter the ring in env order after the ones already counted. Two
  /// launches: a device-wide scan numbers this step's finished episodes,
  /// then a small kernel moves them into the ring and advances the count.
  /// More than `window` episodes may end in one step (thousands of envs), so
  /// several of them map to one ring slot: each offers
  /// (ordinal within the step + 1, return) packed in 64 bits to its slot's
  /// staging word by atomic max, and the newest one wins whatever order the
  /// threads run in (a plain store there made the ring's contents depend on
  /// scheduling on GPUs).
  void record(const ExecSpace& space, const Kokkos::View<const float*, memory_space>& rewards,
              const Kokkos::View<const std::uint8_t*, memory_space>& terminated,
              const Kokkos::View<const std::uint8_t*, memory_space>& truncated) {
    const auto running = running_;
    const auto ring = ring_;
    const auto staged = staged_;
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
              const int slot = static_cast<int>((count() + finished_before) % window);
              Kokkos::atomic_fetch_max(&staged(slot), pack(finished_before, ret));
              running(i) = 0.f;
            } else {
              running(i) = ret;
            }
          }
          if (done) finished_before += 1;
          if (final_pass && i == n - 1) finished_now() = finished_before;
        });
    Kokkos::parallel_for(
        "foxrl::EpisodeStats::advance", Kokkos::RangePolicy<ExecSpace>(space, 0, window), KOKKOS_LAMBDA(int s) {
          const std::uint64_t p = staged(s);
          if (p != 0) {
            ring(s) = unpack_return(p);
            staged(s) = 0;
          }
          if (s == 0) count() += finished_now();
        });
  }

  /// (ordinal within the step + 1) in the high word, the return's bits in
  /// the low word: a larger packed value is a newer episode. Public only
  /// because CUDA's extended lambdas call it.
  KOKKOS_INLINE_FUNCTION static std::uint64_t pack(std::int64_t ordinal_in_step, float ret) {
    std::uint32_t bits;
    std::memcpy(&bits, &ret, sizeof bits);
    return (static_cast<std::uint64_t>(ordinal_in_step + 1) << 32) | bits;
  }
  KOKKOS_INLINE_FUNCTION static float unpack_return(std::uint64_t packed) {
    const auto bits = static_cast<std::uint32_t>(packed & 0xffffffffu);
    float ret;
    std::memcpy(&ret, &bits, sizeof ret);
    return ret;
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
  Kokkos::View<std::uint64_t*, memory_space> staged_;  ///< zero between calls

 public:
  /// The statistics in a trainer state (episodes.*): running returns, the
  /// ring of finished returns, the count. `a` is a StateWriter or StateReader.
  template <class Archive>
  void visit_state(Archive& a, const ExecSpace& space) {
    a.tensor(space, "episodes.running", running_);
    a.tensor(space, "episodes.ring", ring_);
    a.tensor(space, "episodes.count", count_);
  }
};

}  // namespace foxrl
