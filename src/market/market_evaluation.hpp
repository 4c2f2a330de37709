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

#include "core/compat.hpp"
#include "core/error.hpp"
#include "kernels/market/evaluation_kernels.hpp"
#include "market/market_env.hpp"
#include "market/market_setup.hpp"
#include "market/signal_adapter.hpp"
#include "market/trading_metrics.hpp"
#include "views/nn/matrix.hpp"

#include <Kokkos_Core.hpp>

#include <cctype>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
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
  double cost = 0;                                  ///< per unit of position change, as a fraction
  PositionSet positions = PositionSet::long_short;  ///< the agent's and the baselines' (long_only: no shorts)
  double bars_per_year = 0;                         ///< the Sharpe ratios' annualisation
  std::string annualisation_basis = "measured";     ///< "measured" from the timestamps or "config"
  int first_bar = 0;                                ///< index of the first evaluated bar in the series
  std::vector<std::int64_t> timestamps;             ///< of each evaluated bar (unix seconds)
  std::vector<double> market_returns;               ///< log return of each evaluated bar
  std::vector<StrategyResult> strategies;           ///< agent first, then the baselines
  /// The agent's rewards as the env paid them on the device (float32): the
  /// host pricing of its positions must reproduce them bar by bar.
  std::vector<double> env_rewards;

  /// The same positions priced at another cost. The policy's observations
  /// do not contain the cost, so its greedy positions are the same at any
  /// cost: repricing them is re-evaluating it.
  EvaluationReport repriced(double cost) const;

  std::string table() const;  ///< fixed-width text table
  std::string json() const;   ///< one JSON object
  /// Equity curves; `weights` (e.g. "best weights, epoch 7"), if given,
  /// ends the title, for a report of other weights beside the run's last.
  std::string svg(const std::string& weights = "") const;
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
/// moves to one of the two other positions at random (long-only: to the
/// other one of flat and long). Flat before bar 0.
std::vector<double> random_positions_with_trades(int count, long trades, std::uint64_t seed,
                                                 PositionSet positions = PositionSet::long_short);

/// Moving-average crossover positions over bars [first, first + count):
/// long while the mean of the last `fast` closes before the bar is above the
/// mean of the last `slow`, short while below (long-only: flat), flat while
/// equal or while fewer than `slow` closes precede the bar (decided from
/// closes before the bar only: no look-ahead).
std::vector<double> crossover_positions(const std::vector<double>& closes, int first, int count, int fast, int slow,
                                        PositionSet positions = PositionSet::long_short);

/// Baseline strategies over bars [first, first + count) of `series`, with
/// `cost` per unit of position change: buy and hold, always flat, random
/// with the agent's number of trades, and a 20/100-bar moving-average
/// crossover, holding `positions` (buy and hold and flat are the same in
/// both sets).
std::vector<StrategyResult> baseline_strategies(const MarketSeries& series, int first, int count, double cost,
                                                double bars_per_year, long agent_trades, std::uint64_t seed,
                                                PositionSet positions = PositionSet::long_short);

/// The agent's row name in a DQN run's report.
inline constexpr const char* kDqnAgentName = "agent (greedy DQN)";

/// The row name of a learner's greedy policy in an evaluation report:
/// "agent (greedy DQN)" for `algo` "dqn".
inline std::string greedy_agent_name(const std::string& algo) {
  std::string upper = algo;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return "agent (greedy " + upper + ")";
}

/// The report of an agent that held `agent_positions` over bars [first,
/// first + agent_positions.size()) of `series`, with the baselines on the
/// same bars and costs, holding `positions`; `agent_name` names the
/// agent's row.
EvaluationReport build_evaluation_report(const MarketSeries& series, int first,
                                         const std::vector<double>& agent_positions, double cost, double bars_per_year,
                                         std::uint64_t seed, const std::string& agent_name = kDqnAgentName,
                                         PositionSet positions = PositionSet::long_short);

/// The run record of an evaluation on `market`.
EvaluationRecord evaluation_record(const MarketSetup& market);

/// Net and gross return and Sharpe, cost paid and trades of every strategy
/// at each of `costs_bps` (basis points per unit of position change).
std::string cost_sensitivity_table(const EvaluationReport& report, const std::vector<double>& costs_bps);

namespace detail {

// The parts of evaluate_market that do not depend on the policy, not
// templated on its type: every kernel of the evaluation is launched from
// here (through the env, the adapter and kernels::record_evaluation_step),
// never from evaluate_market itself, so its policy may be of any type, one
// local to the caller too (nvcc refuses such a type in the template
// arguments of a function that launches extended lambdas).

/// The first evaluated bar of `split` under `env_config`'s lookback, and
/// how many bars follow it; UsageError when fewer than two.
inline std::pair<int, int> evaluated_bars(const MarketSetup& market, const MarketSplit& split,
                                          const MarketEnvConfig& env_config) {
  const int lookback = env_config.observation.min_decision_bar();
  const int first = split.begin > lookback ? split.begin : lookback;
  const int length = split.end - first;
  if (length < 2) {
    throw UsageError(market.series.source + ": the evaluation split has " + std::to_string(length) +
                     " usable bars after a lookback of " + std::to_string(lookback));
  }
  return {first, length};
}

/// The device side of one continuous backtest: a single env from the first
/// evaluated bar to the split's last, the views its steps are recorded in,
/// and the observations the policy sees (normalised by the frozen adapter
/// when there is one; its previous mode is restored on destruction).
template <class ExecSpace>
class MarketBacktest {
 public:
  using memory_space = typename ExecSpace::memory_space;

  MarketBacktest(const ExecSpace& space, SignalAdapter<ExecSpace>* adapter, const MarketFeatures<ExecSpace>& features,
                 const MarketSplit& split, MarketEnvConfig env_config, int first, int length, std::uint64_t seed)
      : adapter_(adapter),
        was_frozen_(adapter != nullptr && adapter->frozen()),
        env_(space, features, split, 1, seed, with_episode_length(env_config, length)),
        rewards_(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::Evaluation::rewards"), length, 1),
        positions_(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::Evaluation::positions"), length, 1),
        actions_(Kokkos::view_alloc(space, "foxrl::Evaluation::actions"), 1) {
    env_.set_start(space, 0, first);
    if (adapter_ != nullptr) {
      normalized_ = obs_view(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::Evaluation::normalized"), 1,
                             env_.obs_dim());
      adapter_->set_frozen(true);
    }
  }
  ~MarketBacktest() {
    if (adapter_ != nullptr) adapter_->set_frozen(was_frozen_);
  }
  MarketBacktest(const MarketBacktest&) = delete;
  MarketBacktest& operator=(const MarketBacktest&) = delete;

  /// The states the policy decides the current bar from.
  ConstMatrix<memory_space> states(const ExecSpace& space) {
    if (adapter_ == nullptr) return ConstMatrix<memory_space>(env_.observations());
    adapter_->normalize(space, env_.observations(), normalized_);
    return ConstMatrix<memory_space>(normalized_);
  }
  /// Where the policy writes its action.
  const Kokkos::View<std::int32_t*, memory_space>& actions() const { return actions_; }
  /// Steps the env with actions() and records bar `t`'s reward and position.
  void step(const ExecSpace& space, int t) {
    env_.step(space, actions_);
    kernels::record_evaluation_step(space, t, env_.config().min_position(), env_.step_result().rewards, actions_,
                                    rewards_, positions_);
  }
  /// The recorded positions and the env's rewards, on the host. Fences.
  void copy_back(const ExecSpace& space, std::vector<double>& positions, std::vector<double>& rewards) const {
    auto h_positions = Kokkos::create_mirror_view(Kokkos::HostSpace(), positions_);
    auto h_rewards = Kokkos::create_mirror_view(Kokkos::HostSpace(), rewards_);
    Kokkos::deep_copy(space, h_positions, positions_);
    Kokkos::deep_copy(space, h_rewards, rewards_);
    compat::fence(space, "foxrl::Evaluation::copy_back");
    const auto n = static_cast<std::size_t>(positions_.extent(0));
    positions.resize(n);
    rewards.resize(n);
    for (std::size_t t = 0; t < n; ++t) {
      positions[t] = h_positions(t, 0);
      rewards[t] = h_rewards(t, 0);
    }
  }

 private:
  using obs_view = Kokkos::View<float**, Kokkos::LayoutRight, memory_space>;
  // One episode from the first bar to the last: the env is truncated (and
  // would restart) only after the split's last bar.
  static MarketEnvConfig with_episode_length(MarketEnvConfig c, int length) {
    c.episode_length = length;
    return c;
  }

  SignalAdapter<ExecSpace>* adapter_;
  bool was_frozen_;
  MarketEnv<ExecSpace> env_;
  Kokkos::View<float**, Kokkos::LayoutRight, memory_space> rewards_;
  Kokkos::View<std::int32_t**, Kokkos::LayoutRight, memory_space> positions_;
  Kokkos::View<std::int32_t*, memory_space> actions_;
  obs_view normalized_;
};

/// The report of the agent's recorded positions and rewards over bars
/// [first, first + positions.size()), with the baselines holding
/// `env_config`'s positions at its cost.
EvaluationReport market_evaluation_report(const MarketSetup& market, int first, const std::vector<double>& positions,
                                          const std::vector<double>& env_rewards, const MarketEnvConfig& env_config,
                                          std::uint64_t seed, const std::string& agent_name);

}  // namespace detail

/// Greedy evaluation of `policy` on `split`: one continuous backtest (see
/// the file comment) priced against the baselines. `policy` is any object
/// with greedy_actions(space, ConstMatrix states, View<int32*> actions_out)
/// that queues its work on `space` and takes one row (DqnLearner, an
/// OfflineAgent); it sees the observations normalised by `adapter` (if
/// any), which is frozen for the evaluation and restored to its previous
/// mode afterwards. `agent_name` names its row of the report.
template <class ExecSpace, class GreedyPolicy>
EvaluationReport evaluate_market(const ExecSpace& space, GreedyPolicy& policy, SignalAdapter<ExecSpace>* adapter,
                                 const MarketFeatures<ExecSpace>& features, const MarketSetup& market,
                                 const MarketSplit& split, const MarketEnvConfig& env_config, std::uint64_t seed,
                                 const std::string& agent_name = kDqnAgentName) {
  const auto [first, length] = detail::evaluated_bars(market, split, env_config);
  std::vector<double> positions, rewards;
  {
    detail::MarketBacktest<ExecSpace> backtest(space, adapter, features, split, env_config, first, length, seed);
    for (int t = 0; t < length; ++t) {
      policy.greedy_actions(space, backtest.states(space), backtest.actions());
      backtest.step(space, t);
    }
    backtest.copy_back(space, positions, rewards);
  }
  return detail::market_evaluation_report(market, first, positions, rewards, env_config, seed, agent_name);
}

}  // namespace foxrl
