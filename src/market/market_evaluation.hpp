#pragma once
// Evaluation of a greedy policy on a held-out time split of a market, next to
// the buy-and-hold, always-flat, random (with the agent's number of trades)
// and moving-average crossover baselines: the table `foxrl eval` and the end
// of `foxrl train` print, and the run record of evaluation.json.
//
// One continuous backtest over the split: a single env starts flat at the
// split's first decision bar and trades to its last bar, one greedy action
// per bar. Its positions are priced on the host in float64 (gross return,
// cost, net return, equity per bar), and the baselines on the same bars
// with the same cost model.

#include "agents/dqn/dqn_learner.hpp"
#include "kernels/market/evaluation_kernels.hpp"
#include "market/market_env.hpp"
#include "market/market_setup.hpp"
#include "market/signal_adapter.hpp"
#include "market/trading_metrics.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace foxrl {

/// One strategy on the evaluated bars: its positions and, priced at the
/// report's cost, its per-bar gross and net log returns and metrics.
struct StrategyResult {
  std::string name;
  TradingMetrics metrics;
  std::vector<double> positions;  ///< held over each bar (-1, 0, +1)
  BacktestReturns returns;        ///< per-bar gross, cost and net log returns
  std::vector<double> equity;     ///< net equity curve, 1 before the first bar
};

/// Where an evaluation's numbers come from, for evaluation.json.
struct EvaluationRecord {
  std::string data_origin;               ///< file path or synthetic generator
  std::string data_sha256;               ///< of the CSV file; empty for a built-in market
  long rows_loaded = 0;                  ///< bars of the loaded data
  long rows_skipped = 0;                 ///< bad rows skipped (skip_bad_rows)
  long first_row = 0;                    ///< loaded bars before start_date, dropped
  std::string start_date;                ///< config key start_date (empty: none)
  MarketSplits splits;                   ///< bar ranges of the series after start_date
  std::vector<std::string> split_dates;  ///< first and last date of train, validation, test ("" if empty)
  std::int64_t median_bar_seconds = 0;
};

struct EvaluationReport {
  std::string split_description;
  EvaluationRecord record;
  long bars = 0;
  double cost = 0;                               ///< per unit of position change, as a fraction
  double bars_per_year = 0;                      ///< the Sharpe ratios' annualisation
  std::string annualisation_basis = "measured";  ///< "measured" from the timestamps or "config"
  int first_bar = 0;                             ///< index of the first evaluated bar in the series
  std::vector<std::int64_t> timestamps;          ///< of each evaluated bar (unix seconds)
  std::vector<double> market_returns;            ///< log return of each evaluated bar
  std::vector<StrategyResult> strategies;        ///< agent first, then the baselines
  /// The agent's rewards as the env paid them on the device (float32): the
  /// host pricing of its positions must reproduce them bar by bar.
  std::vector<double> env_rewards;

  /// The same positions priced at another cost. The policy's observations
  /// do not contain the cost, so its greedy positions are the same at any
  /// cost: repricing them is re-evaluating it.
  EvaluationReport repriced(double cost) const;

  std::string table() const;  ///< fixed-width text table
  std::string json() const;   ///< one JSON object
  std::string svg() const;    ///< equity curves
  /// The agent's backtest, one row per bar: bar, timestamp, position,
  /// market, gross, cost and net log returns, and the net equity after the
  /// bar (1 before the first; the cumulative product of exp(net)).
  std::string backtest_csv() const;
};

/// Prices `positions` over `market_returns` at `cost` (float64 on the host).
StrategyResult price_strategy(const std::string& name, const std::vector<double>& market_returns,
                              const std::vector<double>& positions, double cost, double bars_per_year);

/// The baselines' parameters.
inline constexpr int kCrossoverFast = 20;   ///< bars of the crossover's fast moving average
inline constexpr int kCrossoverSlow = 100;  ///< bars of its slow moving average

/// Positions of a random strategy with exactly `trades` position changes
/// (the agent's), on bars drawn uniformly without replacement; each change
/// moves to one of the two other positions at random. Flat before bar 0.
std::vector<double> random_positions_with_trades(int count, long trades, std::uint64_t seed);

/// Moving-average crossover positions over bars [first, first + count):
/// long while the mean of the last `fast` closes before the bar is above the
/// mean of the last `slow`, short while below, flat while equal or while
/// fewer than `slow` closes precede the bar (decided from closes before
/// the bar only: no look-ahead).
std::vector<double> crossover_positions(const std::vector<double>& closes, int first, int count, int fast, int slow);

/// Baseline strategies over bars [first, first + count) of `series`, with
/// `cost` per unit of position change: buy and hold, always flat, random
/// with the agent's number of trades, and a 20/100-bar moving-average
/// crossover.
std::vector<StrategyResult> baseline_strategies(const MarketSeries& series, int first, int count, double cost,
                                                double bars_per_year, long agent_trades, std::uint64_t seed);

/// The report of an agent that held `agent_positions` over bars [first,
/// first + agent_positions.size()) of `series`, with the baselines on the
/// same bars and costs.
EvaluationReport build_evaluation_report(const MarketSeries& series, int first,
                                         const std::vector<double>& agent_positions, double cost, double bars_per_year,
                                         std::uint64_t seed);

/// The run record of an evaluation on `market`.
EvaluationRecord evaluation_record(const MarketSetup& market);

/// Net and gross return and Sharpe, cost paid and trades of every strategy
/// at each of `costs_bps` (basis points per unit of position change).
std::string cost_sensitivity_table(const EvaluationReport& report, const std::vector<double>& costs_bps);

/// Greedy evaluation of `learner` on `split`; the adapter (if any) is frozen
/// for the evaluation and restored to its previous mode afterwards.
template <class ExecSpace>
EvaluationReport evaluate_market(const ExecSpace& space, DqnLearner<ExecSpace>& learner,
                                 SignalAdapter<ExecSpace>* adapter, const MarketFeatures<ExecSpace>& features,
                                 const MarketSetup& market, const MarketSplit& split, MarketEnvConfig env_config,
                                 std::uint64_t seed) {
  using Mem = typename ExecSpace::memory_space;
  const int lookback = env_config.observation.min_decision_bar();
  const int first = split.begin > lookback ? split.begin : lookback;
  const int length = split.end - first;
  if (length < 2) {
    throw UsageError(market.series.source + ": the evaluation split has " + std::to_string(length) +
                     " usable bars after a lookback of " + std::to_string(lookback));
  }
  // One episode from the first bar to the last: the env is truncated (and
  // would restart) only after the split's last bar.
  env_config.episode_length = length;
  MarketEnv<ExecSpace> env(space, features, split, 1, seed, env_config);
  env.set_start(space, 0, first);

  Kokkos::View<float**, Kokkos::LayoutRight, Mem> rewards(
      Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::Evaluation::rewards"), length, 1);
  Kokkos::View<std::int32_t**, Kokkos::LayoutRight, Mem> positions(
      Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::Evaluation::positions"), length, 1);
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> normalized(
      Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::Evaluation::normalized"), 1, env.obs_dim());
  Kokkos::View<std::int32_t*, Mem> actions(Kokkos::view_alloc(space, "foxrl::Evaluation::actions"), 1);
  const bool was_frozen = adapter != nullptr && adapter->frozen();
  if (adapter != nullptr) adapter->set_frozen(true);
  for (int t = 0; t < length; ++t) {
    if (adapter != nullptr) {
      adapter->normalize(space, env.observations(), normalized);
      learner.greedy_actions(space, normalized, actions);
    } else {
      learner.greedy_actions(space, env.observations(), actions);
    }
    env.step(space, actions);
    kernels::record_evaluation_step(space, t, env.step_result().rewards, actions, rewards, positions);
  }
  if (adapter != nullptr) adapter->set_frozen(was_frozen);
  auto h_positions = Kokkos::create_mirror_view(Kokkos::HostSpace(), positions);
  auto h_rewards = Kokkos::create_mirror_view(Kokkos::HostSpace(), rewards);
  Kokkos::deep_copy(space, h_positions, positions);
  Kokkos::deep_copy(space, h_rewards, rewards);
  compat::fence(space, "foxrl::Evaluation::copy_back");

  const double per_year = market.annualisation.bars_per_year;
  std::vector<double> agent_positions(static_cast<std::size_t>(length));
  for (int t = 0; t < length; ++t) agent_positions[static_cast<std::size_t>(t)] = h_positions(t, 0);
  // The agent is priced on the host in float64 from its positions, like the
  // baselines: the device rewards (float32) are not needed for the report.
  EvaluationReport report =
      build_evaluation_report(market.series, first, agent_positions, env_config.cost, per_year, seed);
  report.annualisation_basis = market.annualisation.basis;
  report.record = evaluation_record(market);
  report.env_rewards.resize(static_cast<std::size_t>(length));
  for (int t = 0; t < length; ++t) report.env_rewards[static_cast<std::size_t>(t)] = h_rewards(t, 0);
  return report;
}

}  // namespace foxrl
