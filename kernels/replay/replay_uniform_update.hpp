#pragma once
// The priority update of uniform replay (alpha = 0) as one flat pass. Every
// live slot then holds mass 1 (0 once quarantined), so an update changes the
// tree only where a non-finite |td| quarantines a slot (every row of an
// update the training guard rejected) or a duplicate disagrees; otherwise
// all it does is raise the maximum priority seen. The tree-owner update
// (ReplayUpdateFunctor) finds that out too, but only after its teams each
// walked the whole batch to compact their own entries: a chain of loads and
// barriers of about 7 us on an H100 for nothing. Here each thread checks one
// entry, the teams add what they saw, and the last team to finish runs the
// tree-owner update over every node itself when some leaf must change: the
// same tree and maximum bit for bit, whichever path ran.

#include "kernels/core/last_team.hpp"
#include "kernels/replay/replay_kernels.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl::kernels {

namespace detail {
/// A team's view of its entries: the largest priority among them and how
/// many would change their leaf (summed with +=, the team reduction's join).
struct UniformUpdateSeen {
  float highest = 0.0f;
  int changed = 0;
  KOKKOS_INLINE_FUNCTION UniformUpdateSeen& operator+=(const UniformUpdateSeen& o) {
    if (o.highest > highest) highest = o.highest;
    changed += o.changed;
    return *this;
  }
};
}  // namespace detail
}  // namespace foxrl::kernels

namespace Kokkos {
template <>
struct reduction_identity<foxrl::kernels::detail::UniformUpdateSeen> {
  KOKKOS_FORCEINLINE_FUNCTION static foxrl::kernels::detail::UniformUpdateSeen sum() {
    return foxrl::kernels::detail::UniformUpdateSeen();
  }
};
}  // namespace Kokkos

namespace foxrl::kernels {

/// `general` is the tree-owner update of the same batch with owner_level at
/// the top of the tree (its last team loops over the top's nodes), alpha 0
/// and the unchanged-mass shortcut on. `changed` counts the entries that
/// would change their leaf; zero between launches (the last team resets it).
template <class ExecSpace, class Then>
struct ReplayUniformUpdateFunctor {
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  ReplayUpdateFunctor<ExecSpace, Then> general;
  Kokkos::View<std::int32_t, typename ExecSpace::memory_space> changed;
  int entries_per_team = 1;

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const auto& g = general;
    const auto& st = g.storage;
    const auto& shape = g.layout.tree_shape;
    const int n = static_cast<int>(g.indices.extent(0));
    const int begin = team.league_rank() * entries_per_team;
    const int end = begin + entries_per_team < n ? begin + entries_per_team : n;
    const std::int64_t written = g.inserted();
    const std::int64_t size = written < g.layout.capacity ? written : g.layout.capacity;
    // The same entries, priorities and leaf test as the tree-owner update's.
    detail::UniformUpdateSeen seen;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, begin, end),
        [&](const int i, detail::UniformUpdateSeen& acc) {
          const std::int64_t s = g.indices(i);
          const float td = g.td_abs(i);
          if (!(s >= 0 && s < size) || st.next_ref(s) == replay_next_evicted || td < 0.0f) return;
          const float priority = foxrl::math::isfinite(td) ? foxrl::math::fabs(td) + g.eps : 0.0f;
          if (priority > acc.highest) acc.highest = priority;
          acc.changed += st.tree(shape.leaf(s)) != priority_mass(priority, g.alpha) ? 1 : 0;
        },
        seen);
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      if (seen.highest > st.max_priority()) Kokkos::atomic_fetch_max(&st.max_priority(), seen.highest);
      if (seen.changed > 0) Kokkos::atomic_fetch_add(&changed(), seen.changed);
    });
    if (!arrive_last(team, &st.teams_done(), team.league_size())) return;
    const int to_change = load_volatile(changed());
    if (to_change > 0) {
      const auto scratch = g.team_scratch(team);
      const int owners = static_cast<int>(shape.nodes[g.owner_level]);
      for (int owner = 0; owner < owners; ++owner) g.update_owned(team, owner, scratch);
    }
    team.team_barrier();  // every thread read the count before it is reset
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      if (to_change > 0) changed() = 0;
    });
    if constexpr (!std::is_same_v<Then, NoLastTeamWork>) Kokkos::single(Kokkos::PerTeam(team), g.then);
  }
};

/// Launches the flat update ("foxrl::Replay::update_priorities"): teams of
/// `team_size` threads over `entries_per_team` entries each, with the
/// tree-owner update's team scratch (`scratch_bytes`) for the last team.
template <class ExecSpace, class Then>
void replay_uniform_update(const ExecSpace& space, const ReplayUniformUpdateFunctor<ExecSpace, Then>& f, int team_size,
                           std::size_t scratch_bytes) {
  const int n = static_cast<int>(f.general.indices.extent(0));
  const int league = (n + f.entries_per_team - 1) / f.entries_per_team;
  Kokkos::TeamPolicy<ExecSpace> policy(space, league, team_size);
  policy.set_scratch_size(f.general.scratch_level, Kokkos::PerTeam(scratch_bytes));
  Kokkos::parallel_for("foxrl::Replay::update_priorities", compat::light(policy), f);
}

}  // namespace foxrl::kernels
