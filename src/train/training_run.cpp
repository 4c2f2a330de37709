#include "train/training_run.hpp"

#include "config/resume_check.hpp"
#include "core/device_memory.hpp"
#include "core/error.hpp"
#include "core/kernel_check.hpp"
#include "io/atomic_file.hpp"
#include "io/output_dir.hpp"
#include "io/strict_json.hpp"
#include "io/svg_chart.hpp"
#include "train/checkpoint_store.hpp"
#include "train/run_directory.hpp"
#include "train/run_loop.hpp"
#include "train/run_manifest.hpp"
#include "train/saved_model_evaluation.hpp"

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

TrainingRun::TrainingRun(TrainConfig config, bool resume, bool overwrite)
    : TrainingRun(std::move(config), run_start(resume, overwrite)) {}

TrainingRun::TrainingRun(TrainConfig config, RunStart start)
    : config_(std::move(config)), start_(start), comm_(dist::world()) {}

TrainingRun::~TrainingRun() = default;

void TrainingRun::add_observer(TrainingObserver& observer) { observers_.push_back(&observer); }

OnlineTrainerBase<TrainingRun::ExecSpace>& TrainingRun::trainer() {
  if (!trainer_) throw LogicError("TrainingRun::trainer(): the trainer exists from run() on");
  return *trainer_;
}

TrainConfig TrainingRun::config_for(const std::string& file, const std::vector<std::string>& overrides,
                                    RunStart& start) {
  return run_config<TrainConfig>(file, overrides, start,
                                 [](const std::string& out_dir) { return RunManifest::read_newest(out_dir).config; });
}

void TrainingRun::clear_directory(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return;
  const RunDirectoryLock lock(dir);
  prepare_fresh_run_directory(dir, true, run_files());
  CheckpointStore(dir, BestModelStore::folder).remove_all();
}

TrainingSummary TrainingRun::run() {
  if (started_) throw LogicError("TrainingRun::run(): a run runs once");
  started_ = true;
  return RunLoop<TrainingRun>(*this, start_, comm_).run();
}

// --- the loop's questions (train/run_loop.hpp) ---------------------------------

void TrainingRun::validate() const {
  config_.validate();
  // A typo in `env` or `algo` is refused before out_dir is touched.
  (void)env_info(config_.env);
  (void)online_learner_index(config_.algo);
}

const RunFiles& TrainingRun::files() const { return run_files(); }

void TrainingRun::check_resume() const {
  const RunManifest saved = RunManifest::read_newest(config_.out_dir);
  check_resume_compatible(saved.config, config_, config_.out_dir + "/checkpoints");
  saved.check_ranks(comm_->size(), "--resume: the run in '" + config_.out_dir + "'");
}

void TrainingRun::on_fresh_directory(bool overwrite) const {
  if (overwrite) CheckpointStore(config_.out_dir, BestModelStore::folder).remove_all();
}

void TrainingRun::make_trainer() {
  try {
    trainer_ = make_online_trainer<ExecSpace>(config_, comm_);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {  // allocation failures (Kokkos throws std::runtime_error or bad_alloc)
    throw setup_failure(config_, e);
  }
}

LoadedGeneration TrainingRun::load(const std::string& dir) {
  if (!trainer_) make_trainer();
  const RunManifest manifest = trainer_->resume(dir);
  best_.reset();
  std::error_code ec;
  if (std::filesystem::exists(dir + "/" + BestModel::file, ec)) {
    best_ = BestModel::read(dir);
    if (!manifest.identity.run_id.empty() && best_->run_id != manifest.identity.run_id)
      throw UsageError(dir + "/" + BestModel::file + ": the best model of run " + best_->run_id +
                       ", the checkpoint is of run " + manifest.identity.run_id);
  }
  resumed_generation_ = dir;
  return {manifest.log_bytes, manifest.epoch};
}

void TrainingRun::previous_epochs(TrainingSummary& summary, const std::string& metrics_path) const {
  summary.epochs = read_metrics(metrics_path);
}

std::vector<std::string> TrainingRun::opening_lines(bool resumed) const {
  const OnlineTrainerBase<ExecSpace>& trainer = *trainer_;
  std::vector<std::string> lines = {
      "foxrl " FOXRL_VERSION " train: " + config_.env + " on " + ExecSpace::name() + ", " +
      std::to_string(config_.num_envs) + " envs, seed " + std::to_string(config_.seed) +
      (comm_->size() > 1 ? ", " + std::to_string(comm_->size()) + " ranks (" + comm_->transport() + ")" : "")};
  if (trainer.market()) lines.push_back(trainer.market()->data.describe());
  if (comm_->size() > 1) lines.push_back("gradient mean over the ranks: " + trainer.gradient_transport());
  if (resumed) {
    lines.push_back("resumed from the checkpoint of epoch " + std::to_string(trainer.epoch()) + " (" +
                    std::to_string(trainer.global_step()) +
                    (comm_->size() > 1 ? " env steps per rank, " : " env steps, ") + std::to_string(trainer.updates()) +
                    " updates) in " + config_.out_dir);
  }
  return lines;
}

std::vector<std::string> TrainingRun::after_open(bool resumed) {
  CheckpointStore(config_.out_dir, BestModelStore::folder).remove_stale_temporaries();
  if (!resumed) return {};
  // Best models of the epochs after the checkpoint are redone by this run.
  const BestModelStore best_models(config_.out_dir);
  best_models.discard_after(trainer_->epoch());
  if (best_ && best_models.verified_path_of(*best_).empty()) {
    const std::string warning = "warning: the best model of epoch " + std::to_string(best_->epoch) + " that " +
                                resumed_generation_ + " names is missing from " + config_.out_dir + "/" +
                                BestModelStore::folder + "; the best model is chosen again from the next epoch on";
    best_.reset();
    return {warning};
  }
  return {};
}

std::int64_t TrainingRun::epoch() const { return trainer_->epoch(); }

EpochRecord TrainingRun::run_epoch() { return trainer_->run_epoch(); }

std::vector<std::string> TrainingRun::log_lines(const EpochRecord& record, bool) const {
  return {format_epoch_log(record)};
}

std::string TrainingRun::metrics_line(const EpochRecord& record) const { return epoch_json(record); }

void TrainingRun::notify_log(const std::string& line) {
  for (auto* o : observers_) o->on_log(line);
}

void TrainingRun::notify_epoch(const EpochRecord& record) {
  for (auto* o : observers_) o->on_epoch(record);
}

void TrainingRun::add(TrainingSummary& summary, const EpochRecord& record) const { summary.epochs.push_back(record); }

std::string TrainingRun::stop_line(TrainingSummary& summary, const EpochRecord& record) const {
  summary.solved =
      config_.target_return > 0 && record.episodes >= 100 && record.mean_return_last_100 >= config_.target_return;
  if (!summary.solved) return "";
  return "solved: mean return of the last 100 episodes " + std::to_string(record.mean_return_last_100) +
         " >= " + std::to_string(config_.target_return) + " after " + std::to_string(record.env_steps) + " env steps";
}

void TrainingRun::save_checkpoint(const std::string& dir, const std::map<std::string, std::int64_t>& log_bytes) {
  std::string shared = dir;
  comm_->broadcast(shared, 0);  // the ranks add their trainer states to this generation
  trainer_->save_checkpoint(dir, log_bytes);
  if (best_) best_->write(dir);  // the best model as of this checkpoint, for a resume
  comm_->barrier();              // every rank's trainer state is in `dir` before it is published
}

void TrainingRun::join_checkpoint() {
  // Rank 0 names the generation being written; this rank adds its trainer
  // state to it before rank 0 publishes it.
  std::string dir;
  comm_->broadcast(dir, 0);
  trainer_->save_checkpoint(dir);
  comm_->barrier();
}

void TrainingRun::after_checkpoint(const CheckpointStore& store) const {
  BestModelStore(config_.out_dir).prune(best_epochs_named_by(store));
}

void TrainingRun::finish(TrainingSummary& summary, const Say& say) {
  write_learning_curves(config_.out_dir, summary.epochs);
  if (trainer_->market()) evaluate_test_split(summary, say);
  say("outputs in " + config_.out_dir +
      ": train.log, metrics.jsonl, checkpoints/epoch-N/ (checkpoint.safetensors + checkpoint.json + "
      "trainer_state.safetensors), learning curves" +
      std::string(trainer_->market() ? ", evaluation.json, evaluation_backtest.csv, equity.svg" : "") +
      std::string(summary.best_evaluation
                      ? ", best/epoch-N/ (the best model), evaluation_best_backtest.csv, equity_best.svg"
                      : ""));
}

void TrainingRun::after_epoch(EpochRecord& record) {
  const CheckpointStore store(config_.out_dir);
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

void TrainingRun::evaluate_test_split(TrainingSummary& summary, const Say& say) {
  OnlineTrainerBase<ExecSpace>& trainer = *trainer_;
  const MarketComponents<ExecSpace>& market = *trainer.market();
  const ExecSpace& space = trainer.context().space();
  const std::string& out = config_.out_dir;
  summary.evaluation = trainer.evaluate_market_split(market.data.splits.test);
  const std::string best_dir = best_ ? BestModelStore(out).verified_path_of(*best_) : std::string();
  if (best_dir.empty()) {  // no validation split: the last weights alone, unlabelled
    say(summary.evaluation->table());
    write_file_atomically(out + "/evaluation_backtest.csv", summary.evaluation->backtest_csv());
    write_file_atomically(out + "/equity.svg", summary.evaluation->svg());
    // Last: an evaluation.json newer than the checkpoint marks a finished
    // evaluation (a study resumed after a kill here evaluates again).
    write_file_atomically(out + "/evaluation.json", summary.evaluation->json() + "\n");
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
  write_file_atomically(out + "/evaluation_backtest.csv", summary.evaluation->backtest_csv());
  write_file_atomically(out + "/equity.svg", summary.evaluation->svg());
  write_file_atomically(out + "/evaluation_best_backtest.csv", summary.best_evaluation->backtest_csv());
  write_file_atomically(out + "/equity_best.svg",
                        summary.best_evaluation->svg("best weights, epoch " + std::to_string(best_->epoch)));
  write_file_atomically(out + "/evaluation.json", j.dump(2) + "\n");  // last, as above
}

}  // namespace foxrl
