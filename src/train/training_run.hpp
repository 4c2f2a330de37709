#pragma once
// TrainingRun: a whole training run as `foxrl train` runs it, for any
// program that links foxrl: the one epoch loop (train/run_loop.hpp: start,
// resume, logs, cadence) over the online trainer of `algo`, checkpoints
// (every `checkpoint_every` epochs, after the last epoch and once solved),
// the `target_return` stop (mean return of the last 100 episodes), the run
// directory's train.log and metrics.jsonl (on resume, records after the
// checkpoint are dropped first), the learning-curve SVGs, and, for the
// market, a validation backtest after every epoch that keeps the best
// model beside the checkpoints (train/best_model.hpp) and at the end the
// evaluation of the greedy policy on the test split, of the last weights
// (evaluation.json, equity.svg) and of the best model (the "best" section
// of evaluation.json, evaluation_best_backtest.csv, equity_best.svg). Observers see every log line and every
// EpochRecord; the CLI's train command is one of them (it prints the lines).
//
//   foxrl::TrainConfig config;            // or TrainConfig::from_json_file(...)
//   config.env = "cartpole";
//   foxrl::TrainingRun run(config);
//   MyObserver observer;                  // a TrainingObserver
//   run.add_observer(observer);
//   const auto summary = run.run();
//
// Runs on Kokkos::DefaultExecutionSpace, in the trainer's own instance
// (OnlineTrainer<Space, Learner> drives one epoch at a time on any other space).
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

#include "config/train_config.hpp"
#include "dist/communicator.hpp"
#include "market/market_evaluation.hpp"
#include "train/best_model.hpp"
#include "train/checkpoint_store.hpp"
#include "train/online_trainer.hpp"
#include "train/run_loop.hpp"
#include "train/run_manifest.hpp"
#include "train/training_log.hpp"

#include <Kokkos_Core.hpp>

#include <functional>
#include <map>
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
  /// validation backtest scored best, train/best_model.hpp) and its
  /// evaluation on the test split.
  std::optional<BestModel> best;
  std::optional<EvaluationReport> best_evaluation;
};

class TrainingRun {
 public:
  using ExecSpace = Kokkos::DefaultExecutionSpace;
  using Say = std::function<void(const std::string&)>;

  /// A run of `config` in `config.out_dir` (created by run()), started as
  /// `start` says (train/run_loop.hpp: fresh, overwrite, resume or
  /// auto_resume). A resume continues the checkpoint there: the saved
  /// config must match `config` but for `epochs` (which may only grow),
  /// `out_dir` and `keep_checkpoints` (UsageError naming the key). A fresh
  /// run refuses a directory that already holds a run (UsageError naming
  /// the file); overwrite removes that run's files first (only the files a
  /// run writes; anything else in the directory stays). Nothing happens
  /// before run().
  explicit TrainingRun(TrainConfig config, RunStart start = RunStart::fresh);
  /// The same with the start as two flags (both: UsageError).
  TrainingRun(TrainConfig config, bool resume, bool overwrite = false);
  ~TrainingRun();
  TrainingRun(const TrainingRun&) = delete;
  TrainingRun& operator=(const TrainingRun&) = delete;

  /// The config `foxrl train` runs: `file` (or the defaults) with
  /// `overrides` on top, or for a resume without `file` the saved config of
  /// out_dir's newest checkpoint with `overrides` on top. `start` comes
  /// back decided (auto_resume: resume or overwrite).
  static TrainConfig config_for(const std::string& file, const std::vector<std::string>& overrides, RunStart& start);

  /// Removes the run in `dir` as an overwriting run does (its files,
  /// checkpoint generations and best models; anything else stays), holding
  /// its lock; nothing when `dir` does not exist. A study replacing its
  /// seeds does so before it records its new plan.
  static void clear_directory(const std::string& dir);

  /// Adds an observer (not owned; must outlive run()).
  void add_observer(TrainingObserver& observer);

  /// Runs the epochs up to `config.epochs` (or until solved), writes the
  /// run directory and returns how it ended. Once per TrainingRun.
  TrainingSummary run();

  const TrainConfig& config() const { return config_; }
  /// The trainer, from run() on (LogicError before).
  OnlineTrainerBase<ExecSpace>& trainer();

 private:
  friend class RunLoop<TrainingRun>;
  using Summary = TrainingSummary;

  // --- what the run loop asks (train/run_loop.hpp), in the order it asks ---
  /// The config, checked: its values and its env (a registered one).
  void validate() const;
  /// The files a run writes into its directory (a fresh run refuses or,
  /// overwriting, removes them).
  const RunFiles& files() const;
  /// Before a resume changes anything: the saved config agrees with this
  /// one and the rank count with the saved run's.
  void check_resume() const;
  /// A fresh directory: an overwrite also removes the best models.
  void on_fresh_directory(bool overwrite) const;
  /// A new trainer (an allocation failure said with the sizes asked for).
  void make_trainer();
  /// A new trainer resumed from the generation in `dir`, with its best
  /// model (which must be of the same run); UsageError when it does not
  /// load.
  LoadedGeneration load(const std::string& dir);
  void discard_trainer() { trainer_.reset(); }
  /// A resumed run's epochs so far (metrics.jsonl), for the learning curves.
  void previous_epochs(TrainingSummary& summary, const std::string& metrics_path) const;
  /// The lines that open the log: the run, the market, the ranks' transport, the resume.
  std::vector<std::string> opening_lines(bool resumed) const;
  /// Rank 0, with the directory locked: the best models' stale files, and
  /// on a resume those of later epochs (warning lines to say).
  std::vector<std::string> after_open(bool resumed);
  std::int64_t epoch() const;
  EpochRecord run_epoch();
  /// Rank 0, market runs: the epoch's validation backtest into `record`
  /// and, when it scores best so far, the epoch's model published as the
  /// best one.
  void after_epoch(EpochRecord& record);
  void add(TrainingSummary& summary, const EpochRecord& record) const;
  std::vector<std::string> log_lines(const EpochRecord& record, bool first) const;
  std::string metrics_line(const EpochRecord& record) const;
  void notify_log(const std::string& line);
  void notify_epoch(const EpochRecord& record);
  /// The `target_return` stop: the line that says it, or empty.
  std::string stop_line(TrainingSummary& summary, const EpochRecord& record) const;
  /// Rank 0: the generation's files (every rank's trainer state, the best model named).
  void save_checkpoint(const std::string& dir, const std::map<std::string, std::int64_t>& log_bytes);
  /// Ranks > 0: this rank's trainer state into the generation rank 0 publishes.
  void join_checkpoint();
  /// Best models that no kept generation names are removed.
  void after_checkpoint(const CheckpointStore& store) const;
  /// Rank 0: learning curves, the test split's evaluation, the outputs line.
  void finish(TrainingSummary& summary, const Say& say);
  /// The test split's evaluation of the last weights and of the best model,
  /// said and written to the run directory.
  void evaluate_test_split(TrainingSummary& summary, const Say& say);

  TrainConfig config_;
  RunStart start_;
  bool started_ = false;
  std::vector<TrainingObserver*> observers_;
  std::unique_ptr<OnlineTrainerBase<ExecSpace>> trainer_;
  std::shared_ptr<dist::Communicator> comm_;
  std::optional<BestModel> best_;   ///< the best model so far (rank 0)
  std::string resumed_generation_;  ///< the checkpoint generation a resume loaded
};

}  // namespace foxrl
