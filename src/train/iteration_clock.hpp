#pragma once
// IterationClock: the counters that change every training iteration (the
// global env step, the n-step push count, the replay's insert count and
// sample calls, the update count), kept in device memory for the kernels
// of an iteration to read when they run. The trainer keeps the same values
// on the host (its decisions and checkpoints use those); one launch at the
// end of each iteration advances the device copy by what the iteration
// did. A CUDA graph of a whole iteration then bakes in where to read each
// counter and by how much this call is past the iteration's start
// (kernels::CounterRead), never the value itself, so every replay reads the
// current one. Host backends run the same code: the "device" copy is then
// host memory.

#include "core/host_mirror.hpp"
#include "kernels/core/add_to_counters.hpp"
#include "kernels/core/call_once.hpp"
#include "kernels/core/counter_read.hpp"
#include "kernels/core/last_team.hpp"

#include <Kokkos_Core.hpp>

#include <array>
#include <cstdint>

namespace foxrl {

/// IterationClock::advance's `also` when there is nothing more to do.
using NothingMore = kernels::NoLastTeamWork;

template <class ExecSpace>
class IterationClock {
 public:
  using memory_space = typename ExecSpace::memory_space;
  enum Slot : int { global_step, nstep_pushed, replay_inserted, sample_calls, updates, slot_count };
  using Values = std::array<std::int64_t, slot_count>;

  explicit IterationClock(const ExecSpace& space)
      : device_(Kokkos::view_alloc(space, "foxrl::IterationClock::counters"), slot_count),
        staging_(host_mirror(device_)) {}

  /// Makes the device copy hold `values` (one small copy on `space`, only
  /// when they differ from what it holds: after a resume, or host-side
  /// changes between iterations).
  void set(const ExecSpace& space, const Values& values) {
    if (values == held_) return;
    for (int s = 0; s < slot_count; ++s) staging_(s) = values[s];
    Kokkos::deep_copy(space, device_, staging_);
    held_ = values;
  }

  /// Slot `s` as a kernel reads it, `offset` past the iteration's start.
  kernels::CounterRead read(Slot s, std::int64_t offset = 0) const { return {device_.data() + s, offset}; }

  /// Adds `by` to the device copy (one launch on `space`; capturable).
  void advance(const ExecSpace& space, const Values& by) { advance(space, by, NothingMore{}); }

  /// The same, and `also()` called once in the same launch: the iteration's
  /// last small piece of work rides along instead of taking a launch (a
  /// graph node) of its own.
  template <class Also>
  void advance(const ExecSpace& space, const Values& by, const Also& also) {
    kernels::call_once(space, "foxrl::IterationClock::advance", advancer(by, also));
  }

  /// advance()'s work as a device functor for one thread, for a launch
  /// that already runs at the iteration's end to call once it is done (the
  /// replay's priority update: ReplayBuffer::update_priorities' `then`).
  template <class Also>
  using Advance = kernels::AddToCounters<memory_space, slot_count, Also>;
  template <class Also = NothingMore>
  Advance<Also> advancer(const Values& by, const Also& also = Also()) const {
    Advance<Also> a{device_, {}, also};
    for (int s = 0; s < slot_count; ++s) a.add[s] = by[s];
    return a;
  }

  /// Records that a replayed graph advanced the device copy by `by`, or that
  /// a direct run's advance() did.
  void note_advanced(const Values& by) {
    for (int s = 0; s < slot_count; ++s) held_[s] += by[s];
  }

 private:
  Kokkos::View<std::int64_t*, memory_space> device_;
  typename Kokkos::View<std::int64_t*, memory_space>::HostMirror staging_;
  Values held_{-1, -1, -1, -1, -1};  ///< what the device copy holds (-1: never set)
};

}  // namespace foxrl
