#pragma once
// ParameterSet: the parameters of one network as one contiguous device View
// laid out by NetworkLayout, with per-layer matrix and vector views into
// it. Gradients, target copies and optimizer moments are further flat Views
// of the same layout (element-wise kernels run over them in one launch);
// who owns which is the learner's business, not this type's.

#include "core/error.hpp"
#include "views/nn/matrix.hpp"
#include "views/nn/network_layout.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>
#include <utility>

namespace foxrl {

/// One flat parameter buffer (all layers, padding zero).
template <class MemorySpace>
using FlatParams = Kokkos::View<float*, MemorySpace>;

/// Weight matrix of layer `l` of `flat` (shaped [out, in], row-major like
/// PyTorch's nn.Linear.weight; valid while `flat` lives).
template <class MemorySpace>
MutableMatrix<MemorySpace> layer_weight(const FlatParams<MemorySpace>& flat, const NetworkLayout& layout, int l) {
  const auto& s = layout.layers[l];
  auto range = Kokkos::subview(flat, std::make_pair(s.weight_offset, s.weight_offset + s.weight_size()));
  return MutableMatrix<MemorySpace>(range.data(), s.out, s.in);
}

/// Bias of layer `l` of `flat` (shaped [out]).
template <class MemorySpace>
MutableVector<MemorySpace> layer_bias(const FlatParams<MemorySpace>& flat, const NetworkLayout& layout, int l) {
  const auto& s = layout.layers[l];
  auto range = Kokkos::subview(flat, std::make_pair(s.bias_offset, s.bias_offset + static_cast<std::size_t>(s.out)));
  return MutableVector<MemorySpace>(range.data(), s.out);
}

/// A flat buffer of `layout.total` floats, zero-filled so the alignment gaps
/// stay zero forever (no kernel writes them with anything but zero-derived
/// values).
template <class ExecSpace>
FlatParams<typename ExecSpace::memory_space> alloc_flat(const ExecSpace& space, const NetworkLayout& layout,
                                                        const std::string& label) {
  return FlatParams<typename ExecSpace::memory_space>(Kokkos::view_alloc(space, label), layout.total);
}

/// `floats` rounded up to a whole number of 256-byte blocks: where a buffer
/// placed after them inside one allocation starts with the alignment an
/// allocation of its own would have had.
inline std::size_t allocation_aligned_floats(std::size_t floats) {
  constexpr std::size_t block = 256 / sizeof(float);
  return (floats + block - 1) / block * block;
}

/// Floats from the start of a paired allocation (alloc_flat_pair) to its
/// second buffer: `layout.total`, allocation-aligned.
inline std::size_t paired_flat_offset(const NetworkLayout& layout) { return allocation_aligned_floats(layout.total); }

/// Two flat buffers of `layout` in one zero-filled allocation, the first at
/// the lower addresses, the second paired_flat_offset(layout) floats
/// further. A learner's online and target networks live so: the update's
/// paired products (Mlp::forward_with_target) take both networks' layers
/// as one strided batch, which needs the same layer of the two a fixed
/// distance apart and in a fixed order, whatever the allocator returned
/// for buffers of their own. Each half is a tracked subview (the
/// allocation lives while either does).
template <class ExecSpace>
std::pair<FlatParams<typename ExecSpace::memory_space>, FlatParams<typename ExecSpace::memory_space>> alloc_flat_pair(
    const ExecSpace& space, const NetworkLayout& layout, const std::string& label) {
  const std::size_t offset = paired_flat_offset(layout);
  const FlatParams<typename ExecSpace::memory_space> both(Kokkos::view_alloc(space, label), offset + layout.total);
  return {Kokkos::subview(both, std::make_pair(std::size_t(0), layout.total)),
          Kokkos::subview(both, std::make_pair(offset, offset + layout.total))};
}

/// The parameters of one network: layout plus one flat View (a shared
/// handle: copies refer to the same memory).
template <class MemorySpace>
struct ParameterSet {
  static_assert(Kokkos::is_memory_space<MemorySpace>::value, "ParameterSet needs a Kokkos memory space");

  NetworkLayout layout;
  FlatParams<MemorySpace> flat;

  ParameterSet() = default;

  /// Allocates (zero-filled) on `space`.
  template <class ExecSpace>
  ParameterSet(const ExecSpace& space, const NetworkLayout& layout_, const std::string& label)
      : layout(layout_), flat(alloc_flat(space, layout_, label)) {
    static_assert(Kokkos::SpaceAccessibility<ExecSpace, MemorySpace>::accessible,
                  "ParameterSet: memory space not accessible from the execution space");
  }

  /// Over `flat_` (layout_.total floats, e.g. one half of alloc_flat_pair).
  ParameterSet(const NetworkLayout& layout_, const FlatParams<MemorySpace>& flat_) : layout(layout_), flat(flat_) {
    if (flat.extent(0) != layout.total)
      throw LogicError("foxrl::ParameterSet: a flat buffer of " + std::to_string(flat.extent(0)) + " floats, layout " +
                       layout.describe() + " needs " + std::to_string(layout.total));
  }

  /// Weight [out, in] of layer l.
  MutableMatrix<MemorySpace> weight(int l) const { return layer_weight(flat, layout, l); }
  /// Bias [out] of layer l.
  MutableVector<MemorySpace> bias(int l) const { return layer_bias(flat, layout, l); }
};

}  // namespace foxrl
