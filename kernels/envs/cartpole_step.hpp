#pragma once
// Kernels of the CartPole envs (src/envs/cartpole_env.hpp): the step of
// every env with same-step auto-reset, the reset of every env, and putting
// one env into a given state. Gymnasium's CartPole-v1 dynamics in float32.

#include "core/compat.hpp"
#include "kernels/core/counter_rng.hpp"
#include "kernels/envs/choose_then_step.hpp"
#include "views/envs/cartpole_state.hpp"
#include "views/envs/env_step.hpp"

#include <Kokkos_Core.hpp>

#include <array>
#include <cstdint>

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

namespace kernels {

/// The step of env i (a functor, so it can be launched from any context).
template <class MemorySpace>
struct CartPoleStep {
  CartPoleState<MemorySpace> s;
  Kokkos::View<const std::int32_t*, MemorySpace> actions;
  Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace> obs;
  EnvStep<MemorySpace> out;
  std::uint64_t reset_seed;
  int max_steps;
  /// When allocated: receives the observations the actions were chosen
  /// from (obs before this step overwrites them), so a collector needs no
  /// copy of its own.
  Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace> acted_on = {};

  KOKKOS_INLINE_FUNCTION void operator()(int i) const { step_with(i, actions(i)); }

  /// The step of env i taking `action` (ChooseThenStep passes the one it
  /// chose in the same thread).
  KOKKOS_INLINE_FUNCTION void step_with(int i, std::int32_t action) const {
    using P = CartPolePhysics;
    if (acted_on.data() != nullptr)
      for (int j = 0; j < 4; ++j) acted_on(i, j) = obs(i, j);
    float x = s.x(i), x_dot = s.x_dot(i), theta = s.theta(i), theta_dot = s.theta_dot(i);
    const float force = action == 1 ? P::force_mag : -P::force_mag;
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

    const bool terminated =
        x < -P::x_threshold || x > P::x_threshold || theta < -P::theta_threshold || theta > P::theta_threshold;
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
  KOKKOS_INLINE_FUNCTION void reset_state(int i, std::uint64_t episode, float& x, float& x_dot, float& theta,
                                          float& theta_dot) const {
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

/// Launches f over every env ("foxrl::CartPole::step").
template <class ExecSpace>
void cartpole_step(const ExecSpace& space, const CartPoleStep<typename ExecSpace::memory_space>& f) {
  Kokkos::parallel_for("foxrl::CartPole::step", compat::light(Kokkos::RangePolicy<ExecSpace>(space, 0, f.s.size())), f);
}

/// The same launch, each env's action chosen by `choose` in its thread
/// (kernels/envs/choose_then_step.hpp).
template <class ExecSpace, class Choose>
void cartpole_step(const ExecSpace& space,
                   const ChooseThenStep<Choose, CartPoleStep<typename ExecSpace::memory_space>>& f) {
  Kokkos::parallel_for("foxrl::CartPole::step",
                       compat::light(Kokkos::RangePolicy<ExecSpace>(space, 0, f.step.s.size())), f);
}

/// Starts a new episode in every env ("foxrl::CartPole::reset").
template <class ExecSpace>
void cartpole_reset(const ExecSpace& space, const CartPoleStep<typename ExecSpace::memory_space>& f) {
  Kokkos::parallel_for("foxrl::CartPole::reset", Kokkos::RangePolicy<ExecSpace>(space, 0, f.s.size()),
                       CartPoleReset<typename ExecSpace::memory_space>{f});
}

/// Env i of cartpole_set_state: its state (v0, v1, v2, v3) at episode step
/// 0, and the same observation. A named functor, not a KOKKOS_LAMBDA (see
/// RecordStepInOneTeam in kernels/collect/record_step.hpp).
template <class MemorySpace>
struct CartPoleSetStateKernel {
  CartPoleState<MemorySpace> s;
  Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace> o;
  float v0, v1, v2, v3;
  KOKKOS_INLINE_FUNCTION void operator()(int i) const {
    s.x(i) = v0;
    s.x_dot(i) = v1;
    s.theta(i) = v2;
    s.theta_dot(i) = v3;
    s.episode_steps(i) = 0;
    o(i, 0) = v0;
    o(i, 1) = v1;
    o(i, 2) = v2;
    o(i, 3) = v3;
  }
};

/// Puts env `env` into `state` at episode step 0 and writes its observation
/// ("foxrl::CartPole::set_state").
template <class ExecSpace>
void cartpole_set_state(const ExecSpace& space, const CartPoleState<typename ExecSpace::memory_space>& s,
                        const Kokkos::View<float**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& o, int env,
                        const std::array<float, 4>& state) {
  const float v0 = state[0], v1 = state[1], v2 = state[2], v3 = state[3];
  Kokkos::parallel_for("foxrl::CartPole::set_state", Kokkos::RangePolicy<ExecSpace>(space, env, env + 1),
                       CartPoleSetStateKernel<typename ExecSpace::memory_space>{s, o, v0, v1, v2, v3});
}

}  // namespace kernels
}  // namespace foxrl
