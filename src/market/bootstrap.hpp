#pragma once
// Resampling statistics for evaluation results (host code, float64): a
// seeded random stream of its own, so that every interval and p-value a
// study prints is reproducible; sample quantiles; the percentile bootstrap
// interval of a mean (across independent runs, e.g. training seeds); and
// the stationary block bootstrap of Politis and Romano (1994) for
// dependent series such as per-bar returns.
//
// Every draw is made from BootstrapRng's own 64-bit words (mt19937_64,
// whose output the C++ standard fixes), never through a std::
// distribution, whose results differ between standard libraries: the same
// seed gives the same resamples on every platform.

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace foxrl {

/// The default seed of a study's bootstrap (`foxrl train --seeds ...
/// --bootstrap-seed`).
inline constexpr std::uint64_t kDefaultBootstrapSeed = 20260101;

/// A reproducible random stream for resampling: stream `stream` of `seed`.
/// Streams of one seed are independent for practical purposes (their
/// engines are seeded with a SplitMix64 mix of seed and stream), so each
/// test of a study draws from its own stream and does not depend on how
/// many other tests ran before it.
class BootstrapRng {
 public:
  explicit BootstrapRng(std::uint64_t seed, std::uint64_t stream = 0);
  /// A uniform 64-bit word.
  std::uint64_t next() { return engine_(); }
  /// Uniform in [0, 1), 53 random bits.
  double uniform();
  /// Uniform in {0, ..., n - 1} without modulo bias (n >= 1).
  std::size_t index(std::size_t n);

 private:
  std::mt19937_64 engine_;
};

/// The q-quantile (0 <= q <= 1) of `values` by linear interpolation between
/// order statistics (Hyndman and Fan's type 7, the default of R and NumPy).
/// `values` need not be sorted; LogicError if empty.
double quantile(std::vector<double> values, double q);

/// Mean of `values` (0 for none).
double mean_of(const std::vector<double>& values);

/// A two-sided interval.
struct Interval {
  double lower = 0;
  double upper = 0;
  bool contains(double x) const { return lower <= x && x <= upper; }
};

/// The percentile bootstrap interval of the mean of `values` at `level`
/// (e.g. 0.95): `resamples` i.i.d. resamples of the values with
/// replacement, and the (1 - level)/2 and (1 + level)/2 quantiles of their
/// means. For independent observations (one per training seed), not for
/// autocorrelated series. A single value gives the point interval.
Interval percentile_interval_of_mean(const std::vector<double>& values, int resamples, double level, BootstrapRng& rng);

/// The mean block length a study uses for a series of `n` bars when none is
/// given: round(n^(1/3)), at least 1 (the rate of the optimal block length
/// for variance estimation, Politis and White 2004, with constant 1).
double default_block_length(std::size_t n);

/// One stationary bootstrap resample of the positions {0, ..., n - 1}
/// (Politis and Romano 1994) into `out` (resized to n): blocks of
/// consecutive positions that start at a uniform position and wrap around
/// the end, with lengths geometric with mean `mean_block_length` (>= 1):
/// after each position a new block starts with probability
/// 1 / mean_block_length. Mean block length 1 is the i.i.d. bootstrap.
void stationary_bootstrap_indices(std::size_t n, double mean_block_length, BootstrapRng& rng,
                                  std::vector<std::size_t>& out);

}  // namespace foxrl
