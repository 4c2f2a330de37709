#pragma once
// SumTreeShape: where each level of the K-ary sum tree (K = 32) lives in its
// one View of floats. Level 0 holds the leaves (one per slot), level l + 1
// node i is the sum of level l nodes iK .. iK + K - 1 (its children,
// contiguous: one 128-byte line); the top level has at most K nodes and the
// total mass is their sum (a virtual root, never stored). Every level starts
// at a multiple of K and is zero-padded to a multiple of K, so every group of
// children is one aligned line. docs/replay.md explains the choice of K.

#include "core/error.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>

namespace foxrl {

/// log2 of the sum tree's fanout K.
inline constexpr int sum_tree_fanout_log2 = 5;
/// K: children per node, contiguous in memory (32 floats = one 128-byte line).
inline constexpr int sum_tree_fanout = 1 << sum_tree_fanout_log2;
/// Levels a shape can have: K^6 = 2^30 leaves is the largest replay capacity.
inline constexpr int sum_tree_max_levels = 7;

/// Level sizes and offsets of a K-ary sum tree; trivially copyable so kernels
/// take it by value.
struct SumTreeShape {
  int levels = 0;                                 ///< level 0 = leaves .. levels - 1 = top (<= K nodes)
  std::int64_t nodes[sum_tree_max_levels] = {};   ///< real nodes per level
  std::int64_t offset[sum_tree_max_levels] = {};  ///< first float of each level in the View
  std::int64_t size = 0;                          ///< floats in the View (padding included)

  /// The shape for `leaves` slots (>= 1).
  static SumTreeShape for_leaves(std::int64_t leaves) {
    if (leaves < 1) throw UsageError("foxrl::SumTreeShape: leaves = " + std::to_string(leaves) + ": must be >= 1");
    SumTreeShape s;
    s.nodes[0] = leaves;
    s.levels = 1;
    while (s.nodes[s.levels - 1] > sum_tree_fanout) {
      if (s.levels == sum_tree_max_levels) {
        throw UsageError("foxrl::SumTreeShape: leaves = " + std::to_string(leaves) + ": too many levels");
      }
      s.nodes[s.levels] = (s.nodes[s.levels - 1] + sum_tree_fanout - 1) / sum_tree_fanout;
      ++s.levels;
    }
    std::int64_t at = 0;
    for (int l = 0; l < s.levels; ++l) {
      s.offset[l] = at;
      at += (s.nodes[l] + sum_tree_fanout - 1) / sum_tree_fanout * sum_tree_fanout;
    }
    s.size = at;
    return s;
  }

  KOKKOS_INLINE_FUNCTION int top() const { return levels - 1; }
  /// Index in the View of the leaf of slot s.
  KOKKOS_INLINE_FUNCTION std::int64_t leaf(std::int64_t s) const { return offset[0] + s; }
  /// Index in the View of node i of `level`.
  KOKKOS_INLINE_FUNCTION std::int64_t node(int level, std::int64_t i) const { return offset[level] + i; }
  /// Index (within its level) of the level-`level` ancestor of slot s.
  KOKKOS_INLINE_FUNCTION static std::int64_t ancestor(std::int64_t s, int level) {
    return s >> (sum_tree_fanout_log2 * level);
  }
};

}  // namespace foxrl
