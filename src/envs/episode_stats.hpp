#pragma once
// EpisodeStats: per-env running returns and a ring of the last 100 finished
// episode returns, kept on the device and updated by one scan per
// iteration. The scan gives every finished episode a deterministic place in
// the ring (env order within a step), so runs are reproducible on every
// backend. Copied to the host once per epoch.

#include "core/compat.hpp"
#include "core/host_mirror.hpp"
#include "kernels/envs/episode_stats_kernels.hpp"

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace foxrl {

/// Host copy of the episode statistics.
struct EpisodeSummary {
  std::int64_t episodes = 0;         ///< finished episodes since the start
  std::vector<double> last_returns;  ///< returns of up to the last 100, oldest first
  double mean_last_100 = 0;          ///< mean of last_returns (0 when none)
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
        staged_(Kokkos::view_alloc(space, "foxrl::EpisodeStats::staged"), window),
        team_ended_(Kokkos::view_alloc(space, "foxrl::EpisodeStats::team_ended"),
                    (num_envs + kernels::episode_stats_team_envs - 1) / kernels::episode_stats_team_envs),
        ended_returns_(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::EpisodeStats::ended_returns"),
                       num_envs),
        teams_done_(Kokkos::view_alloc(space, "foxrl::EpisodeStats::teams_done")),
        ring_host_(host_mirror(ring_)),
        count_host_(host_mirror(count_)) {}

  /// Adds one step's rewards; episodes that ended (terminated or truncated)
  /// enter the ring in env order after the ones already counted. One
  /// launch: one team up to a few thousand envs (a team scan numbers this
  /// step's finished episodes, then the team moves them into the ring and
  /// advances the count); more envs, one team per 128 envs, and the last
  /// team to finish numbers the finished episodes across teams and moves
  /// them into the ring.
  /// More than `window` episodes may end in one step (thousands of envs), so
  /// several of them map to one ring slot and the newest must win. The
  /// one-team record offers each (ordinal within the step + 1, return)
  /// packed in 64 bits to its slot's staging word by atomic max, so the
  /// order threads run in does not matter (a plain store there made the
  /// ring's contents depend on scheduling on GPUs); the record across teams
  /// knows every ordinal before it writes and stores only the newest
  /// `window` episodes, one per slot.
  void record(const ExecSpace& space, const Kokkos::View<const float*, memory_space>& rewards,
              const Kokkos::View<const std::uint8_t*, memory_space>& terminated,
              const Kokkos::View<const std::uint8_t*, memory_space>& truncated) {
    kernels::episode_stats_record<window, ExecSpace>(space, step_of(rewards, terminated, truncated));
  }

  /// What record() runs, for a launch that records it along with other
  /// work (the collector's kernels::record_step).
  kernels::EpisodeStep<window, memory_space> step_of(
      const Kokkos::View<const float*, memory_space>& rewards,
      const Kokkos::View<const std::uint8_t*, memory_space>& terminated,
      const Kokkos::View<const std::uint8_t*, memory_space>& truncated) const {
    return {rewards, terminated,    truncated,   running_,       ring_,      staged_,
            count_,  finished_now_, team_ended_, ended_returns_, teams_done_};
  }

  /// The device state (saved and restored on resume): per-env running
  /// returns, the ring of finished returns, and the finished-episode count.
  const Kokkos::View<float*, memory_space>& running() const { return running_; }
  const Kokkos::View<float*, memory_space>& ring() const { return ring_; }
  const Kokkos::View<std::int64_t, memory_space>& count() const { return count_; }

  /// Copies the statistics to the host (fences the instance: once per epoch).
  EpisodeSummary summary(const ExecSpace& space) const {
    // Host copies made once: freeing a host View fences every instance.
    const auto& ring = ring_host_;
    const auto& count = count_host_;
    Kokkos::deep_copy(space, ring, ring_);
    Kokkos::deep_copy(space, count, count_);
    compat::fence(space, "foxrl::EpisodeStats::summary");
    EpisodeSummary s;
    s.episodes = count();
    const std::int64_t kept = s.episodes < window ? s.episodes : window;
    for (std::int64_t j = s.episodes - kept; j < s.episodes; ++j)
      s.last_returns.push_back(ring(static_cast<int>(j % window)));
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
  // Scratch of the record across teams (more than a few thousand envs).
  Kokkos::View<std::int32_t*, memory_space> team_ended_;
  Kokkos::View<float*, memory_space> ended_returns_;
  Kokkos::View<std::int32_t, memory_space> teams_done_;  ///< zero between calls
  typename Kokkos::View<float*, memory_space>::HostMirror ring_host_;
  typename Kokkos::View<std::int64_t, memory_space>::HostMirror count_host_;

 public:
  /// The statistics in a trainer state (episodes.*): running returns, the
  /// ring of finished returns, the count. `a` is a StateWriter or StateReader
  /// (which checks the returns finite and the count >= 0).
  template <class Archive>
  void visit_state(Archive& a, const ExecSpace& space) {
    a.tensor(space, "episodes.running", running_);
    a.tensor(space, "episodes.ring", ring_);
    a.tensor(space, "episodes.count", count_);
    if constexpr (!Archive::saving) {
      const auto finite = [](float x) { return std::isfinite(x); };
      a.template require_each<float>("episodes.running", -1, finite, "must be finite");
      a.template require_each<float>("episodes.ring", -1, finite, "must be finite");
      a.template require_each<std::int64_t>(
          "episodes.count", -1, [](std::int64_t x) { return x >= 0; }, "must be >= 0");
    }
  }
};

}  // namespace foxrl
