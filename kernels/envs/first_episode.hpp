#pragma once
// The kernels of greedy evaluation in episodes (evaluate_first_episodes,
// src/envs/episode_evaluation.hpp): each env's return and length summed
// until its first episode ends, and the count of envs whose first episode
// has ended. They live in functions that are not templated on the policy,
// which may be a caller's local or private type (a lambda).

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl {
namespace kernels {

/// accumulate_first_episode's kernel: env i's reward and step, unless its
/// first episode has ended. A named functor, not a KOKKOS_LAMBDA (see
/// RecordStepInOneTeam in kernels/collect/record_step.hpp).
template <class Rewards, class Flags, class MemorySpace>
struct AccumulateFirstEpisodeKernel {
  Rewards rewards;
  Flags terminated, truncated;
  Kokkos::View<double*, MemorySpace> returns;
  Kokkos::View<std::int64_t*, MemorySpace> lengths;
  Kokkos::View<std::uint8_t*, MemorySpace> done;
  KOKKOS_INLINE_FUNCTION void operator()(int i) const {
    if (done(i)) return;
    returns(i) += static_cast<double>(rewards(i));
    lengths(i) += 1;
    if (terminated(i) || truncated(i)) done(i) = 1;
  }
};

/// Adds each unfinished env's reward and step; marks its episode ended.
template <class ExecSpace, class Rewards, class Flags>
void accumulate_first_episode(const ExecSpace& space, const Rewards& rewards, const Flags& terminated,
                              const Flags& truncated,
                              const Kokkos::View<double*, typename ExecSpace::memory_space>& returns,
                              const Kokkos::View<std::int64_t*, typename ExecSpace::memory_space>& lengths,
                              const Kokkos::View<std::uint8_t*, typename ExecSpace::memory_space>& done) {
  Kokkos::parallel_for("foxrl::evaluate_first_episodes::accumulate",
                       Kokkos::RangePolicy<ExecSpace>(space, 0, static_cast<int>(done.extent(0))),
                       AccumulateFirstEpisodeKernel<Rewards, Flags, typename ExecSpace::memory_space>{
                           rewards, terminated, truncated, returns, lengths, done});
}

/// count_ended's kernel: adds 1 to the count for env i if its first
/// episode has ended.
template <class MemorySpace>
struct CountEndedKernel {
  Kokkos::View<std::uint8_t*, MemorySpace> done;
  KOKKOS_INLINE_FUNCTION void operator()(int i, int& count) const { count += done(i) ? 1 : 0; }
};

/// ended() = the number of envs whose first episode has ended.
template <class ExecSpace>
void count_ended(const ExecSpace& space, const Kokkos::View<std::uint8_t*, typename ExecSpace::memory_space>& done,
                 const Kokkos::View<int, typename ExecSpace::memory_space>& ended) {
  Kokkos::parallel_reduce("foxrl::evaluate_first_episodes::count_ended",
                          Kokkos::RangePolicy<ExecSpace>(space, 0, static_cast<int>(done.extent(0))),
                          CountEndedKernel<typename ExecSpace::memory_space>{done}, ended);
}

}  // namespace kernels
}  // namespace foxrl
