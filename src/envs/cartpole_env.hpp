#pragma once
// CartPoleEnv: N CartPole-v1 environments stepped together on the device,
// with Gymnasium's dynamics in float32 (docs BENCHMARKS.md) and same-step
// auto-reset. One launch per step.

#include "config/train_config.hpp"
#include "core/compat.hpp"
#include "core/error.hpp"
#include "core/validate.hpp"
#include "kernels/core/counter_rng.hpp"
#include "kernels/envs/cartpole_step.hpp"
#include "kernels/envs/choose_then_step.hpp"
#include "views/envs/cartpole_state.hpp"
#include "views/envs/env_step.hpp"
#include "views/envs/env_traits.hpp"

#include <Kokkos_Core.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace foxrl {

struct CartPoleConfig {
  int max_episode_steps = 500;  ///< truncation (Gymnasium's TimeLimit)
};

/// N CartPole-v1 envs on ExecSpace's memory space. Observations are
/// [N, 4] float LayoutRight (x, x_dot, theta, theta_dot); actions 0 (push
/// left) and 1 (push right).
template <class ExecSpace>
class CartPoleEnv {
 public:
  using execution_space = ExecSpace;
  using memory_space = typename ExecSpace::memory_space;
  using obs_view = Kokkos::View<float**, Kokkos::LayoutRight, memory_space>;
  using action_view = Kokkos::View<const std::int32_t*, memory_space>;

  // --- the registered env's contract (envs/env_registry.hpp) ---------------
  static constexpr const char* name = "cartpole";
  static constexpr const char* summary = "CartPole-v1 (Gymnasium): keep a pole upright; 2 actions, 500-step episodes";
  static constexpr EvaluationKind evaluation = EvaluationKind::episodes;
  using Data = NoEnvData;
  static EnvSpaces spaces(const TrainConfig&) { return {obs_dim(), num_actions(), {}}; }
  static Data make_data(const ExecSpace&, const TrainConfig&) { return {}; }
  static CartPoleEnv make(const ExecSpace& space, const TrainConfig&, const Data&, int num_envs, std::uint64_t seed,
                          EnvSplit) {
    return CartPoleEnv(space, num_envs, seed);
  }

  /// Allocates the state on `space` and resets every env (episode 0 of env
  /// i draws its start from (seed, i)).
  CartPoleEnv(const ExecSpace& space, int num_envs, std::uint64_t seed, CartPoleConfig config = {})
      : num_envs_(num_envs),
        config_(config),
        reset_seed_(kernels::derive_seed(seed, kernels::rng_tag::cartpole_reset)) {
    require_positive("CartPoleEnv", "num_envs", num_envs);
    require_positive("foxrl::CartPoleConfig", "max_episode_steps", config.max_episode_steps);
    auto vec = [&](const char* name) {
      return Kokkos::View<float*, memory_space>(
          Kokkos::view_alloc(space, Kokkos::WithoutInitializing, std::string("foxrl::CartPole::") + name), num_envs);
    };
    state_.x = vec("x");
    state_.x_dot = vec("x_dot");
    state_.theta = vec("theta");
    state_.theta_dot = vec("theta_dot");
    state_.episode_steps = Kokkos::View<std::int32_t*, memory_space>(
        Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::CartPole::episode_steps"), num_envs);
    state_.episodes =
        Kokkos::View<std::uint64_t*, memory_space>(Kokkos::view_alloc(space, "foxrl::CartPole::episodes"), num_envs);
    obs_ = obs_view(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::CartPole::observations"), num_envs,
                    obs_dim());
    last_ = EnvStep<memory_space>::allocate(space, num_envs, obs_dim(), "foxrl::CartPole");
    reset(space);
  }

  static constexpr int obs_dim() { return 4; }
  static constexpr int num_actions() { return 2; }
  int num_envs() const { return num_envs_; }
  const CartPoleConfig& config() const { return config_; }

  /// Starts a new episode in every env (each draws its next reset state).
  void reset(const ExecSpace& space) { kernels::cartpole_reset(space, functor(action_view(), last_)); }

  /// Steps every env with actions [N] and writes the result into the env's
  /// own step Views (step_result()); observations() then holds the next
  /// observation (the reset one where an episode ended).
  void step(const ExecSpace& space, const action_view& actions) { step(space, actions, last_); }

  /// Same, writing the step result into caller-owned Views (e.g. storage the
  /// collector hands on), sized [N, 4] and [N].
  void step(const ExecSpace& space, const action_view& actions, const EnvStep<memory_space>& out) {
    kernels::cartpole_step(space, functor(actions, out));
  }

  /// step(space, actions) with each env's action chosen by `choose` in the
  /// step's own thread (kernels::ChooseThenStep: `choose` records the action
  /// where its caller wants it), also writing the observations the actions
  /// were chosen from (observations() before the step) into `acted_on`
  /// [N, 4]. One launch.
  template <class Choose>
  void step_choosing(const ExecSpace& space, const Choose& choose, const obs_view& acted_on) {
    kernels::cartpole_step(space, choosing_step(choose, acted_on));
  }

  /// step_choosing() after `act`, which forms the actions `choose` reads:
  /// act(f) may run the step's per-env functor f (f(i) for each env i)
  /// inside its own launch and return true; if it returns false, the step
  /// launches as step_choosing().
  template <class Choose, class Act>
  void act_then_step_choosing(const ExecSpace& space, const Choose& choose, const obs_view& acted_on, const Act& act) {
    const auto f = choosing_step(choose, acted_on);
    if (!act(f)) kernels::cartpole_step(space, f);
  }

  /// The state set_state takes, in order (rollouts' --initial-state).
  static constexpr const char* state_variables = "x,x_dot,theta,theta_dot";
  /// set_state from the values of state_variables (rounded to float).
  void set_state_values(const ExecSpace& space, int env, const std::vector<double>& values) {
    if (values.size() != 4) throw LogicError("CartPoleEnv::set_state: 4 values, got " + std::to_string(values.size()));
    set_state(space, env,
              std::array<float, 4>{static_cast<float>(values[0]), static_cast<float>(values[1]),
                                   static_cast<float>(values[2]), static_cast<float>(values[3])});
  }

  /// Puts env `env` into the given state at episode step 0 (for rollouts
  /// from an explicit initial state); its observation follows.
  void set_state(const ExecSpace& space, int env, const std::array<float, 4>& state) {
    if (env < 0 || env >= num_envs_) {
      throw LogicError("CartPoleEnv::set_state: env " + std::to_string(env) + " out of range [0, " +
                       std::to_string(num_envs_) + ")");
    }
    kernels::cartpole_set_state(space, state_, obs_, env, state);
  }

  /// [N, 4] the observation each env acts on next (post-reset).
  const obs_view& observations() const { return obs_; }
  /// The result of the last step(space, actions) without an output argument.
  const EnvStep<memory_space>& step_result() const { return last_; }
  /// [N] steps taken in the current episode.
  Kokkos::View<const std::int32_t*, memory_space> episode_steps() const { return state_.episode_steps; }
  const CartPoleState<memory_space>& state() const { return state_; }

 private:
  kernels::CartPoleStep<memory_space> functor(const action_view& actions, const EnvStep<memory_space>& out) const {
    return {state_, actions, obs_, out, reset_seed_, config_.max_episode_steps};
  }

  /// The per-env functor of step_choosing().
  template <class Choose>
  kernels::ChooseThenStep<Choose, kernels::CartPoleStep<memory_space>> choosing_step(const Choose& choose,
                                                                                     const obs_view& acted_on) const {
    auto f = functor(action_view(), last_);
    f.acted_on = acted_on;
    return {choose, f};
  }

  int num_envs_;
  CartPoleConfig config_;
  std::uint64_t reset_seed_;
  CartPoleState<memory_space> state_;
  obs_view obs_;
  EnvStep<memory_space> last_;

 public:
  /// The env's device state in a trainer state file (env.cartpole.*; the
  /// observations are VectorEnv's). `a` is a StateWriter, which queues
  /// copies, or a StateReader, which checks the tensors and their values
  /// (state finite, episode step below the limit) and queues the restore.
  template <class Archive>
  void visit_state(Archive& a, const ExecSpace& space) {
    a.tensor(space, "env.cartpole.x", state_.x);
    a.tensor(space, "env.cartpole.x_dot", state_.x_dot);
    a.tensor(space, "env.cartpole.theta", state_.theta);
    a.tensor(space, "env.cartpole.theta_dot", state_.theta_dot);
    a.tensor(space, "env.cartpole.episode_steps", state_.episode_steps);
    a.tensor(space, "env.cartpole.episodes", state_.episodes);
    if constexpr (!Archive::saving) {
      for (const char* name : {"env.cartpole.x", "env.cartpole.x_dot", "env.cartpole.theta", "env.cartpole.theta_dot"})
        a.template require_each<float>(
            name, -1, [](float x) { return std::isfinite(x); }, "must be finite");
      const int max_steps = config_.max_episode_steps;
      a.template require_each<std::int32_t>(
          "env.cartpole.episode_steps", -1, [&](std::int32_t k) { return k >= 0 && k < max_steps; },
          "must be in [0, max_episode_steps = " + std::to_string(max_steps) + ")");
    }
  }
};

}  // namespace foxrl
