#include "train/run_identity.hpp"

#include "core/error.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>

namespace foxrl {
namespace {

const char* const run_id_key = "foxrl.run_id";
const char* const config_hash_key = "foxrl.config_hash";
const char* const epoch_key = "foxrl.epoch";

std::string hex64(std::uint64_t x) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(x));
  return text;
}

/// FNV-1a, 64 bit: a stable hash of text (identity, not security).
std::uint64_t fnv1a(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;
  for (const unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

std::string RunIdentity::new_run_id() {
  // A fixed id makes two runs' checkpoints byte-comparable (reproducibility
  // checks, the crash campaign); it must still look like an id.
  if (const char* fixed = std::getenv("FOXRL_RUN_ID")) {
    std::string id = fixed;
    const bool plain =
        !id.empty() && id.size() <= 64 &&
        id.find_first_not_of("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-") == std::string::npos;
    if (!plain) throw UsageError("FOXRL_RUN_ID must be 1 to 64 letters, digits, '_' or '-'");
    return id;
  }
  std::random_device device;
  const std::uint64_t entropy = (std::uint64_t(device()) << 32) ^ device();
  const auto now = static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  return hex64(entropy ^ (now * 0x9E3779B97F4A7C15ull));
}

std::string RunIdentity::config_hash_of(const TrainConfig& config) {
  nlohmann::json j = nlohmann::json::parse(config.to_json());
  for (const char* key : {"epochs", "out_dir", "keep_checkpoints"}) j.erase(key);
  return hex64(fnv1a(j.dump()));
}

std::string RunIdentity::config_hash_of(const OfflineTrainConfig& config) {
  nlohmann::json j = nlohmann::json::parse(config.to_json());
  for (const char* key : {"epochs", "out_dir", "keep_checkpoints", "dataset"}) j.erase(key);
  return hex64(fnv1a(j.dump()));
}

std::map<std::string, std::string> RunIdentity::metadata() const {
  return {{run_id_key, run_id}, {config_hash_key, config_hash}, {epoch_key, std::to_string(epoch)}};
}

void RunIdentity::check_metadata(const std::map<std::string, std::string>& metadata, const std::string& path) const {
  const auto value = [&](const char* key) {
    const auto it = metadata.find(key);
    return it == metadata.end() ? std::string() : it->second;
  };
  if (value(run_id_key).empty() && value(config_hash_key).empty() && value(epoch_key).empty()) return;
  if (value(run_id_key) != run_id || value(config_hash_key) != config_hash) {
    throw UsageError(path + ": from another run (run " + value(run_id_key).substr(0, 32) + ", config " +
                     value(config_hash_key).substr(0, 32) + "), the checkpoint is run " + run_id + ", config " +
                     config_hash);
  }
  if (value(epoch_key) != std::to_string(epoch)) {
    throw UsageError(path + ": from the checkpoint of epoch " + value(epoch_key).substr(0, 32) + ", not of epoch " +
                     std::to_string(epoch) + " like the rest of its checkpoint");
  }
}

}  // namespace foxrl
