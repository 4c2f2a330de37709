#pragma once
// Helpers shared by the environment tests: temporary files and a float64
// transcription of Gymnasium's CartPole (and, through device_copy.hpp,
// copies of Views between device and host).

#include "support/device_copy.hpp"

#include <Kokkos_Core.hpp>

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace foxrl::test {

/// A fresh directory under the system temp dir, removed on destruction.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("foxrl_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  /// Writes `content` to `name` in the directory and returns its path.
  std::string write(const std::string& name, const std::string& content) const {
    const auto p = path_ / name;
    std::ofstream(p, std::ios::binary) << content;
    return p.string();
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  /// The directory itself.
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

/// Gymnasium CartPole-v1's step in float64 (gymnasium/envs/classic_control/cartpole.py).
inline void cartpole_step_f64(double s[4], int action) {
  const double gravity = 9.8, masscart = 1.0, masspole = 0.1, total_mass = masspole + masscart;
  const double length = 0.5, polemass_length = masspole * length, force_mag = 10.0, tau = 0.02;
  const double x = s[0], x_dot = s[1], theta = s[2], theta_dot = s[3];
  const double force = action == 1 ? force_mag : -force_mag;
  const double costheta = std::cos(theta), sintheta = std::sin(theta);
  const double temp = (force + polemass_length * theta_dot * theta_dot * sintheta) / total_mass;
  const double thetaacc =
      (gravity * sintheta - costheta * temp) / (length * (4.0 / 3.0 - masspole * costheta * costheta / total_mass));
  const double xacc = temp - polemass_length * thetaacc * costheta / total_mass;
  s[0] = x + tau * x_dot;
  s[1] = x_dot + tau * xacc;
  s[2] = theta + tau * theta_dot;
  s[3] = theta_dot + tau * thetaacc;
}

inline bool cartpole_terminal_f64(const double s[4]) {
  const double theta_threshold = 12 * 2 * M_PI / 360;
  return s[0] < -2.4 || s[0] > 2.4 || s[2] < -theta_threshold || s[2] > theta_threshold;
}

}  // namespace foxrl::test
