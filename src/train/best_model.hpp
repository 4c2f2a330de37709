#pragma once
// The best model of a market training run: after every epoch the greedy
// policy trades the validation split (market/validation_backtest.hpp); when
// the metric the config key `select_by` names (net Sharpe ratio by default)
// beats every earlier epoch's, that epoch's weights and normaliser become
// the best model, kept beside the newest checkpoints:
//
//   <run>/best/epoch-00000007/{checkpoint.safetensors, checkpoint.json, best.json}
//
// A best model is published like a checkpoint generation (written aside,
// fsynced, one rename: train/checkpoint_store.hpp), so it is whole or absent,
// and it is not one of the `keep_checkpoints` generations: pruning them
// never removes it. Every checkpoint generation written after the first
// best holds a best.json too, the best model as of its epoch, so a resumed
// run goes on comparing against the right score; the best model a kept
// generation names stays on disk (with the newest one) until no kept
// generation names it, and best models newer than the generation a run
// resumes from are discarded (the resumed run redoes those epochs). A best
// model is used only where its files name the run and epoch that look for
// it: one copied in from another run is refused by name.

#include "market/validation_result.hpp"
#include "train/checkpoint_store.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace foxrl {

/// Which epoch's weights scored best on the validation split, and how.
struct BestModel {
  static constexpr const char* file = "best.json";
  std::int64_t epoch = 0;
  std::string select_by;  ///< the config key's metric: "sharpe" or "net_return"
  double score = 0;       ///< validation_score(validation, select_by)
  ValidationBacktest validation;
  std::string run_id;  ///< the run it belongs to (RunIdentity)

  /// The record as one JSON object (indented).
  std::string to_json() const;
  /// Writes `dir`/best.json atomically.
  void write(const std::string& dir) const;
  /// Reads `dir`/best.json; UsageError naming the file and field when it is
  /// malformed.
  static BestModel read(const std::string& dir);
};

/// The best models of a run directory (<run>/best/epoch-N/).
class BestModelStore {
 public:
  static constexpr const char* folder = "best";
  explicit BestModelStore(std::string run_dir);

  /// Publishes `best`: `write_model(dir)` writes the model's files into a
  /// staging directory, best.json is added, and one rename publishes it
  /// (replacing a best model of the same epoch). Then prune(`referenced`).
  std::string publish(const BestModel& best, const std::function<void(const std::string& dir)>& write_model,
                      const std::vector<std::int64_t>& referenced) const;
  /// Removes every best model but the newest and those of the epochs in
  /// `referenced` (the ones kept checkpoint generations name).
  void prune(const std::vector<std::int64_t>& referenced) const;
  /// Removes the best models of epochs after `epoch`.
  void discard_after(std::int64_t epoch) const;
  /// The directory of the best model of `epoch`; empty when there is none.
  std::string path_of(std::int64_t epoch) const;
  /// The directory of the best model `best` names (its epoch), after
  /// checking that what is there is that model of `best.run_id`'s run: its
  /// best.json and checkpoint.json name that run and epoch (UsageError
  /// naming the file and both ids otherwise; the weights are checked
  /// against checkpoint.json where they are loaded). Empty when there is
  /// none.
  std::string verified_path_of(const BestModel& best) const;
  /// The newest best model's directory (the run's best); UsageError naming
  /// `run_dir` when it has none.
  static std::string resolve(const std::string& run_dir);

 private:
  CheckpointStore store_;
};

/// The epochs of the best models that the checkpoint generations of
/// `checkpoints` name (their best.json; generations without one, or with an
/// unreadable one, name none).
std::vector<std::int64_t> best_epochs_named_by(const CheckpointStore& checkpoints);

}  // namespace foxrl
