#pragma once
// What a training run reports: one EpochRecord per epoch, printed as log
// lines ("GPU collected N experiences", "Epoch K complete in X s") and
// written as one JSON object per line to metrics.jsonl; a progress line on
// long epochs when stdout is a terminal.

#include "market/validation_result.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace foxrl {

struct EpochRecord {
  std::int64_t epoch = 0;
  double seconds = 0;
  std::int64_t env_steps = 0;                                ///< since the start of the run
  std::int64_t experiences = 0;                              ///< transitions inserted into replay since the start
  std::int64_t updates = 0;                                  ///< gradient steps since the start
  double env_steps_per_s = 0;                                ///< this epoch
  double updates_per_s = 0;                                  ///< this epoch
  double loss = 0, mean_q = 0, td_error = 0, grad_norm = 0;  ///< means over the epoch's applied updates
  std::int64_t rejected_updates = 0;                         ///< this epoch's updates the training guard rejected
  std::int64_t rejected_total = 0;                           ///< since the start: rejected updates
  std::int64_t nonfinite_total = 0;                          ///< of those: non-finite loss, gradient or weights
  std::int64_t spikes_total = 0;                             ///< of those: loss spikes
  std::int64_t restores = 0;                                 ///< since the start: snapshot restores
  double lr = 0;                                             ///< learning rate now (after the guard's decays)
  double epsilon = 0, beta = 0;
  std::int64_t episodes = 0;        ///< finished episodes since the start
  double mean_return_last_100 = 0;  ///< of the last (up to) 100 finished episodes
  std::string backend;
  /// Market runs with a validation split: the greedy policy's backtest on
  /// it after this epoch (TrainingRun; the trainer never sets it).
  std::optional<ValidationBacktest> validation;
  bool best = false;  ///< the validation metric improved: this epoch's weights are the best model
};

/// The log lines of one epoch (two lines, a third with the validation
/// backtest; no trailing newline).
std::string format_epoch_log(const EpochRecord& r);
/// The epoch as one JSON object (no newline).
std::string epoch_json(const EpochRecord& r);

/// A single self-overwriting progress line on stderr, shown only when stderr
/// is a terminal and the epoch takes longer than a moment.
class ProgressLine {
 public:
  explicit ProgressLine(std::int64_t total);
  void tick(std::int64_t done);
  void finish();

 private:
  std::int64_t total_;
  bool enabled_;
  bool shown_ = false;
  double start_;
  double last_;
};

}  // namespace foxrl
