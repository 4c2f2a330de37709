#pragma once
// OfflineTrainingRun: a whole `foxrl train-offline` run, for any program
// that links foxrl, with `foxrl train`'s conventions: the run directory's
// train.log and metrics.jsonl (one JSON object per epoch), checkpoint
// generations every `checkpoint_every` epochs and after the last one
// (published atomically; the newest `keep_checkpoints` kept), resume from
// the newest intact generation with the logs cut back to it (bit for bit
// the uninterrupted run), refusal of a directory that holds a run unless
// overwritten, the learning curve of the greedy evaluation, and for a
// market dataset the final evaluation table against the baselines with
// `foxrl train`'s files (evaluation.json, evaluation_backtest.csv, equity.svg).
//
//   foxrl::OfflineTrainConfig config;
//   config.dataset = "cartpole.safetensors";
//   config.algo = "iql";
//   foxrl::OfflineTrainingRun run(config);
//   run.on_log([](const std::string& line) { std::cout << line << "\n"; });
//   const auto summary = run.run();
//
// Started by an MPI launcher (dist::world() has several ranks) it is one
// data-parallel run (OfflineTrainer): rank 0 speaks for it and writes the
// run directory (logs, metrics, checkpoints, evaluation files); every rank
// resumes from the same generation, and a resume needs the rank count that
// wrote it.

#include "config/offline_train_config.hpp"
#include "dist/communicator.hpp"
#include "train/checkpoint_store.hpp"
#include "train/offline_trainer.hpp"
#include "train/run_directory.hpp"
#include "train/run_loop.hpp"

#include <Kokkos_Core.hpp>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace foxrl {

/// How an offline run ended: the records of this process's epochs, and for
/// a market dataset the final evaluation on the test split.
struct OfflineTrainingSummary {
  std::vector<OfflineEpochRecord> epochs;
  std::int64_t first_epoch = 0;  ///< epochs already done when the run started (resume)
  std::optional<EvaluationReport> evaluation;
};

class OfflineTrainingRun {
 public:
  using ExecSpace = Kokkos::DefaultExecutionSpace;
  using Say = std::function<void(const std::string&)>;

  /// A run of `config` in `config.out_dir`, started as `start` says
  /// (train/run_loop.hpp). A resume continues the newest intact checkpoint
  /// there (the saved config must equal `config` but for epochs, which may
  /// only grow, out_dir, dataset (a moved file) and keep_checkpoints); a
  /// fresh run refuses a directory holding a run. Nothing happens before
  /// run().
  explicit OfflineTrainingRun(OfflineTrainConfig config, RunStart start = RunStart::fresh);
  /// The same with the start as two flags (both: UsageError).
  OfflineTrainingRun(OfflineTrainConfig config, bool resume, bool overwrite = false);
  ~OfflineTrainingRun();
  OfflineTrainingRun(const OfflineTrainingRun&) = delete;
  OfflineTrainingRun& operator=(const OfflineTrainingRun&) = delete;

  /// Called with every log line (train.log gets the same lines).
  void on_log(std::function<void(const std::string&)> sink);

  /// Runs the epochs up to config.epochs and writes the run directory.
  /// Once per OfflineTrainingRun.
  OfflineTrainingSummary run();

  /// The trainer, from run() on (LogicError before).
  OfflineTrainer<ExecSpace>& trainer();

  /// The config of the newest checkpoint of `out_dir`: what
  /// `train-offline --resume` continues.
  static OfflineTrainConfig saved_config(const std::string& out_dir);
  /// The config `foxrl train-offline` runs: `file` (or the defaults) with
  /// `overrides` on top, or for a resume without `file` the saved config
  /// with `overrides` on top; `start` comes back decided.
  static OfflineTrainConfig config_for(const std::string& file, const std::vector<std::string>& overrides,
                                       RunStart& start);

 private:
  friend class RunLoop<OfflineTrainingRun>;
  using Summary = OfflineTrainingSummary;

  // --- what the run loop asks (train/run_loop.hpp; TrainingRun documents each)
  const OfflineTrainConfig& config() const { return config_; }
  void validate() const;
  const RunFiles& files() const;
  void check_resume() const;
  void on_fresh_directory(bool) const {}
  void make_trainer();
  LoadedGeneration load(const std::string& dir);
  void discard_trainer() { trainer_.reset(); }
  void previous_epochs(OfflineTrainingSummary& summary, const std::string& metrics_path) const;
  std::vector<std::string> opening_lines(bool resumed) const;
  std::vector<std::string> after_open(bool) const { return {}; }
  std::int64_t epoch() const;
  OfflineEpochRecord run_epoch();
  /// Rank 0: an evaluated epoch's episodes into evaluation_episodes.json.
  void after_epoch(OfflineEpochRecord& record);
  void add(OfflineTrainingSummary& summary, const OfflineEpochRecord& record) const;
  std::vector<std::string> log_lines(const OfflineEpochRecord& record, bool first) const;
  std::string metrics_line(const OfflineEpochRecord& record) const;
  void notify_log(const std::string& line) const { say_to_sinks(line); }
  void notify_epoch(const OfflineEpochRecord&) const {}
  std::string stop_line(OfflineTrainingSummary&, const OfflineEpochRecord&) const { return ""; }
  /// Rank 0: the learner, its guards and the manifest (the learner's state
  /// is the same on every rank, so rank 0's is the run's).
  void save_checkpoint(const std::string& dir, const std::map<std::string, std::int64_t>& log_bytes);
  void join_checkpoint() const {}
  void after_checkpoint(const CheckpointStore&) const {}
  /// Rank 0: the evaluation curve, the test split's report (market), the outputs line.
  void finish(OfflineTrainingSummary& summary, const Say& say);
  void say_to_sinks(const std::string& line) const;

  OfflineTrainConfig config_;
  RunStart start_;
  bool started_ = false;
  std::shared_ptr<dist::Communicator> comm_;
  std::vector<std::function<void(const std::string&)>> sinks_;
  std::unique_ptr<OfflineTrainer<ExecSpace>> trainer_;
};

/// The two log lines of an offline epoch (no trailing newline).
std::string format_offline_epoch_log(const OfflineEpochRecord& r);
/// The epoch as one JSON object (no newline).
std::string offline_epoch_json(const OfflineEpochRecord& r);

}  // namespace foxrl
