// Resampling statistics (src/market/bootstrap.hpp) against closed-form
// results: the coverage of the percentile interval of a mean on i.i.d.
// normal samples, and the variance of the mean of an AR(1) series under the
// stationary block bootstrap against its analytic long-run variance.
#include "market/bootstrap.hpp"

#include "core/error.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

namespace {

double variance_of(const std::vector<double>& x) {
  const double m = foxrl::mean_of(x);
  double s = 0;
  for (double v : x) s += (v - m) * (v - m);
  return s / static_cast<double>(x.size() - 1);
}

/// The variance of the mean over `resamples` stationary bootstrap
/// resamples of `x` with mean block length `block`.
double bootstrap_variance_of_mean(const std::vector<double>& x, double block, int resamples, foxrl::BootstrapRng& rng) {
  std::vector<std::size_t> positions;
  std::vector<double> means;
  for (int b = 0; b < resamples; ++b) {
    foxrl::stationary_bootstrap_indices(x.size(), block, rng, positions);
    double sum = 0;
    for (auto p : positions) sum += x[p];
    means.push_back(sum / static_cast<double>(x.size()));
  }
  return variance_of(means);
}

}  // namespace

TEST_CASE("quantile interpolates between order statistics", "[bootstrap]") {
  // Type 7 by hand: position q (n - 1) in the sorted values 1, 2, 4, 8.
  const std::vector<double> v = {8, 1, 4, 2};
  CHECK(foxrl::quantile(v, 0.0) == 1);
  CHECK(foxrl::quantile(v, 1.0) == 8);
  CHECK(foxrl::quantile(v, 0.5) == Approx(3.0));    // between 2 and 4
  CHECK(foxrl::quantile(v, 0.25) == Approx(1.75));  // 1 + 0.75 x (2 - 1)
  CHECK(foxrl::quantile({5.0}, 0.9) == 5.0);
  CHECK_THROWS_AS(foxrl::quantile({}, 0.5), foxrl::LogicError);
}

TEST_CASE("bootstrap streams are reproducible and distinct", "[bootstrap]") {
  foxrl::BootstrapRng a(7, 3), b(7, 3), c(7, 4), d(8, 3);
  std::vector<std::uint64_t> wa, wb, wc, wd;
  for (int i = 0; i < 8; ++i) {
    wa.push_back(a.next());
    wb.push_back(b.next());
    wc.push_back(c.next());
    wd.push_back(d.next());
  }
  CHECK(wa == wb);
  CHECK(wa != wc);
  CHECK(wa != wd);
  foxrl::BootstrapRng r(1);
  for (int i = 0; i < 1000; ++i) {
    const double u = r.uniform();
    REQUIRE((u >= 0 && u < 1));
    REQUIRE(r.index(7) < 7);
  }
}

TEST_CASE("stationary bootstrap blocks wrap and have the mean length asked for", "[bootstrap]") {
  foxrl::BootstrapRng rng(11);
  std::vector<std::size_t> idx;
  // Blocks far longer than the series: every step moves to the next
  // position, from the last back to the first.
  foxrl::stationary_bootstrap_indices(5, 1e12, rng, idx);
  REQUIRE(idx.size() == 5);
  for (std::size_t i = 1; i < idx.size(); ++i) CHECK(idx[i] == (idx[i - 1] + 1) % 5);
  // Mean length 10 over 100,000 positions: a block starts after each
  // position with probability 1/10, so the starts after the first are
  // Binomial(99,999, 0.1): mean 9,999.9, standard deviation 94.9. A new
  // block lands on the next position by chance with probability 1e-5,
  // which hides about 0.1 starts. Band: +-4 standard deviations.
  const std::size_t n = 100000;
  foxrl::stationary_bootstrap_indices(n, 10.0, rng, idx);
  std::size_t starts = 0;
  for (std::size_t i = 1; i < n; ++i) starts += idx[i] != (idx[i - 1] + 1) % n ? 1 : 0;
  CHECK(std::abs(static_cast<double>(starts) - 9999.9) < 4 * 94.9);
  // Mean length 1 is the i.i.d. bootstrap: every position drawn anew, so
  // a step to the next position happens only by chance (1 in n).
  foxrl::stationary_bootstrap_indices(1000, 1.0, rng, idx);
  std::size_t consecutive = 0;
  for (std::size_t i = 1; i < idx.size(); ++i) consecutive += idx[i] == (idx[i - 1] + 1) % 1000 ? 1 : 0;
  CHECK(consecutive <= 5);
  CHECK_THROWS_AS(foxrl::stationary_bootstrap_indices(10, 0.5, rng, idx), foxrl::LogicError);
}

TEST_CASE("the default block length is the cube root of the bars", "[bootstrap]") {
  CHECK(foxrl::default_block_length(1) == 1);
  CHECK(foxrl::default_block_length(1000) == 10);
  CHECK(foxrl::default_block_length(2520) == 14);  // 13.6
  CHECK(foxrl::default_block_length(0) == 1);
}

TEST_CASE("the percentile bootstrap interval of a mean covers the true mean about 95 percent of the time",
          "[bootstrap]") {
  // 1000 independent samples of n = 30 i.i.d. N(0.3, 1) values; each gets
  // its percentile interval (1000 resamples). For the mean, the percentile
  // interval is close to mean -+ z s sqrt((n-1)/n) / sqrt(n) (the bootstrap
  // distribution's spread uses the n-denominator variance and normal
  // quantiles), so it covers with probability
  //   P(|t_29| < 1.96 sqrt(29/30)) = 0.936 (0.782 for the 80% interval),
  // a little under nominal: the known under-coverage of the percentile
  // bootstrap at small n. The count of covering draws is binomial, standard
  // error sqrt(0.936 x 0.064 / 1000) = 0.0077 (0.013 at 80%). Bands: the
  // expected coverage -+ 3 standard errors, widened by 0.005 below for the
  // Monte Carlo noise of 1000 resamples' tail quantiles (which only widens
  // or narrows each interval at random, lowering coverage slightly):
  // 95%: 0.908..0.960 (includes the nominal 0.95; a 90% or a 99% interval
  // would fail), 80%: 0.738..0.822.
  const double true_mean = 0.3;
  const int draws = 1000, n = 30;
  std::mt19937_64 data_rng(2024);
  std::normal_distribution<double> normal(true_mean, 1.0);
  foxrl::BootstrapRng rng(99);
  int covered95 = 0, covered80 = 0;
  std::vector<double> x(static_cast<std::size_t>(n));
  for (int d = 0; d < draws; ++d) {
    for (auto& v : x) v = normal(data_rng);
    covered95 += foxrl::percentile_interval_of_mean(x, 1000, 0.95, rng).contains(true_mean) ? 1 : 0;
    covered80 += foxrl::percentile_interval_of_mean(x, 1000, 0.80, rng).contains(true_mean) ? 1 : 0;
  }
  const double coverage95 = covered95 / double(draws), coverage80 = covered80 / double(draws);
  INFO("coverage of the 95% interval " << coverage95 << ", of the 80% interval " << coverage80);
  CHECK(coverage95 >= 0.908);
  CHECK(coverage95 <= 0.960);
  CHECK(coverage80 >= 0.738);
  CHECK(coverage80 <= 0.822);
}

TEST_CASE("the stationary bootstrap variance of an AR(1) mean matches the long-run variance", "[bootstrap]") {
  // x_t = phi x_{t-1} + e_t, e_t ~ N(0, 1), phi = 0.6: gamma_0 =
  // 1 / (1 - phi^2) = 1.5625, long-run variance sum_k gamma_k =
  // 1 / (1 - phi)^2 = 6.25, so Var(mean) ~ 6.25 / n; an i.i.d. bootstrap
  // sees only gamma_0 / n, a quarter of it.
  //
  // The stationary bootstrap with mean block length L estimates
  // n Var(mean) = gamma_0 + 2 sum_k (1 - 1/L)^k gamma_k (Politis and Romano
  // 1994, up to O(1/n) wrap terms) = gamma_0 (1 + a) / (1 - a), a = phi
  // (1 - 1/L): with L = 30, 0.9405 of the long-run variance. Noise: the
  // estimate of one series of n = 5000 has a relative standard deviation of
  // about sqrt(4L / 3n) = 0.09 (the spectral estimate at bandwidth ~L) plus
  // sqrt(2 / 500) = 0.063 (500 resamples), together 0.11; the mean of 10
  // series 0.035. Band: 0.9405 -+ 3 x 0.035 = 0.835..1.045 of the
  // long-run variance, so within 17% of it. The i.i.d. bootstrap (L = 1):
  // 0.25 of it, relative noise 0.07 per series, 0.022 for the mean of 10:
  // band 0.25 -+ 0.017 -> 0.23..0.27.
  const double phi = 0.6, long_run_variance = 1 / ((1 - phi) * (1 - phi));
  const std::size_t n = 5000;
  const int series = 10, resamples = 500;
  std::mt19937_64 data_rng(7);
  std::normal_distribution<double> normal(0.0, 1.0);
  foxrl::BootstrapRng rng(5);
  double block_ratio = 0, iid_ratio = 0;
  std::vector<double> x(n);
  for (int s = 0; s < series; ++s) {
    double v = normal(data_rng) * std::sqrt(1 / (1 - phi * phi));  // start in the stationary distribution
    for (auto& xi : x) {
      v = phi * v + normal(data_rng);
      xi = v;
    }
    block_ratio += bootstrap_variance_of_mean(x, 30.0, resamples, rng) * n / long_run_variance / series;
    iid_ratio += bootstrap_variance_of_mean(x, 1.0, resamples, rng) * n / long_run_variance / series;
  }
  INFO("block bootstrap / long-run variance " << block_ratio << ", i.i.d. bootstrap / long-run variance " << iid_ratio);
  CHECK(block_ratio >= 0.835);
  CHECK(block_ratio <= 1.045);
  CHECK(iid_ratio >= 0.23);
  CHECK(iid_ratio <= 0.27);
  CHECK(iid_ratio < 0.5 * block_ratio);
}
