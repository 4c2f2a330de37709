#include "train/offline_training_run.hpp"

#include "config/resume_check.hpp"
#include "core/error.hpp"
#include "io/atomic_file.hpp"
#include "io/output_dir.hpp"
#include "io/strict_json.hpp"
#include "io/svg_chart.hpp"
#include "train/checkpoint_store.hpp"
#include "train/run_directory.hpp"
#include "train/run_loop.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>

namespace foxrl {
namespace {

using Json = nlohmann::json;

const RunFiles& offline_run_files() {
  static const RunFiles files{{"metrics.jsonl", "train.log", "config.json", "evaluation_episodes.json",
                               "learning_curve_return.svg", "evaluation.json", "evaluation_backtest.csv", "equity.svg"},
                              2,
                              "foxrl train-offline --resume"};
  return files;
}

/// A recorded number in a log line: 0.29999999999999999 as 0.3.
std::string short_number(const std::string& text) {
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) return text;
  char out[32];
  std::snprintf(out, sizeof out, "%g", x);
  return out;
}

/// The learning curve of metrics.jsonl (a resumed run's earlier epochs
/// too): the evaluation mean per epoch (NaN for epochs without an
/// evaluation: a gap), with the epochs as the log numbers them on the x axis.
ChartSeries read_eval_curve(const std::string& path, ChartOptions& options) {
  ChartSeries curve{"greedy evaluation return (mean)", {}};
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    Json j;
    try {
      j = parse_strict_json(line, path);
    } catch (const UsageError&) {
      continue;  // a line cut short by a crash
    }
    if (!j.is_object() || !j.contains("epoch")) continue;
    curve.values.push_back(j.contains("eval_return_mean") ? j.at("eval_return_mean").get<double>()
                                                          : std::numeric_limits<double>::quiet_NaN());
    options.x_labels.push_back(j.at("epoch").dump());
  }
  return curve;
}

std::string evaluation_json(const OfflineEpochRecord& r, const OfflineTrainConfig& config) {
  const EpisodeEvaluation& e = *r.evaluation;
  Json j;
  j["algo"] = config.algo;
  j["dataset"] = config.dataset;
  j["epoch"] = r.epoch;
  j["episodes"] = e.episodes;
  j["unfinished"] = e.unfinished;
  j["seed"] = config.seed + 1;
  j["return_mean"] = e.mean;
  j["return_std"] = e.std;
  j["return_min"] = e.min;
  j["return_max"] = e.max;
  j["length_mean"] = e.mean_length;
  j["returns"] = e.returns;
  return j.dump(2) + "\n";
}

}  // namespace

std::string format_offline_epoch_log(const OfflineEpochRecord& r) {
  char head[160];
  std::snprintf(head, sizeof head, "Epoch %lld complete in %.3f s: %lld updates, %.0f updates/s",
                static_cast<long long>(r.epoch), r.seconds, static_cast<long long>(r.updates), r.updates_per_s);
  std::string line = head;
  for (const auto& [name, value] : r.metrics) {
    char m[96];
    std::snprintf(m, sizeof m, ", %s %.4f", name.c_str(), value);
    line += m;
  }
  {
    char g[128];
    std::snprintf(g, sizeof g, ", guard: %lld rejected (%lld total), %lld restores, lr x%.3g",
                  static_cast<long long>(r.rejected_updates), static_cast<long long>(r.rejected_total),
                  static_cast<long long>(r.restores), r.lr_scale);
    line += g;
  }
  if (r.evaluation) {
    const auto& e = *r.evaluation;
    char m[160];
    std::snprintf(m, sizeof m, "\ngreedy evaluation: return %.2f +- %.2f (min %.0f, max %.0f) over %d episodes%s",
                  e.mean, e.std, e.min, e.max, e.episodes,
                  e.unfinished > 0 ? (", " + std::to_string(e.unfinished) + " unfinished").c_str() : "");
    line += m;
  }
  if (r.validation) {
    const auto& v = *r.validation;
    char m[192];
    std::snprintf(m, sizeof m,
                  "\nvalidation backtest: net return %.2f%%, Sharpe %.2f, %ld trades (buy and hold %.2f%%)",
                  100 * v.agent.total_return, v.agent.sharpe, v.agent.trades, 100 * v.buy_and_hold_return);
    line += m;
  }
  return line;
}

std::string offline_epoch_json(const OfflineEpochRecord& r) {
  Json j;
  j["epoch"] = r.epoch;
  j["seconds"] = r.seconds;
  j["updates"] = r.updates;
  j["updates_per_s"] = r.updates_per_s;
  for (const auto& [name, value] : r.metrics) j[name] = value;
  j["rejected_updates"] = r.rejected_updates;
  j["rejected_total"] = r.rejected_total;
  j["restores"] = r.restores;
  j["lr_scale"] = r.lr_scale;
  if (r.evaluation) {
    j["eval_episodes"] = r.evaluation->episodes;
    j["eval_return_mean"] = r.evaluation->mean;
    j["eval_return_std"] = r.evaluation->std;
    j["eval_return_min"] = r.evaluation->min;
    j["eval_return_max"] = r.evaluation->max;
  }
  if (r.validation) {
    j["val_total_return"] = r.validation->agent.total_return;
    j["val_sharpe"] = r.validation->agent.sharpe;
    j["val_trades"] = r.validation->agent.trades;
    j["val_buy_and_hold_return"] = r.validation->buy_and_hold_return;
  }
  return j.dump();
}

OfflineTrainingRun::OfflineTrainingRun(OfflineTrainConfig config, bool resume, bool overwrite)
    : OfflineTrainingRun(std::move(config), run_start(resume, overwrite)) {}

OfflineTrainingRun::OfflineTrainingRun(OfflineTrainConfig config, RunStart start)
    : config_(std::move(config)), start_(start), comm_(dist::world()) {}

OfflineTrainingRun::~OfflineTrainingRun() = default;

void OfflineTrainingRun::on_log(std::function<void(const std::string&)> sink) { sinks_.push_back(std::move(sink)); }

OfflineTrainer<OfflineTrainingRun::ExecSpace>& OfflineTrainingRun::trainer() {
  if (!trainer_) throw LogicError("OfflineTrainingRun::trainer(): the trainer exists from run() on");
  return *trainer_;
}

OfflineTrainConfig OfflineTrainingRun::saved_config(const std::string& out_dir) {
  const auto generations = CheckpointStore(out_dir).generations();
  std::string problems;
  for (const auto& g : generations) {
    try {
      const OfflineManifest m = OfflineManifest::read(g.path);
      return OfflineTrainConfig::from_json_text(m.config_json, g.path + "/" + OfflineManifest::manifest_file);
    } catch (const NewerFormatError&) {
      throw;  // written by a newer foxrl: no older generation stands in for it
    } catch (const UsageError& e) {
      problems += std::string(problems.empty() ? "" : "; ") + e.what();
    }
  }
  throw UsageError("--resume: no usable offline checkpoint in '" + out_dir + "'" +
                   (problems.empty() ? std::string(" (no checkpoints/epoch-N directory)") : ": " + problems));
}

OfflineTrainConfig OfflineTrainingRun::config_for(const std::string& file, const std::vector<std::string>& overrides,
                                                  RunStart& start) {
  return run_config<OfflineTrainConfig>(file, overrides, start, &OfflineTrainingRun::saved_config);
}

OfflineTrainingSummary OfflineTrainingRun::run() {
  if (started_) throw LogicError("OfflineTrainingRun::run(): a run runs once");
  started_ = true;
  return RunLoop<OfflineTrainingRun>(*this, start_, comm_).run();
}

// --- the loop's questions (train/run_loop.hpp; TrainingRun documents each) -----

void OfflineTrainingRun::validate() const {
  config_.validate();
  (void)offline_learner_index(config_.algo);  // a typo in `algo` is refused before out_dir is touched
}

void OfflineTrainingRun::check_resume() const {
  check_resume_compatible(saved_config(config_.out_dir), config_, config_.out_dir + "/checkpoints");
}

const RunFiles& OfflineTrainingRun::files() const { return offline_run_files(); }

void OfflineTrainingRun::make_trainer() { trainer_ = std::make_unique<OfflineTrainer<ExecSpace>>(config_, comm_); }

LoadedGeneration OfflineTrainingRun::load(const std::string& dir) {
  if (!trainer_) make_trainer();
  const OfflineManifest m = trainer_->resume(dir);
  return {m.log_bytes, m.epoch};
}

void OfflineTrainingRun::previous_epochs(OfflineTrainingSummary& summary, const std::string&) const {
  summary.first_epoch = trainer_->epoch();
}

std::vector<std::string> OfflineTrainingRun::opening_lines(bool resumed) const {
  const OfflineTrainer<ExecSpace>& trainer = *trainer_;
  const DatasetMetadata& d = trainer.dataset_metadata();
  std::vector<std::string> lines = {
      "foxrl " FOXRL_VERSION " train-offline: " + config_.algo + " on " + ExecSpace::name() + ", dataset " +
      config_.dataset + " (" + std::to_string(trainer.dataset_rows()) + " transitions of " + d.env +
      (d.policy.empty() ? std::string() : ", behaviour policy " + d.policy) +
      (d.policy == "epsilon-greedy" ? " epsilon " + short_number(d.epsilon) : std::string()) + "), seed " +
      std::to_string(config_.seed) +
      (comm_->size() > 1 ? ", " + std::to_string(comm_->size()) + " ranks (" + comm_->transport() + ")" : "")};
  if (const auto* market = trainer.market()) lines.push_back(market->data.describe());
  if (resumed) {
    lines.push_back("resumed from the checkpoint of epoch " + std::to_string(trainer.epoch()) + " (" +
                    std::to_string(trainer.updates()) + " updates) in " + config_.out_dir);
  }
  return lines;
}

std::int64_t OfflineTrainingRun::epoch() const { return trainer_->epoch(); }

OfflineEpochRecord OfflineTrainingRun::run_epoch() { return trainer_->run_epoch(); }

void OfflineTrainingRun::after_epoch(OfflineEpochRecord& record) {
  if (record.evaluation)
    write_file_atomically(config_.out_dir + "/evaluation_episodes.json", evaluation_json(record, config_));
}

void OfflineTrainingRun::add(OfflineTrainingSummary& summary, const OfflineEpochRecord& record) const {
  summary.epochs.push_back(record);
}

std::vector<std::string> OfflineTrainingRun::log_lines(const OfflineEpochRecord& record, bool first) const {
  // The ranks' reducers are made at the first update: their transport is
  // known after the first epoch.
  if (first && comm_->size() > 1)
    return {"gradient mean over the ranks: " + trainer_->gradient_transport(), format_offline_epoch_log(record)};
  return {format_offline_epoch_log(record)};
}

std::string OfflineTrainingRun::metrics_line(const OfflineEpochRecord& record) const {
  return offline_epoch_json(record);
}

void OfflineTrainingRun::say_to_sinks(const std::string& line) const {
  for (const auto& sink : sinks_) sink(line);
}

void OfflineTrainingRun::save_checkpoint(const std::string& dir, const std::map<std::string, std::int64_t>& log_bytes) {
  trainer_->save_checkpoint(dir, log_bytes);
}

void OfflineTrainingRun::finish(OfflineTrainingSummary& summary, const Say& say) {
  ChartOptions options;
  const ChartSeries returns = read_eval_curve(config_.out_dir + "/metrics.jsonl", options);
  write_file_atomically(config_.out_dir + "/learning_curve_return.svg",
                        render_line_chart("Greedy evaluation return per epoch (" + config_.algo + ")", "epoch",
                                          "return", {returns}, options));
  if (trainer_->market()) {
    // The test split, held out from the periodic evaluation (validation).
    summary.evaluation = trainer_->evaluate_test_split();
    say(summary.evaluation->table());
    write_file_atomically(config_.out_dir + "/evaluation.json", summary.evaluation->json() + "\n");
    write_file_atomically(config_.out_dir + "/evaluation_backtest.csv", summary.evaluation->backtest_csv());
    write_file_atomically(config_.out_dir + "/equity.svg", summary.evaluation->svg());
  }
  say("outputs in " + config_.out_dir +
      ": train.log, metrics.jsonl, checkpoints/epoch-N/ (learner.safetensors + guard.safetensors + "
      "offline_checkpoint.json), "
      "evaluation_episodes.json, learning_curve_return.svg" +
      std::string(trainer_->market() ? ", evaluation.json, evaluation_backtest.csv, equity.svg" : ""));
}

}  // namespace foxrl
