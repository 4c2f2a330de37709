#pragma once
// CounterRead: a 64-bit counter (env steps, n-step pushes, replay inserts,
// sample calls, updates) as a kernel reads it. A component called on its
// own passes its host counter (`offset`, no `device`). The trainer passes a
// slot of its device-resident iteration clock plus the offset of this call
// within the iteration (src/train/iteration_clock.hpp): the kernel then
// reads the value when it runs, so one captured graph of an iteration is
// right on every replay. Both give the same value, so the kernels compute
// the same thing either way.

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl {
namespace kernels {

struct CounterRead {
  /// A counter in the kernel's memory space, or null for a host value.
  const std::int64_t* device = nullptr;
  std::int64_t offset = 0;

  /// A host value.
  static CounterRead host(std::int64_t value) { return {nullptr, value}; }

  KOKKOS_INLINE_FUNCTION std::int64_t operator()() const { return device != nullptr ? *device + offset : offset; }
};

}  // namespace kernels
}  // namespace foxrl
