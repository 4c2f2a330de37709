#pragma once
// TrainConfig: the one typed configuration of a training run. Read from a
// JSON file, every key overridable from the command line (`--set key=value`),
// with documented defaults; unknown keys and out-of-range values are rejected
// with a UsageError naming the key. All algorithm features are always on:
// the config holds hyperparameters, never feature switches.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace foxrl {

/// Hidden layers an MLP trunk may have (NetworkLayout::max_layers less
/// the head): the `hidden` keys of every config are checked against it.
inline constexpr std::size_t kMaxHiddenLayers = 7;
/// The largest `seed` (and seed of a seed study) a config holds.
inline constexpr std::uint64_t kMaxSeed = 18000000000000000000ULL;
/// The smallest `lr` and `adam_eps`: both reach the kernels as float, and a
/// smaller value is no learning rate (an update below a weight's precision)
/// or rounds to an epsilon of 0 (a division by zero where a moment is 0).
inline constexpr double kMinLearningRate = 1e-10;
inline constexpr double kMinAdamEpsilon = 1e-30;

struct TrainConfig {
  // --- environment ---------------------------------------------------------
  /// A registered env (envs/env_registry.hpp; `foxrl info` lists them),
  /// checked where the run is set up: the config layer knows no env.
  std::string env = "market";
  std::string data;                  ///< market OHLCV CSV; empty: built-in synthetic market
  std::string synthetic = "regime";  ///< generator when `data` is empty: "regime" or "benchmark"
  std::int64_t synthetic_bars = 100000;
  std::string features = "returns";  ///< market observation: "returns" (window returns + position) or "ohlcv"
  std::int64_t num_envs = 64;
  std::int64_t episode_length = 1000;  ///< market episodes (truncation); CartPole truncates at 500
  double cost_bps = 5.0;               ///< market: cost per unit of position change, basis points
  /// market: "long_short" (actions short, flat, long) or "long_only" (flat, long)
  std::string positions = "long_short";
  std::int64_t window = 64;  ///< market: log returns in the observation
  std::string train_end;     ///< market: last timestamp of the training split (ISO date); empty: 70 %
  std::string test_start;    ///< market: first timestamp of the test split; empty: after validation
  std::string test_end;      ///< market: last timestamp of the test split; empty: the last bar
  /// market, train_end / test_start with no bar between them: the last
  /// fraction of the bars up to train_end held out as the validation split
  /// (the train split then ends `window` bars before it); 0: no validation
  double validation_fraction = 0.15;
  /// market: the validation metric that picks the best checkpoint, "sharpe"
  /// (net Sharpe ratio) or "net_return"
  std::string select_by = "sharpe";
  bool skip_bad_rows = false;           ///< market CSV: skip and count invalid rows instead of failing
  bool allow_implausible_bars = false;  ///< market CSV: accept bars moving more than 10x (kMaxBarMove)
  std::string start_date;               ///< market: first timestamp used (ISO date); empty: the first bar
  double bars_per_year = 0;             ///< market: Sharpe annualisation; 0: measured from the timestamps

  // --- algorithm ---------------------------------------------------------------
  /// A registered online learner (agents/learner_registry.hpp; `foxrl info`
  /// lists them), checked where the run is set up.
  std::string algo = "dqn";

  // --- network and optimiser --------------------------------------------------
  std::vector<std::int64_t> hidden = {128, 128};
  double lr = 2.5e-4;
  double adam_eps = 1e-8;
  double weight_decay = 0.0;
  double max_grad_norm = 10.0;  ///< global gradient-norm clip; 0 disables
  std::string loss = "huber";   ///< "huber" (delta 1) or "mse"
  /// Dense products: "fp32" (exact), or the tensor-core modes "tf32" and
  /// "bf16" (inputs rounded, fp32 accumulation and master weights).
  std::string matmul_precision = "fp32";

  // --- DQN --------------------------------------------------------------------
  double gamma = 0.99;
  std::int64_t n_step = 3;
  std::int64_t buffer_capacity = 1 << 18;
  std::int64_t batch_size = 256;
  std::int64_t learning_starts = 10000;    ///< env steps collected before the first update
  std::int64_t updates_per_iteration = 1;  ///< gradient steps after each collector step
  std::int64_t train_every = 1;            ///< iterations between update rounds
  std::int64_t target_update_every = 500;  ///< gradient steps between hard target copies
  double polyak_tau = 0.0;                 ///< > 0: soft target update every step instead
  double eps_start = 1.0;
  double eps_end = 0.05;
  std::int64_t eps_decay_env_steps = 250000;
  double per_alpha = 0.6;  ///< 0: uniform replay
  double per_beta_start = 0.4;
  std::int64_t per_beta_anneal_updates = 100000;

  // --- guard ------------------------------------------------------------------
  double guard_spike_factor = 100.0;  ///< loss > factor x running median: bad update
  std::int64_t guard_max_bad = 5;     ///< consecutive bad updates before restoring
  double guard_lr_decay = 0.5;        ///< learning-rate factor after a restore

  // --- schedule and output ----------------------------------------------------
  std::int64_t epochs = 10;
  std::int64_t iterations_per_epoch = 1000;
  std::uint64_t seed = 1;
  std::string out_dir = "foxrl-run";  ///< logs, metrics.jsonl, checkpoints, charts
  std::int64_t checkpoint_every = 1;  ///< epochs between checkpoints (and at the end)
  std::int64_t keep_checkpoints = 2;  ///< checkpoint generations kept (the newest ones)
  double target_return = 0;           ///< > 0: stop once the last-100 mean return reaches it

  /// Reads a JSON object of the keys above; throws UsageError naming the
  /// file and key on unknown keys, wrong types or out-of-range values.
  static TrainConfig from_json_file(const std::string& path);
  /// Same from JSON text; `where` names the source in messages.
  static TrainConfig from_json_text(const std::string& text, const std::string& where);
  /// Applies overrides "key=value" (value parsed as the key's type).
  void apply_overrides(const std::vector<std::string>& key_values);
  /// Cross-field checks (e.g. batch_size <= buffer_capacity).
  void validate() const;
  /// The config as a JSON object string (for manifests and logs).
  std::string to_json() const;
  /// One line per key: name, type, default, range and meaning.
  static std::string describe();
};

}  // namespace foxrl
