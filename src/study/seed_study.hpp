#pragma once
// SeedStudy: one config trained with several seeds, one after another in
// one process (`foxrl train --seeds 1,2,3,4,5`), and what they say
// together (StudyReport).
//
//   out_dir/seed_1/ ... out_dir/seed_5/   each a complete run directory (a
//                                          TrainingRun of the config with
//                                          that seed), resumable, evaluable
//                                          and usable on its own
//   out_dir/study.json                     per-seed rows, the spread across
//                                          seeds, the bootstrap tests and
//                                          their settings
//
// A fresh study refuses an out_dir whose seed directories hold runs (or
// that holds a study.json), before any seed starts; `overwrite` replaces
// them seed by seed. With `resume` every seed is looked at first: a seed
// whose newest checkpoint reached the config's epochs (or was solved) and
// whose evaluation is written is complete and left alone; one with a
// checkpoint short of that is resumed (TrainingRun's resume: its saved
// config, the overrides on top, only `epochs` may grow); one without a
// checkpoint is started (replacing the logs of an attempt that stopped
// before its first checkpoint). Every seed's config is checked against its
// checkpoint before any seed trains, so a resume that cannot succeed
// changes nothing. Then the report is built from the seed directories'
// files (evaluation.json, evaluation_backtest.csv; CartPole: metrics.jsonl)
// so a complete seed and one trained now count alike.

#include "config/train_config.hpp"
#include "market/sharpe_difference_test.hpp"
#include "study/study_report.hpp"
#include "train/training_run.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace foxrl {

/// The seeds of `--seeds`: a comma-separated list of seeds and ranges
/// ("1,2,3", "1-5", "7,10-12"), each seed once. UsageError naming --seeds
/// and the value otherwise.
std::vector<std::uint64_t> parse_seed_list(const std::string& text);

/// "1,2,3": `seeds` as --seeds takes them.
std::string seed_list_text(const std::vector<std::uint64_t>& seeds);

/// The seeds whose run directories (seed_<N>/ holding a run) are in
/// `out_dir`, ascending; empty when none (or no such directory).
std::vector<std::uint64_t> seeds_in_study_directory(const std::string& out_dir);

/// Where each seed's config comes from.
struct SeedStudyConfig {
  /// The config (--config, --set); out_dir is the study's directory, seed
  /// is replaced by each seed.
  TrainConfig base;
  /// --set, applied on top of a resumed seed's saved config.
  std::vector<std::string> overrides;
  /// --config was given: a resumed seed takes `base` (with its seed)
  /// rather than its saved config, as `foxrl train --resume --config` does.
  bool base_from_file = false;
};

struct SeedStudyOptions {
  std::vector<std::uint64_t> seeds;
  bool resume = false;     ///< continue the study in out_dir (see the file comment)
  bool overwrite = false;  ///< replace the seeds' runs in out_dir
  BootstrapSettings bootstrap;
};

class SeedStudy {
 public:
  SeedStudy(SeedStudyConfig config, SeedStudyOptions options);

  /// Adds an observer (not owned; must outlive run()): it sees the study's
  /// lines and every seed's TrainingRun lines and epochs.
  void add_observer(TrainingObserver& observer);

  /// Trains the seeds that need it, then writes study.json and reports the
  /// table. Once per SeedStudy.
  StudyReport run();

  /// The run directory of `seed` in the study directory `out_dir`.
  static std::string seed_dir(const std::string& out_dir, std::uint64_t seed);

 private:
  void say(const std::string& line);

  SeedStudyConfig config_;
  SeedStudyOptions options_;
  std::vector<TrainingObserver*> observers_;
  bool started_ = false;
};

}  // namespace foxrl
