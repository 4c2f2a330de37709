#include "run/training_run.hpp"

#include "config/resume_check.hpp"
#include "core/error.hpp"
#include "io/atomic_file.hpp"
#include "io/output_dir.hpp"
#include "io/svg_chart.hpp"
#include "run/run_manifest.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace foxrl {
namespace {

/// What a run writes into its directory; the first five mark a directory
/// that holds a run.
const char* const run_files[] = {"checkpoint.json",
                                 "checkpoint.safetensors",
                                 "trainer_state.safetensors",
                                 "metrics.jsonl",
                                 "train.log",
                                 "config.json",
                                 "evaluation.json",
                                 "equity.svg",
                                 "learning_curve_return.svg",
                                 "learning_curve_loss.svg"};
constexpr int run_marker_files = 5;

/// A fresh run must not append to another run's logs or replace its
/// checkpoint unnoticed: refuse, or with `overwrite` remove that run's files.
void prepare_fresh_directory(const std::string& dir, bool overwrite) {
  namespace fs = std::filesystem;
  for (int i = 0; i < run_marker_files && !overwrite; ++i) {
    const fs::path marker = fs::path(dir) / run_files[i];
    if (fs::exists(marker)) {
      throw UsageError("out_dir '" + dir + "' already holds a run (" + marker.string() +
                       "): continue it with `foxrl train --resume --set out_dir=" + dir +
                       "`, replace it with --overwrite, or choose another out_dir");
    }
  }
  if (!overwrite) return;
  for (const char* name : run_files) {
    std::error_code ec;
    fs::remove(fs::path(dir) / name, ec);
    if (ec) throw UsageError("out_dir '" + dir + "': cannot remove " + name + " of the previous run: " + ec.message());
  }
}

void write_learning_curves(const std::string& path, const std::vector<EpochRecord>& epochs) {
  ChartSeries returns{"mean return (last 100 episodes)", {}}, loss{"loss", {}};
  for (const auto& e : epochs) {
    returns.values.push_back(e.mean_return_last_100);
    loss.values.push_back(e.loss);
  }
  write_file_atomically(path + "/learning_curve_return.svg",
                        render_line_chart("Episode return per epoch", "epoch", "return", {returns}));
  write_file_atomically(path + "/learning_curve_loss.svg",
                        render_line_chart("Loss per epoch", "epoch", "loss", {loss}));
}

/// The epochs of metrics.jsonl up to `last_epoch` (the checkpoint a resumed
/// run continues from): the file is rewritten without later lines, which a
/// run interrupted after its last checkpoint left behind, so it reads as the
/// uninterrupted run's. Returns the kept records for the learning curves.
std::vector<EpochRecord> keep_metrics_until(const std::string& path, std::int64_t last_epoch) {
  std::vector<EpochRecord> kept;
  std::ifstream in(path);
  std::string line, text;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("epoch")) continue;
    if (j.value("epoch", std::int64_t(0)) > last_epoch) continue;
    EpochRecord r;
    r.epoch = j.value("epoch", std::int64_t(0));
    r.loss = j.value("loss", 0.0);
    r.mean_return_last_100 = j.value("mean_return_last_100", 0.0);
    kept.push_back(r);
    text += line + "\n";
  }
  in.close();
  write_file_atomically(path, text);
  return kept;
}

}  // namespace

/// The run directory's append-only sinks.
struct TrainingRun::Files {
  std::ofstream log;
  std::ofstream metrics;
};

TrainingRun::TrainingRun(TrainConfig config, bool resume, bool overwrite)
    : config_(std::move(config)), resume_(resume), overwrite_(overwrite) {
  if (resume_ && overwrite_) throw UsageError("a run either resumes its directory or overwrites it, not both");
}

TrainingRun::~TrainingRun() = default;

void TrainingRun::add_observer(TrainingObserver& observer) { observers_.push_back(&observer); }

DqnTrainer<TrainingRun::ExecSpace>& TrainingRun::trainer() {
  if (!trainer_) throw LogicError("TrainingRun::trainer(): the trainer exists from run() on");
  return *trainer_;
}

void TrainingRun::say(const std::string& line) {
  for (auto* o : observers_) o->on_log(line);
  files_->log << line << std::endl;
}

TrainingSummary TrainingRun::run() {
  if (started_) throw LogicError("TrainingRun::run(): a run runs once");
  started_ = true;
  const TrainConfig& config = config_;
  RunManifest saved;
  if (resume_) {
    saved = RunManifest::read(config.out_dir);
    check_resume_compatible(saved.config, config, config.out_dir + "/checkpoint.json");
  }
  if (!resume_) prepare_fresh_directory(config.out_dir, overwrite_);
  prepare_output_directory(config.out_dir, "out_dir");
  TrainingSummary summary;
  if (resume_) summary.epochs = keep_metrics_until(config.out_dir + "/metrics.jsonl", saved.epoch);
  files_ = std::make_unique<Files>();
  files_->log.open(config.out_dir + "/train.log", std::ios::app);
  files_->metrics.open(config.out_dir + "/metrics.jsonl", std::ios::app);

  trainer_ = std::make_unique<DqnTrainer<ExecSpace>>(config);
  DqnTrainer<ExecSpace>& trainer = *trainer_;
  say("foxrl " FOXRL_VERSION " train: " + std::string(env_kind_name(config.env)) + " on " + ExecSpace::name() + ", " +
      std::to_string(config.num_envs) + " envs, seed " + std::to_string(config.seed));
  if (trainer.market()) say(trainer.market()->data.describe());
  if (resume_) {
    trainer.resume(config.out_dir);
    say("resumed from the checkpoint of epoch " + std::to_string(trainer.epoch()) + " (" +
        std::to_string(trainer.global_step()) + " env steps, " + std::to_string(trainer.updates()) + " updates) in " +
        config.out_dir);
  }
  write_file_atomically(config.out_dir + "/config.json", config.to_json() + "\n");

  for (std::int64_t e = trainer.epoch(); e < config.epochs; ++e) {
    const auto record = trainer.run_epoch();
    summary.epochs.push_back(record);
    say(format_epoch_log(record));
    files_->metrics << epoch_json(record) << std::endl;
    for (auto* o : observers_) o->on_epoch(record);
    summary.solved =
        config.target_return > 0 && record.episodes >= 100 && record.mean_return_last_100 >= config.target_return;
    if (record.epoch % config.checkpoint_every == 0 || e + 1 == config.epochs || summary.solved) {
      trainer.save_checkpoint(config.out_dir);
    }
    if (summary.solved) {
      say("solved: mean return of the last 100 episodes " + std::to_string(record.mean_return_last_100) +
          " >= " + std::to_string(config.target_return) + " after " + std::to_string(record.env_steps) + " env steps");
      break;
    }
  }
  write_learning_curves(config.out_dir, summary.epochs);

  if (const auto* market = trainer.market()) {
    summary.evaluation =
        evaluate_market(trainer.context().space(), trainer.learner(), trainer.adapter(), market->features, market->data,
                        market->data.splits.test, trainer.spec().market_env, config.seed + 1);
    say(summary.evaluation->table());
    write_file_atomically(config.out_dir + "/evaluation.json", summary.evaluation->json() + "\n");
    write_file_atomically(config.out_dir + "/equity.svg", summary.evaluation->svg());
  }
  say("outputs in " + config.out_dir +
      ": train.log, metrics.jsonl, checkpoint.safetensors + checkpoint.json + trainer_state.safetensors, "
      "learning curves" +
      std::string(trainer.market() ? ", evaluation.json, equity.svg" : ""));
  return summary;
}

}  // namespace foxrl
