#include "market/trading_metrics.hpp"

#include <catch2/catch.hpp>

#include <cmath>

TEST_CASE("trading metrics follow their definitions on a hand-checked series", "[eval]") {
  // Bars: +10 %, -20 %, +5 % in log terms, long, long, flat.
  const std::vector<double> r = {0.10, -0.20, 0.0};
  const std::vector<double> p = {1, 1, 0};
  const auto m = foxrl::compute_trading_metrics(r, p, 252);
  CHECK(m.total_return == Approx(std::exp(-0.10) - 1).epsilon(1e-12));
  CHECK(m.max_drawdown == Approx(1 - std::exp(-0.20)).epsilon(1e-12));
  CHECK(m.turnover == Approx((1.0 + 0.0 + 1.0) / 3));
  CHECK(m.bars_in_market == 2);
  CHECK(m.hit_rate == Approx(0.5));
  const double mean = (0.10 - 0.20) / 3;
  const double var = ((0.10 - mean) * (0.10 - mean) + (-0.20 - mean) * (-0.20 - mean) + mean * mean) / 2;
  CHECK(m.sharpe == Approx(mean / std::sqrt(var) * std::sqrt(252.0)).epsilon(1e-12));
}

TEST_CASE("trading metrics of a flat strategy are zero", "[eval]") {
  const std::vector<double> zeros(10, 0.0);
  const auto m = foxrl::compute_trading_metrics(zeros, zeros, 252);
  CHECK(m.total_return == 0);
  CHECK(m.sharpe == 0);
  CHECK(m.max_drawdown == 0);
  CHECK(m.turnover == 0);
  CHECK(m.hit_rate == 0);
}

TEST_CASE("equity curve compounds log returns", "[eval]") {
  const auto e = foxrl::equity_curve({std::log(2.0), std::log(0.5), std::log(3.0)});
  REQUIRE(e.size() == 4);
  CHECK(e[0] == 1.0);
  CHECK(e[1] == Approx(2.0));
  CHECK(e[2] == Approx(1.0));
  CHECK(e[3] == Approx(3.0));
}

TEST_CASE("trading metrics reject mismatched series", "[eval]") {
  CHECK_THROWS_WITH(foxrl::compute_trading_metrics({0.1, 0.2}, {1}, 252), Catch::Contains("2 returns"));
}
