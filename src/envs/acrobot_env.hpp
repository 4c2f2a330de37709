#pragma once
// AcrobotEnv: N Acrobot-v1 environments stepped together on the device,
// with Gymnasium's dynamics (one RK4 step of 0.2 s per action) in float64
// and same-step auto-reset. One launch per step.

#include "config/train_config.hpp"
#include "core/compat.hpp"
#include "core/error.hpp"
#include "core/validate.hpp"
#include "kernels/core/counter_rng.hpp"
#include "kernels/envs/acrobot_step.hpp"
#include "kernels/envs/choose_then_step.hpp"
#include "views/envs/acrobot_state.hpp"
#include "views/envs/env_step.hpp"
#include "views/envs/env_traits.hpp"

#include <Kokkos_Core.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace foxrl {

struct AcrobotConfig {
  int max_episode_steps = 500;  ///< truncation (Gymnasium's TimeLimit)
};

/// N Acrobot-v1 envs on ExecSpace's memory space. Observations are [N, 6]
/// float LayoutRight (cos theta1, sin theta1, cos theta2, sin theta2,
/// dtheta1, dtheta2); actions 0, 1, 2 apply torque -1, 0, +1 at the joint
/// between the links. Reward -1 per step until the tip swings above the
/// bar (terminated, reward 0).
template <class ExecSpace>
class AcrobotEnv {
 public:
  using execution_space = ExecSpace;
  using memory_space = typename ExecSpace::memory_space;
  using obs_view = Kokkos::View<float**, Kokkos::LayoutRight, memory_space>;
  using action_view = Kokkos::View<const std::int32_t*, memory_space>;

  // --- the registered env's contract (envs/env_registry.hpp) ---------------
  static constexpr const char* name = "acrobot";
  static constexpr const char* summary =
      "Acrobot-v1 (Gymnasium): swing a two-link pendulum's tip above the bar; 3 torques, 500-step episodes";
  static constexpr EvaluationKind evaluation = EvaluationKind::episodes;
  using Data = NoEnvData;
  static EnvSpaces spaces(const TrainConfig&) { return {obs_dim(), num_actions(), {}}; }
  static Data make_data(const ExecSpace&, const TrainConfig&) { return {}; }
  static AcrobotEnv make(const ExecSpace& space, const TrainConfig&, const Data&, int num_envs, std::uint64_t seed,
                         EnvSplit) {
    return AcrobotEnv(space, num_envs, seed);
  }
  /// The state set_state takes, in order (rollouts' --initial-state).
  static constexpr const char* state_variables = "theta1,theta2,dtheta1,dtheta2";
  void set_state_values(const ExecSpace& space, int env, const std::vector<double>& values) {
    if (values.size() != 4) throw LogicError("AcrobotEnv::set_state: 4 values, got " + std::to_string(values.size()));
    set_state(space, env, std::array<double, 4>{values[0], values[1], values[2], values[3]});
  }

  /// Allocates the state on `space` and resets every env (episode 0 of env
  /// i draws its start from (seed, i)).
  AcrobotEnv(const ExecSpace& space, int num_envs, std::uint64_t seed, AcrobotConfig config = {})
      : num_envs_(num_envs), config_(config), reset_seed_(kernels::derive_seed(seed, kernels::acrobot_reset_tag)) {
    require_positive("AcrobotEnv", "num_envs", num_envs);
    require_positive("foxrl::AcrobotConfig", "max_episode_steps", config.max_episode_steps);
    auto vec = [&](const char* field) {
      return Kokkos::View<double*, memory_space>(
          Kokkos::view_alloc(space, Kokkos::WithoutInitializing, std::string("foxrl::Acrobot::") + field), num_envs);
    };
    state_.theta1 = vec("theta1");
    state_.theta2 = vec("theta2");
    state_.dtheta1 = vec("dtheta1");
    state_.dtheta2 = vec("dtheta2");
    state_.episode_steps = Kokkos::View<std::int32_t*, memory_space>(
        Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::Acrobot::episode_steps"), num_envs);
    state_.episodes =
        Kokkos::View<std::uint64_t*, memory_space>(Kokkos::view_alloc(space, "foxrl::Acrobot::episodes"), num_envs);
    obs_ = obs_view(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::Acrobot::observations"), num_envs,
                    obs_dim());
    last_ = EnvStep<memory_space>::allocate(space, num_envs, obs_dim(), "foxrl::Acrobot");
    reset(space);
  }

  static constexpr int obs_dim() { return kernels::AcrobotStep<memory_space>::obs_dim; }
  static constexpr int num_actions() { return AcrobotPhysics::num_actions; }
  int num_envs() const { return num_envs_; }
  const AcrobotConfig& config() const { return config_; }

  /// Starts a new episode in every env (each draws its next reset state).
  void reset(const ExecSpace& space) { kernels::acrobot_reset(space, functor(action_view(), last_)); }

  /// Steps every env with actions [N] (each 0, 1 or 2) and writes the result
  /// into the env's own step Views (step_result()); observations() then
  /// holds the next observation (the reset one where an episode ended).
  void step(const ExecSpace& space, const action_view& actions) { step(space, actions, last_); }

  /// Same, writing the step result into caller-owned Views (e.g. storage the
  /// collector hands on), sized [N, 6] and [N].
  void step(const ExecSpace& space, const action_view& actions, const EnvStep<memory_space>& out) {
    kernels::acrobot_step(space, functor(actions, out));
  }

  /// step(space, actions) with each env's action chosen by `choose` in the
  /// step's own thread (kernels::ChooseThenStep: `choose` records the action
  /// where its caller wants it), also writing the observations the actions
  /// were chosen from (observations() before the step) into `acted_on`
  /// [N, 6]. One launch.
  template <class Choose>
  void step_choosing(const ExecSpace& space, const Choose& choose, const obs_view& acted_on) {
    kernels::acrobot_step(space, choosing_step(choose, acted_on));
  }

  /// step_choosing() after `act`, which forms the actions `choose` reads:
  /// act(f) may run the step's per-env functor f (f(i) for each env i)
  /// inside its own launch and return true; if it returns false, the step
  /// launches as step_choosing().
  template <class Choose, class Act>
  void act_then_step_choosing(const ExecSpace& space, const Choose& choose, const obs_view& acted_on, const Act& act) {
    const auto f = choosing_step(choose, acted_on);
    if (!act(f)) kernels::acrobot_step(space, f);
  }

  /// Puts env `env` into the given state (theta1, theta2, dtheta1, dtheta2)
  /// at episode step 0 (for rollouts from an explicit initial state); its
  /// observation follows. The state must lie where a step leaves one
  /// (angles in [-pi, pi], velocities within their bounds), so that every
  /// state an env holds also loads from a trainer state file.
  void set_state(const ExecSpace& space, int env, const std::array<double, 4>& state) {
    if (env < 0 || env >= num_envs_) {
      throw LogicError("AcrobotEnv::set_state: env " + std::to_string(env) + " out of range [0, " +
                       std::to_string(num_envs_) + ")");
    }
    using P = AcrobotPhysics;
    require_in_range("AcrobotEnv::set_state", "theta1", state[0], -P::pi, P::pi);
    require_in_range("AcrobotEnv::set_state", "theta2", state[1], -P::pi, P::pi);
    require_in_range("AcrobotEnv::set_state", "dtheta1", state[2], -P::max_vel_1, P::max_vel_1);
    require_in_range("AcrobotEnv::set_state", "dtheta2", state[3], -P::max_vel_2, P::max_vel_2);
    kernels::acrobot_set_state(space, state_, obs_, env, state);
  }

  /// [N, 6] the observation each env acts on next (post-reset).
  const obs_view& observations() const { return obs_; }
  /// The result of the last step(space, actions) without an output argument.
  const EnvStep<memory_space>& step_result() const { return last_; }
  /// [N] steps taken in the current episode.
  Kokkos::View<const std::int32_t*, memory_space> episode_steps() const { return state_.episode_steps; }
  const AcrobotState<memory_space>& state() const { return state_; }

 private:
  kernels::AcrobotStep<memory_space> functor(const action_view& actions, const EnvStep<memory_space>& out) const {
    return {state_, actions, obs_, out, reset_seed_, config_.max_episode_steps};
  }

  /// The per-env functor of step_choosing().
  template <class Choose>
  kernels::ChooseThenStep<Choose, kernels::AcrobotStep<memory_space>> choosing_step(const Choose& choose,
                                                                                    const obs_view& acted_on) const {
    auto f = functor(action_view(), last_);
    f.acted_on = acted_on;
    return {choose, f};
  }

  int num_envs_;
  AcrobotConfig config_;
  std::uint64_t reset_seed_;
  AcrobotState<memory_space> state_;
  obs_view obs_;
  EnvStep<memory_space> last_;

 public:
  /// The env's device state in a trainer state file (env.acrobot.*; the
  /// observations are VectorEnv's). `a` is a StateWriter, which queues
  /// copies, or a StateReader, which checks the tensors and their values
  /// (the state inside the bounds a step keeps it in, episode step below
  /// the limit) and queues the restore.
  template <class Archive>
  void visit_state(Archive& a, const ExecSpace& space) {
    a.tensor(space, "env.acrobot.theta1", state_.theta1);
    a.tensor(space, "env.acrobot.theta2", state_.theta2);
    a.tensor(space, "env.acrobot.dtheta1", state_.dtheta1);
    a.tensor(space, "env.acrobot.dtheta2", state_.dtheta2);
    a.tensor(space, "env.acrobot.episode_steps", state_.episode_steps);
    a.tensor(space, "env.acrobot.episodes", state_.episodes);
    if constexpr (!Archive::saving) {
      using P = AcrobotPhysics;
      // The step wraps angles by whole turns in a loop: a value far outside
      // [-pi, pi] would cost a kernel many turns, a non-finite one poisons
      // the env.
      const auto within = [](double bound) {
        return [bound](double x) { return std::isfinite(x) && std::fabs(x) <= bound; };
      };
      for (const char* angle : {"env.acrobot.theta1", "env.acrobot.theta2"})
        a.template require_each<double>(angle, -1, within(P::pi), "must be finite and in [-pi, pi]");
      a.template require_each<double>("env.acrobot.dtheta1", -1, within(P::max_vel_1),
                                      "must be finite and in [-4 pi, 4 pi]");
      a.template require_each<double>("env.acrobot.dtheta2", -1, within(P::max_vel_2),
                                      "must be finite and in [-9 pi, 9 pi]");
      const int max_steps = config_.max_episode_steps;
      a.template require_each<std::int32_t>(
          "env.acrobot.episode_steps", -1, [&](std::int32_t k) { return k >= 0 && k < max_steps; },
          "must be in [0, max_episode_steps = " + std::to_string(max_steps) + ")");
    }
  }
};

}  // namespace foxrl
