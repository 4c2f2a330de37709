#pragma once
// Gymnasium's Acrobot-v1 (gymnasium/envs/classic_control/acrobot.py,
// "book" dynamics) transcribed for the host in float64, for checking
// AcrobotEnv. Written from the published equations, not from the device
// kernel: the augmented state (theta1, theta2, dtheta1, dtheta2, torque)
// goes through a generic RK4 as in Gymnasium's rk4().

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

namespace foxrl::test::acrobot {

inline constexpr double kPi = 3.141592653589793;  // numpy.pi
inline constexpr double kDt = 0.2;
inline constexpr double kMaxVel1 = 4 * kPi;
inline constexpr double kMaxVel2 = 9 * kPi;
inline constexpr std::array<double, 3> kAvailTorque = {-1.0, 0.0, +1.0};

/// theta1, theta2, dtheta1, dtheta2.
using State = std::array<double, 4>;
/// State plus the torque as a fifth component.
using Augmented = std::array<double, 5>;

/// _dsdt: derivative of the augmented state (the torque's is 0).
inline Augmented dsdt(const Augmented& s) {
  const double m1 = 1.0, m2 = 1.0, l1 = 1.0, lc1 = 0.5, lc2 = 0.5, I1 = 1.0, I2 = 1.0, g = 9.8;
  const double a = s[4];
  const double theta1 = s[0], theta2 = s[1], dtheta1 = s[2], dtheta2 = s[3];
  const double d1 =
      m1 * std::pow(lc1, 2) + m2 * (std::pow(l1, 2) + std::pow(lc2, 2) + 2 * l1 * lc2 * std::cos(theta2)) + I1 + I2;
  const double d2 = m2 * (std::pow(lc2, 2) + l1 * lc2 * std::cos(theta2)) + I2;
  const double phi2 = m2 * lc2 * g * std::cos(theta1 + theta2 - kPi / 2.0);
  const double phi1 = -m2 * l1 * lc2 * std::pow(dtheta2, 2) * std::sin(theta2) -
                      2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * std::sin(theta2) +
                      (m1 * lc1 + m2 * l1) * g * std::cos(theta1 - kPi / 2) + phi2;
  const double ddtheta2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * std::pow(dtheta1, 2) * std::sin(theta2) - phi2) /
                          (m2 * std::pow(lc2, 2) + I2 - std::pow(d2, 2) / d1);
  const double ddtheta1 = -(d2 * ddtheta2 + phi1) / d1;
  return {dtheta1, dtheta2, ddtheta1, ddtheta2, 0.0};
}

/// y0 + c * k, component by component.
inline Augmented axpy(const Augmented& y0, double c, const Augmented& k) {
  Augmented r{};
  for (std::size_t j = 0; j < r.size(); ++j) r[j] = y0[j] + c * k[j];
  return r;
}

/// rk4(derivs, y0, [0, dt]): one step, the last row without the torque.
inline State rk4(const Augmented& y0, double dt) {
  const double dt2 = dt / 2.0;
  const Augmented k1 = dsdt(y0);
  const Augmented k2 = dsdt(axpy(y0, dt2, k1));
  const Augmented k3 = dsdt(axpy(y0, dt2, k2));
  const Augmented k4 = dsdt(axpy(y0, dt, k3));
  State out{};
  for (std::size_t j = 0; j < out.size(); ++j) out[j] = y0[j] + dt / 6.0 * (k1[j] + 2 * k2[j] + 2 * k3[j] + k4[j]);
  return out;
}

inline double wrap(double x, double m, double M) {
  const double diff = M - m;
  while (x > M) x = x - diff;
  while (x < m) x = x + diff;
  return x;
}

inline double bound(double x, double m, double M) { return std::min(std::max(x, m), M); }

inline bool terminal(const State& s) { return -std::cos(s[0]) - std::cos(s[1] + s[0]) > 1.0; }

/// The height of the tip above the pivot minus one link length: terminal()
/// is margin(s) > 0, and a test skips flags where |margin| is in the last bits.
inline double margin(const State& s) { return -std::cos(s[0]) - std::cos(s[1] + s[0]) - 1.0; }

/// _get_ob: float64 values rounded to float32.
inline std::array<float, 6> observation(const State& s) {
  return {static_cast<float>(std::cos(s[0])), static_cast<float>(std::sin(s[0])), static_cast<float>(std::cos(s[1])),
          static_cast<float>(std::sin(s[1])), static_cast<float>(s[2]),           static_cast<float>(s[3])};
}

struct StepResult {
  State state;
  std::array<float, 6> observation;
  double reward;
  bool terminated;
};

/// AcrobotEnv.step(a) without the TimeLimit wrapper (truncation is the
/// caller's step count).
inline StepResult step(const State& s, int action) {
  const Augmented augmented = {s[0], s[1], s[2], s[3], kAvailTorque.at(static_cast<std::size_t>(action))};
  State ns = rk4(augmented, kDt);
  ns[0] = wrap(ns[0], -kPi, kPi);
  ns[1] = wrap(ns[1], -kPi, kPi);
  ns[2] = bound(ns[2], -kMaxVel1, kMaxVel1);
  ns[3] = bound(ns[3], -kMaxVel2, kMaxVel2);
  const bool terminated = terminal(ns);
  return {ns, observation(ns), terminated ? 0.0 : -1.0, terminated};
}

}  // namespace foxrl::test::acrobot
