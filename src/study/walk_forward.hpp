#pragma once
// Walk-forward evaluation of the market agent (`foxrl train --walk-forward
// train=N,test=M,step=S`): the data is cut into folds
// (study/walk_forward_folds.hpp), each fold a normal TrainingRun into
// out_dir/fold_<k>/ that trains on its train period and is evaluated on the
// test period right after it, and the folds' test backtests are stitched
// into one out-of-sample backtest (study/walk_forward_report.hpp) written to
// out_dir/walk_forward.json, walk_forward_backtest.csv and
// walk_forward_equity.svg.
//
// A fold's config is the run's config with the keys start_date (its first
// train bar), train_end (its last train bar), test_start and test_end (its
// test bars) set to the bars' timestamps, out_dir set to the fold's
// directory and, unless the config sets bars_per_year, bars_per_year set
// to the value measured once over the whole data, so that the folds' and
// the aggregate's Sharpe ratios share one annualisation. Each fold sees
// the data from its first train bar on (its features start there), trains
// with the run's seed and has no validation period.
//
//   foxrl::WalkForwardPlan plan = foxrl::plan_walk_forward(config,
//   foxrl::parse_walk_forward_spec("train=5y,test=1y,step=1y")); foxrl::WalkForwardResult result =
//   foxrl::run_walk_forward(plan, observer);

#include "config/train_config.hpp"
#include "market/market_setup.hpp"
#include "study/walk_forward_folds.hpp"
#include "study/walk_forward_report.hpp"
#include "study/walk_forward_spec.hpp"
#include "train/training_run.hpp"

#include <vector>

namespace foxrl {

/// How a walk-forward starts in its out_dir.
enum class WalkForwardStart {
  fresh,      ///< a new walk-forward; one already in out_dir is refused
  overwrite,  ///< a new one replacing the folds and report in out_dir
  /// Continue the one whose plan out_dir/study_manifest.json records, fold
  /// by fold: a finished fold (its last checkpoint, its evaluation written
  /// after it) is read back, not trained again; one with a checkpoint is
  /// resumed (TrainingRun's resume); one without is started again.
  resume,
};

/// Every fold of a walk-forward, computed and checked against the data.
struct WalkForwardPlan {
  WalkForwardSpec spec;
  TrainConfig config;  ///< the run's: out_dir holds the folds and the report
  WalkForwardStart start = WalkForwardStart::fresh;
  MarketSetup market;  ///< the data (from the config's start_date on)
  std::vector<WalkForwardFold> folds;
  std::vector<TrainConfig> fold_configs;  ///< one per fold, in order
  WalkForwardContext context;             ///< what the report's header says
};

/// Plans the walk-forward of `config` (a market config): loads the data,
/// computes every fold and checks each against the data and the config
/// before anything trains: UsageError (naming --walk-forward, the fold and
/// its dates, or the key) when the env is not the market, when the config
/// sets train_end, test_start or test_end (the folds set them), when not
/// even one fold fits the data, when a fold's train period is too short for
/// one episode after the observation window or its test period holds fewer
/// than 2 bars, or, when fresh, when out_dir already holds a walk-forward
/// or a study (its walk_forward.json, a fold directory, study_manifest.json).
WalkForwardPlan plan_walk_forward(const TrainConfig& config, const WalkForwardSpec& spec, WalkForwardStart start);
/// The same, fresh or (`overwrite`) overwriting.
WalkForwardPlan plan_walk_forward(const TrainConfig& config, const WalkForwardSpec& spec, bool overwrite = false);

/// What a walk-forward produced.
struct WalkForwardResult {
  std::vector<WalkForwardFoldResult> folds;
  StitchedBacktest stitched;
};

/// Trains and evaluates the folds of `plan` one after the other, then
/// writes the report into out_dir and returns it. The plan is recorded in
/// out_dir/study_manifest.json before the first fold starts, and the
/// walk-forward holds out_dir's StudyLock while it runs; a resume refuses
/// (UsageError naming the fold and key) folds that differ from the
/// recorded ones (other data). `observer` sees the
/// walk-forward's own lines ("walk-forward fold 2 of 5: train ..., test
/// ...", the report table) and every fold run's log lines and epochs.
/// Under several ranks every rank trains every fold; rank 0 alone writes
/// the report and reports to the observer.
WalkForwardResult run_walk_forward(const WalkForwardPlan& plan, TrainingObserver& observer);

}  // namespace foxrl
