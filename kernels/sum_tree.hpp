#pragma once
// Device sum tree for proportional prioritized replay: one View of 2L floats
// (L = power of two >= capacity), node k = tree(2k) + tree(2k+1), root at 1,
// leaf of slot s at L + s holding p_s^alpha (0 for never-written slots).
//
// Updates recompute internal nodes from their children, level by level,
// inside one team: every node on a changed leaf's path is rewritten as the
// float sum of its two children after all children of that level are final,
// so the tree is always exactly what a full bottom-up rebuild would give
// (deterministic, no atomics on sums, no drift). docs/replay.md explains why
// this beats atomic deltas and full rebuilds at the sizes foxrl uses.

#include "compat.hpp"

#include "counter_rng.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl::kernels {

/// Leaf mass of a priority: p^alpha, and 0 (never sampled) for p <= 0 even
/// when alpha == 0.
KOKKOS_INLINE_FUNCTION float priority_mass(float priority, float alpha) {
  return priority > 0.0f ? foxrl::math::pow(priority, alpha) : 0.0f;
}

/// Finds the leaf whose cumulative-mass interval holds `target` and returns
/// its slot. A child with zero mass is never entered while its sibling has
/// mass, so float rounding of the sums (target at or past a subtree's total)
/// cannot land on an empty or never-written leaf; the result is clamped to
/// the filled range [0, filled).
template <class TreeView>
KOKKOS_INLINE_FUNCTION std::int64_t sum_tree_descend(const TreeView& tree, std::int64_t leaves,
                                                     int depth, float target,
                                                     std::int64_t filled) {
  std::int64_t node = 1;
  for (int level = 0; level < depth; ++level) {
    const float left = tree(2 * node);
    const float right = tree(2 * node + 1);
    if ((target < left && left > 0.0f) || !(right > 0.0f)) {
      node = 2 * node;
    } else {
      target -= left;
      node = 2 * node + 1;
    }
  }
  std::int64_t slot = node - leaves;
  if (slot >= filled) slot = filled - 1;
  if (slot < 0) slot = 0;
  return slot;
}

/// Recomputes, inside one team, every internal node on the path from the
/// leaves of slots slot_of(0..n-1) to the root (slot_of(e) < 0: no leaf).
/// Leaves must be final before the call (and visible to the team). A node
/// reached from several entries is written by each with the same value;
/// consecutive entries sharing an ancestor skip the duplicate work.
template <class Team, class TreeView, class SlotOf>
KOKKOS_INLINE_FUNCTION void sum_tree_refresh_paths(const Team& team, const TreeView& tree,
                                                   std::int64_t leaves, int depth, int n,
                                                   const SlotOf& slot_of) {
  for (int level = 1; level <= depth; ++level) {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](const int e) {
      const std::int64_t s = slot_of(e);
      if (s < 0) return;
      const std::int64_t node = (leaves + s) >> level;
      if (e > 0) {
        const std::int64_t prev = slot_of(e - 1);
        if (prev >= 0 && ((leaves + prev) >> level) == node) return;
      }
      tree(node) = tree(2 * node) + tree(2 * node + 1);
    });
    team.team_barrier();
  }
}

}  // namespace foxrl::kernels
