// Costs in the evaluation report: gross and net returns, the cost paid and
// the trades of every strategy, checked against an independent float64
// pricing of the positions; repricing at another cost (the cost-sensitivity
// table of `foxrl eval --cost-bps`).
#include "market/market_data.hpp"
#include "market/market_evaluation.hpp"
#include "market/trading_metrics.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace {

/// A series of `n` daily bars whose closes follow a deterministic zig-zag
/// with drift (bar 0's return is close/open).
foxrl::MarketSeries zigzag_series(int n) {
  foxrl::MarketSeries s;
  s.source = "zigzag";
  double price = 100;
  for (int i = 0; i < n; ++i) {
    const double r = 0.001 + 0.02 * std::sin(0.7 * i) + ((i % 3) == 0 ? -0.01 : 0.005);
    const double open = price;
    price *= std::exp(r);
    s.timestamp.push_back(1577836800 + std::int64_t(i) * 86400);
    s.open.push_back(open);
    s.close.push_back(price);
    s.high.push_back(std::max(open, price));
    s.low.push_back(std::min(open, price));
    s.volume.push_back(1);
  }
  return s;
}

/// Costs paid by `positions` at `cost`, flat before the first bar: the
/// reference the report is checked against.
double reference_cost(const std::vector<double>& positions, double cost) {
  double paid = 0, previous = 0;
  for (double p : positions) {
    paid += cost * std::fabs(p - previous);
    previous = p;
  }
  return paid;
}

long reference_trades(const std::vector<double>& positions) {
  long trades = 0;
  double previous = 0;
  for (double p : positions) {
    trades += p != previous;
    previous = p;
  }
  return trades;
}

}  // namespace

TEST_CASE("backtest returns: gross minus net is the cost of each position change", "[eval]") {
  const std::vector<double> r = {0.01, -0.02, 0.03, 0.005, -0.01};
  const std::vector<double> p = {1, -1, -1, 0, 1};
  const double cost = 0.001;
  const auto b = foxrl::backtest_returns(r, p, cost);
  REQUIRE(b.gross.size() == 5);
  // By hand: changes 1, 2, 0, 1, 1.
  const double expected_cost[] = {0.001, 0.002, 0.0, 0.001, 0.001};
  for (std::size_t i = 0; i < 5; ++i) {
    CHECK(b.gross[i] == p[i] * r[i]);
    CHECK(b.cost[i] == Approx(expected_cost[i]).margin(1e-18));
    CHECK(b.net[i] == Approx(p[i] * r[i] - expected_cost[i]).margin(1e-15));
  }
  const auto m = foxrl::backtest_metrics(b, p, 252);
  CHECK(m.cost_paid == Approx(0.005).epsilon(1e-12));
  CHECK(m.trades == 4);
  const double gross_sum = 0.01 + 0.02 - 0.03 + 0 - 0.01;
  CHECK(m.gross_total_return == Approx(std::expm1(gross_sum)).epsilon(1e-12));
  CHECK(m.total_return == Approx(std::expm1(gross_sum - 0.005)).epsilon(1e-12));
  CHECK(std::log1p(m.gross_total_return) - std::log1p(m.total_return) == Approx(m.cost_paid).epsilon(1e-9));
  CHECK_THROWS_WITH(foxrl::backtest_returns(r, {1, 1}, cost), Catch::Contains("5 market returns but 2 positions"));
}

TEST_CASE("evaluation report: every strategy's gross minus net equals its cost paid", "[eval]") {
  const auto series = zigzag_series(300);
  const std::vector<double> all_returns = foxrl::host_log_returns(series);
  std::vector<double> agent(200);
  for (std::size_t i = 0; i < agent.size(); ++i) agent[i] = static_cast<double>(static_cast<int>((i / 7) % 3) - 1);
  const int first = 50;
  const double cost = 0.0007;
  const auto report = foxrl::build_evaluation_report(series, first, agent, cost, 252, 9);
  REQUIRE(report.strategies.size() == 5);
  CHECK(report.bars == 200);
  CHECK(report.strategies[0].name == "agent (greedy DQN)");
  CHECK(report.strategies[0].positions == agent);
  for (const auto& s : report.strategies) {
    INFO(s.name);
    REQUIRE(s.positions.size() == 200);
    // Independent float64 pricing of the same positions on the same bars.
    double gross = 0;
    for (std::size_t i = 0; i < s.positions.size(); ++i) gross += s.positions[i] * all_returns[first + i];
    const double paid = reference_cost(s.positions, cost);
    CHECK(s.metrics.cost_paid == Approx(paid).epsilon(1e-12).margin(1e-15));
    CHECK(s.metrics.trades == reference_trades(s.positions));
    CHECK(std::log1p(s.metrics.gross_total_return) == Approx(gross).epsilon(1e-10).margin(1e-12));
    CHECK(std::log1p(s.metrics.gross_total_return) - std::log1p(s.metrics.total_return) ==
          Approx(paid).epsilon(1e-9).margin(1e-12));
    // The equity curve is the net one.
    CHECK(s.equity.back() == Approx(1 + s.metrics.total_return).epsilon(1e-12));
  }
  // Buy and hold trades once (the entry), flat never.
  CHECK(report.strategies[1].metrics.trades == 1);
  CHECK(report.strategies[1].metrics.cost_paid == Approx(cost));
  CHECK(report.strategies[2].metrics.trades == 0);
  CHECK(report.strategies[2].metrics.cost_paid == 0);
}

TEST_CASE("evaluation report at cost 0 has gross equal to net, and repricing keeps the positions", "[eval]") {
  const auto series = zigzag_series(120);
  std::vector<double> agent(100);
  for (std::size_t i = 0; i < agent.size(); ++i) agent[i] = (i % 5) < 2 ? 1.0 : ((i % 5) == 3 ? -1.0 : 0.0);
  const auto report = foxrl::build_evaluation_report(series, 20, agent, 0.0005, 252, 3);
  const auto free = report.repriced(0.0);
  REQUIRE(free.strategies.size() == report.strategies.size());
  CHECK(free.cost == 0);
  for (std::size_t k = 0; k < free.strategies.size(); ++k) {
    const auto& s = free.strategies[k];
    INFO(s.name);
    CHECK(s.positions == report.strategies[k].positions);
    CHECK(s.metrics.cost_paid == 0);
    CHECK(s.metrics.total_return == s.metrics.gross_total_return);
    CHECK(s.metrics.sharpe == s.metrics.gross_sharpe);
    CHECK(s.returns.net == s.returns.gross);
    // Gross does not depend on the cost.
    CHECK(s.metrics.gross_total_return == report.strategies[k].metrics.gross_total_return);
    CHECK(s.metrics.trades == report.strategies[k].metrics.trades);
  }
  // A higher cost lowers the net return of every strategy that trades by
  // exactly the extra cost (in log terms).
  const auto dear = report.repriced(0.002);
  for (std::size_t k = 0; k < dear.strategies.size(); ++k) {
    const auto& s = dear.strategies[k];
    INFO(s.name);
    CHECK(std::log1p(free.strategies[k].metrics.total_return) - std::log1p(s.metrics.total_return) ==
          Approx(reference_cost(s.positions, 0.002)).epsilon(1e-9).margin(1e-12));
  }
}

TEST_CASE("cost-sensitivity table has one row per cost and strategy", "[eval]") {
  const auto series = zigzag_series(80);
  const std::vector<double> agent(60, 1.0);
  const auto report = foxrl::build_evaluation_report(series, 10, agent, 0.0005, 252, 3);
  const std::string table = foxrl::cost_sensitivity_table(report, {0, 5, 20});
  std::size_t lines = 0;
  for (char c : table) lines += c == '\n';
  CHECK(lines == 2 + 3 * 5);  // title, header, 3 costs x 5 strategies
  CHECK_THAT(table, Catch::Contains("agent (greedy DQN)") && Catch::Contains("buy and hold"));
  // The agent is long throughout: it pays 20 bp once at 20 bp.
  CHECK_THAT(table, Catch::Contains("0.20%"));
  // The main table names the cost and the annualisation.
  CHECK_THAT(report.table(), Catch::Contains("cost 5 bp") && Catch::Contains("252 bars a year"));
}
