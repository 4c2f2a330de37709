#pragma once
// The bits of every element of a View, for bit-for-bit comparisons of two
// paths that must agree exactly (floats compared as bits: -0 differs from
// +0, NaNs compare).

#include "support/device_copy.hpp"

#include <cstdint>
#include <cstring>
#include <vector>

namespace foxrl::test {

/// The bits of every element of `v` (a host View of any rank, or a
/// std::vector), each widened to 32 bits.
template <class V>
std::vector<std::uint32_t> bits_of(const V& v) {
  std::vector<std::uint32_t> out;
  const auto* p = v.data();
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::uint32_t b = 0;
    std::memcpy(&b, p + i, sizeof(p[i]) < sizeof b ? sizeof(p[i]) : sizeof b);
    out.push_back(b);
  }
  return out;
}

/// bits_of a device View, copied to the host on `space`.
template <class Exec, class V>
std::vector<std::uint32_t> device_bits(const Exec& space, const V& v) {
  return bits_of(to_host(space, v));
}

}  // namespace foxrl::test
