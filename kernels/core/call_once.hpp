#pragma once
// call_once: one thread calls a device callable, in a launch of its own on
// the caller's instance. The small work at an iteration's seams (advancing
// the device-resident clock, adding an update's metrics to the epoch's
// sums, counting an optimizer step, or the replay's `then` when there is
// no priority to update) is a callable that a larger launch can also run
// in passing; this is its launch when it runs alone. One functor serves
// them all, so each seam is only its callable (a named functor, not a
// KOKKOS_LAMBDA: see RecordStepInOneTeam in kernels/collect/record_step.hpp).

#include <Kokkos_Core.hpp>

#include <string>

namespace foxrl {
namespace kernels {

/// The kernel of call_once: index 0 calls `f()`.
template <class F>
struct CallOnce {
  F f;
  KOKKOS_INLINE_FUNCTION void operator()(int) const { f(); }
};

/// Calls `f()` once on `space`, in a one-thread launch labelled `label`.
template <class ExecSpace, class F>
void call_once(const ExecSpace& space, const std::string& label, const F& f) {
  Kokkos::parallel_for(label, Kokkos::RangePolicy<ExecSpace>(space, 0, 1), CallOnce<F>{f});
}

}  // namespace kernels
}  // namespace foxrl
