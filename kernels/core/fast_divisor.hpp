#pragma once
// Exact integer division by a divisor that is fixed for a whole launch, as
// one high multiply. A GPU has no integer divide: `idx / cols` with a
// runtime `cols` compiles to a chain of about twenty dependent
// instructions, and the fused small-network kernels (kernels/cuda/) take
// one per staged weight and per gradient element, which made the division
// a large share of their instructions. The divisor's magic number is
// derived once on the host, where the kernel is planned.
//
// The method (round-up reciprocal): with m = ceil(2^32 / d) and
// e = m d - 2^32 (0 <= e < d), floor(n m / 2^32) = floor(n / d) whenever
// n e < 2^32. Writing n = q d + r, n m / 2^32 = q + r / d + n e / (d 2^32),
// and the last two terms stay below 1 exactly when r + n e / 2^32 < d,
// which n e < 2^32 guarantees (r <= d - 1). max_exact() is the largest
// such n; callers check their largest dividend against it on the host.

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl {
namespace kernels {

class FastDivisor {
 public:
  FastDivisor() = default;
  /// Division by `divisor` (at least 1).
  explicit FastDivisor(std::uint32_t divisor) : d_(divisor == 0 ? 1 : divisor) {
    if (d_ > 1) {
      const std::uint64_t two32 = std::uint64_t(1) << 32;
      magic_ = static_cast<std::uint32_t>((two32 + d_ - 1) / d_);
    }
  }

  KOKKOS_INLINE_FUNCTION std::uint32_t divisor() const { return d_; }

  /// floor(n / divisor()) for n <= max_exact().
  KOKKOS_INLINE_FUNCTION std::uint32_t divide(std::uint32_t n) const {
    if (d_ == 1) return n;  // ceil(2^32 / 1) does not fit 32 bits
#ifdef __CUDA_ARCH__
    return __umulhi(n, magic_);
#else
    return static_cast<std::uint32_t>((std::uint64_t(n) * magic_) >> 32);
#endif
  }

  /// The largest dividend divide() is exact for (every 32-bit one when the
  /// divisor is 1 or a power of two).
  std::uint32_t max_exact() const {
    if (d_ == 1) return UINT32_MAX;
    const std::uint64_t two32 = std::uint64_t(1) << 32;
    const std::uint64_t e = std::uint64_t(magic_) * d_ - two32;
    return e == 0 ? UINT32_MAX : static_cast<std::uint32_t>((two32 - 1) / e);
  }

 private:
  std::uint32_t d_ = 1, magic_ = 0;
};

}  // namespace kernels
}  // namespace foxrl
