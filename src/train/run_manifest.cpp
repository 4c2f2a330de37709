#include "train/run_manifest.hpp"

#include "core/error.hpp"
#include "io/atomic_file.hpp"
#include "io/crc32c.hpp"
#include "io/strict_json.hpp"
#include "train/checkpoint_store.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <iterator>

namespace foxrl {
namespace {

using Json = nlohmann::json;

std::string manifest_path(const std::string& dir) { return dir + "/checkpoint.json"; }

/// The manifest's checksum: CRC-32C of the compact dump of everything but
/// the "crc32c" field (nlohmann dumps keys sorted and numbers in shortest
/// round-trip form, so parse + dump reproduces the written text).
std::string content_checksum(Json j) {
  j.erase("crc32c");
  const std::string text = j.dump();
  return crc32c_hex(crc32c(text.data(), text.size()));
}

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
  j["run_id"] = identity.run_id;
  j["config_hash"] = identity.config_hash;
  j["log_bytes"] = log_bytes;
  if (ranks != 1) j["ranks"] = ranks;  // one-rank manifests stay as they were
  if (has_normalizer) {
    j["normalizer"] = {{"count", normalizer.count}, {"mean", normalizer.mean}, {"m2", normalizer.m2}};
  }
  j["crc32c"] = content_checksum(j);
  write_file_atomically(manifest_path(dir), j.dump(2) + "\n");
}

RunManifest RunManifest::read(const std::string& dir) {
  const std::string path = manifest_path(dir);
  std::ifstream in(path);
  if (!in) throw UsageError(path + ": cannot open the checkpoint manifest (is '" + dir + "' a foxrl run directory?)");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const Json j = parse_strict_json(text, path);  // line and column; depth and duplicate keys refused
  if (!j.is_object()) throw UsageError(path + ": not a JSON object");
  auto field = [&](const char* key) -> const Json& {
    if (!j.contains(key)) throw UsageError(path + ": missing field '" + std::string(key) + "'");
    return j.at(key);
  };
  if (field("format") != "foxrl-dqn-checkpoint")
    throw UsageError(path + ": field 'format' is not foxrl-dqn-checkpoint");
  const Json& version = field("format_version");
  if (version.is_number_integer() && version.get<std::int64_t>() > format_version)
    throw NewerFormatError(path, "format_version", version.dump(), "1 to " + std::to_string(format_version));
  const bool known_version =
      version.is_number_integer() && version.get<std::int64_t>() >= 1 && version.get<std::int64_t>() <= format_version;
  if (!known_version) {
    throw UsageError(path + ": field 'format_version' is " + version.dump().substr(0, 40) + ", this foxrl reads 1 to " +
                     std::to_string(format_version));
  }
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION  // fuzzing reads past the checksum
  if (version != 1) {
    const Json& stored = field("crc32c");
    if (!stored.is_string() || stored.get<std::string>() != content_checksum(j)) {
      throw UsageError(path + ": checksum mismatch (field 'crc32c' is " + stored.dump().substr(0, 40) +
                       ", the contents give \"" + content_checksum(j) + "\"): the file is damaged or was edited");
    }
  }
#endif
  RunManifest m;
  // The config goes through the same validation as a config file.
  m.config = TrainConfig::from_json_text(field("config").dump(), path + ": field 'config'");
  try {
    m.epoch = field("epoch").get<std::int64_t>();
    m.global_step = field("global_step").get<std::int64_t>();
    m.updates = field("updates").get<std::int64_t>();
    if (m.epoch < 0 || m.global_step < 0 || m.updates < 0) throw UsageError(path + ": negative epoch or counters");
    m.identity.epoch = m.epoch;
    if (version != 1) {
      m.identity.run_id = field("run_id").get<std::string>();
      m.identity.config_hash = field("config_hash").get<std::string>();
      m.log_bytes = field("log_bytes").get<std::map<std::string, std::int64_t>>();
      if (m.identity.config_hash != RunIdentity::config_hash_of(m.config))
        throw UsageError(path + ": field 'config_hash' does not match its field 'config'");
    }
    if (j.contains("ranks")) {
      const Json& r = j.at("ranks");
      if (!r.is_number_integer() || r.get<std::int64_t>() < 1 || r.get<std::int64_t>() > (1 << 24))
        throw UsageError(path + ": field 'ranks' is " + r.dump().substr(0, 40) + ", expected an integer >= 1");
      m.ranks = r.get<int>();
    }
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

void RunManifest::check_ranks(int ranks_now, const std::string& where) const {
  if (ranks == ranks_now) return;
  throw UsageError(
      where + ": the checkpoint was written by a run of " + std::to_string(ranks) + (ranks == 1 ? " rank" : " ranks") +
      ", this run has " + std::to_string(ranks_now) +
      "; each rank's replay, envs and exploration are part of the checkpoint, so resume with " + std::to_string(ranks) +
      (ranks == 1 ? " rank (no mpirun, or mpirun -np 1)" : " ranks (mpirun -np " + std::to_string(ranks) + ")"));
}

RunManifest RunManifest::read_newest(const std::string& run_dir) {
  const auto generations = CheckpointStore(run_dir).generations();
  if (generations.empty()) CheckpointStore::resolve(run_dir);  // throws, naming what it looked for
  for (std::size_t i = 0; i + 1 < generations.size(); ++i) {
    try {
      return read(generations[i].path);
    } catch (const UsageError&) {  // damaged: an older generation may do
    }
  }
  return read(generations.back().path);
}

}  // namespace foxrl
