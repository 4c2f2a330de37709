#pragma once
// TrainingRun: a whole training run as `foxrl train` runs it, for any
// program that links foxrl: the epoch loop over a DqnTrainer, checkpoints
// (every `checkpoint_every` epochs, after the last epoch and once solved),
// the `target_return` stop (mean return of the last 100 episodes), the run
// directory's train.log and metrics.jsonl (on resume, records after the
// checkpoint are dropped first), the learning-curve SVGs, and, for the
// market, a validation backtest after every epoch that keeps the best
// model beside the checkpoints (run/best_model.hpp) and at the end the
// evaluation of the greedy policy on the test split, of the last weights
// (evaluation.json, equity.svg) and of the best model (the "best" section
// of evaluation.json, evaluation_best_backtest.csv, equity_best.svg). Observers see every log line and every
// EpochRecord; the CLI's train command is one of them (it prints the lines).
//
//   foxrl::TrainConfig config;            // or TrainConfig::from_json_file(...)
//   config.env = foxrl::EnvKind::cartpole;
//   foxrl::TrainingRun run(config);
//   MyObserver observer;                  // a TrainingObserver
//   run.add_observer(observer);
//   const auto summary = run.run();
//
// Runs on Kokkos::DefaultExecutionSpace, in the trainer's own instance
// (DqnTrainer<Space> drives one epoch at a time on any other space).
//
// Started by mpirun or srun (dist::world() has several ranks), every rank
// runs the same TrainingRun: data-parallel training (DqnTrainer), with
// rank 0 alone writing the run directory (lock, logs, metrics, config,
// charts, evaluation, checkpoints but for the other ranks' trainer states)
// and reporting to observers. Every rank takes the same decisions (epoch
// records are reduced over the ranks), so all stop together. A program
// that runs it under mpirun must end every rank when one throws
// (dist::abort_if_distributed, as foxrl's main does): the others would
// wait for it in their next all-reduce.

#include "agents/dqn/dqn_trainer.hpp"
#include "config/train_config.hpp"
#include "dist/communicator.hpp"
#include "market/market_evaluation.hpp"
#include "run/best_model.hpp"
#include "run/checkpoint_store.hpp"
#include "run/run_manifest.hpp"
#include "run/training_log.hpp"

#include <Kokkos_Core.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace foxrl {

/// Receives what a TrainingRun reports, as it happens. Both methods do
/// nothing unless overridden.
class TrainingObserver {
 public:
  virtual ~TrainingObserver() = default;
  /// One line of the run's log, without newline (train.log gets the same).
  virtual void on_log(const std::string& line) { (void)line; }
  /// An epoch's record, after its metrics.jsonl line and before its
  /// checkpoint.
  virtual void on_epoch(const EpochRecord& record) { (void)record; }
};

/// How a run ended.
struct TrainingSummary {
  /// Every epoch of the run directory: after a resume, the kept records
  /// (epoch, loss and mean return only: what metrics.jsonl held) first.
  std::vector<EpochRecord> epochs;
  bool solved = false;                         ///< stopped by `target_return`
  std::optional<EvaluationReport> evaluation;  ///< market: the test split's, of the last weights
  /// Market runs with a validation split: the best model (the epoch whose
  /// validation backtest scored best, run/best_model.hpp) and its
  /// evaluation on the test split.
  std::optional<BestModel> best;
  std::optional<EvaluationReport> best_evaluation;
};

class TrainingRun {
 public:
  using ExecSpace = Kokkos::DefaultExecutionSpace;

  /// A run of `config` in `config.out_dir` (created by run()). With
  /// `resume`, it continues the checkpoint there: the saved config must
  /// match `config` but for `epochs` (which may only grow) and `out_dir`
  /// (UsageError naming the key). Without `resume`, a directory that
  /// already holds a run is refused (UsageError naming the file), unless
  /// `overwrite`, which removes that run's files first (only the files a
  /// run writes; anything else in the directory stays). Nothing happens
  /// before run().
  explicit TrainingRun(TrainConfig config, bool resume = false, bool overwrite = false);
  ~TrainingRun();
  TrainingRun(const TrainingRun&) = delete;
  TrainingRun& operator=(const TrainingRun&) = delete;

  /// Adds an observer (not owned; must outlive run()).
  void add_observer(TrainingObserver& observer);

  /// Runs the epochs up to `config.epochs` (or until solved), writes the
  /// run directory and returns how it ended. Once per TrainingRun.
  TrainingSummary run();

  const TrainConfig& config() const { return config_; }
  /// The trainer, from run() on (LogicError before).
  DqnTrainer<ExecSpace>& trainer();

 private:
  void say(const std::string& line);
  /// Loads the newest generation that passes every check into a new
  /// trainer, falling back to older ones (with a warning; the failed ones
  /// are set aside); UsageError listing why each failed if none does.
  RunManifest resume_newest_generation(const CheckpointStore& store);
  /// A trainer for config_; an allocation failure becomes an Error with the
  /// sizes asked for and the memory available.
  std::unique_ptr<DqnTrainer<ExecSpace>> make_trainer() const;
  /// One epoch; a failure that is not foxrl's own (a device error) becomes
  /// an Error saying which checkpoint is intact and how to name the kernel.
  EpochRecord run_one_epoch(std::int64_t checkpointed);
  /// Rank 0, market runs: the epoch's validation backtest into `record`
  /// and, when it scores best so far, the epoch's model published as the
  /// best one.
  void validate_epoch(EpochRecord& record, const CheckpointStore& store);
  /// Rank 0, market runs: the test split's evaluation of the last weights
  /// and of the best model, printed and written to the run directory.
  void evaluate_test_split(TrainingSummary& summary);

  TrainConfig config_;
  bool resume_;
  bool overwrite_;
  bool started_ = false;
  std::vector<TrainingObserver*> observers_;
  std::unique_ptr<DqnTrainer<ExecSpace>> trainer_;
  std::shared_ptr<dist::Communicator> comm_;
  std::optional<BestModel> best_;   ///< the best model so far (rank 0)
  std::string resumed_generation_;  ///< the checkpoint generation a resume loaded
  struct Files;
  std::unique_ptr<Files> files_;
};

}  // namespace foxrl
