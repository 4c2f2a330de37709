#pragma once
// NetworkLayout: where each parameter tensor of an MLP lives inside one flat
// float View. The network is a trunk (Linear + ReLU per hidden layer)
// followed by one Linear "head" layer, of one of two kinds:
//   plain    N outputs used as they are (a value V with N = 1, policy
//            logits with N = A);
//   dueling  1 + A outputs [V, A_0..A_{A-1}] combined as Q = V + A - mean A.
//
// Every parameter buffer of a network (parameters, target copy, gradients,
// optimizer moments) shares this layout, so element-wise kernels (Adam,
// Polyak, clipping) run over the flat View in one launch, while the dense
// kernels see per-layer matrices.

#include "core/error.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace foxrl {

/// One dense layer: weight [out, in] (row-major, like PyTorch's
/// nn.Linear.weight) followed by bias [out], at element offsets in the flat
/// parameter View.
struct DenseLayerShape {
  int in = 0;
  int out = 0;
  std::size_t weight_offset = 0;
  std::size_t bias_offset = 0;

  KOKKOS_INLINE_FUNCTION std::size_t weight_size() const {
    return static_cast<std::size_t>(in) * static_cast<std::size_t>(out);
  }
};

/// What the head layer's outputs mean (see the file comment).
enum class HeadKind {
  plain,    ///< N outputs, used as they are
  dueling,  ///< 1 + A outputs [V, A...], Q = V + A - mean A
};

/// Shapes and offsets of every layer of an MLP; host-side value type that is
/// also cheap to copy into kernels (fixed capacity, no heap).
struct NetworkLayout {
  /// Trunk layers plus the head.
  static constexpr int max_layers = 8;
  /// Every tensor starts on a multiple of this many floats (128 bytes), so
  /// rows and tensors are aligned for vector loads; the gaps stay zero.
  static constexpr std::size_t alignment = 32;

  int obs_dim = 0;
  /// Outputs of the network after the head's combination: the actions of a
  /// dueling head, the N outputs of a plain one.
  int num_actions = 0;
  HeadKind head_kind = HeadKind::dueling;
  int num_layers = 0;  ///< trunk layers + 1 (the head)
  DenseLayerShape layers[max_layers] = {};
  std::size_t total = 0;  ///< elements of the flat View, padding included

  NetworkLayout() = default;

  /// Layout of obs_dim -> hidden[0] -> ... -> hidden[n-1] -> head: a
  /// dueling head has 1 + outputs outputs, a plain one `outputs`.
  NetworkLayout(int obs_dim_, const std::vector<int>& hidden, int outputs, HeadKind kind = HeadKind::dueling)
      : obs_dim(obs_dim_), num_actions(outputs), head_kind(kind) {
    if (obs_dim_ <= 0) throw UsageError("foxrl::NetworkLayout: obs_dim must be > 0, got " + std::to_string(obs_dim_));
    if (outputs <= 0)
      throw UsageError(std::string("foxrl::NetworkLayout: ") + (kind == HeadKind::dueling ? "num_actions" : "outputs") +
                       " must be > 0, got " + std::to_string(outputs));
    if (static_cast<int>(hidden.size()) + 1 > max_layers)
      throw UsageError("foxrl::NetworkLayout: at most " + std::to_string(max_layers - 1) + " hidden layers, got " +
                       std::to_string(hidden.size()));
    int in = obs_dim_;
    std::size_t offset = 0;
    auto add = [&](int out) {
      auto& l = layers[num_layers++];
      l.in = in;
      l.out = out;
      l.weight_offset = offset;
      offset = align(offset + l.weight_size());
      l.bias_offset = offset;
      offset = align(offset + static_cast<std::size_t>(out));
      in = out;
    };
    for (std::size_t i = 0; i < hidden.size(); ++i) {
      if (hidden[i] <= 0)
        throw UsageError("foxrl::NetworkLayout: hidden size " + std::to_string(i) + " must be > 0, got " +
                         std::to_string(hidden[i]));
      add(hidden[i]);
    }
    add(head_outputs());
    total = offset;
  }

  /// A plain-head MLP obs_dim -> hidden... -> outputs.
  static NetworkLayout plain(int obs_dim_, const std::vector<int>& hidden, int outputs) {
    return NetworkLayout(obs_dim_, hidden, outputs, HeadKind::plain);
  }
  /// A dueling-head MLP with `actions` Q-values.
  static NetworkLayout dueling(int obs_dim_, const std::vector<int>& hidden, int actions) {
    return NetworkLayout(obs_dim_, hidden, actions, HeadKind::dueling);
  }

  int num_hidden() const { return num_layers - 1; }
  /// Width of the head layer: 1 + num_actions (dueling) or num_actions (plain).
  int head_outputs() const { return head_kind == HeadKind::dueling ? 1 + num_actions : num_actions; }
  const DenseLayerShape& head() const { return layers[num_layers - 1]; }
  /// Widest layer output (for activation scratch).
  int max_width() const {
    int w = 0;
    for (int l = 0; l < num_layers; ++l) w = layers[l].out > w ? layers[l].out : w;
    return w;
  }
  /// Parameter count without padding (what PyTorch would report).
  std::size_t parameter_count() const {
    std::size_t n = 0;
    for (int l = 0; l < num_layers; ++l) n += layers[l].weight_size() + static_cast<std::size_t>(layers[l].out);
    return n;
  }
  /// PyTorch state_dict name of layer l's module: the trunk is an
  /// nn.Sequential of (Linear, ReLU) pairs, so Linear i sits at index 2 i.
  std::string module_name(int l) const {
    return l == num_layers - 1 ? std::string("head") : "trunk." + std::to_string(2 * l);
  }
  /// Short description for logs and benchmarks, e.g. "65-512-512-dueling(3)"
  /// or "5-120-84-linear(1)".
  std::string describe() const {
    std::string s = std::to_string(obs_dim);
    for (int l = 0; l + 1 < num_layers; ++l) {
      s += '-';
      s += std::to_string(layers[l].out);
    }
    s += head_kind == HeadKind::dueling ? "-dueling(" : "-linear(";
    s += std::to_string(num_actions);
    s += ')';
    return s;
  }

  friend bool operator==(const NetworkLayout& a, const NetworkLayout& b) {
    if (a.obs_dim != b.obs_dim || a.num_actions != b.num_actions || a.head_kind != b.head_kind ||
        a.num_layers != b.num_layers)
      return false;
    for (int l = 0; l < a.num_layers; ++l)
      if (a.layers[l].in != b.layers[l].in || a.layers[l].out != b.layers[l].out) return false;
    return true;
  }

 private:
  static std::size_t align(std::size_t n) { return (n + alignment - 1) / alignment * alignment; }
};

}  // namespace foxrl
