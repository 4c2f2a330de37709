// The Sharpe-difference test (src/market/sharpe_difference_test.hpp): a
// strategy with a clearly higher mean return on the same bars is told
// apart, one identical in distribution is not (its rejection rate is near
// the 5% level over many independent pairs), and the plain sentence says
// which.
#include "market/sharpe_difference_test.hpp"

#include "core/error.hpp"

#include "market/trading_metrics.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

namespace {

std::vector<double> normal_series(std::size_t n, double mean, double sd, std::mt19937_64& rng) {
  std::normal_distribution<double> normal(mean, sd);
  std::vector<double> x(n);
  for (auto& v : x) v = normal(rng);
  return x;
}

}  // namespace

TEST_CASE("identical series: difference 0, p 1, not distinguishable", "[sharpe_test]") {
  std::mt19937_64 rng(1);
  const auto a = normal_series(500, 0.0004, 0.01, rng);
  const auto t = foxrl::sharpe_difference_test(a, a, 252, {}, 0);
  CHECK(t.difference == 0);
  CHECK(t.p_value == 1);
  CHECK(t.interval.lower == 0);
  CHECK(t.interval.upper == 0);
  CHECK_FALSE(t.significant());
  CHECK(foxrl::sharpe_difference_sentence(t, "The agent's Sharpe", "buy-and-hold's") ==
        "The agent's Sharpe is not distinguishable from buy-and-hold's (difference 0.00, 95% interval 0.00..0.00, p "
        "= 1).");
}

TEST_CASE("the observed difference is the difference of the annualised Sharpe ratios", "[sharpe_test]") {
  std::mt19937_64 rng(2);
  const auto a = normal_series(300, 0.001, 0.01, rng), b = normal_series(300, 0.0, 0.02, rng);
  foxrl::BootstrapSettings settings;
  settings.resamples = 200;
  const auto t = foxrl::sharpe_difference_test(a, b, 365, settings, 0);
  // Independent reference: mean / sample standard deviation x sqrt(365).
  const auto sharpe = [](const std::vector<double>& x) {
    double m = 0, s = 0;
    for (double v : x) m += v;
    m /= x.size();
    for (double v : x) s += (v - m) * (v - m);
    return m / std::sqrt(s / (x.size() - 1)) * std::sqrt(365.0);
  };
  CHECK(t.difference == Approx(sharpe(a) - sharpe(b)).epsilon(1e-12));
  CHECK(t.mean_block_length == 7);  // round(300^(1/3)) = round(6.69)
  CHECK(t.interval.lower < t.difference);
  CHECK(t.interval.upper > t.difference);
  CHECK(t.interval.upper - t.difference == Approx(t.difference - t.interval.lower));  // symmetric
  // The same settings and stream give the same result; another stream
  // other resamples.
  const auto again = foxrl::sharpe_difference_test(a, b, 365, settings, 0);
  CHECK(again.p_value == t.p_value);
  CHECK(again.interval.lower == t.interval.lower);
  const auto other = foxrl::sharpe_difference_test(a, b, 365, settings, 1);
  CHECK(other.interval.lower != t.interval.lower);
  CHECK_THROWS_AS(foxrl::sharpe_difference_test(a, {0.1, 0.2}, 365, settings, 0), foxrl::LogicError);
}

TEST_CASE("a clearly higher mean return on the same bars is significant", "[sharpe_test]") {
  // Buy and hold: the market, N(0.0002, 0.01) per bar. The strategy: the
  // same bars plus an edge of N(0.002, 0.002) a bar: per-bar Sharpe about
  // 0.21 against 0.02 (annualised over 252 bars: about 3.4 against 0.3), on
  // 1000 bars, so its standard error (about 0.05 per bar for the pair, the
  // two series being highly correlated) is a fraction of the difference: p
  // is at the floor 1/(resamples + 1) in practice; the test asks p < 0.01
  // for each of 20 independent markets.
  std::mt19937_64 rng(3);
  foxrl::BootstrapSettings settings;
  settings.resamples = 500;
  for (int k = 0; k < 20; ++k) {
    const auto market = normal_series(1000, 0.0002, 0.01, rng);
    auto strategy = normal_series(1000, 0.002, 0.002, rng);
    for (std::size_t i = 0; i < strategy.size(); ++i) strategy[i] += market[i];
    const auto t = foxrl::sharpe_difference_test(strategy, market, 252, settings, static_cast<std::uint64_t>(k));
    INFO("market " << k << ": difference " << t.difference << ", p " << t.p_value);
    CHECK(t.p_value < 0.01);
    CHECK(t.significant());
    CHECK(t.interval.lower > 0);
    CHECK_THAT(foxrl::sharpe_difference_sentence(t, "The agent's Sharpe", "buy-and-hold's"),
               Catch::StartsWith("The agent's Sharpe is higher than buy-and-hold's at the 5% level (difference"));
  }
  // The other way round: lower.
  const auto market = normal_series(1000, 0.0002, 0.01, rng);
  auto worse = normal_series(1000, -0.002, 0.002, rng);
  for (std::size_t i = 0; i < worse.size(); ++i) worse[i] += market[i];
  const auto t = foxrl::sharpe_difference_test(worse, market, 252, settings, 99);
  CHECK_THAT(foxrl::sharpe_difference_sentence(t, "The agent's Sharpe", "buy-and-hold's"),
             Catch::StartsWith("The agent's Sharpe is lower than buy-and-hold's at the 5% level"));
}

TEST_CASE("series identical in distribution are rejected at about the 5 percent level", "[sharpe_test]") {
  // 200 independent pairs of i.i.d. N(0.0005, 0.01) series of 500 bars:
  // under the null the p-values are close to uniform, so about 5% fall
  // below 0.05. The count of rejections is then Binomial(200, 0.05): mean
  // 10, standard deviation 3.1. Band 2..20 rejections (0.01..0.10): below it
  // with probability 4e-4, above it (10 + 3.3 sd) about 5e-4 for an exact
  // test; a test that never rejects (p always 1) or rejects at random
  // (p < 0.05 a fifth of the time or more) fails. Each pair that is not
  // rejected must say so in its sentence.
  std::mt19937_64 rng(4);
  foxrl::BootstrapSettings settings;
  settings.resamples = 400;
  int rejections = 0;
  for (int k = 0; k < 200; ++k) {
    const auto a = normal_series(500, 0.0005, 0.01, rng), b = normal_series(500, 0.0005, 0.01, rng);
    const auto t = foxrl::sharpe_difference_test(a, b, 252, settings, static_cast<std::uint64_t>(k));
    rejections += t.significant() ? 1 : 0;
    const std::string sentence = foxrl::sharpe_difference_sentence(t, "The agent's Sharpe", "zero");
    if (t.significant()) {
      CHECK_THAT(sentence, Catch::Contains("at the 5% level"));
    } else {
      CHECK_THAT(sentence, Catch::StartsWith("The agent's Sharpe is not distinguishable from zero (difference"));
    }
  }
  INFO("rejections at 5%: " << rejections << " of 200");
  CHECK(rejections >= 2);
  CHECK(rejections <= 20);
}

TEST_CASE("zeros as the other series test a Sharpe against zero", "[sharpe_test]") {
  std::mt19937_64 rng(5);
  const auto a = normal_series(400, 0.0, 0.01, rng);
  const std::vector<double> zeros(a.size(), 0.0);
  foxrl::BootstrapSettings settings;
  settings.resamples = 300;
  const auto t = foxrl::sharpe_difference_test(a, zeros, 252, settings, 0);
  CHECK(t.sharpe_b == 0);
  CHECK(t.difference == Approx(foxrl::annualised_sharpe(a, 252)));
}
