#pragma once
// ReplayStorage: the device-resident state of a ReplayBuffer as
// structure-of-arrays Views, plus the scalars (ReplayLayout) that kernels
// need to address them. docs/replay.md describes the layout and why each
// observation is stored once.

#include "views/replay/sum_tree_shape.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl {

/// Sizes and index arithmetic of the replay storage; trivially copyable so
/// kernels take it by value.
struct ReplayLayout {
  std::int64_t capacity = 0;           ///< C: transition slots; transition g lives in slot g % C
  std::int64_t obs_rows = 0;           ///< R = C + lookahead: rows of the observation ring
  std::int64_t lookahead = 0;          ///< n * N: how far ahead (in transitions) a successor observation is
  std::int64_t boundary_capacity = 0;  ///< S: rows of the boundary pool
  /// The pool has a row per slot (S = C): slot s keeps its boundary next
  /// observation in row s. Nothing is handed out or evicted, and each row's
  /// insert is independent of the others (no scan over the insert's rows).
  bool boundary_per_slot = false;
  SumTreeShape tree_shape;  ///< levels of the K-ary sum tree over the C slots
  int obs_dim = 0;
  int num_envs = 0;  ///< N: rows of every insert
  int n_step = 1;

  /// Observation-ring row that holds the state of transition g.
  KOKKOS_INLINE_FUNCTION std::int64_t obs_row(std::int64_t g) const { return g % obs_rows; }
  /// Observation-ring row that holds the successor (next) observation of
  /// transition g when it has one (written ahead at g's insert).
  KOKKOS_INLINE_FUNCTION std::int64_t next_obs_row(std::int64_t g) const { return (g + lookahead) % obs_rows; }
  /// Transition index stored in slot s once `inserted` transitions were
  /// written (s < min(inserted, C)).
  KOKKOS_INLINE_FUNCTION std::int64_t transition_of_slot(std::int64_t s, std::int64_t inserted) const {
    const std::int64_t ptr = inserted % capacity;
    const std::int64_t age = ((ptr - 1 - s) % capacity + capacity) % capacity;
    return inserted - 1 - age;
  }
};

/// Values of ReplayStorage::next_ref (>= 0: a row of the boundary pool; the
/// slot itself where ReplayLayout::boundary_per_slot).
enum ReplayNextRef : std::int32_t {
  replay_next_is_successor = -1,  ///< next observation = observation ring row next_obs_row(g)
  replay_next_evicted = -2,       ///< boundary row was reused: slot carries no mass any more
};

template <class MemorySpace>
struct ReplayStorage {
  using matrix = Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace>;
  using vector = Kokkos::View<float*, MemorySpace>;

  matrix observations;                                ///< [R, obs_dim] observation ring (states and successors)
  Kokkos::View<std::int32_t*, MemorySpace> actions;   ///< [C]
  vector rewards;                                     ///< [C] n-step returns
  vector discounts;                                   ///< [C] gamma^k * (1 - terminated)
  Kokkos::View<std::int32_t*, MemorySpace> next_ref;  ///< [C] see ReplayNextRef

  matrix boundary_observations;                             ///< [S, obs_dim] next observations at episode boundaries
  Kokkos::View<std::int64_t*, MemorySpace> boundary_owner;  ///< [S] transition owning the row, -1 none ([0] per slot)
  Kokkos::View<std::int64_t, MemorySpace> boundary_head;    ///< rows of the pool handed out so far
  Kokkos::View<std::int64_t, MemorySpace> boundary_evictions;  ///< live rows lost to pool reuse
  Kokkos::View<std::int32_t*, MemorySpace> evicted_slots;      ///< [N] slots the running insert evicted
  /// [2] the running insert's counts for its tree refresh: evicted slots
  /// (listed in evicted_slots) and teams that changed leaves; 0 between
  /// launches.
  Kokkos::View<std::int32_t*, MemorySpace> insert_counts;

  vector tree;  ///< [tree_shape.size] K-ary sum tree of p^alpha (views/replay/sum_tree_shape.hpp)
  Kokkos::View<float, MemorySpace> max_priority;  ///< max priority seen (|td| + eps), starts at 1

  // Cross-team reduction state of the sample kernel, reset by its last team.
  Kokkos::View<std::int32_t, MemorySpace> teams_done;
  /// Bits of the batch's smallest positive mass: positive floats order like
  /// their bits, so an integer atomic min (no compare-and-swap loop) folds it.
  Kokkos::View<std::int32_t, MemorySpace> batch_min_mass;
};

}  // namespace foxrl
