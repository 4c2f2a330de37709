#pragma once
// The report of a walk-forward evaluation: every fold's train and test
// dates and its test backtest (agent and buy and hold), and the folds' test
// periods stitched into one out-of-sample backtest (walk_forward.json,
// walk_forward_backtest.csv, walk_forward_equity.svg and the printed table).
// Host code, from the folds' evaluation reports.
//
// Stitching concatenates the folds' per-bar returns in time: the agent
// starts each fold flat, as the fold's own continuous backtest does, so
// entering the market at a fold's first bar is a trade that pays its cost
// even when the previous fold ended in the same position. The stitched
// equity is therefore the product of the folds' net equity curves, and its
// trades the sum of theirs. Bars between test periods (step longer than
// test) are not part of it.

#include "market/market_evaluation.hpp"
#include "market/trading_metrics.hpp"
#include "study/walk_forward_folds.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace foxrl {

/// One fold's outcome.
struct WalkForwardFoldResult {
  WalkForwardFold fold;                          ///< bar ranges in the walk-forward's series
  std::string dir;                               ///< the fold's run directory, relative to out_dir ("fold_0")
  std::int64_t train_first = 0, train_last = 0;  ///< timestamps of the train period's first and last bar
  std::int64_t test_first = 0, test_last = 0;    ///< and of the test period's
  EvaluationReport evaluation;                   ///< the fold's test backtest and baselines
};

/// The folds' test backtests as one, bar by bar.
struct StitchedBacktest {
  std::vector<std::int64_t> timestamps;
  std::vector<int> fold;          ///< the fold each bar was tested in
  std::vector<double> positions;  ///< the agent's
  BacktestReturns agent;
  BacktestReturns buy_and_hold;
  std::vector<double> agent_equity;         ///< net, 1 before the first bar
  std::vector<double> buy_and_hold_equity;  ///< net, 1 before the first bar
  TradingMetrics agent_metrics;             ///< trades and turnover count each fold's entry from flat
  TradingMetrics buy_and_hold_metrics;
};

/// The stitched backtest of `folds` (in time order), Sharpe ratios
/// annualised over `bars_per_year`. LogicError when folds are out of order
/// or a report lacks the agent or buy and hold.
StitchedBacktest stitch_walk_forward(const std::vector<WalkForwardFoldResult>& folds, double bars_per_year);

/// What the walk-forward was run on, for the report's header.
struct WalkForwardContext {
  std::string spec;              ///< "train=5y,test=1y,step=1y"
  std::string data_origin;       ///< file path or synthetic generator
  std::string data_sha256;       ///< of the CSV file; empty for a built-in market
  std::int64_t bar_seconds = 0;  ///< the data's median bar spacing (dates are printed with times below a day)
  double cost = 0;               ///< per unit of position change, as a fraction
  double bars_per_year = 0;      ///< every fold's and the aggregate's annualisation
  std::string annualisation_basis;
  PositionSet positions = PositionSet::long_short;
};

/// The per-fold and aggregate table that `foxrl train --walk-forward` prints.
std::string walk_forward_table(const WalkForwardContext& context, const std::vector<WalkForwardFoldResult>& folds,
                               const StitchedBacktest& stitched);
/// walk_forward.json: one JSON object.
std::string walk_forward_json(const WalkForwardContext& context, const std::vector<WalkForwardFoldResult>& folds,
                              const StitchedBacktest& stitched);
/// walk_forward_backtest.csv: timestamp, fold, position, gross, cost and net
/// log return, agent equity and buy-and-hold equity after each bar.
std::string walk_forward_csv(const StitchedBacktest& stitched);
/// walk_forward_equity.svg: agent and buy-and-hold equity, log scale.
std::string walk_forward_svg(const WalkForwardContext& context, const StitchedBacktest& stitched);

}  // namespace foxrl
