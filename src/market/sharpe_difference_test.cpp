#include "market/sharpe_difference_test.hpp"

#include "core/error.hpp"
#include "market/trading_metrics.hpp"

#include <cmath>
#include <cstdio>

namespace foxrl {

SharpeDifference sharpe_difference_test(const std::vector<double>& a, const std::vector<double>& b,
                                        double bars_per_year, const BootstrapSettings& settings, std::uint64_t stream) {
  if (a.size() != b.size() || a.size() < 2) {
    throw LogicError("sharpe_difference_test: series of " + std::to_string(a.size()) + " and " +
                     std::to_string(b.size()) + " bars (the same number, at least 2, needed)");
  }
  if (settings.resamples < 1) throw LogicError("sharpe_difference_test: resamples must be positive");
  SharpeDifference t;
  t.bars = static_cast<long>(a.size());
  t.resamples = settings.resamples;
  t.stream = stream;
  t.mean_block_length = settings.block_length > 0 ? settings.block_length : default_block_length(a.size());
  t.sharpe_a = annualised_sharpe(a, bars_per_year);
  t.sharpe_b = annualised_sharpe(b, bars_per_year);
  t.difference = t.sharpe_a - t.sharpe_b;

  BootstrapRng rng(settings.seed, stream);
  std::vector<std::size_t> positions;
  std::vector<double> ra(a.size()), rb(b.size()), deviations(static_cast<std::size_t>(settings.resamples));
  long beyond = 0;
  for (auto& deviation : deviations) {
    stationary_bootstrap_indices(a.size(), t.mean_block_length, rng, positions);
    for (std::size_t i = 0; i < positions.size(); ++i) {
      ra[i] = a[positions[i]];
      rb[i] = b[positions[i]];
    }
    const double d = annualised_sharpe(ra, bars_per_year) - annualised_sharpe(rb, bars_per_year);
    deviation = std::abs(d - t.difference);
    if (deviation >= std::abs(t.difference)) ++beyond;
  }
  // The +1s count the observed difference as one of the draws: p is never
  // 0 from a finite number of resamples.
  t.p_value = static_cast<double>(beyond + 1) / static_cast<double>(settings.resamples + 1);
  const double half_width = quantile(deviations, 0.95);
  t.interval = {t.difference - half_width, t.difference + half_width};
  return t;
}

std::string sharpe_difference_sentence(const SharpeDifference& test, const std::string& subject,
                                       const std::string& other) {
  char numbers[160];
  std::snprintf(numbers, sizeof numbers, "(difference %.2f, 95%% interval %.2f..%.2f, p = %.2g)", test.difference,
                test.interval.lower, test.interval.upper, test.p_value);
  if (!test.significant()) return subject + " is not distinguishable from " + other + " " + numbers + ".";
  return subject + " is " + (test.difference > 0 ? "higher than " : "lower than ") + other + " at the 5% level " +
         numbers + ".";
}

}  // namespace foxrl
