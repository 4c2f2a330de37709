#pragma once
// Every difference between the Kokkos versions foxrl supports (3.4 on
// Debian 12's Trilinos, through 4.7) lives here, so the rest of the code has
// no version #ifs.

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#if KOKKOS_VERSION < 30400
#error "foxrl needs Kokkos 3.4 or newer"
#endif

namespace foxrl::compat {

/// Kokkos 3.4 neither labels fences nor reports them to Kokkos Tools.
inline constexpr bool fences_are_observable = KOKKOS_VERSION >= 30500;

/// Kokkos 4 can create Serial instances distinct from the default one, so a
/// launch on the default instance can be told apart from ours.
inline constexpr bool host_instances_are_distinct = KOKKOS_VERSION >= 40000;

/// Fence one instance, with a label where Kokkos supports it.
template <class ExecSpace>
void fence(const ExecSpace& space, const std::string& label) {
#if KOKKOS_VERSION >= 30500
  space.fence(label);
#else
  (void)label;
  space.fence();
#endif
}

/// A fresh instance of a host execution space (one that is not the default
/// instance, where the Kokkos version allows it).
template <class ExecSpace>
ExecSpace make_host_instance() {
#if KOKKOS_VERSION >= 40000
  if constexpr (std::is_constructible_v<ExecSpace, Kokkos::NewInstance>) {
    return ExecSpace(Kokkos::NewInstance{});
  } else {
    return ExecSpace();
  }
#else
  return ExecSpace();
#endif
}

/// `policy` with Kokkos' lightweight-kernel hint. On CUDA it passes a
/// functor of 512 B .. 4 KB as a kernel argument; without it Kokkos copies
/// such functors to constant memory and first waits on the host for the
/// previous constant-memory kernel to finish, which drains the stream's
/// queue every iteration. Every hot-path launch with a large functor (many
/// Views) takes it.
template <class Policy>
auto light(const Policy& policy) {
  return Kokkos::Experimental::require(policy, Kokkos::Experimental::WorkItemProperty::HintLightWeight);
}

/// A Kokkos Tools region over a scope: pushRegion on construction,
/// popRegion on destruction (Kokkos::Profiling::ScopedRegion appeared after
/// 3.4). With no tool attached both are a check of a callback pointer: no
/// launch and no fence. A tool that does not declare otherwise gets the
/// global fences Kokkos 4 puts around every tool callback, as for kernels.
class ScopedRegion {
 public:
  explicit ScopedRegion(const std::string& name) { Kokkos::Profiling::pushRegion(name); }
  ~ScopedRegion() { Kokkos::Profiling::popRegion(); }
  ScopedRegion(const ScopedRegion&) = delete;
  ScopedRegion& operator=(const ScopedRegion&) = delete;
};

/// The bits of a float as an unsigned integer and back, in kernels too
/// (Kokkos::bit_cast from 4.1 on; the older host-only Kokkos of Debian gets
/// memcpy, which compilers turn into a register move).
#if KOKKOS_VERSION >= 40100
KOKKOS_INLINE_FUNCTION std::uint32_t float_bits(float x) { return Kokkos::bit_cast<std::uint32_t>(x); }
KOKKOS_INLINE_FUNCTION float bits_float(std::uint32_t u) { return Kokkos::bit_cast<float>(u); }
#else
inline std::uint32_t float_bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
inline float bits_float(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}
#endif

}  // namespace foxrl::compat

// Math functions moved from Kokkos::Experimental to Kokkos in 3.7/4.0.
namespace foxrl::math {
#if KOKKOS_VERSION >= 40000
using Kokkos::abs;
using Kokkos::cos;
using Kokkos::exp;
using Kokkos::fabs;
using Kokkos::fmax;
using Kokkos::fmin;
using Kokkos::isfinite;
using Kokkos::log;
using Kokkos::log1p;
using Kokkos::pow;
using Kokkos::sin;
using Kokkos::sqrt;
using Kokkos::tanh;
#else
using Kokkos::Experimental::cos;
using Kokkos::Experimental::exp;
using Kokkos::Experimental::fabs;
using Kokkos::Experimental::fmax;
using Kokkos::Experimental::fmin;
using Kokkos::Experimental::isfinite;
using Kokkos::Experimental::log;
using Kokkos::Experimental::log1p;
using Kokkos::Experimental::pow;
using Kokkos::Experimental::sin;
using Kokkos::Experimental::sqrt;
using Kokkos::Experimental::tanh;
KOKKOS_INLINE_FUNCTION float abs(float x) { return Kokkos::Experimental::fabs(x); }
KOKKOS_INLINE_FUNCTION double abs(double x) { return Kokkos::Experimental::fabs(x); }
#endif
}  // namespace foxrl::math
