#pragma once
// Kernels of the prioritized replay buffer (src/replay/replay_buffer.hpp): insert
// (kernels/replay/replay_insert.hpp), sample (or gather given slots) and
// priority update, one launch each, all on the caller's instance. docs/replay.md has the storage layout and the
// launch/byte budget.

#include "core/compat.hpp"
#include "kernels/core/counter_read.hpp"
#include "kernels/core/last_team.hpp"
#include "kernels/replay/beta_schedule.hpp"
#include "kernels/replay/replay_insert.hpp"
#include "kernels/replay/sum_tree.hpp"
#include "views/collect/transition_batch.hpp"
#include "views/replay/batch.hpp"
#include "views/replay/replay_storage.hpp"

#include <Kokkos_Core.hpp>

#include <cfloat>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace foxrl::kernels {

namespace detail {

/// Largest finite float: "no mass seen yet" for the sample kernel's batch
/// minimum (kept finite so fast-math builds cannot fold comparisons).
inline constexpr float no_mass = FLT_MAX;

/// Bits of a float as an int32: for floats >= 0 the integer order is the
/// float order, so integer atomics can take float minima.
KOKKOS_INLINE_FUNCTION std::int32_t float_bits(float x) {
  std::int32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}
KOKKOS_INLINE_FUNCTION float bits_float(std::int32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

}  // namespace detail

/// The value the sample kernel's batch minimum (ReplayStorage::
/// batch_min_mass) holds between launches: "no mass seen yet".
KOKKOS_INLINE_FUNCTION std::int32_t replay_idle_batch_min_mass() { return detail::float_bits(detail::no_mass); }

/// Sample (stratified proportional draws) or gather (given slots) of a batch,
/// one launch. Each team resolves a few rows (one thread per draw descends
/// the K-ary tree: one line of K children per level; few rows per team so
/// the descents spread over the whole GPU), copies their observations with
/// all threads, and folds its minimum leaf mass into a device scalar; the
/// last team to finish turns the masses into max-normalised importance
/// weights (p_min / p_i)^beta and resets the scalars for the next call.
/// Under uniform replay with no quarantined slot (unit_masses) a draw is the
/// floor of its target and every weight is 1: one line read, no descent and
/// no last team.
/// The replay sample's observations as stored (ReplaySampleFunctor's default
/// transform).
struct KeepObservation {
  KOKKOS_INLINE_FUNCTION float operator()(int, float x) const { return x; }
};

/// `Transform`: f(component, value) applied to every observation component
/// the gather writes (e.g. the signal adapter's normalisation,
/// SignalNormalizeElement, instead of a pass of its own over the batch).
template <class ExecSpace, class Transform = KeepObservation>
struct ReplaySampleFunctor {
  using memory_space = typename ExecSpace::memory_space;
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using scratch_rows = Kokkos::View<std::int64_t*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;

  ReplayLayout layout;
  ReplayStorage<memory_space> storage;
  Batch<memory_space> out;
  Kokkos::View<const std::int64_t*, memory_space> given;  ///< gather mode when non-empty
  CounterRead inserted;                                   ///< transitions written so far
  std::uint64_t seed = 0;
  CounterRead call;        ///< sample calls before this one (the draws' RNG counter)
  BetaSchedule beta;       ///< the importance-weight exponent, at
  CounterRead beta_clock;  ///< this update count
  int batch_size = 0;
  int rows_per_team = 1;  ///< draws per team
  /// Every leaf holds 0 or 1 (alpha = 0): when every filled slot holds 1,
  /// draws take sum_tree_unit_draw (the same slots, no descent) and every
  /// weight is 1 (no last-team pass). False: always the descent.
  bool unit_masses = false;
  Transform transform = {};

  /// Scratch bytes per team of `rows` draws.
  static std::size_t scratch_bytes(int rows) { return 2 * scratch_rows::shmem_size(rows); }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const int first = team.league_rank() * rows_per_team;
    const int rows = first + rows_per_team < batch_size ? rows_per_team : batch_size - first;
    scratch_rows state_row(team.team_scratch(0), rows_per_team);
    scratch_rows next_src(team.team_scratch(0), rows_per_team);
    const bool gather = given.extent(0) > 0;
    const auto& lay = layout;
    const auto& st = storage;
    const auto& o = out;
    const std::int64_t written = inserted();
    const std::int64_t filled = written < lay.capacity ? written : lay.capacity;
    const auto draw_call = static_cast<std::uint64_t>(call());
    // The same decision in every team: the tree does not change during a sample.
    const float total = gather || !unit_masses ? 0.0f : sum_tree_total(st.tree, lay.tree_shape);
    const bool units = !gather && unit_masses && sum_tree_all_units(total, filled);

    float team_min = detail::no_mass;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, rows),
        [&](const int r, float& lowest) {
          const int k = first + r;
          std::int64_t s;
          float mass = 1.0f;
          if (gather) {
            s = given(k);
            s = s < 0 ? 0 : (s >= filled ? filled - 1 : s);
          } else if (units) {
            const float u = counter_uniform(seed, draw_call, static_cast<std::uint64_t>(k));
            const SumTreeDraw draw = sum_tree_unit_draw(stratified_target(k, u, batch_size, total), filled);
            s = draw.slot;
            mass = draw.mass;
          } else {
            const float u = counter_uniform(seed, draw_call, static_cast<std::uint64_t>(k));
            const SumTreeDraw draw = sum_tree_draw(st.tree, lay.tree_shape, filled, StratifiedTarget{k, u, batch_size});
            s = draw.slot;
            mass = draw.mass;
          }
          const std::int64_t g = lay.transition_of_slot(s, written);
          const std::int32_t ref = st.next_ref(s);
          state_row(r) = lay.obs_row(g);
          // >= 0: observation-ring row; < 0: boundary-pool row -(src + 1).
          next_src(r) = ref >= 0 ? -(std::int64_t(ref) + 1)
                                 : (ref == replay_next_is_successor ? lay.next_obs_row(g) : lay.obs_row(g));
          o.indices(k) = s;
          o.actions(k) = st.actions(s);
          o.rewards(k) = st.rewards(s);
          o.discounts(k) = st.discounts(s);
          // Under units every weight is (1 / 1)^beta = 1: final already.
          o.is_weights(k) = mass;
          if (!gather && mass > 0.0f && mass < lowest) lowest = mass;
        },
        Kokkos::Min<float>(team_min));
    team.team_barrier();

    const int dim = lay.obs_dim;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows * dim), [&](const int idx) {
      const int r = idx / dim;
      const int c = idx - r * dim;
      o.states(first + r, c) = transform(c, st.observations(state_row(r), c));
      const std::int64_t src = next_src(r);
      o.next_states(first + r, c) =
          transform(c, src >= 0 ? st.observations(src, c) : st.boundary_observations(-src - 1, c));
    });
    if (gather || units) return;

    // Publish this team's masses, then count it as done.
    Kokkos::single(Kokkos::PerTeam(team),
                   [&]() { Kokkos::atomic_fetch_min(&st.batch_min_mass(), detail::float_bits(team_min)); });
    if (!arrive_last(team, &st.teams_done(), team.league_size())) return;
    const float lowest = detail::bits_float(load_volatile(st.batch_min_mass()));
    const float exponent = beta(beta_clock());
    const int n = batch_size;
    // Four rows per thread, loads first: the volatile loads of one thread
    // are then in flight together instead of one memory latency each.
    constexpr int per = 4;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, (n + per - 1) / per), [&](const int q) {
      const int stride = (n + per - 1) / per;
      float mass[per];
      for (int j = 0; j < per; ++j) {
        const int k = q + j * stride;
        mass[j] = k < n ? load_volatile(o.is_weights(k)) : 0.0f;
      }
      for (int j = 0; j < per; ++j) {
        const int k = q + j * stride;
        // w_k = (size P_k)^-beta / max_j (size P_j)^-beta = (p_min / p_k)^beta;
        // a zero-mass row (only when no slot has mass) gets weight 0.
        if (k < n) {
          o.is_weights(k) =
              mass[j] > 0.0f && lowest < detail::no_mass ? foxrl::math::pow(lowest / mass[j], exponent) : 0.0f;
        }
      }
    });
    team.team_barrier();
    Kokkos::single(Kokkos::PerTeam(team), [&]() { st.batch_min_mass() = detail::float_bits(detail::no_mass); });
  }
};

/// Priority update of a batch, one launch. Team t owns node t of the owner
/// level (the top level, or on GPUs the level below it) and everything below
/// it, so no two teams ever write the same node: each team picks its
/// entries (a counter in team scratch compacts them), writes their leaves and
/// recomputes their ancestors level by level up to its own node
/// (sum_tree_refresh_level), then raises max_priority_seen with its maximum
/// (atomic max: order-free). With the owner level below the top, the last
/// team to finish (ticket) recomputes the top level; every node is still
/// the left-to-right sum of its children, as with the top-level owners.
/// A team whose leaves all hold their new mass already (uniform replay,
/// alpha = 0, where every mass is 1 but a quarantine's) writes nothing but
/// the maximum.
/// Duplicate slots in a batch: the largest priority wins (every occurrence
/// first clears the leaf, then all take an atomic max; duplicates share a
/// team), which is deterministic and errs towards replaying the transition.
/// Entries are skipped (leaf unchanged) for slots outside [0, size), slots
/// whose boundary row was evicted, and negative td errors (keep_priority_td:
/// a rejected update's healthy rows); NaN or +inf td errors quarantine their
/// transition (priority 0: a broken target would poison every update that
/// samples it).
/// `Then`: work for one thread once every team is done (the last team to
/// arrive runs it), e.g. the iteration's clock advance riding along instead
/// of taking a launch of its own; NoLastTeamWork by default.
template <class ExecSpace, class Then = NoLastTeamWork>
struct ReplayUpdateFunctor {
  using memory_space = typename ExecSpace::memory_space;
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using scratch_ints = Kokkos::View<std::int32_t*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;

  ReplayLayout layout;
  ReplayStorage<memory_space> storage;
  Kokkos::View<const std::int64_t*, memory_space> indices;
  Kokkos::View<const float*, memory_space> td_abs;
  CounterRead inserted;  ///< transitions written so far (entries at or past min(inserted, capacity) are skipped)
  float alpha = 0.0f;
  float eps = 0.0f;
  int refresh_groups = 1;  ///< tree nodes per staged chunk of the refresh
  int scratch_level = 0;   ///< 0 (fast, small) or 1 (large batches)
  /// Level whose nodes the teams own (one team per node): the top level, or
  /// (GPUs, trees of 3+ levels) the one below it, for 32x more teams and
  /// shorter per-team chains; the top level is then refreshed by the last
  /// team to finish.
  int owner_level = 0;
  /// Skip the leaves and the refresh of a team whose leaves all hold their
  /// new mass already (the same tree bit for bit; off only to test that).
  bool skip_unchanged = true;
  Then then = {};  ///< run once, by the last team to finish

  /// Scratch bytes per team for `entries` update entries.
  static std::size_t scratch_bytes(int entries, int groups) {
    return scratch_ints::shmem_size(std::size_t(entries) + 1) +
           sum_tree_scratch<ExecSpace>::shmem_size(std::size_t(entries)) +
           sum_tree_scratch<ExecSpace>::shmem_size(std::size_t(groups) * sum_tree_fanout);
  }

  /// A team's scratch: the compacted entries' slots (and their count at
  /// [n]) and priorities, and the refresh's staging buffer.
  struct Scratch {
    scratch_ints slot;
    sum_tree_scratch<ExecSpace> priority, buf;
  };
  /// Allocates a team's Scratch (once per launch: scratch allocations add up).
  KOKKOS_INLINE_FUNCTION Scratch team_scratch(const member_type& team) const {
    const std::size_t n = indices.extent(0);
    return {
        scratch_ints(team.team_scratch(scratch_level), n + 1),
        sum_tree_scratch<ExecSpace>(team.team_scratch(scratch_level), n),
        sum_tree_scratch<ExecSpace>(team.team_scratch(scratch_level), std::size_t(refresh_groups) * sum_tree_fanout)};
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const Scratch scratch = team_scratch(team);
    update_owned(team, team.league_rank(), scratch);
    constexpr bool work_after = !std::is_same_v<Then, NoLastTeamWork>;
    if (owner_level == layout.tree_shape.top()) {
      if constexpr (work_after) {
        if (arrive_last(team, &storage.teams_done(), team.league_size())) Kokkos::single(Kokkos::PerTeam(team), then);
      }
      return;
    }
    // Every team (with entries or not) counts itself done; the last one
    // refreshes the top level from the now final level below it.
    if (!arrive_last(team, &storage.teams_done(), team.league_size())) return;
    if constexpr (work_after) Kokkos::single(Kokkos::PerTeam(team), then);
    refresh_top(team, scratch.buf);
  }

  /// The entries under node `owner` of owner_level: their leaves and the
  /// levels above them up to that node, and the team's part of the maximum
  /// priority (every team of a launch, each with its own owner, or one team
  /// looping over every owner: the same tree bit for bit).
  KOKKOS_INLINE_FUNCTION void update_owned(const member_type& team, const std::int64_t owner,
                                           const Scratch& scratch) const {
    const int n = static_cast<int>(indices.extent(0));
    const auto& st = storage;
    const auto& shape = layout.tree_shape;
    const int own = owner_level;
    const auto& local_slot = scratch.slot;
    const auto& local_priority = scratch.priority;
    const auto& buf = scratch.buf;
    const auto& idx = indices;
    const auto& td = td_abs;
    const std::int64_t written = inserted();
    const std::int64_t size = written < layout.capacity ? written : layout.capacity;
    const float e = eps;
    // This team's entries, compacted through a counter in team scratch
    // (local_slot(n)). Their order is arbitrary and does not matter: leaves
    // take the max over duplicates, refreshed nodes are recomputed from
    // their children, and the team maximum is a max; the tree comes out the
    // same bit for bit. (A team scan would give a fixed order at the cost of
    // a barrier chain per team-sized block of the batch.)
    Kokkos::single(Kokkos::PerTeam(team), [&]() { local_slot(n) = 0; });
    team.team_barrier();
    float team_max = 0.0f;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, n),
        [&](const int i, float& highest) {
          const std::int64_t s = idx(i);
          const bool mine = s >= 0 && s < size && SumTreeShape::ancestor(s, own) == owner &&
                            st.next_ref(s) != replay_next_evicted && !(td(i) < 0.0f);
          if (!mine) return;
          const int at = Kokkos::atomic_fetch_add(&local_slot(n), 1);
          const float priority = foxrl::math::isfinite(td(i)) ? foxrl::math::fabs(td(i)) + e : 0.0f;
          local_slot(at) = static_cast<std::int32_t>(s);
          local_priority(at) = priority;
          if (priority > highest) highest = priority;
        },
        Kokkos::Max<float>(team_max));
    team.team_barrier();
    const int m = local_slot(n);
    if (m > 0) {
      const float a = alpha;
      // Leaves that already hold their new mass (every one under alpha = 0,
      // uniform replay, but a quarantine) leave the tree as it is: every
      // node is the left-to-right sum of its children, so a refresh would
      // write back the same bits. Duplicates that disagree count as a change.
      int changed = 1;
      if (skip_unchanged) {
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, m),
            [&](const int i, int& count) {
              count += st.tree(shape.leaf(local_slot(i))) != priority_mass(local_priority(i), a) ? 1 : 0;
            },
            Kokkos::Sum<int>(changed));
      }
      team.team_barrier();
      if (changed > 0) update_leaves(team, local_slot, local_priority, m, buf, owner);
      Kokkos::single(Kokkos::PerTeam(team), [&]() {
        if (team_max > st.max_priority()) Kokkos::atomic_fetch_max(&st.max_priority(), team_max);
      });
    }
    // The scratch is reused by the next owner of a team that loops.
    team.team_barrier();
  }

  /// The top level from the now final level below it, by the last team to
  /// finish (volatile loads: other teams wrote those nodes during this
  /// launch).
  KOKKOS_INLINE_FUNCTION void refresh_top(const member_type& team, const sum_tree_scratch<ExecSpace>& buf) const {
    const auto& st = storage;
    const auto& shape = layout.tree_shape;
    const int top = shape.top();
    constexpr int K = sum_tree_fanout;
    const int top_nodes = static_cast<int>(shape.nodes[top]);
    const std::int64_t children = shape.offset[top - 1];
    const std::int64_t parents = shape.offset[top];
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, top_nodes * K),
                         [&](const int i) { buf(i) = load_volatile(st.tree(children + i)); });
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, top_nodes), [&](const int g) {
      float sum = 0.0f;
      for (int j = 0; j < K; ++j) sum += buf(g * K + j);
      st.tree(parents + g) = sum;
    });
  }

  /// Writes the m compacted entries' leaves (each cleared, then the
  /// largest mass of its duplicates) and recomputes their ancestors level
  /// by level up to this team's own node.
  template <class Slots, class Priorities, class Buffer>
  KOKKOS_INLINE_FUNCTION void update_leaves(const member_type& team, const Slots& local_slot,
                                            const Priorities& local_priority, const int m, const Buffer& buf,
                                            const std::int64_t owner) const {
    const auto& st = storage;
    const auto& shape = layout.tree_shape;
    const int own = owner_level;
    const float a = alpha;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, m),
                         [&](const int i) { st.tree(shape.leaf(local_slot(i))) = 0.0f; });
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, m), [&](const int i) {
      Kokkos::atomic_fetch_max(&st.tree(shape.leaf(local_slot(i))), priority_mass(local_priority(i), a));
    });
    team.team_barrier();
    for (int level = 1; level <= own; ++level) {
      // The owned node is this team's own: refresh it once.
      const int count = level == own ? 1 : m;
      sum_tree_refresh_level(
          team, st.tree, shape, level, count,
          [&](const int i) -> std::int64_t {
            return level == own ? owner : SumTreeShape::ancestor(local_slot(i), level);
          },
          buf);
    }
  }
};

/// Launches one sample or gather (`label`: "foxrl::Replay::sample" or
/// "foxrl::Replay::gather"): `league` teams of `team_size` threads, each
/// with the scratch of f.rows_per_team draws.
template <class ExecSpace, class Transform>
void replay_sample(const ExecSpace& space, const ReplaySampleFunctor<ExecSpace, Transform>& f, int league,
                   int team_size, const char* label) {
  Kokkos::TeamPolicy<ExecSpace> policy(space, league, team_size);
  policy.set_scratch_size(0,
                          Kokkos::PerTeam(ReplaySampleFunctor<ExecSpace, Transform>::scratch_bytes(f.rows_per_team)));
  Kokkos::parallel_for(label, compat::light(policy), f);
}

/// Launches one priority update: one team of `team_size` threads per node
/// of f.owner_level (`league` of them), `scratch_bytes` of team scratch at
/// f.scratch_level.
template <class ExecSpace, class Then>
void replay_update_priorities(const ExecSpace& space, const ReplayUpdateFunctor<ExecSpace, Then>& f, int league,
                              int team_size, std::size_t scratch_bytes) {
  Kokkos::TeamPolicy<ExecSpace> policy(space, league, team_size);
  policy.set_scratch_size(f.scratch_level, Kokkos::PerTeam(scratch_bytes));
  Kokkos::parallel_for("foxrl::Replay::update_priorities", compat::light(policy), f);
}

}  // namespace foxrl::kernels
