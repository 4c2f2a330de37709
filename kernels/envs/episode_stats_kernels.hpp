#pragma once
// Kernels of EpisodeStats (src/envs/episode_stats.hpp): one step's rewards
// into the per-env running returns, and the episodes that ended into the
// ring of the last Window returns.

#include "core/compat.hpp"
#include "kernels/core/last_team.hpp"
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

/// Envs per team of the device-wide record (one per thread on GPUs).
constexpr int episode_stats_team_envs = 128;

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
  // The device-wide record's hand-over to its last team (record_across_teams).
  Kokkos::View<std::int32_t*, MemorySpace> team_ended;  ///< [teams] episodes that ended among each team's envs
  Kokkos::View<float*, MemorySpace> ended_returns;      ///< [envs] each team's ended episodes' returns, in env order
  Kokkos::View<std::int32_t, MemorySpace> teams_done;   ///< ticket, 0 between launches

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

  /// The device-wide record in one launch, by team t of
  /// ceil(envs / episode_stats_team_envs): its envs' running returns, and
  /// the returns of its envs whose episode ended, listed in env order (a
  /// team scan over per-thread strips) and counted. The last team to finish
  /// numbers the ended episodes across the teams (a scan of the counts into
  /// `first_of_team`, team scratch of one int per team) and writes the
  /// newest `Window` of them straight into their ring slots (each slot gets
  /// at most one, the newest of the step, as scan()'s atomic max decides),
  /// then the count: the same values as the one-team record, with no
  /// staging word touched and no chain of loads in the last team.
  template <class Member, class Scratch>
  KOKKOS_INLINE_FUNCTION void record_across_teams(const Member& team, const Scratch& first_of_team) const {
    constexpr int E = episode_stats_team_envs;
    const int n = static_cast<int>(running.extent(0));
    const int t = team.league_rank();
    const int begin = t * E;
    const int end = begin + E < n ? begin + E : n;
    const int threads = team.team_size();
    const int strip = (E + threads - 1) / threads;
    const int lo = begin + team.team_rank() * strip < end ? begin + team.team_rank() * strip : end;
    const int hi = lo + strip < end ? lo + strip : end;
    int mine = 0;
    for (int i = lo; i < hi; ++i) mine += terminated(i) != 0 || truncated(i) != 0 ? 1 : 0;
    int at = team.team_scan(mine);
    int total = at + mine;
    team.team_broadcast(total, threads - 1);
    for (int i = lo; i < hi; ++i) {
      const float ret = running(i) + rewards(i);
      if (terminated(i) != 0 || truncated(i) != 0) {
        ended_returns(begin + at++) = ret;
        running(i) = 0.f;
      } else {
        running(i) = ret;
      }
    }
    Kokkos::single(Kokkos::PerTeam(team), [&]() { team_ended(t) = total; });
    if (!arrive_last(team, &teams_done(), team.league_size())) return;

    // The last team: every other team's list and count are final.
    const int teams = team.league_size();
    const std::int64_t before = count();
    Kokkos::parallel_scan(Kokkos::TeamThreadRange(team, teams), [&](const int u, int& sum, const bool final_pass) {
      const int c = load_volatile(team_ended(u));
      if (final_pass) first_of_team(u) = sum;
      sum += c;
    });
    team.team_barrier();
    const int finished = first_of_team(teams - 1) + load_volatile(team_ended(teams - 1));
    const int oldest_kept = finished > Window ? finished - Window : 0;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, finished - oldest_kept), [&](const int k) {
      const int ordinal = oldest_kept + k;
      // The team whose list holds this ordinal: the last u with first_of_team(u) <= ordinal.
      int lo_u = 0, hi_u = teams - 1;
      while (lo_u < hi_u) {
        const int mid = (lo_u + hi_u + 1) / 2;
        if (first_of_team(mid) <= ordinal)
          lo_u = mid;
        else
          hi_u = mid - 1;
      }
      const int slot = static_cast<int>((before + ordinal) % Window);
      ring(slot) = load_volatile(ended_returns(lo_u * E + ordinal - first_of_team(lo_u)));
    });
    Kokkos::single(Kokkos::PerTeam(team), [&]() { count() = before + finished; });
  }
};

/// episode_stats_record's kernels: named functors, not KOKKOS_LAMBDAs (a
/// header template that several translation units instantiate; see
/// RecordStepInOneTeam in kernels/collect/record_step.hpp).
template <int Window, class MemorySpace>
struct EpisodeStatsInOneTeam {
  EpisodeStep<Window, MemorySpace> step;
  template <class Member>
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    step.record_in_team(team);
  }
};
template <int Window, class MemorySpace, class ScratchSpace>
struct EpisodeStatsAcrossTeams {
  using Scratch = Kokkos::View<int*, ScratchSpace, Kokkos::MemoryUnmanaged>;
  EpisodeStep<Window, MemorySpace> step;
  int teams;
  template <class Member>
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    step.record_across_teams(team, Scratch(team.team_scratch(0), teams));
  }
};

/// Adds one step's rewards to `running`; episodes that ended (terminated
/// or truncated) enter `ring` in env order after the `count` already
/// counted (EpisodeStep). One launch ("foxrl::EpisodeStats::record"): up
/// to episode_stats_one_team_envs envs one team (a team scan, a team
/// barrier, then the ring and the count); beyond, one team per
/// episode_stats_team_envs envs and the last team to finish numbering the
/// ended episodes and writing the newest into the ring (record_across_teams; a
/// device-wide parallel_scan and the ring's own launch took three kernels
/// on GPUs). Both give the same results.
template <int Window, class ExecSpace, class MemorySpace>
void episode_stats_record(const ExecSpace& space, const EpisodeStep<Window, MemorySpace>& step) {
  const int n = static_cast<int>(step.running.extent(0));
  using Policy = Kokkos::TeamPolicy<ExecSpace>;
  if (n > episode_stats_one_team_envs) {
    using Body = EpisodeStatsAcrossTeams<Window, MemorySpace, typename ExecSpace::scratch_memory_space>;
    using Scratch = typename Body::Scratch;
    const int teams = (n + episode_stats_team_envs - 1) / episode_stats_team_envs;
    const Body body{step, teams};
    Policy policy(space, teams, power_of_two_team(space, body, episode_stats_team_envs));
    policy.set_scratch_size(0, Kokkos::PerTeam(Scratch::shmem_size(teams)));
    Kokkos::parallel_for("foxrl::EpisodeStats::record", compat::light(policy), body);
    return;
  }
  const EpisodeStatsInOneTeam<Window, MemorySpace> body{step};
  Kokkos::parallel_for("foxrl::EpisodeStats::record", Policy(space, 1, power_of_two_team(space, body, n)), body);
}

}  // namespace foxrl::kernels
