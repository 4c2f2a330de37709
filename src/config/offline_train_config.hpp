#pragma once
// OfflineTrainConfig: the typed configuration of `foxrl train-offline`, read
// like TrainConfig (a JSON file, `--set key=value` on top, every key with a
// documented default and range, unknown keys and bad values refused naming
// the key). The env is not here: it is the dataset's own (its metadata
// holds the config it was recorded with), used for the periodic evaluation.

#include <cstdint>
#include <string>
#include <vector>

namespace foxrl {

struct OfflineTrainConfig {
  // --- data and algorithm -----------------------------------------------------
  std::string algo = "iql";  ///< a registered offline learner (agents/learner_registry.hpp), checked at setup
  std::string dataset;       ///< `foxrl collect` dataset (safetensors); required

  // --- networks and optimiser -------------------------------------------------
  std::vector<std::int64_t> hidden = {256, 256};  ///< trunk of every network
  double lr = 3e-4;
  double adam_eps = 1e-8;
  double max_grad_norm = 0.0;  ///< per network; 0: no clipping
  double gamma = 0.99;
  std::int64_t batch_size = 256;

  // --- IQL (Kostrikov, Nair, Levine 2021) ------------------------------------------
  double expectile = 0.7;     ///< tau of the value loss
  double iql_beta = 3.0;      ///< inverse temperature of the advantage weights
  double max_weight = 100.0;  ///< clip of the advantage weights
  double polyak_tau = 0.005;  ///< IQL's target Qs (and CQL's with cql_target_update_every 0)

  // --- CQL (Kumar et al. 2020) -------------------------------------------------------
  double cql_alpha = 1.0;                       ///< weight of the conservative penalty
  std::int64_t cql_target_update_every = 1000;  ///< updates between hard target copies; 0: Polyak (polyak_tau)

  // --- training guard (as `foxrl train`'s, one per network) -----------------------
  double guard_spike_factor = 100.0;  ///< loss > factor x running median: bad update
  std::int64_t guard_max_bad = 5;     ///< consecutive bad updates before a restore
  double guard_lr_decay = 0.5;        ///< learning-rate factor per restore

  // --- schedule, evaluation and output ------------------------------------------------
  std::int64_t epochs = 10;
  std::int64_t updates_per_epoch = 1000;
  std::int64_t eval_episodes = 100;  ///< greedy episodes after each evaluated epoch (one per env); 0: none
  std::int64_t eval_every = 1;       ///< epochs between evaluations (and after the last)
  std::uint64_t seed = 1;
  std::string out_dir = "foxrl-offline-run";
  std::int64_t checkpoint_every = 1;
  std::int64_t keep_checkpoints = 2;

  /// Reads a JSON object of the keys above; UsageError naming the file and
  /// key on unknown keys, wrong types or out-of-range values.
  static OfflineTrainConfig from_json_file(const std::string& path);
  static OfflineTrainConfig from_json_text(const std::string& text, const std::string& where);
  /// Applies overrides "key=value" (each value parsed as its key's type).
  void apply_overrides(const std::vector<std::string>& key_values);
  /// Cross-field checks (a dataset is named).
  void validate() const;
  /// The config as an indented JSON object.
  std::string to_json() const;
  /// One entry per key: name, default, range and meaning.
  static std::string describe();
};

}  // namespace foxrl
