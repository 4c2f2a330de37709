#pragma once
// What every registered environment declares about itself (the env
// contract, docs/design.md "How to add an environment"): its spaces, how
// its policies are judged, and which part of its data an instance replays.
// Plain host types, so the env classes of any domain (envs/, market/) and
// the registry (src/envs/env_registry.hpp) share them.

#include <cstdint>
#include <vector>

namespace foxrl {

/// How a trained policy of an env is judged: the returns of greedy
/// episodes (CartPole, Acrobot), or one continuous backtest of a data
/// split against baselines (the market).
enum class EvaluationKind { episodes, backtest };

/// The observation and action spaces an env's config gives.
struct EnvSpaces {
  int obs_dim = 0;
  int num_actions = 0;
  /// Which observation entries a SignalAdapter normalises (running mean
  /// and variance); empty: the observations reach the network as they are.
  std::vector<std::uint8_t> normalize_mask;
};

/// Which part of an env's data an instance replays: the time splits of a
/// data-driven env (train for training, validation for the best-model
/// choice, test for the final report), or all of it (rollouts). A
/// simulator has one world and ignores it.
enum class EnvSplit { train, validation, test, whole };

/// The Data of an env that builds nothing shared (a simulator).
struct NoEnvData {};

}  // namespace foxrl
