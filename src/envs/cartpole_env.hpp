#pragma once
// CartPoleEnv: N CartPole-v1 environments stepped together on the device,
// with Gymnasium's dynamics in float32 (docs BENCHMARKS.md) and same-step
// auto-reset. One launch per step.

#include "views/envs/cartpole_state.hpp"
#include "core/compat.hpp"
#include "kernels/core/counter_rng.hpp"
#include "views/envs/env_step.hpp"
#include "core/error.hpp"

#include <Kokkos_Core.hpp>

#include <array>
#include <cstdint>
#include <string>

namespace foxrl {

/// Gymnasium CartPole-v1 constants; the float32 step follows them exactly.
struct CartPolePhysics {
  static constexpr float gravity = 9.8f;
  static constexpr float masscart = 1.0f;
  static constexpr float masspole = 0.1f;
  static constexpr float total_mass = 1.1f;  // masspole + masscart
  static constexpr float length = 0.5f;      // half the pole's length
  static constexpr float polemass_length = 0.05f;
  static constexpr float force_mag = 10.0f;
  static constexpr float tau = 0.02f;
  static constexpr double x_threshold = 2.4;
  /// 12 degrees, as Gymnasium computes it (12 * 2 * pi / 360, in float64).
  static constexpr double theta_threshold = 12.0 * 2.0 * 3.141592653589793 / 360.0;
  static constexpr float reset_bound = 0.05f;
};

struct CartPoleConfig {
  int max_episode_steps = 500;  ///< truncation (Gymnasium's TimeLimit)
};

namespace detail {

/// The step of env i (a functor, so it can be launched from any context).
template <class MemorySpace>
struct CartPoleStep {
  CartPoleState<MemorySpace> s;
  Kokkos::View<const std::int32_t*, MemorySpace> actions;
  Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace> obs;
  EnvStep<MemorySpace> out;
  std::uint64_t reset_seed;
  int max_steps;

  KOKKOS_INLINE_FUNCTION void operator()(int i) const {
    using P = CartPolePhysics;
    float x = s.x(i), x_dot = s.x_dot(i), theta = s.theta(i), theta_dot = s.theta_dot(i);
    const float force = actions(i) == 1 ? P::force_mag : -P::force_mag;
    const float costheta = math::cos(theta);
    const float sintheta = math::sin(theta);
    const float temp = (force + P::polemass_length * theta_dot * theta_dot * sintheta) / P::total_mass;
    const float thetaacc = (P::gravity * sintheta - costheta * temp) /
                           (P::length * (4.0f / 3.0f - P::masspole * costheta * costheta / P::total_mass));
    const float xacc = temp - P::polemass_length * thetaacc * costheta / P::total_mass;
    // Euler: every update uses the old velocities.
    x = x + P::tau * x_dot;
    x_dot = x_dot + P::tau * xacc;
    theta = theta + P::tau * theta_dot;
    theta_dot = theta_dot + P::tau * thetaacc;

    const bool terminated = x < -P::x_threshold || x > P::x_threshold || theta < -P::theta_threshold ||
                            theta > P::theta_threshold;
    const int steps = s.episode_steps(i) + 1;
    // As Gymnasium's TimeLimit: truncation depends on the step count only,
    // so a terminating 500th step reports both flags.
    const bool truncated = steps >= max_steps;

    out.next_observations(i, 0) = x;
    out.next_observations(i, 1) = x_dot;
    out.next_observations(i, 2) = theta;
    out.next_observations(i, 3) = theta_dot;
    out.rewards(i) = 1.0f;
    out.terminated(i) = terminated ? 1 : 0;
    out.truncated(i) = truncated ? 1 : 0;

    if (terminated || truncated) {
      const std::uint64_t episode = s.episodes(i);
      s.episodes(i) = episode + 1;
      reset_state(i, episode, x, x_dot, theta, theta_dot);
      s.episode_steps(i) = 0;
    } else {
      s.episode_steps(i) = steps;
    }
    s.x(i) = x;
    s.x_dot(i) = x_dot;
    s.theta(i) = theta;
    s.theta_dot(i) = theta_dot;
    obs(i, 0) = x;
    obs(i, 1) = x_dot;
    obs(i, 2) = theta;
    obs(i, 3) = theta_dot;
  }

  /// Episode `episode` of env i starts from draws (reset_seed, i, 4 episode + k).
  KOKKOS_INLINE_FUNCTION void reset_state(int i, std::uint64_t episode, float& x, float& x_dot,
                                          float& theta, float& theta_dot) const {
    const float lo = -CartPolePhysics::reset_bound, hi = CartPolePhysics::reset_bound;
    const std::uint64_t c = 4 * episode;
    const auto stream = static_cast<std::uint64_t>(i);
    x = kernels::scale_uniform(kernels::counter_uniform(reset_seed, stream, c), lo, hi);
    x_dot = kernels::scale_uniform(kernels::counter_uniform(reset_seed, stream, c + 1), lo, hi);
    theta = kernels::scale_uniform(kernels::counter_uniform(reset_seed, stream, c + 2), lo, hi);
    theta_dot = kernels::scale_uniform(kernels::counter_uniform(reset_seed, stream, c + 3), lo, hi);
  }
};

/// Starts a new episode in every env (the reset half of CartPoleStep).
template <class MemorySpace>
struct CartPoleReset {
  CartPoleStep<MemorySpace> step;
  KOKKOS_INLINE_FUNCTION void operator()(int i) const {
    const auto& s = step.s;
    float x, x_dot, theta, theta_dot;
    const std::uint64_t episode = s.episodes(i);
    s.episodes(i) = episode + 1;
    step.reset_state(i, episode, x, x_dot, theta, theta_dot);
    s.x(i) = x;
    s.x_dot(i) = x_dot;
    s.theta(i) = theta;
    s.theta_dot(i) = theta_dot;
    s.episode_steps(i) = 0;
    step.obs(i, 0) = x;
    step.obs(i, 1) = x_dot;
    step.obs(i, 2) = theta;
    step.obs(i, 3) = theta_dot;
  }
};

}  // namespace detail

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

  /// Allocates the state on `space` and resets every env (episode 0 of env
  /// i draws its start from (seed, i)).
  CartPoleEnv(const ExecSpace& space, int num_envs, std::uint64_t seed, CartPoleConfig config = {})
      : num_envs_(num_envs),
        config_(config),
        reset_seed_(kernels::derive_seed(seed, kernels::rng_tag::cartpole_reset)) {
    if (num_envs <= 0) throw UsageError("CartPoleEnv: num_envs must be positive, got " + std::to_string(num_envs));
    if (config.max_episode_steps <= 0) {
      throw UsageError("CartPoleEnv: max_episode_steps must be positive, got " +
                       std::to_string(config.max_episode_steps));
    }
    auto vec = [&](const char* name) {
      return Kokkos::View<float*, memory_space>(
          Kokkos::view_alloc(space, Kokkos::WithoutInitializing, std::string("foxrl::CartPole::") + name),
          num_envs);
    };
    state_.x = vec("x");
    state_.x_dot = vec("x_dot");
    state_.theta = vec("theta");
    state_.theta_dot = vec("theta_dot");
    state_.episode_steps = Kokkos::View<std::int32_t*, memory_space>(
        Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::CartPole::episode_steps"), num_envs);
    state_.episodes = Kokkos::View<std::uint64_t*, memory_space>(
        Kokkos::view_alloc(space, "foxrl::CartPole::episodes"), num_envs);
    obs_ = obs_view(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::CartPole::observations"),
                    num_envs, obs_dim());
    last_ = EnvStep<memory_space>::allocate(space, num_envs, obs_dim(), "foxrl::CartPole");
    reset(space);
  }

  static constexpr int obs_dim() { return 4; }
  static constexpr int num_actions() { return 2; }
  int num_envs() const { return num_envs_; }
  const CartPoleConfig& config() const { return config_; }

  /// Starts a new episode in every env (each draws its next reset state).
  void reset(const ExecSpace& space) {
    Kokkos::parallel_for("foxrl::CartPole::reset", Kokkos::RangePolicy<ExecSpace>(space, 0, num_envs_),
                         detail::CartPoleReset<memory_space>{functor(action_view(), last_)});
  }

  /// Steps every env with actions [N] and writes the result into the env's
  /// own step Views (step_result()); observations() then holds the next
  /// observation (the reset one where an episode ended).
  void step(const ExecSpace& space, const action_view& actions) { step(space, actions, last_); }

  /// Same, writing the step result into caller-owned Views (e.g. storage the
  /// collector hands on), sized [N, 4] and [N].
  void step(const ExecSpace& space, const action_view& actions, const EnvStep<memory_space>& out) {
    Kokkos::parallel_for("foxrl::CartPole::step", compat::light(Kokkos::RangePolicy<ExecSpace>(space, 0, num_envs_)),
                         functor(actions, out));
  }

  /// Puts env `env` into the given state at episode step 0 (for rollouts
  /// from an explicit initial state); its observation follows.
  void set_state(const ExecSpace& space, int env, const std::array<float, 4>& state) {
    if (env < 0 || env >= num_envs_) {
      throw UsageError("CartPoleEnv::set_state: env " + std::to_string(env) + " out of range [0, " +
                       std::to_string(num_envs_) + ")");
    }
    const auto s = state_;
    const auto o = obs_;
    const float v0 = state[0], v1 = state[1], v2 = state[2], v3 = state[3];
    Kokkos::parallel_for(
        "foxrl::CartPole::set_state", Kokkos::RangePolicy<ExecSpace>(space, env, env + 1),
        KOKKOS_LAMBDA(int i) {
          s.x(i) = v0;
          s.x_dot(i) = v1;
          s.theta(i) = v2;
          s.theta_dot(i) = v3;
          s.episode_steps(i) = 0;
          o(i, 0) = v0;
          o(i, 1) = v1;
          o(i, 2) = v2;
          o(i, 3) = v3;
        });
  }

  /// [N, 4] the observation each env acts on next (post-reset).
  const obs_view& observations() const { return obs_; }
  /// The result of the last step(space, actions) without an output argument.
  const EnvStep<memory_space>& step_result() const { return last_; }
  /// [N] steps taken in the current episode.
  Kokkos::View<const std::int32_t*, memory_space> episode_steps() const { return state_.episode_steps; }
  const CartPoleState<memory_space>& state() const { return state_; }

 private:
  detail::CartPoleStep<memory_space> functor(const action_view& actions, const EnvStep<memory_space>& out) const {
    return {state_, actions, obs_, out, reset_seed_, config_.max_episode_steps};
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
  /// copies, or a StateReader, which checks and queues the restore.
  template <class Archive>
  void visit_state(Archive& a, const ExecSpace& space) {
    a.tensor(space, "env.cartpole.x", state_.x);
    a.tensor(space, "env.cartpole.x_dot", state_.x_dot);
    a.tensor(space, "env.cartpole.theta", state_.theta);
    a.tensor(space, "env.cartpole.theta_dot", state_.theta_dot);
    a.tensor(space, "env.cartpole.episode_steps", state_.episode_steps);
    a.tensor(space, "env.cartpole.episodes", state_.episodes);
  }
};

}  // namespace foxrl
