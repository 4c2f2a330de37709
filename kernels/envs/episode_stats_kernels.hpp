#pragma once
// Kernels of EpisodeStats (src/envs/episode_stats.hpp): one step's rewards
// into the per-env running returns, and the episodes that ended into the
// ring of the last Window returns.

#include "kernels/core/team_size.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>

namespace foxrl::kernels {

/// (ordinal within the step + 1) in the high word, the return's bits in
/// the low word: a larger packed value is a newer episode.
KOKKOS_INLINE_FUNCTION std::uint64_t episode_pack(std::int64_t ordinal_in_step, float ret) {
  std::uint32_t bits;
  std::memcpy(&bits, &ret, sizeof bits);
  return (static_cast<std::uint64_t>(ordinal_in_step + 1) << 32) | bits;
}

/// The return of an episode_pack value.
KOKKOS_INLINE_FUNCTION float episode_unpack_return(std::uint64_t packed) {
  const auto bits = static_cast<std::uint32_t>(packed & 0xffffffffu);
  float ret;
  std::memcpy(&ret, &bits, sizeof ret);
  return ret;
}

/// The most envs whose step one team records (a few passes of its scan).
/// On the H200 one team took 16 us for 4,096 envs, the device-wide path's
/// three launches 12 (market-throughput: 351.5 -> 344.6 us per iteration
/// with this limit at 2,048 instead of 8,192; perf/NOTES.md).
constexpr int episode_stats_one_team_envs = 2048;

/// The Views of one record and env i's part of its scan: the running
/// return, and for an episode that ended, its offer to its ring slot's
/// `staged` word by atomic max of episode_pack (the newest wins whatever
/// order threads run in). `before` is the count of earlier episodes.
template <int Window, class MemorySpace>
struct EpisodeStep {
  Kokkos::View<const float*, MemorySpace> rewards;
  Kokkos::View<const std::uint8_t*, MemorySpace> terminated, truncated;
  Kokkos::View<float*, MemorySpace> running, ring;
  Kokkos::View<std::uint64_t*, MemorySpace> staged;
  Kokkos::View<std::int64_t, MemorySpace> count, finished_now;

  KOKKOS_INLINE_FUNCTION void scan(int i, std::int64_t before, std::int64_t& finished_before, bool final_pass) const {
    const bool done = terminated(i) != 0 || truncated(i) != 0;
    if (final_pass) {
      const float ret = running(i) + rewards(i);
      if (done) {
        const int slot = static_cast<int>((before + finished_before) % Window);
        Kokkos::atomic_fetch_max(&staged(slot), episode_pack(finished_before, ret));
        running(i) = 0.f;
      } else {
        running(i) = ret;
      }
    }
    if (done) finished_before += 1;
    if (final_pass && i == static_cast<int>(running.extent(0)) - 1) finished_now() = finished_before;
  }

  /// Moves slot s's winner into the ring and clears the slot.
  KOKKOS_INLINE_FUNCTION void settle(int s) const {
    const std::uint64_t p = staged(s);
    if (p != 0) {
      ring(s) = episode_unpack_return(p);
      staged(s) = 0;
    }
  }

  /// The whole record by one team (up to episode_stats_one_team_envs
  /// envs): a team scan, a team barrier, then the ring and the count.
  template <class Member>
  KOKKOS_INLINE_FUNCTION void record_in_team(const Member& team) const {
    const int n = static_cast<int>(running.extent(0));
    // Read by every thread before the one write at the end (the scan's and
    // the explicit barriers come between).
    const std::int64_t before = count();
    Kokkos::parallel_scan(Kokkos::TeamThreadRange(team, n),
                          [&](const int i, std::int64_t& finished_before, const bool final_pass) {
                            scan(i, before, finished_before, final_pass);
                          });
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, Window), [&](const int s) { settle(s); });
    Kokkos::single(Kokkos::PerTeam(team), [&]() { count() = before + finished_now(); });
  }
};

/// Adds one step's rewards to `running`; episodes that ended (terminated
/// or truncated) enter `ring` in env order after the `count` already
/// counted (EpisodeStep). Up to episode_stats_one_team_envs envs: one
/// launch of one team ("foxrl::EpisodeStats::record": a team scan, a team
/// barrier, then the ring and the count; a device-wide scan and the ring's
/// own launch took three kernels on GPUs for a few thousand flags). Beyond:
/// a device-wide scan ("foxrl::EpisodeStats::record") spreads the envs
/// over the device, then "foxrl::EpisodeStats::advance" settles the ring
/// and the count. Both give the same results.
template <int Window, class ExecSpace, class MemorySpace>
void episode_stats_record(const ExecSpace& space, const EpisodeStep<Window, MemorySpace>& step) {
  const int n = static_cast<int>(step.running.extent(0));
  if (n > episode_stats_one_team_envs) {
    Kokkos::parallel_scan(
        "foxrl::EpisodeStats::record", Kokkos::RangePolicy<ExecSpace>(space, 0, n),
        KOKKOS_LAMBDA(int i, std::int64_t& finished_before, bool final_pass) {
          step.scan(i, step.count(), finished_before, final_pass);
        });
    Kokkos::parallel_for(
        "foxrl::EpisodeStats::advance", Kokkos::RangePolicy<ExecSpace>(space, 0, Window), KOKKOS_LAMBDA(int s) {
          step.settle(s);
          if (s == 0) step.count() += step.finished_now();
        });
    return;
  }
  using Policy = Kokkos::TeamPolicy<ExecSpace>;
  using Member = typename Policy::member_type;
  const auto body = KOKKOS_LAMBDA(const Member& team) { step.record_in_team(team); };
  Kokkos::parallel_for("foxrl::EpisodeStats::record", Policy(space, 1, power_of_two_team(space, body, n)), body);
}

}  // namespace foxrl::kernels
