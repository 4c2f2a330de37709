#pragma once
// RunIdentity: which run and which checkpoint a file belongs to. Every file
// of a checkpoint generation carries it (checkpoint.json and
// offline_checkpoint.json as fields, the safetensors files beside them in
// their metadata), so a file copied in from another run, or left over from
// another epoch, is refused by name instead of being mixed into the state.

#include "config/offline_train_config.hpp"
#include "config/train_config.hpp"

#include <cstdint>
#include <map>
#include <string>

namespace foxrl {

struct RunIdentity {
  std::string run_id;       ///< random, fixed when a fresh run starts, kept on resume
  std::string config_hash;  ///< of the config keys that shape the run (config_hash())
  std::int64_t epoch = 0;   ///< the checkpoint's epoch

  /// A new random run id (16 hex digits), or the environment's
  /// FOXRL_RUN_ID when set (two runs with the same id and seed write
  /// byte-identical checkpoints).
  static std::string new_run_id();
  /// A hash (16 hex digits) of `config` without the keys a resume may
  /// change (epochs, out_dir, keep_checkpoints).
  static std::string config_hash_of(const TrainConfig& config);
  /// The same for an offline run's config, without the keys its resume may
  /// change (epochs, out_dir, keep_checkpoints, dataset: a moved file).
  static std::string config_hash_of(const OfflineTrainConfig& config);

  /// The metadata entries of a safetensors file ("foxrl.run_id", ...).
  std::map<std::string, std::string> metadata() const;
  /// Throws UsageError naming `path` when `metadata` carries another
  /// identity than this one. Files without identity (written before it
  /// existed) pass.
  void check_metadata(const std::map<std::string, std::string>& metadata, const std::string& path) const;
};

}  // namespace foxrl
