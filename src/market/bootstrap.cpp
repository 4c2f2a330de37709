#include "market/bootstrap.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace foxrl {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

BootstrapRng::BootstrapRng(std::uint64_t seed, std::uint64_t stream) : engine_(splitmix64(seed ^ splitmix64(stream))) {}

double BootstrapRng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

std::size_t BootstrapRng::index(std::size_t n) {
  const auto range = static_cast<std::uint64_t>(n);
  // Words at or above the largest multiple of n would favour small indices.
  const std::uint64_t limit =
      std::numeric_limits<std::uint64_t>::max() - std::numeric_limits<std::uint64_t>::max() % range;
  std::uint64_t x = next();
  while (x >= limit) x = next();
  return static_cast<std::size_t>(x % range);
}

double quantile(std::vector<double> values, double q) {
  if (values.empty()) throw LogicError("quantile: no values");
  std::sort(values.begin(), values.end());
  const double position = q * static_cast<double>(values.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  const std::size_t above = std::min(below + 1, values.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return values[below] + fraction * (values[above] - values[below]);
}

double mean_of(const std::vector<double>& values) {
  if (values.empty()) return 0.0;
  double sum = 0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

Interval percentile_interval_of_mean(const std::vector<double>& values, int resamples, double level,
                                     BootstrapRng& rng) {
  if (values.empty()) throw LogicError("percentile_interval_of_mean: no values");
  if (resamples < 1) throw LogicError("percentile_interval_of_mean: resamples must be positive");
  const std::size_t n = values.size();
  std::vector<double> means(static_cast<std::size_t>(resamples));
  for (auto& m : means) {
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) sum += values[rng.index(n)];
    m = sum / static_cast<double>(n);
  }
  const double tail = (1.0 - level) / 2;
  return {quantile(means, tail), quantile(means, 1.0 - tail)};
}

double default_block_length(std::size_t n) { return std::max(1.0, std::round(std::cbrt(static_cast<double>(n)))); }

void stationary_bootstrap_indices(std::size_t n, double mean_block_length, BootstrapRng& rng,
                                  std::vector<std::size_t>& out) {
  if (!(mean_block_length >= 1.0)) throw LogicError("stationary_bootstrap_indices: mean block length below 1");
  out.resize(n);
  if (n == 0) return;
  const double new_block = 1.0 / mean_block_length;
  std::size_t position = rng.index(n);
  out[0] = position;
  for (std::size_t i = 1; i < n; ++i) {
    // A new block with probability 1/L after each position: block lengths
    // are geometric with mean L. Mean length 1 draws every position anew.
    if (new_block >= 1.0 || rng.uniform() < new_block) {
      position = rng.index(n);
    } else {
      position = position + 1 == n ? 0 : position + 1;  // the series wraps (a circle)
    }
    out[i] = position;
  }
}

}  // namespace foxrl
