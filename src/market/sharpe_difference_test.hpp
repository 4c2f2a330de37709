#pragma once
// Is one strategy's Sharpe ratio different from another's on the same bars?
// The difference of the annualised Sharpe ratios, with a 95% interval and a
// two-sided p-value from the stationary block bootstrap (Politis and Romano
// 1994) of the pairs of per-bar returns: both series are resampled with the
// same positions, so their dependence on each other (they trade the same
// market) and their autocorrelation and volatility clustering (kept within
// blocks) carry into the resamples.
//
//   d   = SR(a) - SR(b) on the observed bars
//   d*  = the same on each of `resamples` resamples
//   p   = (1 + #{ |d* - d| >= |d| }) / (resamples + 1)
//         two-sided; the resampled differences centred on the observed one
//         stand for the differences a world with no difference would show
//   95% interval: d -+ c, c the 95% quantile of |d* - d| (the symmetric
//         interval, which excludes 0 exactly when p is below about 0.05)

#include "market/bootstrap.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace foxrl {

/// The bootstrap's settings, recorded with every result.
struct BootstrapSettings {
  std::uint64_t seed = kDefaultBootstrapSeed;
  int resamples = 2000;
  /// Mean block length of the stationary bootstrap; 0: default_block_length
  /// of the series' length.
  double block_length = 0;
};

struct SharpeDifference {
  double sharpe_a = 0;    ///< annualised, observed
  double sharpe_b = 0;    ///< annualised, observed
  double difference = 0;  ///< sharpe_a - sharpe_b
  Interval interval;      ///< 95%, symmetric (see the file comment)
  double p_value = 1;     ///< two-sided
  double mean_block_length = 1;
  long bars = 0;
  int resamples = 0;
  std::uint64_t stream = 0;  ///< of the settings' seed (BootstrapRng)
  /// Significant at the 5% level (two-sided).
  bool significant() const { return p_value < 0.05; }
};

/// The test of SR(a) - SR(b) for per-bar returns `a` and `b` of the same
/// bars, annualised with `bars_per_year`, drawing from stream `stream` of
/// `settings.seed`. LogicError unless a and b have the same length (at
/// least 2). A series with no spread has Sharpe 0 (trading_metrics), so
/// `b` all zeros tests SR(a) against zero.
SharpeDifference sharpe_difference_test(const std::vector<double>& a, const std::vector<double>& b,
                                        double bars_per_year, const BootstrapSettings& settings, std::uint64_t stream);

/// A plain sentence on the result: "<subject> is not distinguishable from
/// <other> (difference -0.21, 95% interval -0.90..0.48, p = 0.52)." or
/// "<subject> is higher than <other> at the 5% level (...)", e.g. subject
/// "The agent's Sharpe", other "buy-and-hold's" or "zero".
std::string sharpe_difference_sentence(const SharpeDifference& test, const std::string& subject,
                                       const std::string& other);

}  // namespace foxrl
