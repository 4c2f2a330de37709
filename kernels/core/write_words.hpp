#pragma once
// write_words: a few words written into a device View in one launch on the
// caller's instance. A batched library call reads its operand pointers from
// device memory (cuBLAS' pointer-array batches); a launch, unlike a host
// copy, is ordered on the stream without a fence and can be captured into a
// graph.

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

namespace foxrl {
namespace kernels {

/// The kernel of write_words: index i stores values[i].
template <class MemorySpace, std::size_t N>
struct WriteWords {
  Kokkos::View<std::uintptr_t*, MemorySpace> dst;
  Kokkos::Array<std::uintptr_t, N> values;
  KOKKOS_INLINE_FUNCTION void operator()(int i) const { dst(i) = values[i]; }
};

/// dst(i) = values[i] for i < N, one thread each, on `space` (dst holds at
/// least N words).
template <class ExecSpace, class MemorySpace, std::size_t N>
void write_words(const ExecSpace& space, const Kokkos::View<std::uintptr_t*, MemorySpace>& dst,
                 const Kokkos::Array<std::uintptr_t, N>& values) {
  Kokkos::parallel_for("foxrl::write_words", Kokkos::RangePolicy<ExecSpace>(space, 0, static_cast<int>(N)),
                       WriteWords<MemorySpace, N>{dst, values});
}

}  // namespace kernels
}  // namespace foxrl
