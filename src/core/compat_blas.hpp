#pragma once
// KokkosBlas::gemm across the Kokkos Kernels versions foxrl supports, with
// the two pitfalls of its instance overload fenced off.
//
// - Kokkos Kernels >= 4.1 has gemm(space, ...), which runs on the instance
//   (on CUDA: binds the shared cuBLAS handle to the instance's stream for
//   the call). 3.4 (Debian's Trilinos) has only gemm(...), which runs on the
//   default instance; on Serial every instance is the same one there, so
//   that is acceptable, and we refuse it for any other space.
// - After the call Kokkos Kernels resets the shared cuBLAS handle to the
//   legacy stream 0. Nothing in foxrl uses that handle without going through
//   gemm(space, ...) again (which re-binds it), so the reset is harmless to
//   us; code that takes KokkosBlas::Impl::CudaBlasSingleton's handle directly
//   must bind its own stream first.
// - With an inner dimension k == 0 gemm only scales C, through scal() on the
//   default instance; foxrl never issues such a call (it throws instead).

#include "core/error.hpp"

#include <KokkosBlas3_gemm.hpp>
#include <Kokkos_Core.hpp>

#include <string>
#include <type_traits>

namespace foxrl::compat {

#if defined(KOKKOSKERNELS_VERSION) && KOKKOSKERNELS_VERSION >= 40100
inline constexpr bool blas_gemm_takes_instance = true;
#else
inline constexpr bool blas_gemm_takes_instance = false;
#endif

/// C = alpha op(A) op(B) + beta C on `space` (see the notes above).
template <class ExecSpace, class AView, class BView, class CView>
void gemm(const ExecSpace& space, const char* trans_a, const char* trans_b, float alpha, const AView& a, const BView& b,
          float beta, const CView& c) {
  const bool a_t = trans_a[0] != 'N' && trans_a[0] != 'n';
  const auto k = a_t ? a.extent(0) : a.extent(1);
  if (k == 0) {
    throw Error("foxrl::compat::gemm: inner dimension is 0 (Kokkos Kernels would scale C off the instance)");
  }
  if (c.extent(0) == 0 || c.extent(1) == 0) return;
#if defined(KOKKOSKERNELS_VERSION) && KOKKOSKERNELS_VERSION >= 40100
  KokkosBlas::gemm(space, trans_a, trans_b, alpha, a, b, beta, c);
#else
  static_assert(std::is_same_v<ExecSpace, Kokkos::DefaultHostExecutionSpace> ||
                    Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible,
                "Kokkos Kernels < 4.1 has no gemm on an instance: the blas dense backend is host-only there");
  (void)space;
  KokkosBlas::gemm(trans_a, trans_b, alpha, a, b, beta, c);
#endif
}

}  // namespace foxrl::compat
