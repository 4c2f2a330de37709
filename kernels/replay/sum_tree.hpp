#pragma once
// Device K-ary sum tree (K = 32, views/replay/sum_tree_shape.hpp) for proportional
// prioritized replay: leaves hold p_s^alpha (0 for never-written and evicted
// slots), every internal node is the float sum of its K children added left
// to right, and the total is the same left-to-right sum of the top level.
//
// Updates recompute nodes from their children, level by level, after every
// child of that level is final: the tree is always exactly what a full
// bottom-up rebuild gives (deterministic, no atomics on sums, no drift). The
// descent adds the same children in the same order, so draws are identical on
// every backend. docs/replay.md explains K and the schedules.

#include "core/compat.hpp"
#include "views/replay/sum_tree_shape.hpp"

#include "kernels/core/counter_rng.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl::kernels {

/// Leaf mass of a priority: p^alpha, and 0 (never sampled) for p <= 0 even
/// when alpha == 0.
KOKKOS_INLINE_FUNCTION float priority_mass(float priority, float alpha) {
  return priority > 0.0f ? foxrl::math::pow(priority, alpha) : 0.0f;
}

/// Target mass of draw k of a stratified batch of `batch` draws:
/// (k + u) * (total / batch), u uniform in [0, 1).
KOKKOS_INLINE_FUNCTION float stratified_target(int k, float u, int batch, float total) {
  return (static_cast<float>(k) + u) * (total / static_cast<float>(batch));
}

/// stratified_target as the target_of argument of sum_tree_draw (a named
/// functor, so host code can call the same descent without a device lambda).
struct StratifiedTarget {
  int k = 0;
  float u = 0.0f;
  int batch = 1;
  KOKKOS_INLINE_FUNCTION float operator()(float total) const { return stratified_target(k, u, batch, total); }
};

/// One draw: the slot and its leaf mass.
struct SumTreeDraw {
  std::int64_t slot = 0;
  float mass = 0.0f;
};

/// Descends from the top level to the leaf whose cumulative-mass interval
/// holds target_of(total) (total = left-to-right sum of the top level, read
/// by the same loads as the first step). At each level the K children are
/// added left to right, exactly as the node above was; the first child whose
/// running sum exceeds the target is entered, or, when rounding left the
/// target at or past the sum, the last child with mass. A zero-mass child is
/// therefore never entered while a sibling has mass. The slot is clamped to
/// [0, filled) (only reachable when no leaf has mass).
template <class TreeView, class TargetOf>
KOKKOS_INLINE_FUNCTION SumTreeDraw sum_tree_draw(const TreeView& tree, const SumTreeShape& shape, std::int64_t filled,
                                                 const TargetOf& target_of) {
  constexpr int K = sum_tree_fanout;
  std::int64_t group = 0;
  float target = 0.0f;
  float mass = 0.0f;
  for (int level = shape.top(); level >= 0; --level) {
    const std::int64_t base = shape.offset[level] + group * K;
    // All K loads are independent (one line): one memory latency per level.
    float child[K];
    for (int j = 0; j < K; ++j) child[j] = tree(base + j);
    if (level == shape.top()) {
      float total = 0.0f;
      for (int j = 0; j < K; ++j) total += child[j];
      target = target_of(total);
    }
    float sum = 0.0f;
    float before = 0.0f, last_before = 0.0f;
    float chosen_mass = 0.0f, last_mass = 0.0f;
    int chosen = -1, last = -1;
    for (int j = 0; j < K; ++j) {
      const float next = sum + child[j];
      if (child[j] > 0.0f) {
        last = j;
        last_before = sum;
        last_mass = child[j];
        if (chosen < 0 && target < next) {
          chosen = j;
          before = sum;
          chosen_mass = child[j];
        }
      }
      sum = next;
    }
    if (chosen < 0) {
      chosen = last < 0 ? 0 : last;
      before = last < 0 ? 0.0f : last_before;
      chosen_mass = last_mass;
    }
    target -= before;
    mass = chosen_mass;
    group = group * K + chosen;
  }
  SumTreeDraw draw;
  draw.slot = group;
  draw.mass = mass;
  if (draw.slot >= filled) {
    draw.slot = filled - 1;
    draw.mass = tree(shape.leaf(draw.slot));
  }
  if (draw.slot < 0) draw.slot = 0;
  return draw;
}

/// The total mass: the top level's nodes added left to right, the sum
/// sum_tree_draw takes its target from.
template <class TreeView>
KOKKOS_INLINE_FUNCTION float sum_tree_total(const TreeView& tree, const SumTreeShape& shape) {
  constexpr int K = sum_tree_fanout;
  const std::int64_t base = shape.offset[shape.top()];
  float child[K];
  for (int j = 0; j < K; ++j) child[j] = tree(base + j);
  float total = 0.0f;
  for (int j = 0; j < K; ++j) total += child[j];
  return total;
}

/// Slots up to which a count of unit masses is an exact float (2^24).
inline constexpr std::int64_t sum_tree_exact_count = std::int64_t(1) << 24;

/// Whether a tree whose leaves hold only 0 or 1 (uniform replay, alpha = 0)
/// has mass 1 on each of its `filled` slots: the leaves past `filled` are
/// never written (0), so the total is the number of unit leaves, exactly.
KOKKOS_INLINE_FUNCTION bool sum_tree_all_units(float total, std::int64_t filled) {
  return filled <= sum_tree_exact_count && total == static_cast<float>(filled);
}

/// sum_tree_draw of `target` on a tree whose first `filled` leaves hold 1
/// and the rest 0 (sum_tree_all_units), without the descent. Every node is
/// then an integer below 2^24 and target - (integer <= target) is exact, so
/// the descent enters leaf floor(target); a target at or past the total (a
/// rounding of stratified_target) ends, like the descent, on the last leaf
/// with mass.
KOKKOS_INLINE_FUNCTION SumTreeDraw sum_tree_unit_draw(float target, std::int64_t filled) {
  SumTreeDraw draw;
  const float last = static_cast<float>(filled - 1);
  draw.slot = target < last ? static_cast<std::int64_t>(target) : filled - 1;  // target >= 0: truncation floors
  if (draw.slot < 0) draw.slot = 0;
  draw.mass = filled > 0 ? 1.0f : 0.0f;
  return draw;
}

/// Floats of team scratch for staging sum-tree children.
template <class ExecSpace>
using sum_tree_scratch = Kokkos::View<float*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;

/// Recomputes, inside one team, the nodes node_of(i) (i < count; < 0: none)
/// of `level` (>= 1) from their K children, children added left to right.
/// Children are staged through `buf` (team scratch, a multiple of K floats)
/// in chunks of buf.extent(0) / K nodes: one coalesced load of each chunk's
/// child lines by the whole team, then one thread per node adds its K
/// children. Level `level - 1` must be final and visible to the team. A node
/// listed several times is written with the same value each time. Children
/// are loaded through read(index in the View): a plain load, or
/// load_volatile where other teams of the launch wrote them.
template <class Team, class TreeView, class Buffer, class NodeOf, class Read>
KOKKOS_INLINE_FUNCTION void sum_tree_refresh_level(const Team& team, const TreeView& tree, const SumTreeShape& shape,
                                                   int level, int count, const NodeOf& node_of, const Buffer& buf,
                                                   const Read& read) {
  constexpr int K = sum_tree_fanout;
  const int groups = static_cast<int>(buf.extent(0)) / K;
  const std::int64_t children = shape.offset[level - 1];
  const std::int64_t parents = shape.offset[level];
  for (int first = 0; first < count; first += groups) {
    const int n = count - first < groups ? count - first : groups;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n * K), [&](const int i) {
      const std::int64_t node = node_of(first + i / K);
      if (node >= 0) buf(i) = read(children + node * K + i % K);
    });
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](const int g) {
      const std::int64_t node = node_of(first + g);
      if (node < 0) return;
      float sum = 0.0f;
      for (int j = 0; j < K; ++j) sum += buf(g * K + j);
      tree(parents + node) = sum;
    });
    team.team_barrier();
  }
}

/// sum_tree_refresh_level with plain loads of the children: level
/// `level - 1` was written by this team (or before this launch).
template <class Team, class TreeView, class Buffer, class NodeOf>
KOKKOS_INLINE_FUNCTION void sum_tree_refresh_level(const Team& team, const TreeView& tree, const SumTreeShape& shape,
                                                   int level, int count, const NodeOf& node_of, const Buffer& buf) {
  sum_tree_refresh_level(team, tree, shape, level, count, node_of, buf, [&](const std::int64_t i) { return tree(i); });
}

}  // namespace foxrl::kernels
