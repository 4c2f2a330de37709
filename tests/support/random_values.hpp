#pragma once
// Reproducible test inputs: n floats uniform in [-1, 1) from one seed.

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace foxrl::test {

/// n values uniform in [-1, 1) (mt19937 from `seed`); with `with_zeros`,
/// values below -0.3 become 0, like a ReLU output.
inline std::vector<float> random_values(std::size_t n, std::uint32_t seed, bool with_zeros = false) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) {
    x = u(rng);
    if (with_zeros && x < -0.3f) x = 0.0f;
  }
  return v;
}

}  // namespace foxrl::test
