#pragma once
// The collector's record of one env step: the episode statistics
// (EpisodeStep) and the n-step windows (NStepRecord). For a few envs both
// run in one launch of one team; in the iteration's CUDA graph each launch
// is a node on the chain, and a node costs microseconds of latency where
// the work of a few envs takes a fraction of one. More envs keep the two
// launches of their own, which spread the work over the device.

#include "core/compat.hpp"
#include "kernels/collect/nstep_returns.hpp"
#include "kernels/core/team_size.hpp"
#include "kernels/envs/episode_stats_kernels.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace foxrl::kernels {

/// The most n-step elements (envs x observation components) the one-team
/// record takes: a few per thread of a full team.
constexpr std::int64_t record_step_one_team_elements = 8192;

/// Whether one step of `num_envs` envs with `elements_per_env` n-step
/// elements each (NStepRecord::elements_per_env: the observation components,
/// or 1 for an aliased one-step record) is recorded by one team
/// (record_step).
inline bool record_step_in_one_team(int num_envs, int elements_per_env) {
  return num_envs <= episode_stats_one_team_envs &&
         static_cast<std::int64_t>(num_envs) * elements_per_env <= record_step_one_team_elements;
}

/// The most n-step elements per env (observation components, or 1 for an
/// aliased one-step record) of the record across teams: each team's
/// elements (its episode_stats_team_envs envs, one per thread) are then at
/// most this many per thread.
constexpr int record_step_across_teams_dim = 8;

/// Whether one step of `num_envs` envs with `elements_per_env` n-step
/// elements each, too many for one team, is recorded in one launch of one
/// team per episode_stats_team_envs envs (record_step, `across_teams` on).
inline bool record_step_across_teams(int num_envs, int elements_per_env) {
  return num_envs > episode_stats_one_team_envs && elements_per_env <= record_step_across_teams_dim;
}

/// No team work after the record (record_step's default).
struct NothingAfterRecord {
  std::size_t scratch_bytes() const { return 0; }
  int team_threads() const { return 1; }
  template <class Member>
  KOKKOS_INLINE_FUNCTION void operator()(const Member&) const {}
};

/// `after(team)` once the team's record is complete (nothing, and no
/// barrier, for NothingAfterRecord).
template <class Member, class After>
KOKKOS_INLINE_FUNCTION void run_after_record(const Member& team, const After& after) {
  // The transitions the record emitted, complete for the whole team.
  team.team_barrier();
  after(team);
}
template <class Member>
KOKKOS_INLINE_FUNCTION void run_after_record(const Member&, const NothingAfterRecord&) {}

/// The one-team record's kernel (record_step): the n-step elements over the
/// team's threads, the statistics' team scan, then `after`. A named functor,
/// not a KOKKOS_LAMBDA: record_step is a header template that several
/// translation units instantiate, and nvcc's host wrapper of an extended
/// lambda keeps a per-translation-unit copy function that the linker can
/// leave null where the instantiations meet (a host SIGSEGV at the launch;
/// see ci/check-lambdas.sh).
template <int Window, class MemorySpace, class After>
struct RecordStepInOneTeam {
  EpisodeStep<Window, MemorySpace> stats;
  NStepRecord<MemorySpace> nstep;
  After after;
  std::int64_t elements;
  template <class Member>
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, elements), [&](const std::int64_t flat) { nstep(flat); });
    stats.record_in_team(team);
    run_after_record(team, after);
  }
};

/// The record across teams (record_step): team t takes the n-step elements
/// of envs [t E, t E + E) (E = episode_stats_team_envs), then its part of
/// the statistics' device-wide record, whose last team finishes the ring
/// (EpisodeStep::record_across_teams). The two touch disjoint Views and
/// only read the step's rewards and flags. A named functor (see
/// RecordStepInOneTeam).
template <int Window, class MemorySpace, class ScratchSpace>
struct RecordStepAcrossTeams {
  using Scratch = Kokkos::View<int*, ScratchSpace, Kokkos::MemoryUnmanaged>;
  EpisodeStep<Window, MemorySpace> stats;
  NStepRecord<MemorySpace> nstep;
  int teams;
  std::int64_t elements;  ///< nstep.count(), a host function
  template <class Member>
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    const std::int64_t per_team = std::int64_t(episode_stats_team_envs) * nstep.elements_per_env();
    const std::int64_t begin = team.league_rank() * per_team;
    const std::int64_t end = begin + per_team < elements ? begin + per_team : elements;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, begin, end), [&](const std::int64_t flat) { nstep(flat); });
    stats.record_across_teams(team, Scratch(team.team_scratch(0), teams));
  }
};

/// Records one step: `stats` (episode_stats_record) and `nstep`
/// (record_step_and_emit), with the same results. When
/// record_step_in_one_team says so, one launch of one team
/// ("foxrl::Collector::record_step") runs both: the n-step elements over
/// its threads, then the statistics' team scan. The two touch disjoint
/// Views and only read the step's rewards and flags, so no barrier is
/// needed between them.
/// `after(team)` then runs in the same team once the record is complete
/// (e.g. the replay's insert of the transitions it emitted, which a launch
/// of its own would add as one more node to the iteration's chain); it
/// needs after.scratch_bytes() of level-0 team scratch and runs best on
/// after.team_threads() threads (the team takes up to that many). With more envs,
/// `after` gets a one-team launch of its own ("foxrl::Collector::after_record").
/// More envs than one team takes, with few components
/// (record_step_across_teams) and `across_teams` on, are recorded in one
/// launch of a team per episode_stats_team_envs envs
/// ("foxrl::Collector::record_step", RecordStepAcrossTeams) instead of the
/// two launches.
template <int Window, class ExecSpace, class MemorySpace, class After = NothingAfterRecord>
void record_step(const ExecSpace& space, const EpisodeStep<Window, MemorySpace>& stats,
                 const NStepRecord<MemorySpace>& nstep, const After& after = After(), bool across_teams = true) {
  using Policy = Kokkos::TeamPolicy<ExecSpace>;
  constexpr bool work_after = !std::is_same_v<After, NothingAfterRecord>;
  const int num_envs = static_cast<int>(stats.running.extent(0));
  if (!record_step_in_one_team(num_envs, nstep.elements_per_env())) {
    if (across_teams && record_step_across_teams(num_envs, nstep.elements_per_env())) {
      using Body = RecordStepAcrossTeams<Window, MemorySpace, typename ExecSpace::scratch_memory_space>;
      const int teams = (num_envs + episode_stats_team_envs - 1) / episode_stats_team_envs;
      const Body body{stats, nstep, teams, nstep.count()};
      // Both functors' Views: a kernel argument, not constant memory (see below).
      Policy policy(space, teams, power_of_two_team(space, body, episode_stats_team_envs));
      policy.set_scratch_size(0, Kokkos::PerTeam(Body::Scratch::shmem_size(teams)));
      Kokkos::parallel_for("foxrl::Collector::record_step", compat::light(policy), body);
    } else {
      episode_stats_record<Window, ExecSpace>(space, stats);
      record_step_and_emit(space, nstep);
    }
    if constexpr (work_after) {
      Policy policy(space, 1, power_of_two_team(space, after, after.team_threads()));
      policy.set_scratch_size(0, Kokkos::PerTeam(after.scratch_bytes()));
      Kokkos::parallel_for("foxrl::Collector::after_record", compat::light(policy), after);
    }
    return;
  }
  const std::int64_t elements = nstep.count();
  const RecordStepInOneTeam<Window, MemorySpace, After> body{stats, nstep, after, elements};
  std::int64_t work = elements > num_envs ? elements : num_envs;
  if (work < after.team_threads()) work = after.team_threads();
  // Both functors' Views make the body larger than 512 B: as a kernel argument
  // (compat::light), not through constant memory, whose host wait on the
  // previous such launch breaks the iteration graph's capture.
  Policy policy(space, 1, power_of_two_team(space, body, work));
  if constexpr (work_after) policy.set_scratch_size(0, Kokkos::PerTeam(after.scratch_bytes()));
  Kokkos::parallel_for("foxrl::Collector::record_step", compat::light(policy), body);
}

}  // namespace foxrl::kernels
