#include "config/train_config.hpp"

#include "config/config_table.hpp"
#include "views/nn/network_layout.hpp"

namespace foxrl {
namespace {

static_assert(kMaxHiddenLayers + 1 == NetworkLayout::max_layers, "a trunk's layers and the head fill a layout");

using Field = ConfigTable<TrainConfig>::Field;
using config_detail::kInf;
using config_detail::reject;

const std::vector<Field>& fields() {
  using C = TrainConfig;
  static const std::vector<Field> table = {
      {"env", &C::env, 0, 0, {}, "environment: a registered env (`foxrl info` lists them: cartpole, market, ...)"},
      {"data", &C::data, 0, 0, {}, "market OHLCV CSV (empty: built-in synthetic market)"},
      {"synthetic", &C::synthetic, 0, 0, {"regime", "benchmark"}, "built-in market generator (no data file)"},
      {"synthetic_bars", &C::synthetic_bars, 1000, 1e8, {}, "bars of the built-in market"},
      {"features", &C::features, 0, 0, {"returns", "ohlcv"}, "market observation features"},
      {"num_envs", &C::num_envs, 1, 1 << 24, {}, "environments stepped in parallel"},
      {"episode_length", &C::episode_length, 1, 1e9, {}, "market episode length in bars"},
      {"cost_bps", &C::cost_bps, 0, 1e4, {}, "market cost per unit of position change (bp)"},
      {"positions",
       &C::positions,
       0,
       0,
       {"long_short", "long_only"},
       "market positions: long_short (actions short, flat, long) or long_only (flat, long; no short selling)",
       true},
      {"window", &C::window, 1, 4096, {}, "market log returns in the observation"},
      {"train_end", &C::train_end, 0, 0, {}, "last timestamp of the training split (ISO date)"},
      {"test_start", &C::test_start, 0, 0, {}, "first timestamp of the test split (ISO date)"},
      {"test_end",
       &C::test_end,
       0,
       0,
       {},
       "last timestamp of the test split (ISO date; empty: the last bar; needs train_end and test_start)",
       true},
      {"validation_fraction",
       &C::validation_fraction,
       0,
       0.9,
       {},
       "with train_end and test_start and no bar between them: the last fraction of the bars up to train_end "
       "held out for validation, the train split ending `window` bars before it (0: no validation split)",
       true},
      {"select_by",
       &C::select_by,
       0,
       0,
       {"sharpe", "net_return"},
       "market: the validation backtest's metric that picks the best checkpoint (net Sharpe or net return)",
       true},
      {"skip_bad_rows", &C::skip_bad_rows, 0, 1, {}, "skip and count invalid CSV rows"},
      {"allow_implausible_bars",
       &C::allow_implausible_bars,
       0,
       1,
       {},
       "accept CSV bars with high/low or close/previous close beyond 10x"},
      {"start_date",
       &C::start_date,
       0,
       0,
       {},
       "first timestamp of the data used (ISO date; empty: the first bar)",
       true},
      {"bars_per_year",
       &C::bars_per_year,
       0,
       1e8,
       {},
       "Sharpe annualisation in bars per year (0: measured from the data's timestamps)",
       true},
      {"algo",
       &C::algo,
       0,
       0,
       {},
       "online algorithm: a registered online learner (`foxrl info` lists them: dqn, ...)",
       true},
      {"hidden", &C::hidden, 1, 1 << 16, {}, "hidden layer sizes of the MLP trunk (1 to 7 layers)"},
      {"lr", &C::lr, kMinLearningRate, 1, {}, "Adam learning rate"},
      {"adam_eps", &C::adam_eps, kMinAdamEpsilon, 1, {}, "Adam epsilon"},
      {"weight_decay", &C::weight_decay, 0, 1, {}, "decoupled weight decay"},
      {"max_grad_norm", &C::max_grad_norm, 0, kInf, {}, "global gradient-norm clip (0: off)"},
      {"loss", &C::loss, 0, 0, {"huber", "mse"}, "TD loss"},
      {"matmul_precision",
       &C::matmul_precision,
       0,
       0,
       {"fp32", "tf32", "bf16"},
       "dense products: fp32, or tensor cores reading inputs rounded to tf32 or bf16 (fp32 accumulation and "
       "weights)",
       true},
      {"gamma", &C::gamma, 0, 1, {}, "discount factor"},
      {"n_step", &C::n_step, 1, 64, {}, "n-step return length"},
      {"buffer_capacity", &C::buffer_capacity, 1, 1LL << 30, {}, "replay capacity (transitions)"},
      {"batch_size", &C::batch_size, 1, 1 << 16, {}, "minibatch size"},  // the replay buffer's limit
      {"learning_starts", &C::learning_starts, 0, 1e15, {}, "env steps before the first update"},
      {"updates_per_iteration", &C::updates_per_iteration, 0, 1024, {}, "gradient steps per round"},
      {"train_every", &C::train_every, 1, 1e9, {}, "iterations between update rounds"},
      {"target_update_every", &C::target_update_every, 1, 2147483647, {}, "gradient steps between target copies"},
      {"polyak_tau", &C::polyak_tau, 0, 1, {}, "soft target update rate (0: hard copies)"},
      {"eps_start", &C::eps_start, 0, 1, {}, "initial exploration rate"},
      {"eps_end", &C::eps_end, 0, 1, {}, "final exploration rate"},
      {"eps_decay_env_steps", &C::eps_decay_env_steps, 1, 1e15, {}, "env steps of the linear decay"},
      {"per_alpha", &C::per_alpha, 0, 1, {}, "priority exponent (0: uniform replay)"},
      {"per_beta_start", &C::per_beta_start, 0, 1, {}, "initial importance-weight exponent"},
      {"per_beta_anneal_updates", &C::per_beta_anneal_updates, 1, 1e15, {}, "updates until beta = 1"},
      {"guard_spike_factor", &C::guard_spike_factor, 1, kInf, {}, "loss spike factor over the running median"},
      {"guard_max_bad", &C::guard_max_bad, 1, 1e6, {}, "consecutive bad updates before a restore"},
      {"guard_lr_decay", &C::guard_lr_decay, 0, 1, {}, "learning-rate factor after a restore"},
      {"epochs", &C::epochs, 1, 1e9, {}, "epochs"},
      {"iterations_per_epoch", &C::iterations_per_epoch, 1, 1e12, {}, "collector steps per epoch"},
      {"seed", &C::seed, 0, double(kMaxSeed), {}, "root random seed"},
      {"out_dir", &C::out_dir, 0, 0, {}, "directory for logs, metrics, checkpoints, charts"},
      {"checkpoint_every", &C::checkpoint_every, 1, 1e9, {}, "epochs between checkpoints"},
      {"keep_checkpoints",
       &C::keep_checkpoints,
       1,
       1e6,
       {},
       "checkpoint generations kept (a resume falls back to an older one if the newest is damaged)"},
      {"target_return", &C::target_return, 0, kInf, {}, "stop when the last-100 mean return reaches it (0: off)"},
  };
  return table;
}

const ConfigTable<TrainConfig>& table() {
  static const ConfigTable<TrainConfig> keys(fields(), "foxrl train --help-config");
  return keys;
}

}  // namespace

TrainConfig TrainConfig::from_json_file(const std::string& path) {
  return from_json_text(config_detail::read_config_file(path), path_for_message(path));
}

TrainConfig TrainConfig::from_json_text(const std::string& text, const std::string& where) {
  TrainConfig config;
  table().assign_json(config, text, where);
  config.validate();
  return config;
}

void TrainConfig::apply_overrides(const std::vector<std::string>& key_values) {
  table().apply_overrides(*this, key_values);
  validate();
}

void TrainConfig::validate() const {
  config_detail::check_hidden_layers("config", hidden);
  if (batch_size > buffer_capacity) {
    reject("config", "batch_size", "must not exceed buffer_capacity (" + std::to_string(buffer_capacity) + ")");
  }
  if (eps_end > eps_start) reject("config", "eps_end", "must not exceed eps_start");
  if (env != "market" && positions != TrainConfig{}.positions) {
    reject("config", "positions", "applies to the market env only");
  }
  if (env == "market" && episode_length < n_step) {
    reject("config", "episode_length", "must be at least n_step");
  }
  if (buffer_capacity < num_envs * (n_step + 1)) {
    reject("config", "buffer_capacity", "must hold at least num_envs x (n_step + 1) transitions");
  }
}

std::string TrainConfig::to_json() const { return table().to_json(*this); }

std::string TrainConfig::describe() { return table().describe(); }

}  // namespace foxrl
