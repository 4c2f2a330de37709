#pragma once
// The smallest trainer config that still exercises a whole run's state:
// the replay ring wraps (capacity 96), boundary rows are handed out and evicted
// (the market; CartPole keeps a row per slot), the target
// is copied and learning starts in the first epoch. Shared by the resume and
// state-validation tests.

#include "config/train_config.hpp"

#include <cstdint>
#include <string>

namespace foxrl::test {

inline TrainConfig tiny_trainer_config(const std::string& env, const std::string& out_dir, std::int64_t epochs) {
  TrainConfig c;
  c.env = env;
  c.num_envs = 4;
  c.hidden = {16, 16};
  c.batch_size = 16;
  c.buffer_capacity = 96;
  c.learning_starts = 64;
  c.iterations_per_epoch = 40;
  c.target_update_every = 10;
  c.eps_decay_env_steps = 200;
  c.per_beta_anneal_updates = 100;
  c.seed = 7;
  c.epochs = epochs;
  c.out_dir = out_dir;
  if (env == "market") {
    c.synthetic_bars = 2000;
    c.episode_length = 30;
    c.window = 16;
  }
  return c;
}

/// The tiny config with every shape an iteration can take: collect only,
/// collect and insert, iterations with and without updates (train_every
/// 2), two updates each, hard target copies in some (every 3 updates).
inline TrainConfig tiny_iteration_shapes_config(const std::string& env, const std::string& out_dir,
                                                std::int64_t epochs) {
  TrainConfig c = tiny_trainer_config(env, out_dir, epochs);
  c.train_every = 2;
  c.updates_per_iteration = 2;
  c.target_update_every = 3;
  return c;
}

}  // namespace foxrl::test
