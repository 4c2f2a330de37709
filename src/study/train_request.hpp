#pragma once
// What `foxrl train` does with its arguments, for any program that links
// foxrl: one run (train/training_run.hpp), a seed study (one run per seed,
// study/seed_study.hpp) or a walk-forward (one run per fold,
// study/walk_forward.hpp), with the config from a file and `--set`
// overrides, started fresh, overwriting, resuming or auto-resuming.

#include "study/study_report.hpp"
#include "train/run_loop.hpp"
#include "train/training_log.hpp"
#include "train/training_run.hpp"

#include <optional>
#include <string>
#include <vector>

namespace foxrl {

struct TrainRequest {
  std::string config_file;             ///< a JSON config (empty: the defaults, or a resumed run's own)
  std::vector<std::string> overrides;  ///< "key=value", applied on top
  RunStart start = RunStart::fresh;
  /// A seed study: "1,2,3" or "1-5" (empty: one run of the config's seed).
  std::string seeds;
  BootstrapSettings bootstrap;  ///< the seed study's bootstrap
  /// A walk-forward: "train=N,test=M,step=S" (bars or durations).
  std::optional<std::string> walk_forward;
};

/// Runs what `request` asks for, telling `observer` every log line and
/// epoch record. A resume of a directory that holds a seed study, seeds
/// given with --set seed, and similar mix-ups: UsageError saying what to
/// do instead.
void run_train_request(const TrainRequest& request, TrainingObserver& observer);

}  // namespace foxrl
