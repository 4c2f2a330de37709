#include "config/offline_train_config.hpp"

#include "config/config_table.hpp"
#include "config/train_config.hpp"

namespace foxrl {
namespace {

using config_detail::kInf;

const ConfigTable<OfflineTrainConfig>& table() {
  using C = OfflineTrainConfig;
  using Field = ConfigTable<OfflineTrainConfig>::Field;
  static const ConfigTable<OfflineTrainConfig> keys(
      std::vector<Field>{
          {"algo",
           &C::algo,
           0,
           0,
           {},
           "offline algorithm: a registered offline learner (`foxrl info` lists them: iql, cql, bc)"},
          {"dataset", &C::dataset, 0, 0, {}, "dataset of `foxrl collect` (safetensors); also --dataset"},
          {"hidden", &C::hidden, 1, 1 << 16, {}, "hidden layer sizes of every network's trunk (1 to 7 layers)"},
          {"lr", &C::lr, kMinLearningRate, 1, {}, "Adam learning rate of every network"},
          {"adam_eps", &C::adam_eps, kMinAdamEpsilon, 1, {}, "Adam epsilon"},
          {"max_grad_norm", &C::max_grad_norm, 0, kInf, {}, "per-network gradient-norm clip (0: off)"},
          {"gamma", &C::gamma, 0, 1, {}, "discount factor"},
          {"batch_size", &C::batch_size, 1, 1 << 16, {}, "minibatch size (uniform draws from the dataset)"},
          {"expectile", &C::expectile, 0.001, 0.999, {}, "IQL: expectile of the value loss"},
          {"iql_beta", &C::iql_beta, 0, 1000, {}, "IQL: inverse temperature of the advantage weights"},
          {"max_weight", &C::max_weight, 1e-6, 1e6, {}, "IQL: clip of the advantage weights"},
          {"polyak_tau", &C::polyak_tau, 1e-6, 1, {}, "Polyak rate of the target Qs (IQL; CQL without hard copies)"},
          {"cql_alpha", &C::cql_alpha, 0, 1e4, {}, "CQL: weight of the conservative penalty"},
          {"cql_target_update_every",
           &C::cql_target_update_every,
           0,
           2147483647,
           {},
           "CQL: updates between hard target copies (0: Polyak with polyak_tau)"},
          {"guard_spike_factor",
           &C::guard_spike_factor,
           1,
           kInf,
           {},
           "per network: loss spike factor over the running median",
           true},
          {"guard_max_bad",
           &C::guard_max_bad,
           1,
           1e6,
           {},
           "per network: consecutive bad updates before a restore",
           true},
          {"guard_lr_decay", &C::guard_lr_decay, 0, 1, {}, "per network: learning-rate factor after a restore", true},
          {"epochs", &C::epochs, 1, 1e9, {}, "epochs"},
          {"updates_per_epoch", &C::updates_per_epoch, 1, 1e12, {}, "gradient steps per epoch"},
          {"eval_episodes",
           &C::eval_episodes,
           0,
           1 << 20,
           {},
           "greedy evaluation episodes in the dataset's env (0: none)"},
          {"eval_every", &C::eval_every, 1, 1e9, {}, "epochs between evaluations (and after the last epoch)"},
          {"seed", &C::seed, 0, double(kMaxSeed), {}, "root random seed (weights, sampling, evaluation)"},
          {"out_dir", &C::out_dir, 0, 0, {}, "directory for logs, metrics, checkpoints"},
          {"checkpoint_every", &C::checkpoint_every, 1, 1e9, {}, "epochs between checkpoints"},
          {"keep_checkpoints", &C::keep_checkpoints, 1, 1e6, {}, "checkpoint generations kept (the newest ones)"},
      },
      "foxrl train-offline --help-config");
  return keys;
}

}  // namespace

OfflineTrainConfig OfflineTrainConfig::from_json_file(const std::string& path) {
  return from_json_text(config_detail::read_config_file(path), path_for_message(path));
}

OfflineTrainConfig OfflineTrainConfig::from_json_text(const std::string& text, const std::string& where) {
  OfflineTrainConfig config;
  table().assign_json(config, text, where);
  return config;
}

void OfflineTrainConfig::apply_overrides(const std::vector<std::string>& key_values) {
  table().apply_overrides(*this, key_values);
}

void OfflineTrainConfig::validate() const {
  config_detail::check_hidden_layers("config", hidden);
  if (dataset.empty()) config_detail::reject("config", "dataset", "is required: name the dataset with --dataset FILE");
}

std::string OfflineTrainConfig::to_json() const { return table().to_json(*this); }

std::string OfflineTrainConfig::describe() { return table().describe(); }

}  // namespace foxrl
