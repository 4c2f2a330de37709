#pragma once
// Kernels of the prioritized replay buffer (src/replay_buffer.hpp): insert,
// sample (or gather given slots) and priority update, one launch each, all on
// the caller's instance. docs/replay.md has the storage layout and the
// launch/byte budget.

#include "batch.hpp"
#include "compat.hpp"
#include "replay_storage.hpp"
#include "sum_tree.hpp"
#include "transition_batch.hpp"

#include <Kokkos_Core.hpp>

#include <cfloat>
#include <cstdint>

namespace foxrl::kernels {

namespace detail {

/// Reads memory another team may have written during this kernel, bypassing
/// non-coherent caches (GPU L1); the writer published it with a fence.
template <class T>
KOKKOS_INLINE_FUNCTION T load_volatile(const T& ref) {
  return *static_cast<const volatile T*>(&ref);
}

/// Largest finite float: "no mass seen yet" for the sample kernel's batch
/// minimum (kept finite so fast-math builds cannot fold comparisons).
inline constexpr float no_mass = FLT_MAX;

}  // namespace detail

/// Insert of one TransitionBatch, one launch. Team 0 does the serial-by-
/// nature part (hands out boundary-pool rows with a team scan, evicts pool
/// rows still referenced by live slots, writes leaves, refreshes the sum-tree
/// paths); teams 1.. copy the observation rows and per-slot scalars. Nothing
/// team 0 reads is written by the other teams, so they need no handshake.
template <class ExecSpace>
struct ReplayInsertFunctor {
  using memory_space = typename ExecSpace::memory_space;
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;

  ReplayLayout layout;
  ReplayStorage<memory_space> storage;
  TransitionBatch<memory_space> batch;
  std::int64_t inserted = 0;  ///< transitions written before this insert
  float alpha = 0.0f;
  int rows_per_team = 1;

  // Slot, state row and successor row of row 0 (set by set_position):
  // row i adds i and wraps once, avoiding 64-bit modulo (slow on GPUs).
  std::int64_t first_slot = 0;
  std::int64_t first_state_row = 0;
  std::int64_t first_successor_row = 0;

  void set_position(std::int64_t transitions_before) {
    inserted = transitions_before;
    first_slot = inserted % layout.capacity;
    first_state_row = layout.obs_row(inserted);
    first_successor_row = layout.next_obs_row(inserted);
  }

  KOKKOS_INLINE_FUNCTION std::int64_t slot(int i) const {
    return wrap(first_slot + i, layout.capacity);
  }
  KOKKOS_INLINE_FUNCTION std::int64_t state_row(int i) const {
    return wrap(first_state_row + i, layout.obs_rows);
  }
  KOKKOS_INLINE_FUNCTION std::int64_t successor_row(int i) const {
    return wrap(first_successor_row + i, layout.obs_rows);
  }
  KOKKOS_INLINE_FUNCTION static std::int64_t wrap(std::int64_t x, std::int64_t m) {
    return x >= m ? x - m : x;
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    if (team.league_rank() == 0) {
      update_slots_and_tree(team);
    } else {
      copy_rows(team, team.league_rank() - 1);
    }
  }

  KOKKOS_INLINE_FUNCTION void copy_rows(const member_type& team, int chunk) const {
    const int first = chunk * rows_per_team;
    const int last = first + rows_per_team < layout.num_envs ? first + rows_per_team
                                                               : layout.num_envs;
    if (first >= last) return;
    const int dim = layout.obs_dim;
    const auto& obs = storage.observations;
    const auto& in = batch;
    const std::int64_t rows = layout.obs_rows;
    const std::int64_t state0 = state_row(first);
    const std::int64_t next0 = successor_row(first);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, (last - first) * dim), [&](const int idx) {
      const int r = idx / dim;
      const int c = idx - r * dim;
      const int i = first + r;
      obs(wrap(state0 + r, rows), c) = in.observations(i, c);
      // Written ahead: the successor's own insert n iterations later writes
      // the same value; until then the row serves as the pending next state.
      if (in.next_is_successor(i) != 0) obs(wrap(next0 + r, rows), c) = in.next_observations(i, c);
    });
    const auto& st = storage;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, first, last), [&](const int i) {
      const std::int64_t s = slot(i);
      st.actions(s) = in.actions(i);
      st.rewards(s) = in.rewards(i);
      st.discounts(s) = in.discounts(i);
    });
  }

  KOKKOS_INLINE_FUNCTION void update_slots_and_tree(const member_type& team) const {
    const auto& lay = layout;
    const auto& st = storage;
    const auto& in = batch;
    const std::int64_t base = inserted;
    const std::int64_t live_from = inserted + lay.num_envs - lay.capacity;
    const std::int64_t head = st.boundary_head();
    const float mass = priority_mass(st.max_priority(), alpha);

    Kokkos::parallel_scan(
        Kokkos::TeamThreadRange(team, lay.num_envs),
        [&](const int i, std::int64_t& offset, const bool final) {
          const bool boundary = in.next_is_successor(i) == 0;
          if (final) {
            const std::int64_t g = base + i;
            const std::int64_t s = slot(i);
            std::int32_t evicted = -1;
            if (boundary) {
              const std::int64_t row = (head + offset) % lay.boundary_capacity;
              const std::int64_t owner = st.boundary_owner(row);
              if (owner >= 0 && owner >= live_from) {
                // The pool is smaller than the ring: the oldest boundary
                // transition still live loses its next observation, so it
                // must never be sampled again.
                const std::int64_t old_slot = owner % lay.capacity;
                st.next_ref(old_slot) = replay_next_evicted;
                st.tree(lay.leaves + old_slot) = 0.0f;
                evicted = static_cast<std::int32_t>(old_slot);
                Kokkos::atomic_add(&st.boundary_evictions(), std::int64_t(1));
              }
              st.boundary_owner(row) = g;
              st.next_ref(s) = static_cast<std::int32_t>(row);
            } else {
              st.next_ref(s) = replay_next_is_successor;
            }
            st.evicted_slots(i) = evicted;
            st.tree(lay.leaves + s) = mass;
          }
          if (boundary) offset += 1;
        });
    std::int64_t boundaries = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, lay.num_envs),
        [&](const int i, std::int64_t& count) { count += in.next_is_successor(i) == 0 ? 1 : 0; },
        boundaries);
    team.team_barrier();
    Kokkos::single(Kokkos::PerTeam(team), [&]() { st.boundary_head() = head + boundaries; });

    if (boundaries > 0) {
      // Boundaries are rare (about n / episode length of the rows): a thread
      // per row copies its row, instead of a pass over every element.
      const int dim = lay.obs_dim;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, lay.num_envs), [&](const int i) {
        if (in.next_is_successor(i) != 0) return;
        const std::int32_t row = st.next_ref(slot(i));
        for (int c = 0; c < dim; ++c) st.boundary_observations(row, c) = in.next_observations(i, c);
      });
    }
    const int n = lay.num_envs;
    const std::int64_t slot0 = slot(0);
    sum_tree_refresh_paths(team, st.tree, lay.leaves, lay.depth, 2 * n, [&](const int e) {
      return e < n ? wrap(slot0 + e, lay.capacity) : std::int64_t(st.evicted_slots(e - n));
    });
  }
};

/// Sample (stratified proportional draws) or gather (given slots) of a batch,
/// one launch. Each team resolves its rows (descent, next-observation
/// source; a team has more threads than rows, so the copy that follows
/// spreads each row over several threads and every thread issues only a few
/// dependent loads), copies their observations with all threads, and folds its
/// minimum leaf mass into a device scalar; the last team to finish turns the
/// masses into max-normalised importance weights (p_min / p_i)^beta and
/// resets the scalars for the next call.
template <class ExecSpace>
struct ReplaySampleFunctor {
  using memory_space = typename ExecSpace::memory_space;
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using scratch_rows =
      Kokkos::View<std::int64_t*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;

  ReplayLayout layout;
  ReplayStorage<memory_space> storage;
  Batch<memory_space> out;
  Kokkos::View<const std::int64_t*, memory_space> given;  ///< gather mode when non-empty
  std::int64_t inserted = 0;
  std::int64_t filled = 0;
  std::uint64_t seed = 0;
  std::uint64_t call = 0;
  float beta = 0.0f;
  int batch_size = 0;
  int rows_per_team = 1;  ///< draws per team

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

    float team_min = detail::no_mass;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, rows),
        [&](const int r, float& lowest) {
          const int k = first + r;
          std::int64_t s;
          if (gather) {
            s = given(k);
            s = s < 0 ? 0 : (s >= filled ? filled - 1 : s);
          } else {
            const float total = st.tree(1);
            const float u = counter_uniform(seed, call, static_cast<std::uint64_t>(k));
            const float target = (static_cast<float>(k) + u) * (total / static_cast<float>(batch_size));
            s = sum_tree_descend(st.tree, lay.leaves, lay.depth, target, filled);
          }
          const std::int64_t g = lay.transition_of_slot(s, inserted);
          const std::int32_t ref = st.next_ref(s);
          state_row(r) = lay.obs_row(g);
          // >= 0: observation-ring row; < 0: boundary-pool row -(src + 1).
          next_src(r) = ref >= 0 ? -(std::int64_t(ref) + 1)
                                 : (ref == replay_next_is_successor ? lay.next_obs_row(g)
                                                                    : lay.obs_row(g));
          o.indices(k) = s;
          o.actions(k) = st.actions(s);
          o.rewards(k) = st.rewards(s);
          o.discounts(k) = st.discounts(s);
          const float mass = st.tree(lay.leaves + s);
          o.is_weights(k) = gather ? 1.0f : mass;
          if (mass > 0.0f && mass < lowest) lowest = mass;
        },
        Kokkos::Min<float>(team_min));
    team.team_barrier();

    const int dim = lay.obs_dim;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows * dim), [&](const int idx) {
      const int r = idx / dim;
      const int c = idx - r * dim;
      o.states(first + r, c) = st.observations(state_row(r), c);
      const std::int64_t src = next_src(r);
      o.next_states(first + r, c) =
          src >= 0 ? st.observations(src, c) : st.boundary_observations(-src - 1, c);
    });
    if (gather) return;

    // Publish this team's masses, then count it as done.
    Kokkos::single(Kokkos::PerTeam(team), [&]() { Kokkos::atomic_fetch_min(&st.batch_min_mass(), team_min); });
    Kokkos::memory_fence();
    team.team_barrier();
    int last = 0;
    Kokkos::single(
        Kokkos::PerTeam(team),
        [&](int& is_last) {
          is_last = Kokkos::atomic_fetch_add(&st.teams_done(), 1) == team.league_size() - 1 ? 1 : 0;
        },
        last);
    if (last == 0) return;

    Kokkos::memory_fence();
    const float lowest = detail::load_volatile(st.batch_min_mass());
    const float exponent = beta;
    const int n = batch_size;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](const int k) {
      const float mass = detail::load_volatile(o.is_weights(k));
      // w_k = (size P_k)^-beta / max_j (size P_j)^-beta = (p_min / p_k)^beta;
      // a zero-mass row (only when no slot has mass) gets weight 0.
      o.is_weights(k) = mass > 0.0f && lowest < detail::no_mass
                            ? foxrl::math::pow(lowest / mass, exponent)
                            : 0.0f;
    });
    team.team_barrier();
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      st.teams_done() = 0;
      st.batch_min_mass() = detail::no_mass;
    });
  }
};

/// Priority update of a batch, one launch of one team. Duplicate slots in a
/// batch: the largest priority wins (every occurrence first clears the leaf,
/// then all take an atomic max), which is deterministic and errs towards
/// replaying the transition. Entries are skipped (leaf unchanged) for slots
/// outside [0, size), slots whose boundary row was evicted, and non-finite
/// td errors.
template <class ExecSpace>
struct ReplayUpdateFunctor {
  using memory_space = typename ExecSpace::memory_space;
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;

  ReplayLayout layout;
  ReplayStorage<memory_space> storage;
  Kokkos::View<const std::int64_t*, memory_space> indices;
  Kokkos::View<const float*, memory_space> td_abs;
  std::int64_t filled = 0;
  float alpha = 0.0f;
  float eps = 0.0f;

  KOKKOS_INLINE_FUNCTION bool accepts(int e) const {
    const std::int64_t s = indices(e);
    return s >= 0 && s < filled && storage.next_ref(s) != replay_next_evicted &&
           foxrl::math::isfinite(td_abs(e));
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const int n = static_cast<int>(indices.extent(0));
    const auto& st = storage;
    const std::int64_t leaves = layout.leaves;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](const int e) {
      if (accepts(e)) st.tree(leaves + indices(e)) = 0.0f;
    });
    team.team_barrier();
    float batch_max = 0.0f;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, n),
        [&](const int e, float& highest) {
          if (!accepts(e)) return;
          const float priority = foxrl::math::fabs(td_abs(e)) + eps;
          Kokkos::atomic_fetch_max(&st.tree(leaves + indices(e)), priority_mass(priority, alpha));
          if (priority > highest) highest = priority;
        },
        Kokkos::Max<float>(batch_max));
    team.team_barrier();
    const auto& idx = indices;
    const std::int64_t size = filled;
    sum_tree_refresh_paths(team, st.tree, leaves, layout.depth, n, [&](const int e) {
      const std::int64_t s = idx(e);
      return s >= 0 && s < size ? s : std::int64_t(-1);
    });
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      if (batch_max > st.max_priority()) st.max_priority() = batch_max;
    });
  }
};

}  // namespace foxrl::kernels
