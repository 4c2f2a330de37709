#pragma once
// AddToCounters: a device callable that adds fixed amounts to a View of
// 64-bit counters and then calls `also()`. It is the iteration clock's
// advance (src/train/iteration_clock.hpp): called once, either in a
// launch of its own (call_once) or by the last team of a launch that
// already runs at the iteration's end (the replay's priority update), with
// the iteration's last small piece of work riding along as `also`.

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl {
namespace kernels {

template <class MemorySpace, int Count, class Also>
struct AddToCounters {
  Kokkos::View<std::int64_t*, MemorySpace> counters;
  Kokkos::Array<std::int64_t, Count> add;
  Also also;
  KOKKOS_INLINE_FUNCTION void operator()() const {
    for (int s = 0; s < Count; ++s) counters(s) += add[s];
    also();
  }
};

}  // namespace kernels
}  // namespace foxrl
