#include "core/kernel_paths.hpp"

#include "core/error.hpp"
#include "core/strings.hpp"

#include <cstdlib>
#include <sstream>

namespace foxrl {
namespace {

constexpr const char* kVariable = "FOXRL_KERNEL_PATHS_OFF";

/// The names FOXRL_KERNEL_PATHS_OFF lists ("all" as every path's name).
std::vector<std::string> names_off() {
  std::vector<std::string> off;
  const char* value = std::getenv(kVariable);
  if (value == nullptr) return off;
  std::stringstream list(value);
  std::string item;
  while (std::getline(list, item, ',')) {
    item = trim(item);
    if (item.empty()) continue;
    if (item == "all") {
      for (const auto& p : kernel_paths()) off.emplace_back(p.name);
      continue;
    }
    bool known = false;
    for (const auto& p : kernel_paths()) known = known || item == p.name;
    if (!known) {
      std::string names;
      for (const auto& p : kernel_paths()) names += std::string(names.empty() ? "" : ", ") + p.name;
      throw UsageError(std::string(kVariable) + ": " + quote_excerpt(item) + " is not a kernel path (all, " + names +
                       ")");
    }
    off.push_back(item);
  }
  return off;
}

}  // namespace

const std::vector<KernelPathInfo>& kernel_paths() {
  static const std::vector<KernelPathInfo> paths = {
      {KernelPath::cuda_graphs, "cuda_graphs", "CUDA: the learner's update and the iteration replayed as CUDA graphs"},
      {KernelPath::iteration_graph, "iteration_graph", "CUDA: the trainer's whole iteration as one graph"},
      {KernelPath::fused_cuda, "fused_cuda",
       "CUDA: hand-written fused kernels (small-network update and forward, gradient norm + Adam)"},
      {KernelPath::gemm_epilogues, "gemm_epilogues", "CUDA: a trunk layer's bias + ReLU in the cuBLASLt epilogue"},
      {KernelPath::fused_env_step, "fused_env_step", "CUDA: the env step inside the fused forward's launch"},
      {KernelPath::env_step_in_head, "env_step_in_head", "the env step inside the head kernel's launch"},
      {KernelPath::stacked_rows, "stacked_rows", "CUDA: stacked inputs [s; s'] as one product"},
      {KernelPath::narrow_input, "narrow_input", "CUDA: a narrow first layer's weight gradient in the mask pass"},
      {KernelPath::paired_forward, "paired_forward", "CUDA: online and target layers as one batched product"},
      {KernelPath::paired_heads, "paired_heads", "CUDA: both networks' head kernels in one launch"},
      {KernelPath::flat_uniform_update, "flat_uniform_update", "uniform replay's priority update as one flat pass"},
      {KernelPath::clock_in_update, "clock_in_update", "the iteration clock's advance in the flat update's launch"},
      {KernelPath::insert_in_record, "insert_in_record", "a few envs: the replay insert inside the one-team record"},
      {KernelPath::normalize_in_sample, "normalize_in_sample", "market: the batch normalised in the replay sample"},
      {KernelPath::one_step_aliased, "one_step_aliased", "n_step 1: the n-step ring is the env step's own buffers"},
  };
  return paths;
}

bool kernel_path_on(KernelPath path) {
  const std::string name = kernel_paths().at(static_cast<std::size_t>(path)).name;
  for (const auto& off : names_off())
    if (off == name) return false;
  return true;
}

std::string kernel_paths_report() {
  std::string out;
  for (const auto& p : kernel_paths()) {
    std::string name = p.name;
    name.resize(20, ' ');
    out += "  " + name + (kernel_path_on(p.path) ? "on   " : "off  ") + p.what + "\n";
  }
  return out + "  (" + kVariable + "=name,... or all turns paths off; each has a twin that computes the same values)\n";
}

}  // namespace foxrl
