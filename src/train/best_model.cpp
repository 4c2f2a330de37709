#include "train/best_model.hpp"

#include "core/error.hpp"
#include "core/strings.hpp"
#include "io/atomic_file.hpp"
#include "io/strict_json.hpp"
#include "train/run_manifest.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

namespace foxrl {
namespace {

using Json = nlohmann::json;

std::string record_path(const std::string& dir) { return dir + "/" + BestModel::file; }

}  // namespace

std::string BestModel::to_json() const {
  Json j;
  j["format"] = "foxrl-best-model";
  j["epoch"] = epoch;
  j["select_by"] = select_by;
  j["score"] = score;
  j["run_id"] = run_id;
  j["validation"] = {{"total_return", validation.agent.total_return},
                     {"sharpe", validation.agent.sharpe},
                     {"trades", validation.agent.trades},
                     {"buy_and_hold_return", validation.buy_and_hold_return}};
  return j.dump(2);
}

void BestModel::write(const std::string& dir) const { write_file_atomically(record_path(dir), to_json() + "\n"); }

BestModel BestModel::read(const std::string& dir) {
  const std::string path = record_path(dir);
  std::ifstream in(path);
  if (!in) throw UsageError(path + ": cannot open the best model's record");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const Json j = parse_strict_json(text, path);
  BestModel b;
  try {
    if (j.at("format").get<std::string>() != "foxrl-best-model") throw UsageError("format is not foxrl-best-model");
    b.epoch = j.at("epoch").get<std::int64_t>();
    b.select_by = j.at("select_by").get<std::string>();
    b.score = j.at("score").get<double>();
    b.run_id = j.at("run_id").get<std::string>();
    const Json& v = j.at("validation");
    b.validation.agent.total_return = v.at("total_return").get<double>();
    b.validation.agent.sharpe = v.at("sharpe").get<double>();
    b.validation.agent.trades = v.at("trades").get<long>();
    b.validation.buy_and_hold_return = v.at("buy_and_hold_return").get<double>();
  } catch (const std::exception& e) {
    throw UsageError(path + ": malformed best model record: " + e.what());
  }
  if (b.epoch < 1) throw UsageError(path + ": field 'epoch' must be at least 1, got " + std::to_string(b.epoch));
  if (b.select_by != "sharpe" && b.select_by != "net_return")
    throw UsageError(path + ": field 'select_by' must be \"sharpe\" or \"net_return\", got '" + b.select_by + "'");
  return b;
}

BestModelStore::BestModelStore(std::string run_dir) : store_(std::move(run_dir), folder) {}

std::string BestModelStore::publish(const BestModel& best, const std::function<void(const std::string&)>& write_model,
                                    const std::vector<std::int64_t>& referenced) const {
  std::string path = store_.publish(
      best.epoch,
      [&](const std::string& dir) {
        write_model(dir);
        best.write(dir);
      },
      std::numeric_limits<int>::max());
  prune(referenced);
  return path;
}

void BestModelStore::prune(const std::vector<std::int64_t>& referenced) const {
  const auto all = store_.generations();  // newest first
  for (std::size_t i = 1; i < all.size(); ++i) {
    if (std::find(referenced.begin(), referenced.end(), all[i].epoch) == referenced.end()) store_.remove(all[i]);
  }
}

void BestModelStore::discard_after(std::int64_t epoch) const {
  for (const auto& g : store_.generations())
    if (g.epoch > epoch) store_.remove(g);
}

std::string BestModelStore::path_of(std::int64_t epoch) const {
  for (const auto& g : store_.generations())
    if (g.epoch == epoch) return g.path;
  return {};
}

std::string BestModelStore::verified_path_of(const BestModel& best) const {
  std::string dir = path_of(best.epoch);
  if (dir.empty()) return dir;
  const auto refuse = [&](const std::string& file, const std::string& run, std::int64_t epoch) {
    throw UsageError(dir + "/" + file + ": the best model of run " + quote_excerpt(run) + ", epoch " +
                     std::to_string(epoch) + "; this run (" + best.run_id + ") chose the best model of epoch " +
                     std::to_string(best.epoch) + ": a best model from another run or epoch is not used");
  };
  const BestModel there = BestModel::read(dir);
  if (there.run_id != best.run_id || there.epoch != best.epoch) refuse(BestModel::file, there.run_id, there.epoch);
  const RunManifest manifest = RunManifest::read(dir);
  // Manifests of version 1 carry no run id.
  if ((!manifest.identity.run_id.empty() && manifest.identity.run_id != best.run_id) || manifest.epoch != best.epoch)
    refuse("checkpoint.json", manifest.identity.run_id, manifest.epoch);
  return dir;
}

std::string BestModelStore::resolve(const std::string& run_dir) {
  const auto all = BestModelStore(run_dir).store_.generations();
  if (all.empty()) {
    throw UsageError("'" + run_dir + "' holds no best model (" + run_dir + "/" + folder +
                     "/epoch-N/): a market run with a validation split keeps one (is it such a run directory?)");
  }
  return all.front().path;
}

std::vector<std::int64_t> best_epochs_named_by(const CheckpointStore& checkpoints) {
  std::vector<std::int64_t> epochs;
  std::error_code ec;
  for (const auto& g : checkpoints.generations()) {
    if (!std::filesystem::exists(record_path(g.path), ec)) continue;
    try {
      epochs.push_back(BestModel::read(g.path).epoch);
    } catch (const UsageError&) {
      // A damaged record: a resume refuses that generation anyway.
    }
  }
  return epochs;
}

}  // namespace foxrl
