#pragma once
// The trainers whose files the trainer_state and checkpoint fuzzers load:
// small enough that one load takes microseconds, yet with every component
// (market: signal adapter and market env; CartPole: none). fuzz_seeds.cpp
// trains them briefly and writes their checkpoints as seeds, so the seeds
// fit these trainers.

#include "config/train_config.hpp"
#include "train/online_trainer.hpp"

#include <Kokkos_Core.hpp>

#include <string>

namespace foxrl::fuzz {

using Host = Kokkos::DefaultHostExecutionSpace;
using Trainer = DqnTrainer<Host>;

/// The config of the tiny trainer of `env` ("cartpole" or "market").
inline TrainConfig tiny_config(const std::string& env, const std::string& out_dir) {
  TrainConfig c;
  c.env = env;
  c.num_envs = 2;
  c.hidden = {8};
  c.batch_size = 8;
  c.buffer_capacity = 24;
  c.learning_starts = 16;
  c.iterations_per_epoch = 20;
  c.target_update_every = 5;
  c.eps_decay_env_steps = 50;
  c.per_beta_anneal_updates = 20;
  c.seed = 3;
  c.epochs = 1;
  c.out_dir = out_dir;
  if (env == "market") {
    c.synthetic_bars = 400;
    c.episode_length = 12;
    c.window = 4;
  }
  return c;
}

/// The trainer's components as load_trainer_state takes them.
inline TrainerParts<Host> parts_of(Trainer& t) {
  return {&t.env(), &t.replay(), &t.collector(), t.adapter(), &t.learner().guard()};
}

}  // namespace foxrl::fuzz
