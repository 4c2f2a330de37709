#pragma once
// The replay buffer's insert of one TransitionBatch, one launch
// (src/replay/replay_buffer.hpp): team 0 does the serial-by-nature part
// (numbers the episode boundaries, hands out boundary-pool rows, evicts pool
// rows still referenced by live slots), teams 1.. copy the observation rows
// and per-slot scalars, and the sum tree above the changed leaves is
// recomputed level by level, each node from its final children, so it is
// always exactly what a full bottom-up rebuild gives.
//
// With a boundary row per slot (ReplayLayout::boundary_per_slot) there is
// no team 0: each row's next observation goes to the ring or to its slot's
// row, a write that depends on no other row, so the copy teams do it.
//
// Two schedules of the tree work give the same tree bit for bit:
// - spread (large inserts): each copy team also writes the new leaves of a
//   share of the level-1 nodes above the new slots and recomputes those
//   nodes; the last team to finish (ticket) refreshes the levels above and
//   the evicted slots' paths. 4,096 new slots touch 129-130 level-1 nodes: 2-3
//   per copy team instead of all of them on one team's barrier chain.
// - team 0 alone (small inserts, one copy team): team 0 writes the leaves
//   and refreshes every level after its boundary work; no ticket.

#include "core/compat.hpp"
#include "kernels/core/counter_read.hpp"
#include "kernels/core/last_team.hpp"
#include "kernels/replay/sum_tree.hpp"
#include "views/collect/transition_batch.hpp"
#include "views/replay/replay_storage.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl::kernels {

/// The slots one insert writes: [s0, end1] and, after a wrap of the ring,
/// [0, end2] (end2 = -1: none).
struct InsertedSlots {
  std::int64_t s0 = 0;
  std::int64_t end1 = -1;
  std::int64_t end2 = -1;

  KOKKOS_INLINE_FUNCTION InsertedSlots(std::int64_t first, std::int64_t count, std::int64_t capacity) : s0(first) {
    const std::int64_t past = first + count;
    end1 = (past < capacity ? past : capacity) - 1;
    end2 = past > capacity ? past - capacity - 1 : -1;
  }

  KOKKOS_INLINE_FUNCTION bool holds(std::int64_t slot) const {
    return (slot >= s0 && slot <= end1) || slot <= end2;  // slot >= 0
  }
  /// Nodes of `level` above the first range, and above the second.
  KOKKOS_INLINE_FUNCTION int nodes_first(int level) const {
    return static_cast<int>(SumTreeShape::ancestor(end1, level) - SumTreeShape::ancestor(s0, level) + 1);
  }
  KOKKOS_INLINE_FUNCTION int nodes_second(int level) const {
    return end2 < 0 ? 0 : static_cast<int>(SumTreeShape::ancestor(end2, level) + 1);
  }
  /// Node e of `level` over both ranges (e < nodes_first + nodes_second);
  /// near a full wrap the two lists can share a node.
  KOKKOS_INLINE_FUNCTION std::int64_t node(int level, int e) const {
    const int n1 = nodes_first(level);
    return e < n1 ? SumTreeShape::ancestor(s0, level) + e : std::int64_t(e - n1);
  }
};

template <class ExecSpace>
struct ReplayInsertFunctor {
  using memory_space = typename ExecSpace::memory_space;
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using Scratch = sum_tree_scratch<ExecSpace>;

  ReplayLayout layout;
  ReplayStorage<memory_space> storage;
  TransitionBatch<memory_space> batch;
  CounterRead inserted;  ///< transitions written before this insert
  float alpha = 0.0f;
  int rows_per_team = 1;
  int refresh_groups = 1;  ///< tree nodes per staged chunk of a team's refresh
  /// Leaves that already hold the new mass (a full ring under alpha = 0)
  /// are neither written nor refreshed (true); false rewrites them.
  bool skip_unchanged = true;
  /// The copy teams write the leaves and level-1 nodes and the last team
  /// the levels above (true), or team 0 does all of it (false).
  bool spread = false;

  /// Scratch bytes per team.
  static std::size_t scratch_bytes(int groups) {
    return sum_tree_scratch<ExecSpace>::shmem_size(std::size_t(groups) * sum_tree_fanout);
  }

  /// Where this insert writes: slot, state row and successor row of row 0
  /// (row i adds i and wraps once, avoiding 64-bit modulo per row, slow on
  /// GPUs). Computed once per thread from the insert count.
  struct Position {
    std::int64_t inserted = 0;
    std::int64_t first_slot = 0;
    std::int64_t first_state_row = 0;
    std::int64_t first_successor_row = 0;
    std::int64_t capacity = 1;
    std::int64_t obs_rows = 1;

    KOKKOS_INLINE_FUNCTION std::int64_t slot(int i) const { return wrap(first_slot + i, capacity); }
    KOKKOS_INLINE_FUNCTION std::int64_t state_row(int i) const { return wrap(first_state_row + i, obs_rows); }
    KOKKOS_INLINE_FUNCTION std::int64_t successor_row(int i) const { return wrap(first_successor_row + i, obs_rows); }
  };

  KOKKOS_INLINE_FUNCTION Position position() const {
    Position p;
    p.inserted = inserted();
    p.first_slot = p.inserted % layout.capacity;
    p.first_state_row = layout.obs_row(p.inserted);
    p.first_successor_row = layout.next_obs_row(p.inserted);
    p.capacity = layout.capacity;
    p.obs_rows = layout.obs_rows;
    return p;
  }

  KOKKOS_INLINE_FUNCTION static std::int64_t wrap(std::int64_t x, std::int64_t m) { return x >= m ? x - m : x; }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    // With a row per slot and no spread, one team does all of it (and takes
    // the team scratch itself).
    if (layout.boundary_per_slot && !spread) {
      whole_in_team(team);
      return;
    }
    const Position at = position();
    const int rank = team.league_rank();
    // Allocated once per team: each view of team scratch takes its own part.
    const Scratch buf(team.team_scratch(0), std::size_t(refresh_groups) * sum_tree_fanout);
    if (layout.boundary_per_slot) {
      // One team per copy chunk.
      copy_rows(team, rank, at);
      write_leaves_and_level_one(team, rank, team.league_size(), at, buf);
    } else if (!spread) {
      if (rank == 0) {
        update_slots_and_tree(team, at, buf);
      } else {
        copy_rows(team, rank - 1, at);
      }
      return;
    } else if (rank == 0) {
      hand_out_boundaries(team, at, false, 0.0f);
    } else {
      copy_rows(team, rank - 1, at);
      write_leaves_and_level_one(team, rank - 1, team.league_size() - 1, at, buf);
    }
    if (!arrive_last(team, &storage.teams_done(), team.league_size())) return;
    refresh_above_level_one(team, at, buf);
  }

  /// The whole insert by one team: team 0's work, then every copy team's
  /// rows (the two touch disjoint data, so one team may run them in turn).
  /// For a launch of another component's that runs the insert after its own
  /// work (the collector's one-team record, kernels/collect/record_step.hpp).
  /// Needs !spread and scratch_bytes(refresh_groups) of team scratch (level 0).
  KOKKOS_INLINE_FUNCTION void whole_in_team(const member_type& team) const {
    const Position at = position();
    const Scratch buf(team.team_scratch(0), std::size_t(refresh_groups) * sum_tree_fanout);
    update_slots_and_tree(team, at, buf);
    for (int chunk = 0; chunk * rows_per_team < layout.num_envs; ++chunk) copy_rows(team, chunk, at);
  }

  KOKKOS_INLINE_FUNCTION void copy_rows(const member_type& team, int chunk, const Position& at) const {
    const int first = chunk * rows_per_team;
    const int last = first + rows_per_team < layout.num_envs ? first + rows_per_team : layout.num_envs;
    if (first >= last) return;
    const int dim = layout.obs_dim;
    const auto& obs = storage.observations;
    const auto& in = batch;
    const std::int64_t rows = layout.obs_rows;
    const std::int64_t state0 = at.state_row(first);
    const std::int64_t next0 = at.successor_row(first);
    const bool per_slot = layout.boundary_per_slot;
    const auto& pool = storage.boundary_observations;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, (last - first) * dim), [&](const int idx) {
      const int r = idx / dim;
      const int c = idx - r * dim;
      const int i = first + r;
      obs(wrap(state0 + r, rows), c) = in.observations(i, c);
      // Written ahead: the successor's own insert n iterations later writes
      // the same value; until then the row serves as the pending next state.
      if (in.next_is_successor(i) != 0) {
        obs(wrap(next0 + r, rows), c) = in.next_observations(i, c);
      } else if (per_slot) {
        pool(at.slot(i), c) = in.next_observations(i, c);
      }
    });
    const auto& st = storage;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, first, last), [&](const int i) {
      const std::int64_t s = at.slot(i);
      st.actions(s) = in.actions(i);
      st.rewards(s) = in.rewards(i);
      st.discounts(s) = in.discounts(i);
      // The pool's rows are team 0's to hand out; a slot's own row is not.
      if (per_slot)
        st.next_ref(s) = in.next_is_successor(i) != 0 ? std::int32_t(replay_next_is_successor) : std::int32_t(s);
    });
  }

  /// Team 0's serial-by-nature part: numbers the boundary rows (each thread
  /// counts a strip of rows, one team scan gives every strip its first
  /// ordinal), hands out pool rows, evicts pool rows still referenced by live
  /// slots (their leaves set to 0, their slots appended to evicted_slots and
  /// counted in insert_counts(0)), sets next_ref and copies the boundary rows'
  /// next observations. With `write_leaves`, every new slot's leaf gets
  /// `mass` too. Returns the number of boundaries.
  /// Each thread loads what its strip needs before its first store (the
  /// rows' boundary flags, the pool's head, the owners of the pool rows it
  /// hands out): a flag is a byte, which may alias any store, so a load
  /// placed after a store waits for it, and a strip loop that loaded each
  /// row's flag, and each boundary's owner, between stores paid one memory
  /// round trip per row.
  KOKKOS_INLINE_FUNCTION std::int64_t hand_out_boundaries(const member_type& team, const Position& at,
                                                          bool write_leaves, float mass) const {
    const auto& lay = layout;
    const auto& shape = layout.tree_shape;
    const auto& st = storage;
    const auto& in = batch;
    const int n = lay.num_envs;
    const int threads = team.team_size();
    const int strip = (n + threads - 1) / threads;
    const int begin = team.team_rank() * strip < n ? team.team_rank() * strip : n;
    const int end = begin + strip < n ? begin + strip : n;
    // The strip's boundary flags as bits (strips of up to 64 rows; longer
    // ones load their flags again below).
    constexpr int flag_bits = 64;
    const bool flags_held = end - begin <= flag_bits;
    const std::int64_t head = st.boundary_head();  // in flight with the flags
    std::uint64_t flags = 0;
    std::int64_t mine = 0;
    for (int i = begin; i < end; ++i) {
      const bool boundary = in.next_is_successor(i) == 0;
      mine += boundary ? 1 : 0;
      if (boundary && flags_held) flags |= std::uint64_t(1) << (i - begin);
    }
    const auto is_boundary = [&](const int i) {
      return flags_held ? ((flags >> (i - begin)) & 1u) != 0 : in.next_is_successor(i) == 0;
    };
    // Exclusive: the boundaries in the strips before this thread's.
    const std::int64_t before = team.team_scan(mine);
    std::int64_t boundaries = before + mine;
    team.team_broadcast(boundaries, threads - 1);

    if (boundaries == 0) {
      // Most inserts (every one between episode ends): no ordinals to hand out.
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](const int i) {
        const std::int64_t s = at.slot(i);
        st.next_ref(s) = replay_next_is_successor;
        if (write_leaves) st.tree(shape.leaf(s)) = mass;
      });
      team.team_barrier();
      return 0;
    }
    const std::int64_t base = at.inserted;
    const std::int64_t live_from = at.inserted + n - lay.capacity;
    // The pool rows of this strip's first boundaries and their owners,
    // loaded together.
    constexpr int owners_held = 8;
    std::int64_t owners[owners_held];
    for (int j = 0; j < owners_held; ++j)
      if (j < mine) owners[j] = st.boundary_owner((head + before + j) % lay.boundary_capacity);
    std::int64_t offset = before;
    for (int i = begin; i < end; ++i) {
      const std::int64_t s = at.slot(i);
      if (write_leaves) st.tree(shape.leaf(s)) = mass;
      if (!is_boundary(i)) {
        st.next_ref(s) = replay_next_is_successor;
        continue;
      }
      const std::int64_t row = (head + offset) % lay.boundary_capacity;
      const std::int64_t owner = offset - before < owners_held ? owners[offset - before] : st.boundary_owner(row);
      ++offset;
      if (owner >= 0 && owner >= live_from) {
        // The pool is smaller than the ring: the oldest boundary transition
        // still live loses its next observation, so it must never be
        // sampled again. (A live owner's slot is never one of the new ones.)
        const std::int64_t old_slot = owner % lay.capacity;
        st.next_ref(old_slot) = replay_next_evicted;
        st.tree(shape.leaf(old_slot)) = 0.0f;
        st.evicted_slots(Kokkos::atomic_fetch_add(&st.insert_counts(0), 1)) = static_cast<std::int32_t>(old_slot);
        Kokkos::atomic_add(&st.boundary_evictions(), std::int64_t(1));
      }
      st.boundary_owner(row) = base + i;
      st.next_ref(s) = static_cast<std::int32_t>(row);
      // Boundaries are rare (about n / episode length of the rows): the
      // thread that hands out a row copies its next observation.
      for (int c = 0; c < lay.obs_dim; ++c) st.boundary_observations(row, c) = in.next_observations(i, c);
    }
    team.team_barrier();
    Kokkos::single(Kokkos::PerTeam(team), [&]() { st.boundary_head() = head + boundaries; });
    return boundaries;
  }

  /// The mass of a new slot: the largest priority seen, to the alpha.
  KOKKOS_INLINE_FUNCTION float new_mass() const { return priority_mass(storage.max_priority(), alpha); }

  /// Team 0 alone: the boundary work with the leaves, then every level
  /// above the new slots and the evicted ones.
  KOKKOS_INLINE_FUNCTION void update_slots_and_tree(const member_type& team, const Position& at,
                                                    const Scratch& buf) const {
    const auto& st = storage;
    const auto& shape = layout.tree_shape;
    const float mass = new_mass();
    const InsertedSlots slots(at.first_slot, layout.num_envs, layout.capacity);
    // Every new slot's leaf already holds its mass (the ring is full and
    // every mass is 1): every node is the left-to-right sum of its
    // children, so the slots' leaves and ancestors keep their bits.
    int changed = 1;
    if (skip_unchanged) {
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(team, layout.num_envs),
          [&](const int i, int& count) { count += st.tree(shape.leaf(at.slot(i))) != mass ? 1 : 0; },
          Kokkos::Sum<int>(changed));
    }
    std::int64_t boundaries = 0;
    if (!layout.boundary_per_slot) {
      boundaries = hand_out_boundaries(team, at, changed > 0, mass);
    } else if (changed > 0) {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, layout.num_envs),
                           [&](const int i) { st.tree(shape.leaf(at.slot(i))) = mass; });
      team.team_barrier();
    }
    int evictions = 0;
    if (boundaries > 0) {
      // Counted by this team's atomics; read back past the barrier.
      Kokkos::memory_fence();
      team.team_barrier();
      evictions = load_volatile(st.insert_counts(0));
      team.team_barrier();
      Kokkos::single(Kokkos::PerTeam(team), [&]() { st.insert_counts(0) = 0; });
    }
    refresh_levels(team, slots, changed > 0 ? 1 : shape.top() + 1, evictions, buf,
                   [&](const std::int64_t i) { return st.tree(i); });
  }

  /// Copy team `chunk` of `chunks`: its share of the level-1 nodes above the
  /// new slots. Writes the new slots' leaves that do not hold the new mass
  /// yet (every new leaf without skip_unchanged) and recomputes the nodes
  /// from their children, a new slot's taken as the new mass (a node shared
  /// with another team near a full wrap gets the same value from both). A
  /// team that changed a leaf counts itself in insert_counts(1), so the last
  /// team refreshes the levels above. An evicted leaf that team 0 zeroes
  /// meanwhile may be read either way: the last team recomputes its path.
  KOKKOS_INLINE_FUNCTION void write_leaves_and_level_one(const member_type& team, int chunk, int chunks,
                                                         const Position& at, const Scratch& buf) const {
    constexpr int K = sum_tree_fanout;
    const auto& st = storage;
    const auto& shape = layout.tree_shape;
    const InsertedSlots slots(at.first_slot, layout.num_envs, layout.capacity);
    const int total = slots.nodes_first(1) + slots.nodes_second(1);
    const int per = (total + chunks - 1) / chunks;
    const int first = chunk * per;
    const int last = first + per < total ? first + per : total;
    if (first >= last) return;
    const float mass = new_mass();
    const bool skip = skip_unchanged;
    const bool has_parents = shape.top() >= 1;
    const int groups = refresh_groups;
    int changed_here = 0;
    for (int from = first; from < last; from += groups) {
      const int n = last - from < groups ? last - from : groups;
      int changed = 0;
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(team, n * K),
          [&](const int i, int& count) {
            const std::int64_t slot = slots.node(1, from + i / K) * K + i % K;
            float value = st.tree(shape.leaf(slot));
            if (slots.holds(slot)) {
              if (!skip || value != mass) {
                st.tree(shape.leaf(slot)) = mass;
                ++count;
              }
              value = mass;
            }
            buf(i) = value;
          },
          Kokkos::Sum<int>(changed));
      team.team_barrier();
      if (changed > 0 && has_parents) {
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](const int g) {
          float sum = 0.0f;
          for (int j = 0; j < K; ++j) sum += buf(g * K + j);
          st.tree(shape.node(1, slots.node(1, from + g))) = sum;
        });
      }
      team.team_barrier();
      changed_here += changed;
    }
    if (changed_here > 0) Kokkos::single(Kokkos::PerTeam(team), [&]() { Kokkos::atomic_add(&st.insert_counts(1), 1); });
  }

  /// The last team of a spread insert: the evicted slots' level-1 nodes,
  /// then every level above, from final children other teams wrote during
  /// the launch (volatile loads). Resets the counts for the next insert.
  KOKKOS_INLINE_FUNCTION void refresh_above_level_one(const member_type& team, const Position& at,
                                                      const Scratch& buf) const {
    const auto& st = storage;
    const int evictions = load_volatile(st.insert_counts(0));
    const int changed = load_volatile(st.insert_counts(1));
    team.team_barrier();
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      st.insert_counts(0) = 0;
      st.insert_counts(1) = 0;
    });
    const InsertedSlots slots(at.first_slot, layout.num_envs, layout.capacity);
    refresh_levels(team, slots, changed > 0 ? 2 : layout.tree_shape.top() + 1, evictions, buf,
                   [&](const std::int64_t i) { return load_volatile(st.tree(i)); });
  }

  /// Recomputes every level above the leaves: at each level, the ancestors
  /// of the new slots from level `new_from` on, and those of the first
  /// `evictions` entries of evicted_slots, each from its children (loaded
  /// through `read`).
  template <class Read>
  KOKKOS_INLINE_FUNCTION void refresh_levels(const member_type& team, const InsertedSlots& slots, int new_from,
                                             int evictions, const Scratch& buf, const Read& read) const {
    const auto& st = storage;
    const auto& shape = layout.tree_shape;
    for (int level = 1; level <= shape.top(); ++level) {
      const bool news = level >= new_from;
      const int n1 = news ? slots.nodes_first(level) : 0;
      const int n12 = news ? n1 + slots.nodes_second(level) : 0;
      if (n12 + evictions == 0) continue;
      sum_tree_refresh_level(
          team, st.tree, shape, level, n12 + evictions,
          [&](const int e) -> std::int64_t {
            if (e < n12) return slots.node(level, e);
            return SumTreeShape::ancestor(load_volatile(st.evicted_slots(e - n12)), level);
          },
          buf, read);
    }
  }
};

/// Launches one insert: team 0 plus `chunks` copy teams of `team_size`
/// threads, with the scratch of f.refresh_groups staged nodes per team.
/// With a boundary row per slot: the `chunks` copy teams when spread, else
/// one team for all of it.
template <class ExecSpace>
void replay_insert(const ExecSpace& space, const ReplayInsertFunctor<ExecSpace>& f, int chunks, int team_size) {
  const int teams = f.layout.boundary_per_slot ? (f.spread ? chunks : 1) : 1 + chunks;
  Kokkos::TeamPolicy<ExecSpace> policy(space, teams, team_size);
  policy.set_scratch_size(0, Kokkos::PerTeam(ReplayInsertFunctor<ExecSpace>::scratch_bytes(f.refresh_groups)));
  Kokkos::parallel_for("foxrl::Replay::insert", compat::light(policy), f);
}

}  // namespace foxrl::kernels
