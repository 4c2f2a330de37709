#pragma once
// DqnWeights: handles to every flat buffer of a DqnLearner (online, target,
// gradients, Adam moments and step), for tests, tools and checkpoints that
// look at them together. The learner owns them in separate pieces
// (ParameterSet, TargetNetwork, AdamOptimizer); this struct only shares the
// Views (Kokkos handles: writes through it reach the learner).

#include "views/nn/parameter_set.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl {

/// Shared handles to a DQN learner's buffers, all laid out by `layout`.
template <class MemorySpace>
struct DqnWeights {
  NetworkLayout layout;
  FlatParams<MemorySpace> online;
  FlatParams<MemorySpace> target;
  FlatParams<MemorySpace> grads;
  FlatParams<MemorySpace> adam_m;                     ///< Adam first moment
  FlatParams<MemorySpace> adam_v;                     ///< Adam second moment
  Kokkos::View<std::int64_t, MemorySpace> adam_step;  ///< Adam steps taken

  /// Weight [out, in] of layer l of one of the buffers.
  MutableMatrix<MemorySpace> weight(const FlatParams<MemorySpace>& flat, int l) const {
    return layer_weight(flat, layout, l);
  }
  /// Bias [out] of layer l of one of the buffers.
  MutableVector<MemorySpace> bias(const FlatParams<MemorySpace>& flat, int l) const {
    return layer_bias(flat, layout, l);
  }
};

}  // namespace foxrl
