#pragma once
// On/off switches read from the environment (FOXRL_CUDA_GRAPHS,
// FOXRL_CUDA_ITERATION_GRAPH, FOXRL_CUDA_FUSED, FOXRL_CUDA_GEMM_EPILOGUES,
// FOXRL_CUDA_FUSED_ENV_STEP, FOXRL_ENV_STEP_IN_HEAD, FOXRL_CUDA_STACKED_ROWS,
// FOXRL_CUDA_NARROW_INPUT, FOXRL_FLAT_UNIFORM_UPDATE, FOXRL_INSERT_IN_RECORD,
// FOXRL_NORMALIZE_IN_SAMPLE, FOXRL_PAIRED_FORWARD, FOXRL_PAIRED_HEADS,
// FOXRL_BOUNDARY_PER_SLOT, FOXRL_ONE_STEP_ALIASED):
// on unless set to "0",
// so a user turns a fast path off for a comparison or to rule it out while
// debugging; paths that measured slower, kept for comparison on other GPUs,
// or not yet measured, off unless set to "1" (FOXRL_CUDA_NARROW_FORWARD,
// FOXRL_RECORD_ACROSS_TEAMS, FOXRL_LOSS_IN_TARGET_HEAD); one the trainer decides unless set to "0"
// or "1" (FOXRL_CLOCK_IN_PRIORITY_UPDATE); and one tuning knob, FOXRL_CUDA_FUSED_THREADS.

#include "core/error.hpp"

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

namespace foxrl {

/// Whether the environment variable `name` leaves its switch on (unset or
/// any value but "0").
inline bool switch_on_in_environment(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr || std::strcmp(value, "0") != 0;
}

/// Whether the environment variable `name` is set to exactly `expected`
/// (false when unset): the switches that are off unless asked for.
inline bool environment_value_is(const char* name, const char* expected) {
  const char* value = std::getenv(name);
  return value != nullptr && std::strcmp(value, expected) == 0;
}

/// FOXRL_CUDA_FUSED: the hand-written fused CUDA kernels (kernels/cuda/)
/// instead of their portable launch sequences.
inline bool cuda_fused_allowed_by_environment() { return switch_on_in_environment("FOXRL_CUDA_FUSED"); }

/// FOXRL_BOUNDARY_PER_SLOT: the replay keeps the episode-boundary next
/// observations of narrow observations (at most 16 components) in a row per
/// slot instead of a pool of a quarter of the slots (docs/replay.md); "0"
/// gives them the pool. Every backend. A trainer state keeps the layout it
/// was written with: resume it under the same setting.
inline bool boundary_per_slot_allowed_by_environment() { return switch_on_in_environment("FOXRL_BOUNDARY_PER_SLOT"); }

/// FOXRL_ONE_STEP_ALIASED: with one-step returns (n_step 1) the
/// collector's n-step ring and output are the env step's own buffers and
/// the record writes only each env's flags, reward and discount, in the
/// episode statistics' launch (NStepAccumulator::alias_one_step); "0"
/// copies the step into the ring and output in a launch of its own. The
/// same values and trainer-state bytes either way. Every backend.
inline bool one_step_aliasing_allowed_by_environment() { return switch_on_in_environment("FOXRL_ONE_STEP_ALIASED"); }

/// FOXRL_CUDA_ITERATION_GRAPH: the trainer's whole iteration as one graph
/// (FOXRL_CUDA_GRAPHS=0 turns it off too; this one alone leaves the
/// learner's graph of the update on).
inline bool iteration_graph_allowed_by_environment() { return switch_on_in_environment("FOXRL_CUDA_ITERATION_GRAPH"); }

/// FOXRL_CUDA_GEMM_EPILOGUES: the dense layers' bias + ReLU in the forward
/// gemm's epilogue (cuBLASLt, nn/epilogue_gemm.hpp) instead of a separate
/// kernel; "0" turns it off. "masks" also keeps the ReLU bitmasks, so the
/// backward's dX product masks and forms the bias gradient in its
/// epilogue (measured slower on the H200: perf/NOTES.md).
inline bool gemm_epilogues_allowed_by_environment() { return switch_on_in_environment("FOXRL_CUDA_GEMM_EPILOGUES"); }

/// FOXRL_CUDA_GEMM_EPILOGUES=masks (see above).
inline bool gemm_epilogue_masks_requested_by_environment() {
  return environment_value_is("FOXRL_CUDA_GEMM_EPILOGUES", "masks");
}

/// FOXRL_CUDA_FUSED_ENV_STEP: where the collector's greedy actions come
/// from the fused forward in one block (a few envs), the env's choosing step
/// runs inside that launch instead of one of its own; "0" turns it off.
inline bool fused_env_step_allowed_by_environment() { return switch_on_in_environment("FOXRL_CUDA_FUSED_ENV_STEP"); }

/// FOXRL_ENV_STEP_IN_HEAD: where the collector's greedy actions come from
/// the head kernel (the blas backend's dueling head; more envs than the
/// fused forward takes), the env's choosing step runs inside that launch,
/// on the thread that stored each env's action, instead of one of its own;
/// "0" turns it off. Every backend.
inline bool env_step_in_head_allowed_by_environment() { return switch_on_in_environment("FOXRL_ENV_STEP_IN_HEAD"); }

/// FOXRL_LOSS_IN_TARGET_HEAD=1: the DQN loss (its rows and the batch sums)
/// inside the target network's head kernel instead of a launch of its own
/// (the blas backend's head kernel; the same bits). Every backend. Off by
/// default: one launch fewer, but 2.6-3.7 us slower per iteration on an
/// H100 (the head kernel's last team forming the sums takes longer than
/// the loss kernel; perf/NOTES.md).
inline bool loss_in_target_head_requested_by_environment() {
  return environment_value_is("FOXRL_LOSS_IN_TARGET_HEAD", "1");
}

/// FOXRL_CLOCK_IN_PRIORITY_UPDATE: whether a training iteration with
/// updates advances its device clock (and adds the last update's metrics to
/// the epoch sums) in the last team of its last priority update instead of
/// a launch of its own. "1": always, "0": never; unset (or any other
/// value): empty, the trainer decides: where that update is uniform
/// replay's flat pass, where the ride-along measured 0.4-0.6 us faster per
/// iteration on an H100, and not after the tree-owner update of
/// prioritized replay, where it measured about 1 us slower
/// (perf/NOTES.md). Every backend.
inline std::optional<bool> clock_in_priority_update_from_environment() {
  if (environment_value_is("FOXRL_CLOCK_IN_PRIORITY_UPDATE", "1")) return true;
  if (environment_value_is("FOXRL_CLOCK_IN_PRIORITY_UPDATE", "0")) return false;
  return std::nullopt;
}

/// FOXRL_PAIRED_FORWARD: a learner's update runs the online network over
/// [s; s'] and the target network over s' with one library call per layer
/// (a batched product of both networks' weights) instead of one per
/// network, where DenseOps::pairs_forwards() allows it (CUDA, fp32 with the
/// fused epilogues); "0" turns it off.
inline bool paired_forward_allowed_by_environment() { return switch_on_in_environment("FOXRL_PAIRED_FORWARD"); }

/// FOXRL_PAIRED_HEADS: where the paired forward runs, both networks' head
/// kernels (each with its last hidden layer's bias + ReLU) are one launch
/// (kernels/nn/small_dense_pair.hpp) instead of two, with the same bits;
/// "0" turns it off.
inline bool paired_heads_allowed_by_environment() { return switch_on_in_environment("FOXRL_PAIRED_HEADS"); }

/// FOXRL_INSERT_IN_RECORD: with a few envs (the collector's record of a
/// step in one team), the replay's insert of the step's transitions runs in
/// that team after the record instead of a launch of its own; "0" turns it
/// off. Every backend.
inline bool insert_in_record_allowed_by_environment() { return switch_on_in_environment("FOXRL_INSERT_IN_RECORD"); }

/// FOXRL_NORMALIZE_IN_SAMPLE: with a signal adapter (the market), the
/// replay sample writes the batch's observations normalised instead of a
/// normalisation pass of its own over them; "0" turns it off. Every backend.
inline bool normalize_in_sample_allowed_by_environment() {
  return switch_on_in_environment("FOXRL_NORMALIZE_IN_SAMPLE");
}

/// FOXRL_FLAT_UNIFORM_UPDATE: under uniform replay (alpha = 0) a priority
/// update is one flat pass over its entries that leaves the sum tree alone
/// unless a leaf must change (ReplayBuffer::set_flat_uniform_update); "0"
/// gives the tree-owner update. Every backend.
inline bool flat_uniform_update_allowed_by_environment() {
  return switch_on_in_environment("FOXRL_FLAT_UNIFORM_UPDATE");
}

/// FOXRL_RECORD_ACROSS_TEAMS=1: a collector step of more envs than one team
/// records, with at most 8 observation components (CartPole), records the
/// n-step windows and the episode statistics in one launch of a team per
/// 128 envs instead of two launches. Every backend. Off by default: one
/// launch fewer, but 2.6-3.4 us slower per iteration on an H100 (the one
/// launch takes 14.4 us where the two took 12.0; perf/NOTES.md).
inline bool record_across_teams_requested_by_environment() {
  return environment_value_is("FOXRL_RECORD_ACROSS_TEAMS", "1");
}

/// FOXRL_CUDA_STACKED_ROWS: a blas-backend forward on the GPU over stacked
/// inputs whose rows follow each other in memory (the replay's s and s'
/// rows, for the online network) as one product instead of one per block;
/// "0" turns it off. (Host backends keep one product per block: their BLAS
/// may sum a row in another order at another row count, and a host run
/// gains nothing from one call less.)
inline bool stacked_rows_allowed_by_environment() { return switch_on_in_environment("FOXRL_CUDA_STACKED_ROWS"); }

/// FOXRL_CUDA_NARROW_INPUT: on the GPU, the weight gradient of a
/// blas-backend first layer with at most 8 inputs (CartPole's) in the
/// backward's mask pass instead of a gemm; "0" turns it off. (Host backends
/// keep their BLAS, whose bits their results keep.)
inline bool narrow_input_allowed_by_environment() { return switch_on_in_environment("FOXRL_CUDA_NARROW_INPUT"); }

/// FOXRL_CUDA_NARROW_FORWARD=1: on the GPU, the forward of such a layer by
/// a kernel of one thread per output instead of the gemm library. Off by
/// default: slower than cuBLAS on an H100 (perf/NOTES.md); kept to compare
/// on other GPUs.
inline bool narrow_forward_requested_by_environment() { return environment_value_is("FOXRL_CUDA_NARROW_FORWARD", "1"); }

/// Threads per block of the fused small-network update and forward when
/// FOXRL_CUDA_FUSED_THREADS is unset: the fastest of 256, 512 and 1024 for
/// cartpole-learn (101.5, 92.5 and 90.8 us per iteration on an H100:
/// perf/results/h100-23ff710.md).
inline constexpr int fused_small_default_threads = 1024;

/// FOXRL_CUDA_FUSED_THREADS: threads per block of the fused small-network
/// update and forward (kernels/cuda/): fused_small_default_threads when
/// unset, or 256, 512 or 1024 (a tuning knob, perf/NOTES.md). Any other
/// value is refused, naming it.
inline int fused_small_threads_from_environment() {
  const char* value = std::getenv("FOXRL_CUDA_FUSED_THREADS");
  if (value == nullptr) return fused_small_default_threads;
  for (const int threads : {256, 512, 1024})
    if (std::strcmp(value, std::to_string(threads).c_str()) == 0) return threads;
  throw UsageError(std::string("FOXRL_CUDA_FUSED_THREADS must be 256, 512 or 1024 (threads per block of the fused "
                               "small-network kernels), got '") +
                   value + "'");
}

}  // namespace foxrl
