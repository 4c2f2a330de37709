#include "run/training_run.hpp"

#include "config/resume_check.hpp"
#include "core/device_memory.hpp"
#include "core/error.hpp"
#include "core/kernel_check.hpp"
#include "io/atomic_file.hpp"
#include "io/output_dir.hpp"
#include "io/strict_json.hpp"
#include "io/svg_chart.hpp"
#include "run/checkpoint_store.hpp"
#include "run/run_directory.hpp"
#include "run/run_manifest.hpp"
#include "run/saved_model_evaluation.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

namespace foxrl {
namespace {

/// What a run writes into its directory besides checkpoints/; the first
/// five (with checkpoints/) mark a directory that holds a run (the first
/// three are where runs before checkpoint generations kept theirs).
const RunFiles& run_files() {
  static const RunFiles files{
      {"checkpoint.json", "checkpoint.safetensors", "trainer_state.safetensors", "metrics.jsonl", "train.log",
       "config.json", "evaluation.json", "evaluation_backtest.csv", "equity.svg", "learning_curve_return.svg",
       "learning_curve_loss.svg", "evaluation_best_backtest.csv", "equity_best.svg"},
      5,
      "foxrl train --resume"};
  return files;
}

/// One line of metrics.jsonl; null for a line that is not JSON (a line cut
/// short by a crash), which readers skip.
nlohmann::json metrics_line(const std::string& line) {
  try {
    return parse_strict_json(line, "metrics.jsonl");
  } catch (const UsageError&) {
    return nullptr;
  }
}

EpochRecord record_of(const nlohmann::json& j) {
  EpochRecord r;
  r.epoch = j.value("epoch", std::int64_t(0));
  r.loss = j.value("loss", 0.0);
  r.mean_return_last_100 = j.value("mean_return_last_100", 0.0);
  return r;
}

/// The records of metrics.jsonl (epoch, loss and mean return), for the
/// learning curves of a resumed run.
std::vector<EpochRecord> read_metrics(const std::string& path) {
  std::vector<EpochRecord> records;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (const auto j = metrics_line(line); j.is_object() && j.contains("epoch")) records.push_back(record_of(j));
  }
  return records;
}

void write_learning_curves(const std::string& path, const std::vector<EpochRecord>& epochs) {
  ChartSeries returns{"mean return (last 100 episodes)", {}}, loss{"loss", {}};
  ChartOptions options;  // x ticks: the epochs as the log numbers them
  for (const auto& e : epochs) {
    returns.values.push_back(e.mean_return_last_100);
    loss.values.push_back(e.loss);
    options.x_labels.push_back(std::to_string(e.epoch));
  }
  write_file_atomically(path + "/learning_curve_return.svg",
                        render_line_chart("Episode return per epoch", "epoch", "return", {returns}, options));
  write_file_atomically(path + "/learning_curve_loss.svg",
                        render_line_chart("Loss per epoch", "epoch", "loss", {loss}, options));
}

/// The epochs of metrics.jsonl up to `last_epoch`, for a legacy checkpoint
/// (no recorded log lengths): the file is rewritten without later lines.
/// Returns the kept records for the learning curves.
std::vector<EpochRecord> keep_metrics_until(const std::string& path, std::int64_t last_epoch) {
  std::vector<EpochRecord> kept;
  std::ifstream in(path);
  std::string line, text;
  while (std::getline(in, line)) {
    const auto j = metrics_line(line);
    if (!j.is_object() || !j.contains("epoch")) continue;
    if (j.value("epoch", std::int64_t(0)) > last_epoch) continue;
    const EpochRecord r = record_of(j);
    kept.push_back(r);
    text += line + "\n";
  }
  in.close();
  write_file_atomically(path, text);
  return kept;
}

/// A failure while the trainer allocates its state, said with what the
/// config asks for and what the memory has.
Error setup_failure(const TrainConfig& config, const std::exception& e) {
  const RunSpec spec = run_spec(config);
  const double replay_floor = double(config.buffer_capacity) * spec.obs_dim * sizeof(float);
  const MemoryInfo memory = default_memory_info();
  std::string text = "setting up the run failed: " + one_line_message(e.what()) +
                     "\n  the replay buffer alone needs at least " + format_bytes(replay_floor) + " (buffer_capacity " +
                     std::to_string(config.buffer_capacity) + " x " + std::to_string(spec.obs_dim) +
                     " features x 4 bytes)";
  if (memory.known) {
    text += "; " + memory.where + " has " + format_bytes(double(memory.free_bytes)) + " free of " +
            format_bytes(double(memory.total_bytes));
  }
  return Error(text + "\n  lower buffer_capacity, num_envs or the network size, or use a larger device");
}

}  // namespace

/// The run directory's lock and append-only sinks.
struct TrainingRun::Files {
  explicit Files(const std::string& dir) : lock(dir) {}
  RunDirectoryLock lock;
  std::ofstream log;
  std::ofstream metrics;
  bool open = false;
  std::vector<std::string> pending;  ///< lines said before the log was opened
};

TrainingRun::TrainingRun(TrainConfig config, bool resume, bool overwrite)
    : config_(std::move(config)), resume_(resume), overwrite_(overwrite), comm_(dist::world()) {
  if (resume_ && overwrite_) throw UsageError("a run either resumes its directory or overwrites it, not both");
}

TrainingRun::~TrainingRun() = default;

void TrainingRun::add_observer(TrainingObserver& observer) { observers_.push_back(&observer); }

DqnTrainer<TrainingRun::ExecSpace>& TrainingRun::trainer() {
  if (!trainer_) throw LogicError("TrainingRun::trainer(): the trainer exists from run() on");
  return *trainer_;
}

void TrainingRun::say(const std::string& line) {
  if (comm_->rank() != 0) return;  // rank 0 speaks for the run
  for (auto* o : observers_) o->on_log(line);
  if (files_->open) {
    files_->log << line << std::endl;
  } else {
    files_->pending.push_back(line);
  }
}

std::unique_ptr<DqnTrainer<TrainingRun::ExecSpace>> TrainingRun::make_trainer() const {
  try {
    return std::make_unique<DqnTrainer<ExecSpace>>(config_, comm_);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {  // allocation failures (Kokkos throws std::runtime_error or bad_alloc)
    throw setup_failure(config_, e);
  }
}

RunManifest TrainingRun::resume_newest_generation(const CheckpointStore& store) {
  const auto generations = store.generations();
  std::string problems;
  for (std::size_t i = 0; i < generations.size(); ++i) {
    const auto& g = generations[i];
    RunManifest manifest;
    std::string failure;
    try {
      if (!trainer_) trainer_ = make_trainer();
      manifest = trainer_->resume(g.path);
      best_.reset();
      std::error_code ec;
      if (std::filesystem::exists(g.path + "/" + BestModel::file, ec)) {
        best_ = BestModel::read(g.path);
        if (!manifest.identity.run_id.empty() && best_->run_id != manifest.identity.run_id)
          throw UsageError(g.path + "/" + BestModel::file + ": the best model of run " + best_->run_id +
                           ", the checkpoint is of run " + manifest.identity.run_id);
      }
      resumed_generation_ = g.path;
    } catch (const LogicError&) {
      throw;
    } catch (const UsageError& e) {
      failure = e.what();
    }
    if (comm_->size() > 1) {
      // Every rank resumes from the same generation: one that fails on any
      // rank (its trainer state shard damaged, say) fails on all.
      double failed = failure.empty() ? 0.0 : 1.0;
      comm_->sum(&failed, 1);
      if (failed > 0 && failure.empty()) failure = "another rank could not load its part of it";
    }
    if (failure.empty()) {
      // Newer generations that failed are set aside, never read again (the
      // resumed run writes its own generations of those epochs).
      if (comm_->rank() == 0) {
        for (std::size_t k = 0; k < i; ++k) store.set_aside(generations[k]);
      }
      if (i > 0) {
        say("warning: resumed from the older checkpoint " + g.path + "; set aside as damaged: " + problems);
      }
      return manifest;
    }
    // A damaged, incomplete or foreign generation: try the next older one
    // with a fresh trainer (a failed load leaves the trainer unspecified).
    problems += std::string(problems.empty() ? "" : "; ") + g.path + " (" + failure + ")";
    trainer_.reset();
  }
  throw UsageError("--resume: no usable checkpoint in " + config_.out_dir + ": " + problems);
}

EpochRecord TrainingRun::run_one_epoch(std::int64_t checkpointed) {
  try {
    return trainer_->run_epoch();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    // A device error (reported at a synchronisation, after its kernel) or
    // an allocation failure: the device state is not to be trusted, so no
    // checkpoint is written from it; the logs are flushed and the last
    // checkpoint stays as it was.
    if (files_) {
      files_->log.flush();
      files_->metrics.flush();
    }
    const std::string kernel = KernelCheck::last_kernel();
    throw Error(
        "epoch " + std::to_string(trainer_->epoch() + 1) + " failed: " + one_line_message(e.what()) +
        (kernel.empty() ? "" : " (last kernel launched: '" + kernel + "')") + "\n  " +
        (checkpointed > 0 ? "the checkpoint of epoch " + std::to_string(checkpointed) + " in " + config_.out_dir +
                                " is intact: continue with --resume"
                          : std::string("no checkpoint was written yet")) +
        (KernelCheck::installed() ? std::string() : "; rerun with FOXRL_CHECK_KERNELS=1 to name the failing kernel"));
  }
}

TrainingSummary TrainingRun::run() {
  if (started_) throw LogicError("TrainingRun::run(): a run runs once");
  started_ = true;
  const TrainConfig& config = config_;
  namespace fs = std::filesystem;
  std::error_code ec;
  // Rank 0 writes the run directory; the other ranks only add their
  // trainer states to each checkpoint.
  const bool writer = comm_->rank() == 0;
  if (resume_) {
    // Nothing on disk changes before the checkpoint has loaded: a failed
    // resume leaves the run as it was.
    if (!fs::is_directory(config.out_dir, ec))
      throw UsageError("--resume: out_dir '" + config.out_dir + "' is not a directory");
    const RunManifest saved = RunManifest::read_newest(config.out_dir);
    check_resume_compatible(saved.config, config, config.out_dir + "/checkpoints");
    saved.check_ranks(comm_->size(), "--resume: the run in '" + config.out_dir + "'");
  } else if (writer) {
    prepare_output_directory(config.out_dir, "out_dir");  // created, and writable
  }
  if (writer) files_ = std::make_unique<Files>(config.out_dir);
  const CheckpointStore store(config.out_dir);
  if (!resume_ && writer) {
    prepare_fresh_run_directory(config.out_dir, overwrite_, run_files());
    if (overwrite_) CheckpointStore(config.out_dir, BestModelStore::folder).remove_all();
  }
  TrainingSummary summary;

  if (!resume_) trainer_ = make_trainer();
  say("foxrl " FOXRL_VERSION " train: " + std::string(env_kind_name(config.env)) + " on " + ExecSpace::name() + ", " +
      std::to_string(config.num_envs) + " envs, seed " + std::to_string(config.seed) +
      (comm_->size() > 1 ? ", " + std::to_string(comm_->size()) + " ranks (" + comm_->transport() + ")" : ""));
  if (resume_) {
    const RunManifest resumed = resume_newest_generation(store);
    const std::string log_path = config.out_dir + "/train.log", metrics_path = config.out_dir + "/metrics.jsonl";
    if (!writer) {
      // Only rank 0 touches the logs.
    } else if (resumed.log_bytes.empty()) {  // legacy checkpoint: cut metrics by epoch
      summary.epochs = keep_metrics_until(metrics_path, resumed.epoch);
    } else {
      const auto bytes = [&](const char* name) {
        const auto it = resumed.log_bytes.find(name);
        return it == resumed.log_bytes.end() ? std::int64_t(0) : it->second;
      };
      cut_back_file(log_path, bytes("train.log"));
      cut_back_file(metrics_path, bytes("metrics.jsonl"));
      summary.epochs = read_metrics(metrics_path);
    }
  }
  DqnTrainer<ExecSpace>& trainer = *trainer_;
  if (trainer.market()) say(trainer.market()->data.describe());
  if (comm_->size() > 1) say("gradient mean over the ranks: " + trainer.gradient_transport());
  if (resume_) {
    say("resumed from the checkpoint of epoch " + std::to_string(trainer.epoch()) + " (" +
        std::to_string(trainer.global_step()) + (comm_->size() > 1 ? " env steps per rank, " : " env steps, ") +
        std::to_string(trainer.updates()) + " updates) in " + config.out_dir);
  }
  if (writer) {
    store.remove_stale_temporaries();
    CheckpointStore(config.out_dir, BestModelStore::folder).remove_stale_temporaries();
    if (resume_) {
      // Best models of the epochs after the checkpoint are redone by this run.
      const BestModelStore best_models(config.out_dir);
      best_models.discard_after(trainer.epoch());
      if (best_ && best_models.path_of(best_->epoch).empty()) {
        say("warning: the best model of epoch " + std::to_string(best_->epoch) + " that " + resumed_generation_ +
            " names is missing from " + config.out_dir + "/" + BestModelStore::folder +
            "; the best model is chosen again from the next epoch on");
        best_.reset();
      }
    }
    files_->log.open(config.out_dir + "/train.log", std::ios::app);
    files_->metrics.open(config.out_dir + "/metrics.jsonl", std::ios::app);
    if (!files_->log || !files_->metrics) throw UsageError("out_dir '" + config.out_dir + "': cannot write its logs");
    files_->open = true;
    for (const auto& line : files_->pending) files_->log << line << "\n";
    files_->log.flush();
    files_->pending.clear();
    write_file_atomically(config.out_dir + "/config.json", config.to_json() + "\n");
  }

  std::int64_t checkpointed = trainer.epoch();
  for (std::int64_t e = trainer.epoch(); e < config.epochs; ++e) {
    auto record = run_one_epoch(checkpointed);
    if (writer) validate_epoch(record, store);
    summary.epochs.push_back(record);
    say(format_epoch_log(record));
    if (writer) {
      files_->metrics << epoch_json(record) << std::endl;
      for (auto* o : observers_) o->on_epoch(record);
    }
    summary.solved =
        config.target_return > 0 && record.episodes >= 100 && record.mean_return_last_100 >= config.target_return;
    const bool checkpoint = record.epoch % config.checkpoint_every == 0 || e + 1 == config.epochs || summary.solved;
    if (checkpoint && !writer) {
      // Rank 0 names the generation being written; this rank adds its
      // trainer state to it before rank 0 publishes it.
      std::string dir;
      comm_->broadcast(dir, 0);
      trainer.save_checkpoint(dir);
      comm_->barrier();
      checkpointed = record.epoch;
    } else if (checkpoint) {
      // The logs' lengths go into the checkpoint: a resume cuts them back.
      files_->log.flush();
      files_->metrics.flush();
      const std::map<std::string, std::int64_t> log_bytes = {
          {"train.log", file_bytes(config.out_dir + "/train.log")},
          {"metrics.jsonl", file_bytes(config.out_dir + "/metrics.jsonl")}};
      store.publish(
          record.epoch,
          [&](const std::string& dir) {
            std::string shared = dir;
            comm_->broadcast(shared, 0);
            trainer.save_checkpoint(dir, log_bytes);
            if (best_) best_->write(dir);  // the best model as of this checkpoint, for a resume
            comm_->barrier();              // every rank's trainer state is in `dir` before it is published
          },
          static_cast<int>(config.keep_checkpoints));
      BestModelStore(config.out_dir).prune(best_epochs_named_by(store));
      checkpointed = record.epoch;
    }
    if (summary.solved) {
      say("solved: mean return of the last 100 episodes " + std::to_string(record.mean_return_last_100) +
          " >= " + std::to_string(config.target_return) + " after " + std::to_string(record.env_steps) + " env steps");
      break;
    }
  }
  if (!writer) return summary;
  write_learning_curves(config.out_dir, summary.epochs);

  if (trainer.market()) evaluate_test_split(summary);
  say("outputs in " + config.out_dir +
      ": train.log, metrics.jsonl, checkpoints/epoch-N/ (checkpoint.safetensors + checkpoint.json + "
      "trainer_state.safetensors), learning curves" +
      std::string(trainer.market() ? ", evaluation.json, evaluation_backtest.csv, equity.svg" : "") +
      std::string(summary.best_evaluation
                      ? ", best/epoch-N/ (the best model), evaluation_best_backtest.csv, equity_best.svg"
                      : ""));
  return summary;
}

void TrainingRun::validate_epoch(EpochRecord& record, const CheckpointStore& store) {
  record.validation = trainer_->validation_backtest();
  if (!record.validation) return;
  const double score = validation_score(*record.validation, config_.select_by);
  // Ties keep the earlier epoch; a non-finite score never wins.
  if (!std::isfinite(score) || (best_ && !(score > best_->score))) return;
  BestModel best;
  best.epoch = record.epoch;
  best.select_by = config_.select_by;
  best.score = score;
  best.validation = *record.validation;
  best.run_id = trainer_->run_id();
  BestModelStore(config_.out_dir)
      .publish(
          best, [&](const std::string& dir) { trainer_->save_model(dir); }, best_epochs_named_by(store));
  best_ = best;
  record.best = true;
}

void TrainingRun::evaluate_test_split(TrainingSummary& summary) {
  DqnTrainer<ExecSpace>& trainer = *trainer_;
  const MarketComponents<ExecSpace>& market = *trainer.market();
  const ExecSpace& space = trainer.context().space();
  const std::string& out = config_.out_dir;
  summary.evaluation = evaluate_market(space, trainer.learner(), trainer.adapter(), market.features, market.data,
                                       market.data.splits.test, trainer.spec().market_env, config_.seed + 1);
  const std::string best_dir = best_ ? BestModelStore(out).path_of(best_->epoch) : std::string();
  if (best_dir.empty()) {  // no validation split: the last weights alone, unlabelled
    say(summary.evaluation->table());
    write_file_atomically(out + "/evaluation.json", summary.evaluation->json() + "\n");
    write_file_atomically(out + "/evaluation_backtest.csv", summary.evaluation->backtest_csv());
    write_file_atomically(out + "/equity.svg", summary.evaluation->svg());
    return;
  }
  summary.best = best_;
  summary.best_evaluation = evaluate_saved_model(space, best_dir, RunManifest::read(best_dir), trainer.spec(), market,
                                                 market.data.splits.test, config_.seed + 1);
  char score[64];
  std::snprintf(score, sizeof score, "%.4g", best_->score);
  say("test split, last weights (epoch " + std::to_string(trainer.epoch()) + "):");
  say(summary.evaluation->table());
  say("test split, best weights (epoch " + std::to_string(best_->epoch) + ", validation " +
      (best_->select_by == "sharpe" ? "Sharpe " : "net return ") + score + "; " + best_dir + "):");
  say(summary.best_evaluation->table());
  // evaluation.json: the last weights' report as it always was, labelled,
  // with the best model's beside it.
  nlohmann::json j = nlohmann::json::parse(summary.evaluation->json());
  j["weights"] = "last";
  j["best"] = {{"weights", "best"},
               {"epoch", best_->epoch},
               {"select_by", best_->select_by},
               {"validation_score", best_->score},
               {"validation",
                {{"total_return", best_->validation.agent.total_return},
                 {"sharpe", best_->validation.agent.sharpe},
                 {"trades", best_->validation.agent.trades},
                 {"buy_and_hold_return", best_->validation.buy_and_hold_return}}},
               {"test", nlohmann::json::parse(summary.best_evaluation->json())}};
  write_file_atomically(out + "/evaluation.json", j.dump(2) + "\n");
  write_file_atomically(out + "/evaluation_backtest.csv", summary.evaluation->backtest_csv());
  write_file_atomically(out + "/equity.svg", summary.evaluation->svg());
  write_file_atomically(out + "/evaluation_best_backtest.csv", summary.best_evaluation->backtest_csv());
  write_file_atomically(out + "/equity_best.svg",
                        summary.best_evaluation->svg("best weights, epoch " + std::to_string(best_->epoch)));
}

}  // namespace foxrl
