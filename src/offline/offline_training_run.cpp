#include "offline/offline_training_run.hpp"

#include "core/error.hpp"
#include "io/atomic_file.hpp"
#include "io/output_dir.hpp"
#include "io/strict_json.hpp"
#include "io/svg_chart.hpp"
#include "run/checkpoint_store.hpp"
#include "run/run_directory.hpp"

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

/// The keys a resume may change; everything else shapes the run.
bool may_change_on_resume(const std::string& key) {
  return key == "epochs" || key == "out_dir" || key == "dataset" || key == "keep_checkpoints";
}

void check_resume_compatible(const OfflineTrainConfig& saved, const OfflineTrainConfig& now, const std::string& where) {
  const Json a = Json::parse(saved.to_json()), b = Json::parse(now.to_json());
  for (const auto& [key, value] : a.items()) {
    if (may_change_on_resume(key) || b.at(key) == value) continue;
    throw UsageError(where + ": the run was trained with " + key + " = " + value.dump() + ", the resume asks for " +
                     b.at(key).dump() + " (only epochs, out_dir, dataset and keep_checkpoints may change)");
  }
  if (now.epochs < saved.epochs)
    throw UsageError(where + ": epochs " + std::to_string(now.epochs) + " is fewer than the run's " +
                     std::to_string(saved.epochs) + " (epochs may only grow)");
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

struct OfflineTrainingRun::Files {
  explicit Files(const std::string& dir) : lock(dir) {}
  RunDirectoryLock lock;
  std::ofstream log;
  std::ofstream metrics;
  bool open = false;
  std::vector<std::string> pending;
};

OfflineTrainingRun::OfflineTrainingRun(OfflineTrainConfig config, bool resume, bool overwrite)
    : config_(std::move(config)), resume_(resume), overwrite_(overwrite), comm_(dist::world()) {
  if (resume_ && overwrite_) throw UsageError("a run either resumes its directory or overwrites it, not both");
}

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
    } catch (const UsageError& e) {
      problems += std::string(problems.empty() ? "" : "; ") + e.what();
    }
  }
  throw UsageError("--resume: no usable offline checkpoint in '" + out_dir + "'" +
                   (problems.empty() ? std::string(" (no checkpoints/epoch-N directory)") : ": " + problems));
}

void OfflineTrainingRun::say(const std::string& line) {
  if (comm_->rank() != 0) return;  // rank 0 speaks for the run
  for (const auto& sink : sinks_) sink(line);
  if (files_->open) {
    files_->log << line << std::endl;
  } else {
    files_->pending.push_back(line);
  }
}

void OfflineTrainingRun::resume_newest_generation() {
  const CheckpointStore store(config_.out_dir);
  const auto generations = store.generations();
  std::string problems;
  for (std::size_t i = 0; i < generations.size(); ++i) {
    const auto& g = generations[i];
    try {
      if (!trainer_) trainer_ = std::make_unique<OfflineTrainer<ExecSpace>>(config_, comm_);
      std::optional<OfflineManifest> loaded;
      std::string failure;
      try {
        loaded = trainer_->resume(g.path);
      } catch (const UsageError& e) {
        failure = e.what();
      }
      // Every rank resumes from the same generation: one that fails on any
      // rank fails on all (the ranks read the same files, so a difference
      // means a file changed or could not be read on one node).
      double failed = failure.empty() ? 0.0 : 1.0;
      comm_->sum(&failed, 1);
      if (failed > 0 && failure.empty()) failure = "another rank could not load it";
      if (!failure.empty()) throw UsageError(failure);
      const OfflineManifest& m = *loaded;
      if (comm_->rank() != 0) return;  // rank 0 alone changes the run directory
      for (std::size_t k = 0; k < i; ++k) store.set_aside(generations[k]);
      if (i > 0) say("warning: resumed from the older checkpoint " + g.path + "; set aside as damaged: " + problems);
      const auto bytes = [&](const char* name) {
        const auto it = m.log_bytes.find(name);
        return it == m.log_bytes.end() ? std::int64_t(0) : it->second;
      };
      cut_back_file(config_.out_dir + "/train.log", bytes("train.log"));
      cut_back_file(config_.out_dir + "/metrics.jsonl", bytes("metrics.jsonl"));
      return;
    } catch (const LogicError&) {
      throw;
    } catch (const UsageError& e) {
      const std::string what = e.what();
      problems += std::string(problems.empty() ? "" : "; ") + g.path + " (" + what + ")";
      trainer_.reset();
    }
  }
  throw UsageError("--resume: no usable checkpoint in " + config_.out_dir +
                   (problems.empty() ? std::string() : ": " + problems));
}

OfflineTrainingSummary OfflineTrainingRun::run() {
  if (started_) throw LogicError("OfflineTrainingRun::run(): a run runs once");
  started_ = true;
  config_.validate();
  namespace fs = std::filesystem;
  std::error_code ec;
  // Rank 0 writes the run directory; the other ranks train alongside.
  const bool writer = comm_->rank() == 0;
  if (resume_) {
    // Nothing on disk changes before the checkpoint has loaded: a failed
    // resume leaves the run as it was.
    if (!fs::is_directory(config_.out_dir, ec))
      throw UsageError("--resume: out_dir '" + config_.out_dir + "' is not a directory");
    check_resume_compatible(saved_config(config_.out_dir), config_, config_.out_dir + "/checkpoints");
  } else if (writer) {
    prepare_output_directory(config_.out_dir, "out_dir");
  }
  if (writer) files_ = std::make_unique<Files>(config_.out_dir);
  const CheckpointStore store(config_.out_dir);
  if (!resume_ && writer) prepare_fresh_run_directory(config_.out_dir, overwrite_, offline_run_files());
  OfflineTrainingSummary summary;
  if (resume_) {
    resume_newest_generation();
  } else {
    trainer_ = std::make_unique<OfflineTrainer<ExecSpace>>(config_, comm_);
  }
  OfflineTrainer<ExecSpace>& trainer = *trainer_;
  const DatasetMetadata& d = trainer.dataset_metadata();
  say("foxrl " FOXRL_VERSION " train-offline: " + config_.algo + " on " + ExecSpace::name() + ", dataset " +
      config_.dataset + " (" + std::to_string(trainer.dataset_rows()) + " transitions of " + env_kind_name(d.env) +
      (d.policy.empty() ? std::string() : ", behaviour policy " + d.policy) +
      (d.policy == "epsilon-greedy" ? " epsilon " + short_number(d.epsilon) : std::string()) + "), seed " +
      std::to_string(config_.seed) +
      (comm_->size() > 1 ? ", " + std::to_string(comm_->size()) + " ranks (" + comm_->transport() + ")" : ""));
  if (const auto* market = trainer.market()) say(market->data.describe());
  if (resume_) {
    say("resumed from the checkpoint of epoch " + std::to_string(trainer.epoch()) + " (" +
        std::to_string(trainer.updates()) + " updates) in " + config_.out_dir);
  }
  summary.first_epoch = trainer.epoch();
  if (writer) {
    store.remove_stale_temporaries();
    files_->log.open(config_.out_dir + "/train.log", std::ios::app);
    files_->metrics.open(config_.out_dir + "/metrics.jsonl", std::ios::app);
    if (!files_->log || !files_->metrics) throw UsageError("out_dir '" + config_.out_dir + "': cannot write its logs");
    files_->open = true;
    for (const auto& line : files_->pending) files_->log << line << "\n";
    files_->log.flush();
    files_->pending.clear();
    write_file_atomically(config_.out_dir + "/config.json", config_.to_json() + "\n");
  }

  for (std::int64_t e = trainer.epoch(); e < config_.epochs; ++e) {
    const OfflineEpochRecord record = trainer.run_epoch();
    summary.epochs.push_back(record);
    if (e == summary.first_epoch && comm_->size() > 1)
      say("gradient mean over the ranks: " + trainer.gradient_transport());
    say(format_offline_epoch_log(record));
    if (!writer) continue;
    files_->metrics << offline_epoch_json(record) << std::endl;
    if (record.evaluation)
      write_file_atomically(config_.out_dir + "/evaluation_episodes.json", evaluation_json(record, config_));
    if (record.epoch % config_.checkpoint_every == 0 || e + 1 == config_.epochs) {
      files_->log.flush();
      files_->metrics.flush();
      const std::map<std::string, std::int64_t> log_bytes = {
          {"train.log", file_bytes(config_.out_dir + "/train.log")},
          {"metrics.jsonl", file_bytes(config_.out_dir + "/metrics.jsonl")}};
      store.publish(
          record.epoch, [&](const std::string& dir) { trainer.save_checkpoint(dir, log_bytes); },
          static_cast<int>(config_.keep_checkpoints));
    }
  }
  if (!writer) return summary;  // rank 0 reports and writes the outputs
  ChartOptions options;
  const ChartSeries returns = read_eval_curve(config_.out_dir + "/metrics.jsonl", options);
  write_file_atomically(config_.out_dir + "/learning_curve_return.svg",
                        render_line_chart("Greedy evaluation return per epoch (" + config_.algo + ")", "epoch",
                                          "return", {returns}, options));
  if (trainer.market()) {
    // The test split, held out from the periodic evaluation (validation).
    summary.evaluation = trainer.evaluate_test_split();
    say(summary.evaluation->table());
    write_file_atomically(config_.out_dir + "/evaluation.json", summary.evaluation->json() + "\n");
    write_file_atomically(config_.out_dir + "/evaluation_backtest.csv", summary.evaluation->backtest_csv());
    write_file_atomically(config_.out_dir + "/equity.svg", summary.evaluation->svg());
  }
  say("outputs in " + config_.out_dir +
      ": train.log, metrics.jsonl, checkpoints/epoch-N/ (learner.safetensors + guard.safetensors + "
      "offline_checkpoint.json), "
      "evaluation_episodes.json, learning_curve_return.svg" +
      std::string(trainer.market() ? ", evaluation.json, evaluation_backtest.csv, equity.svg" : ""));
  return summary;
}

}  // namespace foxrl
