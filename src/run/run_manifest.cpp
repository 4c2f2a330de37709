#include "run/run_manifest.hpp"

#include "core/error.hpp"
#include "io/atomic_file.hpp"

#include <nlohmann/json.hpp>

#include <fstream>

namespace foxrl {
namespace {

using Json = nlohmann::json;

std::string manifest_path(const std::string& dir) { return dir + "/checkpoint.json"; }

}  // namespace

void RunManifest::write(const std::string& dir) const {
  Json j;
  j["format"] = "foxrl-dqn-checkpoint";
  j["format_version"] = format_version;
  j["weights"] = "checkpoint.safetensors";
  j["config"] = Json::parse(config.to_json());
  j["epoch"] = epoch;
  j["global_step"] = global_step;
  j["updates"] = updates;
  if (has_normalizer) {
    j["normalizer"] = {{"count", normalizer.count}, {"mean", normalizer.mean}, {"m2", normalizer.m2}};
  }
  write_file_atomically(manifest_path(dir), j.dump(2) + "\n");
}

RunManifest RunManifest::read(const std::string& dir) {
  const std::string path = manifest_path(dir);
  std::ifstream in(path);
  if (!in) throw UsageError(path + ": cannot open the checkpoint manifest (is '" + dir + "' a foxrl run directory?)");
  const Json j = Json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw UsageError(path + ": not valid JSON");
  auto field = [&](const char* key) -> const Json& {
    if (!j.contains(key)) throw UsageError(path + ": missing field '" + std::string(key) + "'");
    return j.at(key);
  };
  if (field("format") != "foxrl-dqn-checkpoint")
    throw UsageError(path + ": field 'format' is not foxrl-dqn-checkpoint");
  if (field("format_version") != format_version) {
    throw UsageError(path + ": field 'format_version' is " + field("format_version").dump() + ", this foxrl reads " +
                     std::to_string(format_version));
  }
  RunManifest m;
  // The config goes through the same validation as a config file.
  m.config = TrainConfig::from_json_text(field("config").dump(), path + ": field 'config'");
  try {
    m.epoch = field("epoch").get<std::int64_t>();
    m.global_step = field("global_step").get<std::int64_t>();
    m.updates = field("updates").get<std::int64_t>();
    if (j.contains("normalizer")) {
      const auto& n = j.at("normalizer");
      m.has_normalizer = true;
      m.normalizer.count = n.at("count").get<std::vector<double>>();
      m.normalizer.mean = n.at("mean").get<std::vector<double>>();
      m.normalizer.m2 = n.at("m2").get<std::vector<double>>();
    }
  } catch (const Json::exception& e) {
    throw UsageError(path + ": malformed counters or normalizer: " + e.what());
  }
  return m;
}

}  // namespace foxrl
