#include "train/offline_manifest.hpp"

#include "config/offline_train_config.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"
#include "io/atomic_file.hpp"
#include "io/crc32c.hpp"
#include "io/strict_json.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <iterator>

namespace foxrl {
namespace {

using Json = nlohmann::json;

constexpr const char* format_name = "foxrl-offline-checkpoint";

std::string manifest_path(const std::string& dir) { return dir + "/" + OfflineManifest::manifest_file; }

/// CRC-32C of the compact dump of everything but the "crc32c" field (keys
/// sorted, numbers in shortest round-trip form: parse + dump reproduces it).
std::string content_checksum(Json j) {
  j.erase("crc32c");
  const std::string text = j.dump();
  return crc32c_hex(crc32c(text.data(), text.size()));
}

}  // namespace

void OfflineManifest::write(const std::string& dir) const {
  Json j;
  j["format"] = format_name;
  j["format_version"] = format_version;
  j["learner"] = learner_file;
  if (has_guard) j["guard"] = guard_file;
  j["config"] = Json::parse(config_json);
  j["algo"] = algo;
  j["epoch"] = epoch;
  j["updates"] = updates;
  j["sample_calls"] = sample_calls;
  j["dataset_rows"] = dataset_rows;
  if (!dataset_sha256.empty()) j["dataset_sha256"] = dataset_sha256;
  if (!identity.run_id.empty()) {
    j["run_id"] = identity.run_id;
    j["config_hash"] = identity.config_hash;
  }
  j["log_bytes"] = log_bytes;
  if (ranks != 1) j["ranks"] = ranks;  // single-process manifests stay as they were
  j["crc32c"] = content_checksum(j);
  write_file_atomically(manifest_path(dir), j.dump(2) + "\n");
}

OfflineManifest OfflineManifest::read(const std::string& dir) {
  const std::string path = manifest_path(dir);
  std::ifstream in(path);
  if (!in) throw UsageError(path + ": cannot open the offline checkpoint manifest");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const Json j = parse_strict_json(text, path);
  if (!j.is_object()) throw UsageError(path + ": not a JSON object");
  auto field = [&](const char* key) -> const Json& {
    if (!j.contains(key)) throw UsageError(path + ": missing field '" + std::string(key) + "'");
    return j.at(key);
  };
  if (field("format") != format_name) throw UsageError(path + ": field 'format' is not " + format_name);
  if (const Json& v = field("format_version"); v.is_number_integer() && v.get<std::int64_t>() > format_version)
    throw NewerFormatError(path, "format_version", v.dump(), std::to_string(format_version));
  if (field("format_version") != format_version)
    throw UsageError(path + ": field 'format_version' is " + field("format_version").dump().substr(0, 40) +
                     ", this foxrl reads " + std::to_string(format_version));
  const Json& stored = field("crc32c");
  if (!stored.is_string() || stored.get<std::string>() != content_checksum(j))
    throw UsageError(path + ": checksum mismatch (field 'crc32c' is " + stored.dump().substr(0, 40) +
                     ", the contents give \"" + content_checksum(j) + "\"): the file is damaged or was edited");
  OfflineManifest m;
  // The config goes through the same validation as a config file.
  m.config_json = OfflineTrainConfig::from_json_text(field("config").dump(), path + ": field 'config'").to_json();
  try {
    m.algo = field("algo").get<std::string>();
    m.epoch = field("epoch").get<std::int64_t>();
    m.updates = field("updates").get<std::int64_t>();
    m.sample_calls = field("sample_calls").get<std::uint64_t>();
    m.dataset_rows = field("dataset_rows").get<std::int64_t>();
    m.log_bytes = field("log_bytes").get<std::map<std::string, std::int64_t>>();
    if (j.contains("dataset_sha256")) m.dataset_sha256 = j.at("dataset_sha256").get<std::string>();
    if (j.contains("run_id")) {
      m.identity.run_id = j.at("run_id").get<std::string>();
      m.identity.config_hash = field("config_hash").get<std::string>();
    }
    m.ranks = j.contains("ranks") ? j.at("ranks").get<int>() : 1;
    if (m.ranks < 1) throw UsageError(path + ": field 'ranks' is " + std::to_string(m.ranks) + ", expected >= 1");
    m.has_guard = j.contains("guard");
    if (m.has_guard && j.at("guard") != guard_file)
      throw UsageError(path + ": field 'guard' is " + j.at("guard").dump().substr(0, 40) + ", expected \"" +
                       guard_file + "\"");
  } catch (const Json::exception& e) {
    throw UsageError(path + ": malformed field: " + e.what());
  }
  if (m.epoch < 0 || m.updates < 0 || m.dataset_rows < 1)
    throw UsageError(path + ": negative epoch or counters, or an empty dataset");
  if (!m.dataset_sha256.empty() &&
      (m.dataset_sha256.size() != 64 || m.dataset_sha256.find_first_not_of("0123456789abcdef") != std::string::npos))
    throw UsageError(path + ": field 'dataset_sha256' is " + quote_excerpt(m.dataset_sha256) +
                     ", expected 64 lowercase hex digits");
  m.identity.epoch = m.epoch;
  if (!m.identity.run_id.empty()) {
    const std::string expected =
        RunIdentity::config_hash_of(OfflineTrainConfig::from_json_text(m.config_json, path + ": field 'config'"));
    if (m.identity.config_hash != expected)
      throw UsageError(path + ": field 'config_hash' is " + quote_excerpt(m.identity.config_hash) +
                       ", the field 'config' gives \"" + expected + "\"");
  }
  return m;
}

void OfflineManifest::check_dataset(const std::string& sha256, const std::string& path,
                                    const std::string& where) const {
  if (dataset_sha256.empty() || dataset_sha256 == sha256) return;
  throw UsageError(where + ": the checkpoint was trained on a dataset with SHA-256 " + dataset_sha256 +
                   ", the dataset '" + path + "' has SHA-256 " + sha256 +
                   ": another file at that path (an offline run is resumed and evaluated with its own dataset)");
}

void OfflineManifest::check_ranks(int ranks_now, const std::string& where) const {
  if (ranks == ranks_now) return;
  throw UsageError(
      where + ": the checkpoint was written by a run of " + std::to_string(ranks) + (ranks == 1 ? " rank" : " ranks") +
      ", this run has " + std::to_string(ranks_now) +
      "; each rank samples the dataset with its own stream, so resume with " + std::to_string(ranks) +
      (ranks == 1 ? " rank (no mpirun, or mpirun -np 1)" : " ranks (mpirun -np " + std::to_string(ranks) + ")"));
}

}  // namespace foxrl
