#pragma once
// Kernels of the Acrobot envs (src/envs/acrobot_env.hpp): the step of every
// env with same-step auto-reset, the reset of every env, and putting one
// env into a given state. Gymnasium's Acrobot-v1 ("book" dynamics, one RK4
// step of dt per action) in float64, as Gymnasium integrates it.

#include "core/compat.hpp"
#include "kernels/core/counter_rng.hpp"
#include "kernels/envs/choose_then_step.hpp"
#include "views/envs/acrobot_state.hpp"
#include "views/envs/env_step.hpp"

#include <Kokkos_Core.hpp>

#include <array>
#include <cstdint>

namespace foxrl {

/// Gymnasium Acrobot-v1 constants (gymnasium/envs/classic_control/acrobot.py).
struct AcrobotPhysics {
  /// numpy's pi (the double nearest pi), which Gymnasium's wrap and bounds use.
  static constexpr double pi = 3.141592653589793;
  static constexpr double dt = 0.2;
  static constexpr double link_length_1 = 1.0;   // l1 (link 2's length only matters for drawing)
  static constexpr double link_mass_1 = 1.0;     // m1
  static constexpr double link_mass_2 = 1.0;     // m2
  static constexpr double link_com_pos_1 = 0.5;  // lc1
  static constexpr double link_com_pos_2 = 0.5;  // lc2
  static constexpr double link_moi = 1.0;        // I1 = I2
  static constexpr double gravity = 9.8;
  static constexpr double max_vel_1 = 4 * pi;
  static constexpr double max_vel_2 = 9 * pi;
  /// Gymnasium draws the start state in [-0.1, 0.1] and casts it to float32,
  /// so a float32 draw (the same bits on every backend) loses nothing.
  static constexpr float reset_bound = 0.1f;
  static constexpr int num_actions = 3;

  /// AVAIL_TORQUE[action]: -1, 0, +1 for actions 0, 1, 2.
  KOKKOS_INLINE_FUNCTION static double torque(std::int32_t action) {
    KOKKOS_ASSERT(action >= 0 && action < num_actions);
    return static_cast<double>(action) - 1.0;
  }
};

namespace kernels {

/// derive_seed tag of Acrobot's resets: "acrobot" in ASCII. Kept here, not
/// in rng_tag (kernels/core/counter_rng.hpp), so the env stays in its own
/// files; far above rng_tag's small values, so no other use of randomness
/// can share it.
inline constexpr std::uint64_t acrobot_reset_tag = 0x6163726F626F74ULL;

namespace detail {

/// Gymnasium's _dsdt ("book"): the time derivative of (theta1, theta2,
/// dtheta1, dtheta2) under torque a. Every product and sum is grouped as in
/// Gymnasium's Python, so each float64 rounding is the reference's (up to
/// the last bit of cos/sin and, on CUDA, contracted multiply-adds).
KOKKOS_INLINE_FUNCTION void acrobot_dsdt(const double y[4], double a, double dy[4]) {
  using P = AcrobotPhysics;
  constexpr double m1 = P::link_mass_1, m2 = P::link_mass_2, l1 = P::link_length_1;
  constexpr double lc1 = P::link_com_pos_1, lc2 = P::link_com_pos_2, I1 = P::link_moi, I2 = P::link_moi;
  constexpr double g = P::gravity;
  const double theta1 = y[0], theta2 = y[1], dtheta1 = y[2], dtheta2 = y[3];
  const double cos2 = math::cos(theta2), sin2 = math::sin(theta2);
  const double d1 = m1 * (lc1 * lc1) + m2 * (l1 * l1 + lc2 * lc2 + 2 * l1 * lc2 * cos2) + I1 + I2;
  const double d2 = m2 * (lc2 * lc2 + l1 * lc2 * cos2) + I2;
  const double phi2 = m2 * lc2 * g * math::cos(theta1 + theta2 - P::pi / 2.0);
  const double phi1 = -m2 * l1 * lc2 * (dtheta2 * dtheta2) * sin2 - 2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * sin2 +
                      (m1 * lc1 + m2 * l1) * g * math::cos(theta1 - P::pi / 2) + phi2;
  const double ddtheta2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * (dtheta1 * dtheta1) * sin2 - phi2) /
                          (m2 * (lc2 * lc2) + I2 - (d2 * d2) / d1);
  const double ddtheta1 = -(d2 * ddtheta2 + phi1) / d1;
  dy[0] = dtheta1;
  dy[1] = dtheta2;
  dy[2] = ddtheta1;
  dy[3] = ddtheta2;
}

/// One classical RK4 step of length dt (Gymnasium's rk4 over [0, dt]); the
/// torque is the augmented state's fifth component, whose derivative is 0,
/// so it stays a.
KOKKOS_INLINE_FUNCTION void acrobot_rk4(double y[4], double a) {
  constexpr double dt = AcrobotPhysics::dt, dt2 = dt / 2.0;
  double k1[4], k2[4], k3[4], k4[4], t[4];
  acrobot_dsdt(y, a, k1);
  for (int j = 0; j < 4; ++j) t[j] = y[j] + dt2 * k1[j];
  acrobot_dsdt(t, a, k2);
  for (int j = 0; j < 4; ++j) t[j] = y[j] + dt2 * k2[j];
  acrobot_dsdt(t, a, k3);
  for (int j = 0; j < 4; ++j) t[j] = y[j] + dt * k3[j];
  acrobot_dsdt(t, a, k4);
  for (int j = 0; j < 4; ++j) y[j] = y[j] + dt / 6.0 * (k1[j] + 2 * k2[j] + 2 * k3[j] + k4[j]);
}

/// Gymnasium's wrap into [-pi, pi] by whole turns, one at a time (not fmod:
/// its roundings differ). Every state an env holds is inside the bounds
/// (set_state and a loaded state are checked), so after one step the loops
/// run a few times; a non-finite value is passed on instead of looping
/// forever.
KOKKOS_INLINE_FUNCTION double acrobot_wrap(double x) {
  constexpr double m = -AcrobotPhysics::pi, M = AcrobotPhysics::pi, diff = M - m;
  if (!math::isfinite(x)) return x;
  while (x > M) x = x - diff;
  while (x < m) x = x + diff;
  return x;
}

/// Gymnasium's bound: min(max(x, lo), hi).
KOKKOS_INLINE_FUNCTION double acrobot_bound(double x, double lo, double hi) {
  const double y = lo > x ? lo : x;
  return hi < y ? hi : y;
}

/// Row i of `o`: Gymnasium's observation (cos theta1, sin theta1, cos
/// theta2, sin theta2, dtheta1, dtheta2), computed in float64 and rounded to
/// float32 as its np.array(..., dtype=np.float32) does.
template <class Matrix>
KOKKOS_INLINE_FUNCTION void acrobot_observation(const Matrix& o, int i, double theta1, double theta2, double dtheta1,
                                                double dtheta2) {
  o(i, 0) = static_cast<float>(math::cos(theta1));
  o(i, 1) = static_cast<float>(math::sin(theta1));
  o(i, 2) = static_cast<float>(math::cos(theta2));
  o(i, 3) = static_cast<float>(math::sin(theta2));
  o(i, 4) = static_cast<float>(dtheta1);
  o(i, 5) = static_cast<float>(dtheta2);
}

}  // namespace detail

/// The step of env i (a functor, so it can be launched from any context).
template <class MemorySpace>
struct AcrobotStep {
  AcrobotState<MemorySpace> s;
  Kokkos::View<const std::int32_t*, MemorySpace> actions;
  Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace> obs;
  EnvStep<MemorySpace> out;
  std::uint64_t reset_seed;
  int max_steps;
  /// When allocated: receives the observations the actions were chosen
  /// from (obs before this step overwrites them), so a collector needs no
  /// copy of its own.
  Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace> acted_on = {};

  static constexpr int obs_dim = 6;

  KOKKOS_INLINE_FUNCTION void operator()(int i) const { step_with(i, actions(i)); }

  /// The step of env i taking `action` (ChooseThenStep passes the one it
  /// chose in the same thread).
  KOKKOS_INLINE_FUNCTION void step_with(int i, std::int32_t action) const {
    using P = AcrobotPhysics;
    if (acted_on.data() != nullptr)
      for (int j = 0; j < obs_dim; ++j) acted_on(i, j) = obs(i, j);
    double y[4] = {s.theta1(i), s.theta2(i), s.dtheta1(i), s.dtheta2(i)};
    detail::acrobot_rk4(y, P::torque(action));
    const double theta1 = detail::acrobot_wrap(y[0]);
    const double theta2 = detail::acrobot_wrap(y[1]);
    const double dtheta1 = detail::acrobot_bound(y[2], -P::max_vel_1, P::max_vel_1);
    const double dtheta2 = detail::acrobot_bound(y[3], -P::max_vel_2, P::max_vel_2);

    // The tip above the bar one link length over the pivot, on the new state.
    const bool terminated = -math::cos(theta1) - math::cos(theta2 + theta1) > 1.0;
    const int steps = s.episode_steps(i) + 1;
    // As Gymnasium's TimeLimit: truncation depends on the step count only,
    // so a terminating 500th step reports both flags.
    const bool truncated = steps >= max_steps;

    detail::acrobot_observation(out.next_observations, i, theta1, theta2, dtheta1, dtheta2);
    out.rewards(i) = terminated ? 0.0f : -1.0f;
    out.terminated(i) = terminated ? 1 : 0;
    out.truncated(i) = truncated ? 1 : 0;

    if (terminated || truncated) {
      const std::uint64_t episode = s.episodes(i);
      s.episodes(i) = episode + 1;
      start_episode(i, episode);
    } else {
      s.theta1(i) = theta1;
      s.theta2(i) = theta2;
      s.dtheta1(i) = dtheta1;
      s.dtheta2(i) = dtheta2;
      s.episode_steps(i) = steps;
      detail::acrobot_observation(obs, i, theta1, theta2, dtheta1, dtheta2);
    }
  }

  /// Episode `episode` of env i starts from draws (reset_seed, i, 4 episode
  /// + k), k = 0..3 for theta1, theta2, dtheta1, dtheta2: its state, step
  /// count and observation.
  KOKKOS_INLINE_FUNCTION void start_episode(int i, std::uint64_t episode) const {
    const float lo = -AcrobotPhysics::reset_bound, hi = AcrobotPhysics::reset_bound;
    const std::uint64_t c = 4 * episode;
    const auto stream = static_cast<std::uint64_t>(i);
    const double theta1 = kernels::scale_uniform(kernels::counter_uniform(reset_seed, stream, c), lo, hi);
    const double theta2 = kernels::scale_uniform(kernels::counter_uniform(reset_seed, stream, c + 1), lo, hi);
    const double dtheta1 = kernels::scale_uniform(kernels::counter_uniform(reset_seed, stream, c + 2), lo, hi);
    const double dtheta2 = kernels::scale_uniform(kernels::counter_uniform(reset_seed, stream, c + 3), lo, hi);
    s.theta1(i) = theta1;
    s.theta2(i) = theta2;
    s.dtheta1(i) = dtheta1;
    s.dtheta2(i) = dtheta2;
    s.episode_steps(i) = 0;
    detail::acrobot_observation(obs, i, theta1, theta2, dtheta1, dtheta2);
  }
};

/// Starts a new episode in every env (the reset half of AcrobotStep).
template <class MemorySpace>
struct AcrobotReset {
  AcrobotStep<MemorySpace> step;
  KOKKOS_INLINE_FUNCTION void operator()(int i) const {
    const std::uint64_t episode = step.s.episodes(i);
    step.s.episodes(i) = episode + 1;
    step.start_episode(i, episode);
  }
};

/// Launches f over every env ("foxrl::Acrobot::step").
template <class ExecSpace>
void acrobot_step(const ExecSpace& space, const AcrobotStep<typename ExecSpace::memory_space>& f) {
  Kokkos::parallel_for("foxrl::Acrobot::step", compat::light(Kokkos::RangePolicy<ExecSpace>(space, 0, f.s.size())), f);
}

/// The same launch, each env's action chosen by `choose` in its thread
/// (kernels/envs/choose_then_step.hpp).
template <class ExecSpace, class Choose>
void acrobot_step(const ExecSpace& space,
                  const ChooseThenStep<Choose, AcrobotStep<typename ExecSpace::memory_space>>& f) {
  Kokkos::parallel_for("foxrl::Acrobot::step", compat::light(Kokkos::RangePolicy<ExecSpace>(space, 0, f.step.s.size())),
                       f);
}

/// Starts a new episode in every env ("foxrl::Acrobot::reset").
template <class ExecSpace>
void acrobot_reset(const ExecSpace& space, const AcrobotStep<typename ExecSpace::memory_space>& f) {
  Kokkos::parallel_for("foxrl::Acrobot::reset", Kokkos::RangePolicy<ExecSpace>(space, 0, f.s.size()),
                       AcrobotReset<typename ExecSpace::memory_space>{f});
}

/// Env i of acrobot_set_state: its state (v0, v1, v2, v3) at episode step
/// 0, and its observation. A named functor, not a KOKKOS_LAMBDA (see
/// RecordStepInOneTeam in kernels/collect/record_step.hpp).
template <class MemorySpace>
struct AcrobotSetStateKernel {
  AcrobotState<MemorySpace> s;
  Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace> o;
  double v0, v1, v2, v3;
  KOKKOS_INLINE_FUNCTION void operator()(int i) const {
    s.theta1(i) = v0;
    s.theta2(i) = v1;
    s.dtheta1(i) = v2;
    s.dtheta2(i) = v3;
    s.episode_steps(i) = 0;
    detail::acrobot_observation(o, i, v0, v1, v2, v3);
  }
};

/// Puts env `env` into `state` (theta1, theta2, dtheta1, dtheta2) at episode
/// step 0 and writes its observation ("foxrl::Acrobot::set_state").
template <class ExecSpace>
void acrobot_set_state(const ExecSpace& space, const AcrobotState<typename ExecSpace::memory_space>& s,
                       const Kokkos::View<float**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& o, int env,
                       const std::array<double, 4>& state) {
  const double v0 = state[0], v1 = state[1], v2 = state[2], v3 = state[3];
  Kokkos::parallel_for("foxrl::Acrobot::set_state", Kokkos::RangePolicy<ExecSpace>(space, env, env + 1),
                       AcrobotSetStateKernel<typename ExecSpace::memory_space>{s, o, v0, v1, v2, v3});
}

}  // namespace kernels
}  // namespace foxrl
