#pragma once
// OfflineManifest: the JSON file of an offline checkpoint generation
// (offline_checkpoint.json beside learner.safetensors). It holds what the
// learner's file does not: the run's config, the epoch, the sampler's call
// counter (so a resumed run draws the batches the uninterrupted one would),
// the dataset's size and SHA-256 (a resume or an eval refuses another file
// at the dataset's path), the run's identity (run id, config hash, epoch:
// learner.safetensors and guard.safetensors carry the same, so a file of
// another run or epoch is refused), the ranks of a data-parallel run, the
// lengths of train.log and metrics.jsonl at the checkpoint (a resume cuts
// the logs back to them), and a CRC-32C of its own contents, so an edited
// or damaged manifest is refused. Manifests written before the identity and
// the dataset hash existed are read without them (the size is checked).

#include "train/run_identity.hpp"

#include <cstdint>
#include <map>
#include <string>

namespace foxrl {

struct OfflineManifest {
  static constexpr int format_version = 1;
  static constexpr const char* manifest_file = "offline_checkpoint.json";
  static constexpr const char* learner_file = "learner.safetensors";
  /// The training guards' state (counters, loss windows, restore points).
  static constexpr const char* guard_file = "guard.safetensors";

  std::string config_json;  ///< OfflineTrainConfig::to_json() of the run
  std::string algo;
  std::int64_t epoch = 0;
  std::int64_t updates = 0;
  std::uint64_t sample_calls = 0;
  std::int64_t dataset_rows = 0;
  std::string dataset_sha256;  ///< of the dataset file's bytes ("" in older manifests)
  /// The run's id and config hash, and `epoch` ("" ids in older manifests).
  RunIdentity identity;
  std::map<std::string, std::int64_t> log_bytes;
  bool has_guard = true;  ///< the generation holds guard_file (older ones do not)
  /// Ranks of the data-parallel run that wrote it (1: a single process;
  /// stored only when > 1). Each rank samples its own stream, so a resume
  /// needs the same count.
  int ranks = 1;

  /// Writes `dir`/offline_checkpoint.json atomically.
  void write(const std::string& dir) const;
  /// Reads `dir`/offline_checkpoint.json; UsageError naming the file and
  /// field on a missing, malformed or damaged (checksum) manifest.
  static OfflineManifest read(const std::string& dir);
  /// UsageError naming `where` and both counts unless ranks == ranks_now.
  void check_ranks(int ranks_now, const std::string& where) const;
  /// UsageError naming `where`, the dataset `path` and both hashes unless
  /// the checkpoint was trained on a file with SHA-256 `sha256` (manifests
  /// without a hash pass).
  void check_dataset(const std::string& sha256, const std::string& path, const std::string& where) const;
};

}  // namespace foxrl
