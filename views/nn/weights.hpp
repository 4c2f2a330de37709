#pragma once
// Weights: every parameter buffer of a Q-network learner (online, target,
// gradients, Adam moments), each one contiguous device View laid out by
// NetworkLayout, plus per-layer typed views into them.

#include "views/nn/network_layout.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <utility>

namespace foxrl {

/// One flat parameter buffer (all layers, padding zero).
template <class MemorySpace>
using FlatParams = Kokkos::View<float*, MemorySpace>;

/// A layer's weight matrix [out, in] inside a flat buffer (row-major, no
/// ownership: valid while the flat View lives).
template <class MemorySpace>
using LayerMatrix =
    Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

/// A layer's bias [out] inside a flat buffer.
template <class MemorySpace>
using LayerVector =
    Kokkos::View<float*, Kokkos::LayoutRight, MemorySpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

/// Weight matrix of layer `l` of `flat` (shaped [out, in]).
template <class MemorySpace>
LayerMatrix<MemorySpace> layer_weight(const FlatParams<MemorySpace>& flat, const NetworkLayout& layout, int l) {
  const auto& s = layout.layers[l];
  auto range = Kokkos::subview(flat, std::make_pair(s.weight_offset, s.weight_offset + s.weight_size()));
  return LayerMatrix<MemorySpace>(range.data(), s.out, s.in);
}

/// Bias of layer `l` of `flat` (shaped [out]).
template <class MemorySpace>
LayerVector<MemorySpace> layer_bias(const FlatParams<MemorySpace>& flat, const NetworkLayout& layout, int l) {
  const auto& s = layout.layers[l];
  auto range = Kokkos::subview(flat, std::make_pair(s.bias_offset, s.bias_offset + static_cast<std::size_t>(s.out)));
  return LayerVector<MemorySpace>(range.data(), s.out);
}

/// The parameter buffers of one learner. Buffers are zero-filled at
/// allocation so the alignment gaps stay zero forever (no kernel writes them
/// with anything but zero-derived values).
template <class MemorySpace>
struct Weights {
  static_assert(Kokkos::is_memory_space<MemorySpace>::value, "Weights needs a Kokkos memory space");

  NetworkLayout layout;
  FlatParams<MemorySpace> online;
  FlatParams<MemorySpace> target;
  FlatParams<MemorySpace> grads;
  FlatParams<MemorySpace> adam_m;  ///< Adam first moment
  FlatParams<MemorySpace> adam_v;  ///< Adam second moment
  /// Number of Adam steps taken (bias correction uses it); device-resident
  /// so the optimizer never needs the host.
  Kokkos::View<std::int64_t, MemorySpace> adam_step;

  Weights() = default;

  template <class ExecSpace>
  Weights(const ExecSpace& space, const NetworkLayout& layout_) : layout(layout_) {
    static_assert(Kokkos::SpaceAccessibility<ExecSpace, MemorySpace>::accessible,
                  "Weights: memory space not accessible from the execution space");
    const auto n = layout.total;
    online = FlatParams<MemorySpace>(Kokkos::view_alloc(space, "foxrl::Weights::online"), n);
    target = FlatParams<MemorySpace>(Kokkos::view_alloc(space, "foxrl::Weights::target"), n);
    grads = FlatParams<MemorySpace>(Kokkos::view_alloc(space, "foxrl::Weights::grads"), n);
    adam_m = FlatParams<MemorySpace>(Kokkos::view_alloc(space, "foxrl::Weights::adam_m"), n);
    adam_v = FlatParams<MemorySpace>(Kokkos::view_alloc(space, "foxrl::Weights::adam_v"), n);
    adam_step = Kokkos::View<std::int64_t, MemorySpace>(Kokkos::view_alloc(space, "foxrl::Weights::adam_step"));
  }

  LayerMatrix<MemorySpace> weight(const FlatParams<MemorySpace>& flat, int l) const {
    return layer_weight(flat, layout, l);
  }
  LayerVector<MemorySpace> bias(const FlatParams<MemorySpace>& flat, int l) const {
    return layer_bias(flat, layout, l);
  }
};

}  // namespace foxrl
