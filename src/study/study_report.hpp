#pragma once
// The report of a seed study (`foxrl train --seeds 1,2,3`): what each
// seed's run directory records, read back from its files, and what the
// seeds say together.
//
// Market: per seed, the agent's metrics and buy and hold's from its
// evaluation.json, and the per-bar returns of evaluation_backtest.csv for
// the test of the agent's Sharpe against buy and hold's
// (sharpe_difference_test, stationary block bootstrap). Across seeds, per
// metric: median, mean with the 95% percentile bootstrap interval of the
// mean (seeds resampled i.i.d.), min..max and the interquartile range.
// When every seed evaluated the same bars (a CSV market; the built-in
// synthetic market is generated from the seed, so its seeds trade
// different bars), the seed-averaged per-bar net returns (the mean over
// the seeds of each bar's net log return) are tested against buy and hold
// and against zero. When every seed's run also kept its best weights (a
// validation split: evaluation.json's "best" section and
// evaluation_best_backtest.csv), the same report of the best weights
// follows, as `best_weights`. CartPole: the last epoch's mean return of the
// last 100 episodes, across seeds.
//
// Every interval and p-value draws from its own stream of the settings'
// seed (BootstrapRng), so a study's report is reproducible from its run
// directories and settings.

#include "market/bootstrap.hpp"
#include "market/sharpe_difference_test.hpp"
#include "market/trading_metrics.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace foxrl {

/// Which weights of each seed's run a study reports: the last (the run's
/// final checkpoint) or the best (by the run's validation score).
enum class StudyWeights { last, best };

/// One seed's market evaluation as its run directory records it.
struct SeedMarketResult {
  std::uint64_t seed = 0;
  std::string dir;
  std::int64_t best_epoch = 0;  ///< best weights: the epoch they come from
  std::string split;            ///< evaluation.json "split"
  long bars = 0;
  double cost = 0;  ///< per unit of position change
  double bars_per_year = 0;
  TradingMetrics agent;         ///< evaluation.json strategies[0]
  TradingMetrics buy_and_hold;  ///< evaluation.json "buy and hold"
  std::vector<std::string> timestamps;
  std::vector<double> market_returns;    ///< per bar, evaluation_backtest.csv
  std::vector<double> agent_net;         ///< per bar, evaluation_backtest.csv
  std::vector<double> buy_and_hold_net;  ///< per bar: long from the first bar, its entry cost on it
};

/// Reads `dir`/evaluation.json and `dir`/evaluation_backtest.csv (the best
/// weights: evaluation.json's "best" test section and
/// evaluation_best_backtest.csv); Error naming the file when one is
/// missing, malformed, or the two disagree (the backtest's net returns must
/// compound to the reported net return).
SeedMarketResult read_seed_market_result(std::uint64_t seed, const std::string& dir,
                                         StudyWeights weights = StudyWeights::last);

/// Whether `dir`/evaluation.json has a "best" section (the run kept best
/// weights); false when the file is missing or unreadable.
bool has_best_weights(const std::string& dir);

/// One seed's CartPole run: its last epoch record in metrics.jsonl.
struct SeedEpisodesResult {
  std::uint64_t seed = 0;
  std::string dir;
  std::int64_t epoch = 0;
  std::int64_t env_steps = 0;
  std::int64_t episodes = 0;
  double mean_return_last_100 = 0;
};

/// Reads the last epoch record of `dir`/metrics.jsonl; Error naming the
/// file when it has none.
SeedEpisodesResult read_seed_episodes_result(std::uint64_t seed, const std::string& dir);

/// One number's spread over the seeds.
struct AcrossSeeds {
  double median = 0, mean = 0, min = 0, max = 0;
  double q25 = 0, q75 = 0;  ///< the interquartile range (quantile type 7)
  Interval mean_interval;   ///< 95% percentile bootstrap of the mean
};

/// The summary of `values` (one per seed), the interval drawn from stream
/// `stream` of `settings.seed` with `settings.resamples` resamples.
AcrossSeeds summarize_across_seeds(const std::vector<double>& values, const BootstrapSettings& settings,
                                   std::uint64_t stream);

struct StudyReport {
  std::string env = "market";
  std::string out_dir;
  std::vector<std::uint64_t> seeds;
  BootstrapSettings settings;

  // Market.
  std::vector<SeedMarketResult> market;
  std::vector<SharpeDifference> versus_buy_and_hold;         ///< per seed
  std::vector<std::pair<std::string, AcrossSeeds>> metrics;  ///< the agent's, by metric
  bool same_bars = false;  ///< every seed evaluated the same bars: seed-averaged tests below
  SharpeDifference averaged_versus_buy_and_hold;
  SharpeDifference averaged_versus_zero;

  // Envs judged in greedy episodes (CartPole, ...).
  std::vector<SeedEpisodesResult> episodes;
  AcrossSeeds episodes_return;

  /// Plain sentences: what is and is not distinguishable at the 5% level.
  std::vector<std::string> conclusions;

  /// Market, when every seed kept best weights: the same report of them
  /// (its own per-seed rows, spread, tests and conclusions).
  StudyWeights weights = StudyWeights::last;
  std::shared_ptr<const StudyReport> best_weights;

  std::string table() const;  ///< per-seed rows, the spread across seeds, the conclusions
  std::string json() const;   ///< study.json
};

/// The report of the runs in `dirs` (one per seed, in the order of
/// `seeds`), of kind `env`, of their `weights`; a report of the last weights
/// carries the best weights' report when every seed has one.
StudyReport build_study_report(std::string env, const std::string& out_dir, const std::vector<std::uint64_t>& seeds,
                               const std::vector<std::string>& dirs, const BootstrapSettings& settings,
                               StudyWeights weights = StudyWeights::last);

}  // namespace foxrl
