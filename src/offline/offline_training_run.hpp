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

#include "dist/communicator.hpp"
#include "offline/offline_train_config.hpp"
#include "offline/offline_trainer.hpp"

#include <Kokkos_Core.hpp>

#include <functional>
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

  /// A run of `config` in `config.out_dir`; with `resume` it continues the
  /// newest intact checkpoint there (the saved config must equal `config`
  /// but for epochs, which may only grow, out_dir, dataset (a moved file)
  /// and keep_checkpoints); without, a directory holding a run is refused
  /// unless `overwrite`. Nothing happens before run().
  explicit OfflineTrainingRun(OfflineTrainConfig config, bool resume = false, bool overwrite = false);
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

  /// The config of the newest checkpoint of `out_dir` with `overrides`
  /// applied: what `train-offline --resume` continues.
  static OfflineTrainConfig saved_config(const std::string& out_dir);

 private:
  void say(const std::string& line);
  void resume_newest_generation();

  OfflineTrainConfig config_;
  bool resume_;
  bool overwrite_;
  bool started_ = false;
  std::shared_ptr<dist::Communicator> comm_;
  std::vector<std::function<void(const std::string&)>> sinks_;
  std::unique_ptr<OfflineTrainer<ExecSpace>> trainer_;
  struct Files;
  std::unique_ptr<Files> files_;
};

/// The two log lines of an offline epoch (no trailing newline).
std::string format_offline_epoch_log(const OfflineEpochRecord& r);
/// The epoch as one JSON object (no newline).
std::string offline_epoch_json(const OfflineEpochRecord& r);

}  // namespace foxrl
