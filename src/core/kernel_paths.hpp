#pragma once
// The library's fast kernel paths and the one way to turn them off. Each
// path is a fusion or a hand-written kernel with a twin that computes the
// same values (bit for bit, or to rounding where a reduction's order
// differs); every path is on where its hardware allows. FOXRL_KERNEL_PATHS_OFF,
// a comma-separated list of the names below (or "all"), turns paths off
// when a component is built: to hold a result against the path's twin, or to
// rule a path out while debugging. No path changes a file format or what a
// run learns beyond rounding. `foxrl info` prints them and their state.

#include <string>
#include <vector>

namespace foxrl {

enum class KernelPath {
  cuda_graphs,          ///< CUDA: the learner's update and the iteration replayed as CUDA graphs
  iteration_graph,      ///< CUDA: the trainer's whole iteration as one graph (cuda_graphs off turns it off too)
  fused_cuda,           ///< CUDA: the hand-written fused kernels (kernels/cuda/) instead of their launch sequences
  gemm_epilogues,       ///< CUDA: a trunk layer's bias + ReLU in the cuBLASLt gemm's epilogue
  fused_env_step,       ///< CUDA: the env step inside the fused forward's launch (a few envs)
  env_step_in_head,     ///< the env step inside the head kernel that forms the greedy actions
  stacked_rows,         ///< CUDA: stacked inputs whose rows follow each other as one product
  narrow_input,         ///< CUDA: a first layer of at most 8 inputs' weight gradient in the mask pass
  paired_forward,       ///< CUDA: online and target networks' layers as one batched product per layer
  paired_heads,         ///< CUDA: both networks' head kernels of a paired forward in one launch
  flat_uniform_update,  ///< uniform replay's priority update as one flat pass
  clock_in_update,      ///< the iteration clock's advance in the flat priority update's launch
  insert_in_record,     ///< a few envs: the replay insert inside the collector's one-team record
  normalize_in_sample,  ///< market: the batch normalised as the replay sample gathers it
  one_step_aliased,     ///< n_step 1: the n-step ring is the env step's own buffers
};

struct KernelPathInfo {
  KernelPath path;
  const char* name;
  const char* what;
};

/// Every path, in the order above.
const std::vector<KernelPathInfo>& kernel_paths();

/// Whether `path` is on: true unless FOXRL_KERNEL_PATHS_OFF names it (or is
/// "all"). Read anew on every call: components ask when they are built.
/// UsageError naming the variable and the value for a name that is no path.
bool kernel_path_on(KernelPath path);

/// One line per path: name, on or off, what it does.
std::string kernel_paths_report();

}  // namespace foxrl
