#pragma once
// Dataset collection for offline training (`foxrl collect`): steps the
// vector env of a config with a policy (uniform random, or the greedy /
// epsilon-greedy policy of a trained run's checkpoint) for a number of
// transitions, recording each on the device (DatasetRecorder), and writes
// them with the env and config metadata as one safetensors file.
//
// Exploration uses the trainer's counter-based draws (ActionSelector with
// the config's seed, global step t * num_envs), so a dataset is a pure
// function of (config, policy, checkpoint) on a backend.

#include "collect/action_selector.hpp"
#include "collect/dataset_recorder.hpp"
#include "config/train_config.hpp"
#include "core/device_memory.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"
#include "envs/vector_env.hpp"
#include "evaluate/policy.hpp"
#include "market/market_setup.hpp"
#include "offline/dataset_memory.hpp"
#include "train/run_spec.hpp"
#include "train/training_log.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <optional>
#include <sstream>
#include <string>

namespace foxrl {

struct CollectOptions {
  TrainConfig config;             ///< env, num_envs, seed and market settings
  std::string policy = "random";  ///< "random", "epsilon-greedy" or "greedy"
  double epsilon = 0.05;          ///< exploration of "epsilon-greedy"
  std::string run_dir;            ///< checkpoint of the two network policies
  std::int64_t transitions = 0;   ///< rows of the dataset
  std::string split = "train";    ///< market: the time split the envs replay
  std::string out_path;
};

struct CollectSummary {
  std::int64_t transitions = 0;
  std::int64_t iterations = 0;
  int obs_dim = 0;
  int num_actions = 0;
};

namespace detail {

/// The envs of the collection: the run setup's, on the chosen split.
template <class ExecSpace>
VectorEnv<ExecSpace> make_collect_env(const ExecSpace& space, const CollectOptions& o, const RunSpec& spec) {
  const EnvData<ExecSpace> data(space, o.config);
  // A split of the market that holds no bars is named by --split.
  if (const auto* market = data.template of<MarketEnv<ExecSpace>>()) (void)market_split(market->data.splits, o.split);
  return make_vector_env(space, o.config, data, spec.num_envs, o.config.seed, parse_env_split(o.split, "--split"));
}

inline void check_collect_options(const CollectOptions& o) {
  if (o.policy != "random" && o.policy != "epsilon-greedy" && o.policy != "greedy")
    throw UsageError("collect: --policy " + quote_excerpt(o.policy) + ": expected random, epsilon-greedy or greedy");
  if (o.policy != "random" && o.run_dir.empty())
    throw UsageError("collect: --policy " + o.policy + " needs --run (a run directory of `foxrl train`)");
  if (o.policy == "random" && !o.run_dir.empty())
    throw UsageError("collect: --run is for the greedy and epsilon-greedy policies, not random");
  if (!(o.epsilon >= 0.0 && o.epsilon <= 1.0))
    throw UsageError("collect: --epsilon " + std::to_string(o.epsilon) + " outside [0, 1]");
  if (o.transitions < 1) throw UsageError("collect: --steps must be >= 1");
  if (o.split != "train" && o.split != "validation" && o.split != "test")
    throw UsageError("collect: --split " + quote_excerpt(o.split) + ": expected train, validation or test");
  if (o.out_path.empty()) throw UsageError("collect: --out is required");
}

/// Transitions one collection may record whatever the memory: the row
/// index times the features stays far inside int64 arithmetic.
inline constexpr std::int64_t kMaxCollectTransitions = std::int64_t(1) << 40;

/// Refuses --steps the dataset cannot hold before anything is allocated:
/// above kMaxCollectTransitions, or needing more bytes than `memory` has
/// free (the whole dataset lives in device memory until it is written).
/// Overflow-safe: the limit is a row count, never a product of the request.
inline void check_collect_size(std::int64_t transitions, int obs_dim, const MemoryInfo& memory) {
  const std::uint64_t per_row = dataset_device_bytes(1, obs_dim);
  std::int64_t limit = kMaxCollectTransitions;
  std::string why = "the most one collection records";
  if (memory.known && memory.free_bytes / per_row < std::uint64_t(limit)) {
    limit = static_cast<std::int64_t>(memory.free_bytes / per_row);
    why = "what fits the " + format_bytes(double(memory.free_bytes)) + " free of " + memory.where + " at " +
          std::to_string(per_row) + " bytes per transition of " + std::to_string(obs_dim) + " features";
  }
  if (transitions > limit) {
    throw UsageError("collect: --steps " + std::to_string(transitions) + " is more than the limit of " +
                     std::to_string(limit) + " transitions (" + why + ")");
  }
}

}  // namespace detail

/// Collects `o.transitions` transitions on `space` and writes `o.out_path`.
/// UsageError for bad options or a checkpoint that does not fit the env.
template <class ExecSpace>
CollectSummary collect_dataset(const ExecSpace& space, const CollectOptions& o) {
  detail::check_collect_options(o);
  o.config.validate();
  const RunSpec spec = run_spec(o.config);
  detail::check_collect_size(o.transitions, spec.obs_dim, default_memory_info());
  VectorEnv<ExecSpace> env = detail::make_collect_env(space, o, spec);
  const int N = env.num_envs(), D = env.obs_dim(), A = env.num_actions();

  std::optional<Policy<ExecSpace>> policy;
  if (o.policy != "random") {
    policy.emplace(space, o.run_dir, N);
    if (policy->obs_dim() != D || policy->num_actions() != A) {
      throw UsageError("collect: the checkpoint in " + o.run_dir + " takes " + std::to_string(policy->obs_dim()) +
                       " features and " + std::to_string(policy->num_actions()) + " actions, the " + spec.env +
                       " env gives " + std::to_string(D) + " and " + std::to_string(A));
    }
  }
  const double epsilon = o.policy == "random" ? 1.0 : (o.policy == "greedy" ? 0.0 : o.epsilon);
  EpsilonSchedule schedule;
  schedule.start = schedule.end = epsilon;
  ActionSelector<ExecSpace> selector(A, o.config.seed, schedule);

  using mem = typename ExecSpace::memory_space;
  Kokkos::View<float**, Kokkos::LayoutRight, mem> q(Kokkos::view_alloc(space, "foxrl::Collect::q"), N, A);
  // The random policy explores on every draw; its "greedy" input is unused.
  Kokkos::View<std::int32_t*, mem> none(Kokkos::view_alloc(space, "foxrl::Collect::no_greedy"), N);
  Kokkos::View<std::int32_t*, mem> actions(Kokkos::view_alloc(space, "foxrl::Collect::actions"), N);
  DatasetRecorder<ExecSpace> recorder(space, o.transitions, N, D);

  const std::int64_t iterations = recorder.iterations();
  ProgressLine progress(iterations);
  for (std::int64_t t = 0; t < iterations; ++t) {
    recorder.record_observations(space, t, env.observations());
    if (policy) {
      policy->q_values(space, env.observations(), q);
      selector.select(space, q, t * N, actions);
    } else {
      selector.select_from_greedy(space, none, t * N, actions);
    }
    env.step(space, actions);
    recorder.record_step(space, t, actions, env.step_result());
    progress.tick(t + 1);
  }
  progress.finish();

  std::map<std::string, std::string> meta;
  meta["format"] = "foxrl.dataset";
  meta["format_version"] = "1";
  meta["env"] = spec.env;
  meta["obs_dim"] = std::to_string(D);
  meta["num_actions"] = std::to_string(A);
  meta["num_envs"] = std::to_string(N);
  meta["transitions"] = std::to_string(o.transitions);
  meta["row_order"] = "row = iteration * num_envs + env";
  meta["observations"] = "raw env observations (before any normaliser); next_observations before auto-reset";
  meta["policy"] = o.policy;
  std::ostringstream eps_text;
  eps_text.precision(17);
  eps_text << epsilon;
  meta["epsilon"] = eps_text.str();
  meta["seed"] = std::to_string(o.config.seed);
  meta["config"] = o.config.to_json();
  if (env_info(spec.env).evaluation == EvaluationKind::backtest) meta["split"] = o.split;
  StateWriter<ExecSpace> extra;
  if (policy) {
    meta["run"] = o.run_dir;
    if (policy->manifest().has_normalizer) {
      // The normaliser the policy saw its inputs through, for offline training.
      auto n = policy->manifest().normalizer;
      extra.host_vector("normalizer.count", n.count);
      extra.host_vector("normalizer.mean", n.mean);
      extra.host_vector("normalizer.m2", n.m2);
    }
  }
  recorder.write(space, o.out_path, meta, std::move(extra));
  return {o.transitions, iterations, D, A};
}

}  // namespace foxrl
