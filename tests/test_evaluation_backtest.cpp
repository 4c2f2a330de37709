// The continuous backtest of the evaluation: one env from the split's first
// bar to its last, starting flat; its per-bar CSV (equity the cumulative
// product of exp(net)), a hand-computed small series, and the device env's
// rewards reproduced by the host pricing at every bar (no restart inside).
#include "core/execution_context.hpp"
#include "market/market_data.hpp"
#include "market/market_evaluation.hpp"
#include "train/run_spec.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct CsvRow {
  long bar;
  std::string timestamp;
  double position, market, gross, cost, net, equity;
};

std::vector<CsvRow> parse_backtest_csv(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  REQUIRE(line == "bar,timestamp,position,market_log_return,gross_log_return,cost,net_log_return,equity");
  std::vector<CsvRow> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream fields(line);
    std::string item;
    while (std::getline(fields, item, ',')) f.push_back(item);
    REQUIRE(f.size() == 8);
    rows.push_back({std::stol(f[0]), f[1], std::strtod(f[2].c_str(), nullptr), std::strtod(f[3].c_str(), nullptr),
                    std::strtod(f[4].c_str(), nullptr), std::strtod(f[5].c_str(), nullptr),
                    std::strtod(f[6].c_str(), nullptr), std::strtod(f[7].c_str(), nullptr)});
  }
  return rows;
}

foxrl::MarketSeries series_of_closes(const std::vector<double>& closes) {
  foxrl::MarketSeries s;
  s.source = "hand";
  for (std::size_t i = 0; i < closes.size(); ++i) {
    const double open = i == 0 ? closes[0] : closes[i - 1];
    s.timestamp.push_back(1577836800 + static_cast<std::int64_t>(i) * 86400);
    s.open.push_back(open);
    s.close.push_back(closes[i]);
    s.high.push_back(std::max(open, closes[i]));
    s.low.push_back(std::min(open, closes[i]));
    s.volume.push_back(1);
  }
  return s;
}

}  // namespace

TEST_CASE("backtest CSV of a hand-computed series: returns, costs and equity per bar", "[eval]") {
  // Closes 100, 110, 99, 99, 108.9: log returns ln 1.1, ln 0.9, 0, ln 1.1 from bar 1.
  const auto series = series_of_closes({100, 110, 99, 99, 108.9});
  const std::vector<double> positions = {1, -1, -1, 0};  // over bars 1 .. 4
  const double cost = 0.001;
  const auto report = foxrl::build_evaluation_report(series, 1, positions, cost, 252, 1);
  const auto rows = parse_backtest_csv(report.backtest_csv());
  REQUIRE(rows.size() == 4);
  // By hand: bar 1 long (+ln 1.1, enter: 1 x cost), bar 2 short (-ln 0.9,
  // reverse: 2 x cost), bar 3 short (0, no trade), bar 4 flat (0, exit: 1 x cost).
  const double gross[] = {std::log(1.1), -std::log(0.9), 0.0, 0.0};
  const double costs[] = {cost, 2 * cost, 0.0, cost};
  const char* dates[] = {"2020-01-02T00:00:00Z", "2020-01-03T00:00:00Z", "2020-01-04T00:00:00Z",
                         "2020-01-05T00:00:00Z"};
  double equity = 1;
  for (std::size_t i = 0; i < 4; ++i) {
    INFO("bar " << i + 1);
    CHECK(rows[i].bar == static_cast<long>(i) + 1);
    CHECK(rows[i].timestamp == dates[i]);
    CHECK(rows[i].position == positions[i]);
    CHECK(rows[i].gross == Approx(gross[i]).margin(1e-15));
    CHECK(rows[i].cost == Approx(costs[i]).margin(1e-18));
    CHECK(rows[i].net == Approx(gross[i] - costs[i]).margin(1e-15));
    equity *= std::exp(gross[i] - costs[i]);
    CHECK(rows[i].equity == Approx(equity).epsilon(1e-14));
  }
  // The chart's title names the data file without its directories.
  auto in_dir = series;
  in_dir.source = "/some/where/hand.csv";
  const auto titled = foxrl::build_evaluation_report(in_dir, 1, positions, cost, 252, 1).svg();
  CHECK_THAT(titled, Catch::Contains(">Equity on hand.csv bars 1 .. 4 (2020-01-02 .. 2020-01-05), net of costs<"));
  // 1.1 / 0.9 x exp(-4 cost).
  CHECK(rows.back().equity == Approx(1.1 / 0.9 * std::exp(-4 * cost)).epsilon(1e-14));
}

TEST_CASE("continuous backtest: one episode over the whole split, the env's rewards priced alike on the host",
          "[eval]") {
  using Exec = Kokkos::DefaultExecutionSpace;
  foxrl::ExecutionContext<Exec> context;
  const Exec& space = context.space();
  foxrl::TrainConfig config;
  config.synthetic = "benchmark";
  config.synthetic_bars = 3000;
  config.window = 16;
  config.hidden = {16};
  config.num_envs = 4;
  config.episode_length = 50;
  config.cost_bps = 5;
  config.batch_size = 8;
  config.buffer_capacity = 64;
  const foxrl::RunSpec spec = foxrl::run_spec(config);
  const auto market = foxrl::MarketEnv<Exec>::make_data(space, config);
  foxrl::DqnLearner<Exec> learner(space, foxrl::DqnLearner<Exec>::inference_config_for(config, spec.spaces(), 4));
  auto adapter = foxrl::make_adapter(space, spec);
  const foxrl::MarketSplit split = market.data.splits.test;
  REQUIRE(split.begin > spec.market_env.observation.min_decision_bar());
  const auto report = foxrl::evaluate_market(space, learner, adapter ? &*adapter : nullptr, market.features,
                                             market.data, split, spec.market_env, 5);
  // Every bar of the split, from its first to its last.
  CHECK(report.bars == split.size());
  CHECK(report.first_bar == split.begin);
  const auto rows = parse_backtest_csv(report.backtest_csv());
  REQUIRE(rows.size() == static_cast<std::size_t>(split.size()));
  CHECK(rows.front().bar == split.begin);
  CHECK(rows.back().bar == split.end - 1);
  // The CSV's equity is the cumulative product of exp(net).
  double equity = 1;
  for (const auto& row : rows) {
    equity *= std::exp(row.net);
    CHECK(row.equity == Approx(equity).epsilon(1e-10));
    CHECK(row.net == Approx(row.gross - row.cost).margin(1e-15));
  }
  // The env paid the agent, bar by bar, what the host pricing of the
  // positions says, starting flat and never restarting: float32 rounding
  // of a reward |p r - c| < 0.1 stays far below 1e-6.
  const auto& agent = report.strategies.front();
  REQUIRE(report.env_rewards.size() == agent.returns.net.size());
  long mismatches = 0;
  for (std::size_t i = 0; i < agent.returns.net.size(); ++i) {
    if (std::fabs(report.env_rewards[i] - agent.returns.net[i]) > 1e-6) ++mismatches;
  }
  CHECK(mismatches == 0);
  CHECK(agent.metrics.bars == split.size());
}
