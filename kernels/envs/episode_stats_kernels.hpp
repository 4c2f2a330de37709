#pragma once
// Kernels of EpisodeStats (src/envs/episode_stats.hpp): one step's rewards
// into the per-env running returns, and the episodes that ended into the
// ring of the last Window returns.

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>

namespace foxrl::kernels {

/// (ordinal within the step + 1) in the high word, the return's bits in
/// the low word: a larger packed value is a newer episode.
KOKKOS_INLINE_FUNCTION std::uint64_t episode_pack(std::int64_t ordinal_in_step, float ret) {
  std::uint32_t bits;
  std::memcpy(&bits, &ret, sizeof bits);
  return (static_cast<std::uint64_t>(ordinal_in_step + 1) << 32) | bits;
}

/// The return of an episode_pack value.
KOKKOS_INLINE_FUNCTION float episode_unpack_return(std::uint64_t packed) {
  const auto bits = static_cast<std::uint32_t>(packed & 0xffffffffu);
  float ret;
  std::memcpy(&ret, &bits, sizeof ret);
  return ret;
}

/// Adds one step's rewards to `running`; episodes that ended (terminated
/// or truncated) enter `ring` in env order after the `count` already
/// counted. Two launches: a scan ("foxrl::EpisodeStats::record") numbers
/// this step's finished episodes and offers each to its ring slot's
/// `staged` word by atomic max of episode_pack (the newest wins whatever
/// order threads run in), then "foxrl::EpisodeStats::advance" moves the
/// winners into the ring, clears `staged` and advances `count`.
template <int Window, class ExecSpace, class MemorySpace>
void episode_stats_record(const ExecSpace& space, const Kokkos::View<const float*, MemorySpace>& rewards,
                          const Kokkos::View<const std::uint8_t*, MemorySpace>& terminated,
                          const Kokkos::View<const std::uint8_t*, MemorySpace>& truncated,
                          const Kokkos::View<float*, MemorySpace>& running,
                          const Kokkos::View<float*, MemorySpace>& ring,
                          const Kokkos::View<std::uint64_t*, MemorySpace>& staged,
                          const Kokkos::View<std::int64_t, MemorySpace>& count,
                          const Kokkos::View<std::int64_t, MemorySpace>& finished_now) {
  const int n = static_cast<int>(running.extent(0));
  Kokkos::parallel_scan(
      "foxrl::EpisodeStats::record", Kokkos::RangePolicy<ExecSpace>(space, 0, n),
      KOKKOS_LAMBDA(int i, std::int64_t& finished_before, bool final_pass) {
        const bool done = terminated(i) != 0 || truncated(i) != 0;
        if (final_pass) {
          const float ret = running(i) + rewards(i);
          if (done) {
            const int slot = static_cast<int>((count() + finished_before) % Window);
            Kokkos::atomic_fetch_max(&staged(slot), episode_pack(finished_before, ret));
            running(i) = 0.f;
          } else {
            running(i) = ret;
          }
        }
        if (done) finished_before += 1;
        if (final_pass && i == n - 1) finished_now() = finished_before;
      });
  Kokkos::parallel_for(
      "foxrl::EpisodeStats::advance", Kokkos::RangePolicy<ExecSpace>(space, 0, Window), KOKKOS_LAMBDA(int s) {
        const std::uint64_t p = staged(s);
        if (p != 0) {
          ring(s) = episode_unpack_return(p);
          staged(s) = 0;
        }
        if (s == 0) count() += finished_now();
      });
}

}  // namespace foxrl::kernels
