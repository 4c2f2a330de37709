#pragma once
// The evaluation of a saved run (`foxrl eval`): the greedy policy of a run
// of `foxrl train` or `foxrl train-offline` on a time split of its market
// data (or another CSV) next to buy-and-hold, always-flat, random and the
// crossover, or, for an env judged in episodes, the returns of greedy
// episodes. An offline run's learner is rebuilt with its dataset, which
// holds the env's config and normaliser.

#include <string>
#include <vector>

namespace foxrl {

struct EvaluateOptions {
  std::string run_dir;           ///< a run directory or one checkpoint generation of it
  std::string data;              ///< market: another OHLCV CSV to evaluate on (default: the run's own data)
  std::string split = "test";    ///< market: train, validation or test
  std::string weights = "last";  ///< "last": the newest checkpoint; "best": the run's best model
  std::string out_dir;           ///< where the files go (default: run_dir)
  bool allow_implausible_bars = false;
  int episodes = 100;            ///< episode-judged envs: greedy episodes, one per env
  std::vector<double> cost_bps;  ///< market: also a cost-sensitivity table at these costs (empty: none)
};

/// What an evaluation reports: the text `foxrl eval` prints (the table and
/// the files written).
struct EvaluationSummary {
  std::string text;
};

/// Evaluates the run `options` names and writes its files under names of
/// the split, checkpoint and data file (evaluation_<split>_epoch-<N>[_<data>]
/// .json, _backtest.csv, equity_....svg; evaluation_episodes_epoch-<N>.json),
/// so evaluations of other checkpoints or data never overwrite each other.
/// Bad options, runs or data: UsageError naming them. Runs on
/// Kokkos::DefaultExecutionSpace, in a context of its own.
EvaluationSummary evaluate_run(const EvaluateOptions& options);

}  // namespace foxrl
