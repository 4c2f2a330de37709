#pragma once
// RunManifest: the small JSON file written next to a checkpoint
// (checkpoint.json beside checkpoint.safetensors). It holds what the weights
// alone do not: the training config (network shape, observation spec,
// market and split settings), the step counters and the frozen signal
// normalizer, so `foxrl eval`, `foxrl infer` and the Policy API rebuild the
// exact inference path; the run identity the checkpoint's safetensors files
// must carry too; the lengths of train.log and metrics.jsonl when the
// checkpoint was taken (a resume cuts the logs back to them); and a CRC-32C
// of its own contents, so an edited or damaged manifest is refused.

#include "config/train_config.hpp"
#include "market/signal_adapter.hpp"
#include "train/run_identity.hpp"

#include <cstdint>
#include <map>
#include <string>

namespace foxrl {

struct RunManifest {
  /// 2 added the identity, the log lengths and the checksum; 1 is read.
  static constexpr int format_version = 2;
  TrainConfig config;
  /// Empty run_id: a version-1 manifest, which had none.
  RunIdentity identity;
  /// Bytes of the run's logs ("train.log", "metrics.jsonl") at the
  /// checkpoint; empty when unknown (version 1).
  std::map<std::string, std::int64_t> log_bytes;
  std::int64_t epoch = 0;
  std::int64_t global_step = 0;
  std::int64_t updates = 0;
  bool has_normalizer = false;
  NormalizerState normalizer;
  /// Ranks of the data-parallel run that wrote it (field "ranks", written
  /// only when more than 1; a resume needs the same count).
  int ranks = 1;

  /// Writes `dir`/checkpoint.json atomically.
  void write(const std::string& dir) const;
  /// Reads `dir`/checkpoint.json; UsageError naming the file and field on
  /// a missing, malformed or damaged (checksum) manifest.
  static RunManifest read(const std::string& dir);
  /// The manifest of the newest generation of the run directory `run_dir`
  /// that reads (train/checkpoint_store.hpp); UsageError if none does.
  static RunManifest read_newest(const std::string& run_dir);
  /// UsageError starting with `where` (the manifest's path, or the run)
  /// unless `ranks_now` is the rank count the checkpoint was written with.
  void check_ranks(int ranks_now, const std::string& where) const;
};

}  // namespace foxrl
