#pragma once
// The DQN learner's one-launch paths for a network whose online and target
// copies fit one block's shared memory: the whole update
// (kernels/cuda/fused_small_update.cuh) and the greedy forward
// (kernels/cuda/fused_small_forward.cuh), behind one interface, and the one
// place that chooses them by execution space, at compile time:
// SmallNetworkPaths<Kokkos::Cuda> runs the hand-written kernels; every other
// space has none, and the learner runs its launch sequence, the portable
// twin the tests hold the kernels against (tests/test_fused_small_update.cpp).
// The learner itself names no CUDA type and holds no #ifdef.

#include "core/error.hpp"
#include "kernels/agents/dqn/dqn_loss.hpp"
#include "kernels/core/no_per_env_step.hpp"
#include "kernels/nn/staged_network.hpp"
#include "views/agents/dqn/fused_update_stamps.hpp"
#include "views/nn/matrix.hpp"
#include "views/nn/network_layout.hpp"
#include "views/replay/batch.hpp"

#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_CUDA
#include "kernels/cuda/fused_small_forward.cuh"
#include "kernels/cuda/fused_small_update.cuh"
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

namespace foxrl::kernels {

/// The learner's buffers one update reads and writes (device memory).
template <class MemorySpace>
struct SmallUpdateBuffers {
  const float* online = nullptr;
  const float* target = nullptr;
  float* grads = nullptr;
  float* grad_partials = nullptr;  ///< [blocks, layout.total], zero-initialised
  LossKind loss = LossKind::huber;
  float* td_errors = nullptr;
  float* metrics = nullptr;
  float* sums = nullptr;  ///< update_sum_floats(blocks)
  std::int64_t* adam_step = nullptr;
  FusedUpdateStamps<MemorySpace> probe;  ///< usually empty (perf/bench_pipeline.cpp --fused-phases)
};

/// No one-launch path on this execution space.
template <class ExecSpace>
struct SmallNetworkPaths {
  static constexpr bool available = false;
  static constexpr int forward_max_rows = 0;
  /// Why the fused update does not run `layout` with batches of up to
  /// `max_batch` rows at `threads` per block (empty: it does).
  template <class Finish, class Step>
  static std::string update_unfit(const NetworkLayout&, int, int) {
    return std::string("no hand-written kernels on ") + ExecSpace::name();
  }
  /// The most blocks an update of up to `max_batch` rows takes.
  static int update_blocks(const NetworkLayout&, int, int) { return 0; }
  /// Floats of the block sums an update of `blocks` blocks needs.
  static std::size_t update_sum_floats(int) { return 0; }
  static bool forward_fits(const NetworkLayout&) { return false; }
  /// Whether a forward of `rows` rows is one block (a functor after it sees
  /// every row's greedy action).
  static bool forward_one_block(int) { return false; }
  template <class MemorySpace, class Finish, class Step>
  static void update(const ExecSpace&, const NetworkLayout&, int, int, const Batch<MemorySpace>&,
                     const SmallUpdateBuffers<MemorySpace>&, const Finish&, const Step&) {
    throw LogicError("foxrl::kernels::SmallNetworkPaths::update: no fused update on this execution space");
  }
  template <class MemorySpace, class After>
  static void forward(const ExecSpace&, const NetworkLayout&, int, const float*, const ConstMatrix<MemorySpace>&,
                      float*, int, std::int32_t*, const After&) {
    throw LogicError("foxrl::kernels::SmallNetworkPaths::forward: no fused forward on this execution space");
  }
};

#ifdef KOKKOS_ENABLE_CUDA
/// CUDA: the hand-written kernels.
template <>
struct SmallNetworkPaths<Kokkos::Cuda> {
  static constexpr bool available = true;
  static constexpr int forward_max_rows = cuda::small_forward_max_rows;
  template <class Finish, class Step>
  static std::string update_unfit(const NetworkLayout& layout, int max_batch, int threads) {
    return cuda::small_update_unfit<Finish, Step>(layout, max_batch, threads);
  }
  static int update_blocks(const NetworkLayout& layout, int max_batch, int threads) {
    // No batch up to max_batch takes more blocks than the largest one (or
    // small_update_max_blocks, below the shared-memory cap).
    return std::max(cuda::small_update_max_blocks,
                    cuda::plan_small_update(layout, max_batch, cuda::small_update_shared_limit(), threads).blocks);
  }
  static std::size_t update_sum_floats(int blocks) {
    return 5 * std::size_t(blocks) + cuda::fused_optimizer_extra_floats;
  }
  static bool forward_fits(const NetworkLayout& layout) { return cuda::small_forward_fits(layout); }
  static bool forward_one_block(int rows) { return cuda::small_forward_one_block(rows); }

  /// One update of `batch` (size >= 1, at most the planned max_batch) in one
  /// cooperative launch; `max_blocks` the planned update_blocks.
  template <class MemorySpace, class Finish, class Step>
  static void update(const Kokkos::Cuda& space, const NetworkLayout& layout, int threads, int max_blocks,
                     const Batch<MemorySpace>& batch, const SmallUpdateBuffers<MemorySpace>& b, const Finish& finish,
                     const Step& step) {
    cuda::SmallUpdateArgs a;
    a.plan = cuda::plan_small_update(layout, batch.size(), cuda::small_update_shared_limit(), threads);
    a.online = b.online;
    a.target = b.target;
    a.grads = b.grads;
    a.grad_partials = b.grad_partials;
    a.states = batch.states.data();
    a.states_ld = static_cast<int>(batch.states.stride(0));
    a.next_states = batch.next_states.data();
    a.next_states_ld = static_cast<int>(batch.next_states.stride(0));
    a.actions = batch.actions.data();
    a.rewards = batch.rewards.data();
    a.discounts = batch.discounts.data();
    a.is_weights = batch.is_weights.data();
    a.loss = b.loss;
    a.td_errors = b.td_errors;
    a.metrics = b.metrics;
    a.metric_partials = b.sums;
    a.norm_partials = b.sums + 3 * max_blocks;
    a.adam_step = b.adam_step;
    if (b.probe.extent(0) > 0 && a.plan.blocks == max_blocks) {
      a.stamps = b.probe.data();
      a.probe_updates = static_cast<int>(b.probe.extent(0));
    }
    cuda::fused_small_update(space, a, finish, step);
  }

  /// The greedy forward of `states` into `head` (row stride head_ld) and
  /// `greedy` (may be null), then after(row) on the thread of each row (a
  /// few rows: one block) unless `After` is NoPerEnvStep.
  template <class MemorySpace, class After>
  static void forward(const Kokkos::Cuda& space, const NetworkLayout& layout, int threads, const float* params,
                      const ConstMatrix<MemorySpace>& states, float* head, int head_ld, std::int32_t* greedy,
                      const After& after) {
    cuda::SmallForwardArgs a;
    a.plan = cuda::plan_small_forward(layout, static_cast<int>(states.extent(0)), threads);
    a.params = params;
    a.states = states.data();
    a.states_ld = static_cast<int>(states.stride(0));
    a.head = head;
    a.head_ld = head_ld;
    a.greedy = greedy;
    if constexpr (std::is_same_v<After, NoPerEnvStep>)
      cuda::fused_small_forward(space, a);
    else
      cuda::fused_small_forward(space, a, after);
  }
};
#endif

}  // namespace foxrl::kernels
