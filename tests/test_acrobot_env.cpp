// AcrobotEnv against a float64 host transcription of Gymnasium's Acrobot-v1
// (support/acrobot_reference.hpp): single steps from states all over the
// state space, whole trajectories with auto-resets, the reset draws
// (recomputed on the host from the counter-based RNG), termination and the
// 500-step truncation, construction errors, the trainer-state round trip
// with its value checks, step_choosing, and the one-instance audit.
#include "collect/action_selector.hpp"
#include "core/error.hpp"
#include "core/execution_context.hpp"
#include "core/kokkos_tools_audit.hpp"
#include "envs/acrobot_env.hpp"
#include "io/safetensors.hpp"
#include "io/state_archive.hpp"
#include "kernels/core/counter_rng.hpp"
#include "market/signal_adapter.hpp"
#include "support/acrobot_reference.hpp"
#include "support/env_test_util.hpp"
#include "support/test_spaces.hpp"
#include "train/training_run.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

namespace ref = foxrl::test::acrobot;

// Tolerances.
// One step: the device and the reference do the same float64 operations in
// the same order; they may differ by the last bit of cos/sin (CUDA's libm)
// and by contracted multiply-adds (nvcc): ~1e-16 relative per operation,
// ~1e-14 after the ~100 operations of one RK4 step. 1e-12 relative
// (absolute below magnitude 1) leaves a margin of ~100 over that and still
// fails on a changed equation (a torque off by 1e-9, a half step off by
// 1e-12 were both caught).
constexpr double step_tol = 1e-12;
// Trajectories: the double pendulum is chaotic, so last-bit differences
// grow. Modelled with the reference itself (1000 starts per policy, noise
// of 1e-15 relative added to the state every step, several ulps, as another
// libm or contracted multiply-adds would leave; the test "trajectory
// tolerance absorbs last-bit noise" below keeps the model honest): with
// random or periodic torques the divergence stays below 2e-13 over 100
// steps; energy pumping, which swings the links over and ends episodes in
// 70-100 steps (90%; some run to 300), stays below 1e-12 for 70 steps, then
// grows tenfold every ~10 steps, to 6e-10 at 100 steps and 1e-8 at 120.
// So an episode runs free against the reference for its first 100 steps,
// compared at 1e-8 (over 10 times the modelled worst case, and far below
// the 1e-7 relative that a single float32 rounding of the state would
// cost); from then on the reference restarts each step from the env's
// state (each step still checked, flags and resets still in lockstep), and
// every reset restarts both from exact draws.
constexpr double trajectory_tol = 1e-8;
constexpr int free_run_steps = 100;
// Termination flags are compared where the tip's height is not within this
// of the bar (10 times trajectory_tol): there the differences above may
// decide the flag, and such an env is followed no further. The reference's
// state decides, so (while episodes run free) every backend leaves the
// same envs.
constexpr double flag_margin = 1e-7;

/// |got - ref| <= tol * max(1, |ref|).
bool close(double got, double ref, double tol) { return std::fabs(got - ref) <= tol * std::max(1.0, std::fabs(ref)); }

/// The same for angles, except that two values within the tolerance of
/// +-pi may lie at opposite ends (the wrap decides on the last bits).
bool close_angle(double got, double ref, double tol) {
  const double edge = tol * ref::kPi;
  const bool both_at_pi = ref::kPi - std::fabs(ref) <= edge && ref::kPi - std::fabs(got) <= edge;
  return close(got, ref, tol) || both_at_pi;
}

/// float32 observations: float64 values that agree to ~1e-12 may round to
/// neighbouring floats, so one float32 ulp (2^-23 relative) apart, plus
/// 1e-12 absolute for values near 0 whose float64 inputs differ absolutely.
bool close_obs(float got, float ref) {
  return std::fabs(double(got) - double(ref)) <= std::ldexp(std::fabs(double(ref)), -23) + 1e-12;
}

bool close_state(const ref::State& got, const ref::State& want, double tol) {
  return close_angle(got[0], want[0], tol) && close_angle(got[1], want[1], tol) && close(got[2], want[2], tol) &&
         close(got[3], want[3], tol);
}

/// The float32 draws of episode `episode` of env `env`, from Gymnasium's
/// U[-0.1, 0.1] (which casts the start state to float32 too).
ref::State host_reset_state(std::uint64_t seed, int env, std::uint64_t episode) {
  const std::uint64_t s = foxrl::kernels::derive_seed(seed, foxrl::kernels::acrobot_reset_tag);
  ref::State v{};
  for (int k = 0; k < 4; ++k) {
    const float u = foxrl::kernels::counter_uniform(s, static_cast<std::uint64_t>(env), 4 * episode + k);
    v[static_cast<std::size_t>(k)] = static_cast<double>(-0.1f + 0.2f * u);
  }
  return v;
}

/// A host copy of every env's state (theta1, theta2, dtheta1, dtheta2).
template <class Exec, class Env>
std::vector<ref::State> device_states(const Exec& space, const Env& env) {
  const auto t1 = foxrl::test::to_host(space, env.state().theta1);
  const auto t2 = foxrl::test::to_host(space, env.state().theta2);
  const auto d1 = foxrl::test::to_host(space, env.state().dtheta1);
  const auto d2 = foxrl::test::to_host(space, env.state().dtheta2);
  std::vector<ref::State> s(t1.extent(0));
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = {t1(i), t2(i), d1(i), d2(i)};
  return s;
}

/// Energy pumping: torque against the first link's swing. Ends an episode
/// from a reset state in 70-100 steps (90% of them; some run to 300).
int pump(const ref::State& s) { return s[2] > 0 ? 0 : 2; }

/// N reference envs run in lockstep with an AcrobotEnv: Gymnasium's step,
/// the TimeLimit at max_steps and auto-reset from the same counter draws.
class ReferenceEnvs {
 public:
  struct Expected {
    ref::StepResult result;  ///< the real next state, observation, reward, termination
    bool truncated = false;
    ref::State after{};  ///< the state each env acts from next (a reset one where it ended)
  };

  ReferenceEnvs(std::uint64_t seed, int n, int max_steps)
      : seed_(seed), max_steps_(max_steps), state_(n), steps_(n, 0), episodes_(n, 1) {
    for (int i = 0; i < n; ++i) state_[static_cast<std::size_t>(i)] = host_reset_state(seed, i, 0);
  }

  void set_state(int i, const ref::State& s) {
    state_[static_cast<std::size_t>(i)] = s;
    steps_[static_cast<std::size_t>(i)] = 0;
  }
  /// Continues env i's episode from `s` (the env's own state), keeping its
  /// step count.
  void resync(int i, const ref::State& s) { state_[static_cast<std::size_t>(i)] = s; }
  const ref::State& state(int i) const { return state_[static_cast<std::size_t>(i)]; }
  int steps(int i) const { return steps_[static_cast<std::size_t>(i)]; }
  std::uint64_t episodes(int i) const { return episodes_[static_cast<std::size_t>(i)]; }

  Expected step(int i, int action) {
    const auto k = static_cast<std::size_t>(i);
    Expected e;
    e.result = ref::step(state_[k], action);
    e.truncated = ++steps_[k] >= max_steps_;
    if (e.result.terminated || e.truncated) {
      state_[k] = host_reset_state(seed_, i, episodes_[k]++);
      steps_[k] = 0;
    } else {
      state_[k] = e.result.state;
    }
    e.after = state_[k];
    return e;
  }

 private:
  std::uint64_t seed_;
  int max_steps_;
  std::vector<ref::State> state_;
  std::vector<int> steps_;
  std::vector<std::uint64_t> episodes_;
};

/// One step of every env, read back.
template <class Mem>
struct StepReadback {
  typename Kokkos::View<float**, Kokkos::LayoutRight, Mem>::HostMirror next, obs;
  typename Kokkos::View<float*, Mem>::HostMirror rewards;
  typename Kokkos::View<std::uint8_t*, Mem>::HostMirror terminated, truncated;
  typename Kokkos::View<std::int32_t*, Mem>::HostMirror steps;
  typename Kokkos::View<std::uint64_t*, Mem>::HostMirror episodes;
  std::vector<ref::State> state;
};

template <class Exec>
StepReadback<typename Exec::memory_space> read_step(const Exec& space, const foxrl::AcrobotEnv<Exec>& env) {
  StepReadback<typename Exec::memory_space> r;
  r.next = foxrl::test::to_host(space, env.step_result().next_observations);
  r.obs = foxrl::test::to_host(space, env.observations());
  r.rewards = foxrl::test::to_host(space, env.step_result().rewards);
  r.terminated = foxrl::test::to_host(space, env.step_result().terminated);
  r.truncated = foxrl::test::to_host(space, env.step_result().truncated);
  r.steps = foxrl::test::to_host(space, env.state().episode_steps);
  r.episodes = foxrl::test::to_host(space, env.state().episodes);
  r.state = device_states(space, env);
  return r;
}

/// What a lockstep comparison found.
struct Tally {
  int terminated = 0, truncated = 0;
  int at_bar = 0;  ///< envs left where the tip ended within flag_margin of the bar
};

/// Compares env i's step with the reference's `e` (tolerance `tol` on
/// float64 states). Returns false where the tip ended within flag_margin
/// of the bar: the flags may then differ, and with them the trajectories.
template <class Mem>
bool check_env_step(const StepReadback<Mem>& r, int i, const ReferenceEnvs& reference, const ReferenceEnvs::Expected& e,
                    double tol, Tally& tally) {
  if (std::fabs(ref::margin(e.result.state)) < flag_margin) {
    ++tally.at_bar;
    return false;
  }
  for (int k = 0; k < 6; ++k) {
    INFO("next observation component " << k << ": " << r.next(i, k) << " vs " << e.result.observation[k]);
    CHECK(close_obs(r.next(i, k), e.result.observation[static_cast<std::size_t>(k)]));
  }
  CHECK(r.terminated(i) == (e.result.terminated ? 1 : 0));
  CHECK(r.truncated(i) == (e.truncated ? 1 : 0));
  CHECK(r.rewards(i) == static_cast<float>(e.result.reward));
  CHECK(r.rewards(i) == (e.result.terminated ? 0.0f : -1.0f));
  const bool done = e.result.terminated || e.truncated;
  tally.terminated += e.result.terminated ? 1 : 0;
  tally.truncated += e.truncated ? 1 : 0;
  // The state acted from next: the stepped one, or (ended) the next
  // episode's draws, exactly, with their observation.
  const auto& s = r.state[static_cast<std::size_t>(i)];
  // Wherever it comes from, a state lies where Gymnasium's wrap and bound leave it.
  CHECK(std::fabs(s[0]) <= ref::kPi);
  CHECK(std::fabs(s[1]) <= ref::kPi);
  CHECK(std::fabs(s[2]) <= ref::kMaxVel1);
  CHECK(std::fabs(s[3]) <= ref::kMaxVel2);
  INFO("state " << s[0] << ", " << s[1] << ", " << s[2] << ", " << s[3] << " vs " << e.after[0] << ", " << e.after[1]
                << ", " << e.after[2] << ", " << e.after[3] << (done ? " (reset)" : ""));
  if (done)
    CHECK(s == e.after);
  else
    CHECK(close_state(s, e.after, tol));
  const auto obs = ref::observation(e.after);
  for (int k = 0; k < 6; ++k) CHECK(close_obs(r.obs(i, k), obs[static_cast<std::size_t>(k)]));
  CHECK(r.steps(i) == reference.steps(i));
  CHECK(r.episodes(i) == reference.episodes(i));
  return true;
}

/// Steps `env` and `reference` together `steps` times, action
/// policy(env, step, reference state) (so never a function of the device's
/// results while an episode runs free), and checks every env's every step
/// with check_env_step at trajectory_tol. An episode past free_run_steps
/// goes on from the env's state (see trajectory_tol). `also(step, env, r,
/// expected)` runs after each env's step for checks of the caller's.
template <class Exec, class Policy, class Also>
Tally run_lockstep(const Exec& space, foxrl::AcrobotEnv<Exec>& env, ReferenceEnvs& reference, int steps,
                   const Policy& policy, const Also& also) {
  const int n = env.num_envs();
  Tally tally;
  std::vector<bool> followed(static_cast<std::size_t>(n), true);
  std::vector<std::int32_t> actions(static_cast<std::size_t>(n));
  auto acting_from = device_states(space, env);
  for (int t = 0; t < steps; ++t) {
    for (int i = 0; i < n; ++i) {
      const auto k = static_cast<std::size_t>(i);
      if (reference.steps(i) >= free_run_steps) reference.resync(i, acting_from[k]);
      actions[k] = policy(i, t, reference.state(i));
    }
    env.step(space, foxrl::test::to_device(space, actions));
    const auto r = read_step(space, env);
    for (int i = 0; i < n; ++i) {
      const auto k = static_cast<std::size_t>(i);
      const auto e = reference.step(i, actions[k]);
      also(t, i, r, e);
      if (!followed[k]) continue;
      INFO("env " << i << ", step " << t << ", episode step " << reference.steps(i) << ", action " << actions[k]);
      followed[k] = check_env_step(r, i, reference, e, trajectory_tol, tally);
    }
    acting_from = r.state;
  }
  return tally;
}

/// Whether two host Views hold the same bytes.
template <class A, class B>
bool same_bits(const A& a, const B& b) {
  return a.span() == b.span() && std::memcmp(a.data(), b.data(), a.span() * sizeof(*a.data())) == 0;
}

/// Sets element `index` of the F64 or I32 tensor `name` in the safetensors
/// file `path` to `value` and writes the file again (a valid container).
void set_element(const std::string& path, const std::string& name, std::int64_t index, double value) {
  auto file = foxrl::safetensors::read(path);
  foxrl::safetensors::Tensor* t = nullptr;
  for (auto& x : file.tensors)
    if (x.name == name) t = &x;
  INFO("tensor " << name << " in " << path);
  REQUIRE(t != nullptr);
  REQUIRE(index < t->numel());
  auto put = [&](auto v) { std::memcpy(t->data.data() + index * sizeof(v), &v, sizeof(v)); };
  if (t->dtype == "F64")
    put(value);
  else if (t->dtype == "I32")
    put(static_cast<std::int32_t>(value));
  else
    FAIL("no test conversion to " << t->dtype);
  foxrl::safetensors::write(path, file);
}

void require_clean(const foxrl::AuditRecord& record, std::uint32_t device_id) {
  const auto violations = record.violations(device_id);
  INFO("violations: " << violations.size() << (violations.empty() ? "" : ", first: " + violations.front()));
  CHECK(violations.empty());
}

/// Runs the step's per-env functor in a launch of its own, as a fused
/// acting kernel would (AcrobotEnv::act_then_step_choosing's `act`).
template <class Exec>
struct RunStepInOwnLaunch {
  Exec space;
  template <class F>
  bool operator()(const F& f) const {
    Kokkos::parallel_for("foxrl::test::act_then_step", Kokkos::RangePolicy<Exec>(space, 0, f.step.s.size()), f);
    return true;
  }
};

struct LaunchNothing {
  template <class F>
  bool operator()(const F&) const {
    return false;
  }
};

}  // namespace

TEMPLATE_TEST_CASE("Acrobot step matches float64 Gymnasium equations from states all over the state space", "[acrobot]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const double pi = ref::kPi;
  // The corners (angles at +-pi, velocities at their bounds, rest) and
  // random states inside the bounds, where every term of _dsdt matters.
  std::vector<ref::State> states = {{0, 0, 0, 0},
                                    {pi, 0, 0, 0},
                                    {-pi, -pi, 4 * pi, -9 * pi},
                                    {pi, pi, -4 * pi, 9 * pi},
                                    {0.5 * pi, -0.5 * pi, 4 * pi, 9 * pi},
                                    {-3.0, 3.0, -12.0, 28.0}};
  std::mt19937_64 rng(20240611);
  std::uniform_real_distribution<double> angle(-pi, pi), vel1(-4 * pi, 4 * pi), vel2(-9 * pi, 9 * pi);
  while (states.size() < 300) states.push_back({angle(rng), angle(rng), vel1(rng), vel2(rng)});
  const int n = static_cast<int>(states.size());
  const std::uint64_t seed = 7;
  Tally tally;
  int compared_states = 0;
  for (int pass = 0; pass < 3; ++pass) {
    foxrl::AcrobotEnv<Exec> env(space, n, seed);
    ReferenceEnvs reference(seed, n, 500);
    std::vector<std::int32_t> actions(states.size());
    for (int i = 0; i < n; ++i) {
      const auto& s = states[static_cast<std::size_t>(i)];
      env.set_state(space, i, s);
      reference.set_state(i, s);
      actions[static_cast<std::size_t>(i)] = (i + pass) % 3;  // every state meets every torque over the passes
    }
    // set_state writes the observation too.
    const auto before = foxrl::test::to_host(space, env.observations());
    for (int i = 0; i < n; ++i) {
      const auto obs = ref::observation(states[static_cast<std::size_t>(i)]);
      for (int k = 0; k < 6; ++k) CHECK(close_obs(before(i, k), obs[static_cast<std::size_t>(k)]));
    }
    env.step(space, foxrl::test::to_device(space, actions));
    const auto r = read_step(space, env);
    for (int i = 0; i < n; ++i) {
      INFO("pass " << pass << ", env " << i << ", action " << actions[static_cast<std::size_t>(i)]);
      const auto e = reference.step(i, actions[static_cast<std::size_t>(i)]);
      if (check_env_step(r, i, reference, e, step_tol, tally) && !e.result.terminated) ++compared_states;
      // Only an ended episode moves the env to its next one.
      CHECK(r.episodes(i) == (r.terminated(i) ? 2u : 1u));
    }
  }
  CHECK(tally.terminated > 0);         // states above the bar end their episode
  CHECK(compared_states > 3 * n / 2);  // most steps leave a state to compare at 1e-12
}

TEMPLATE_TEST_CASE("Acrobot trajectories with auto-resets follow the reference step by step", "[acrobot]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const int n = 12;
  const std::uint64_t seed = 2024;
  foxrl::AcrobotEnv<Exec> env(space, n, seed);
  ReferenceEnvs reference(seed, n, 500);
  // Pumping on envs 0..5 (episodes end and restart from the reset draws),
  // uniform random torques on 6..8, a fixed periodic pattern on 9..11.
  std::mt19937 rng(99);
  std::uniform_int_distribution<int> random_action(0, 2);
  const auto policy = [&](int i, int t, const ref::State& s) {
    return i < 6 ? pump(s) : i < 9 ? random_action(rng) : (t % 7 < 3 ? 0 : 2);
  };
  const auto tally = run_lockstep(space, env, reference, 300, policy, [](int, int, const auto&, const auto&) {});
  CHECK(tally.terminated >= 6);  // every pumping env ended an episode and went on from its reset draws
}

TEST_CASE("Acrobot trajectory tolerance absorbs last-bit noise over the free-run horizon", "[acrobot]") {
  // The model behind trajectory_tol and free_run_steps, on the reference
  // alone: a twin whose state takes 1e-15 relative noise every step stays
  // within a tenth of the tolerance, and never disagrees on a flag, over
  // each episode's free run, under the three kinds of action sequence the
  // trajectory tests use.
  std::mt19937_64 noise_rng(9);
  std::uniform_real_distribution<double> noise(-1.0, 1.0);
  for (int policy = 0; policy < 3; ++policy) {
    std::mt19937 rng(1);
    std::uniform_int_distribution<int> random_action(0, 2);
    double worst = 0.0;
    int flags_differ = 0;
    for (int start = 0; start < 1000; ++start) {
      ref::State a = host_reset_state(77, start, 0), b = a;
      for (int t = 0; t < free_run_steps; ++t) {
        const int action = policy == 0 ? pump(a) : policy == 1 ? random_action(rng) : (t % 7 < 3 ? 0 : 2);
        const auto ra = ref::step(a, action), rb = ref::step(b, action);
        a = ra.state;
        b = rb.state;
        for (double& x : b) x += 1e-15 * noise(noise_rng) * std::max(1.0, std::fabs(x));
        for (int j = 0; j < 4; ++j) {
          const auto k = static_cast<std::size_t>(j);
          const double d = j < 2 ? std::fabs(std::remainder(a[k] - b[k], 2 * ref::kPi)) : std::fabs(a[k] - b[k]);
          worst = std::max(worst, d / std::max(1.0, std::fabs(a[k])));
        }
        flags_differ += ra.terminated != rb.terminated ? 1 : 0;
        if (ra.terminated || rb.terminated) break;
      }
    }
    INFO("policy " << policy << ": largest divergence " << worst);
    CHECK(worst < trajectory_tol / 10);
    CHECK(flags_differ == 0);
  }
}

TEMPLATE_TEST_CASE("Acrobot resets draw from the per-env counter RNG", "[acrobot]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const int n = 100;
  const std::uint64_t seed = 12345;
  // Acrobot's reset stream is not any of the pipeline's (rng_tag) streams.
  for (std::uint64_t tag = 1; tag <= 5; ++tag) {
    CHECK(foxrl::kernels::derive_seed(seed, foxrl::kernels::acrobot_reset_tag) !=
          foxrl::kernels::derive_seed(seed, tag));
  }
  foxrl::AcrobotEnv<Exec> env(space, n, seed);
  for (std::uint64_t episode = 0; episode < 3; ++episode) {
    if (episode > 0) env.reset(space);
    const auto states = device_states(space, env);
    const auto obs = foxrl::test::to_host(space, env.observations());
    const auto episodes = foxrl::test::to_host(space, env.state().episodes);
    const auto steps = foxrl::test::to_host(space, env.episode_steps());
    for (int i = 0; i < n; ++i) {
      INFO("env " << i << ", episode " << episode);
      const auto want = host_reset_state(seed, i, episode);
      const auto& got = states[static_cast<std::size_t>(i)];
      CHECK(got == want);  // bitwise: integer RNG and one exact multiply-add in float32
      for (double x : got) CHECK(std::fabs(x) <= 0.1);
      const auto want_obs = ref::observation(want);
      for (int k = 0; k < 6; ++k) CHECK(close_obs(obs(i, k), want_obs[static_cast<std::size_t>(k)]));
      CHECK(episodes(i) == episode + 1);
      CHECK(steps(i) == 0);
    }
  }
  // Different envs, different draws.
  const auto states = device_states(space, env);
  CHECK(states[0] != states[1]);
}

TEMPLATE_TEST_CASE("Acrobot terminates, truncates at 500 and auto-resets in the same step", "[acrobot]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const int n = 16;
  const std::uint64_t seed = 3;
  const double pi = ref::kPi;
  foxrl::AcrobotEnv<Exec> env(space, n, seed);
  ReferenceEnvs reference(seed, n, 500);
  // Envs 0..3 start upright (tip two links above the pivot) and end on step 1.
  const std::array<ref::State, 4> upright = {ref::State{pi, 0, 0, 0}, ref::State{-pi, 0, 1, -1},
                                             ref::State{pi, 0.2, 0, 0}, ref::State{-pi, -0.2, 0, 0}};
  for (int i = 0; i < 4; ++i) {
    env.set_state(space, i, upright[static_cast<std::size_t>(i)]);
    reference.set_state(i, upright[static_cast<std::size_t>(i)]);
  }
  // Pumping on envs 0..11 (episodes end again and again); no torque on
  // 12..15, which from rest near the bottom never reach the bar and meet
  // the time limit.
  const auto policy = [](int i, int, const ref::State& s) { return i < 12 ? pump(s) : 1; };
  std::vector<int> ended_at_step_1;
  int done = 0;
  const auto also = [&](int t, int i, const auto& r, const ReferenceEnvs::Expected&) {
    if (t == 0 && r.terminated(i)) ended_at_step_1.push_back(i);
    // Whatever the reference says: a done env's real next observation is
    // not its reset one, its step count restarts and its episode count
    // moves on.
    if (r.terminated(i) || r.truncated(i)) {
      ++done;
      CHECK(r.steps(i) == 0);
      bool same = true;
      for (int j = 0; j < 6; ++j) same = same && r.next(i, j) == r.obs(i, j);
      CHECK_FALSE(same);
    }
  };
  const auto episodes_before = foxrl::test::to_host(space, env.state().episodes);
  const auto tally = run_lockstep(space, env, reference, 520, policy, also);
  CHECK(ended_at_step_1 == std::vector<int>{0, 1, 2, 3});
  CHECK(tally.terminated >= 12 + 4);  // every pumping env ended at least one episode; 0..3 also at step 1
  CHECK(tally.truncated == 4);        // envs 12..15 reached the time limit, once
  const auto steps = foxrl::test::to_host(space, env.episode_steps());
  for (int i = 12; i < 16; ++i) CHECK(steps(i) == 520 - 500);
  const auto episodes = foxrl::test::to_host(space, env.state().episodes);
  std::uint64_t started = 0;
  for (int i = 0; i < n; ++i) started += episodes(i) - episodes_before(i);
  CHECK(started == static_cast<std::uint64_t>(done));

  // A terminating step at the time limit reports both flags.
  foxrl::AcrobotConfig one_step;
  one_step.max_episode_steps = 1;
  foxrl::AcrobotEnv<Exec> short_env(space, 2, seed, one_step);
  short_env.set_state(space, 0, {pi, 0, 0, 0});
  short_env.step(space, foxrl::test::to_device(space, std::vector<std::int32_t>{1, 1}));
  const auto term = foxrl::test::to_host(space, short_env.step_result().terminated);
  const auto trunc = foxrl::test::to_host(space, short_env.step_result().truncated);
  CHECK(term(0) == 1);
  CHECK(trunc(0) == 1);
  CHECK(term(1) == 0);
  CHECK(trunc(1) == 1);
}

TEST_CASE("Acrobot rejects bad construction, env indices and states", "[acrobot]") {
  using Exec = Kokkos::DefaultHostExecutionSpace;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  CHECK_THROWS_AS(foxrl::AcrobotEnv<Exec>(space, 0, 1), foxrl::UsageError);
  CHECK_THROWS_WITH(foxrl::AcrobotEnv<Exec>(space, -3, 1), Catch::Contains("num_envs = -3"));
  foxrl::AcrobotConfig config;
  config.max_episode_steps = 0;
  CHECK_THROWS_WITH(foxrl::AcrobotEnv<Exec>(space, 2, 1, config), Catch::Contains("max_episode_steps = 0"));
  foxrl::AcrobotEnv<Exec> env(space, 2, 1);
  CHECK_THROWS_AS(env.set_state(space, 2, {0, 0, 0, 0}), foxrl::LogicError);
  CHECK_THROWS_WITH(env.set_state(space, 2, {0, 0, 0, 0}), Catch::Contains("env 2"));
  CHECK_THROWS_WITH(env.set_state(space, -1, {0, 0, 0, 0}), Catch::Contains("env -1"));
  // States a step could never leave: refused, so every state also loads.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_WITH(env.set_state(space, 0, {3.2, 0, 0, 0}), Catch::Contains("theta1 = 3.2"));
  CHECK_THROWS_WITH(env.set_state(space, 0, {0, -3.2, 0, 0}), Catch::Contains("theta2 = -3.2"));
  CHECK_THROWS_WITH(env.set_state(space, 0, {0, 0, 13, 0}), Catch::Contains("dtheta1 = 13"));
  CHECK_THROWS_WITH(env.set_state(space, 0, {0, 0, 0, nan}), Catch::Contains("dtheta2 = nan"));
  CHECK_THROWS_AS(env.set_state(space, 0, {0, 0, 0, 29}), foxrl::UsageError);
  CHECK_NOTHROW(env.set_state(space, 0, {ref::kPi, -ref::kPi, ref::kMaxVel1, -ref::kMaxVel2}));
  CHECK(env.obs_dim() == 6);
  CHECK(env.num_actions() == 3);
  CHECK(env.num_envs() == 2);
  CHECK(std::string(foxrl::AcrobotEnv<Exec>::name) == "acrobot");
}

TEMPLATE_TEST_CASE("Acrobot state round-trips through a trainer state file and refuses out-of-range values",
                   "[acrobot][checkpoint]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const foxrl::test::TempDir dir;
  const std::string path = dir.file("acrobot_state.safetensors");
  const int n = 8;
  const std::uint64_t seed = 5;
  std::mt19937 rng(4);
  std::uniform_int_distribution<int> random_action(0, 2);
  const auto random_actions = [&] {
    std::vector<std::int32_t> a(n);
    for (auto& x : a) x = random_action(rng);
    return foxrl::test::to_device(space, a);
  };
  using Env = foxrl::AcrobotEnv<Exec>;
  Env saved(space, n, seed);
  // Pumping on half the envs so some episodes have ended (episodes > 1).
  for (int t = 0; t < 150; ++t) {
    const auto s = device_states(space, saved);
    std::vector<std::int32_t> a(n);
    for (int i = 0; i < n; ++i) a[static_cast<std::size_t>(i)] = i % 2 ? pump(s[static_cast<std::size_t>(i)]) : 1;
    saved.step(space, foxrl::test::to_device(space, a));
  }
  {
    foxrl::StateWriter<Exec> w;
    saved.visit_state(w, space);
    w.write(space, path);
  }
  const auto load = [&](Env& env, const std::string& file) {
    foxrl::StateReader<Exec> r(file);
    env.visit_state(r, space);
    r.apply(space);
  };
  const auto episodes_of = [&](const Env& env) { return foxrl::test::to_host(space, env.state().episodes); };
  const auto saved_episodes = episodes_of(saved);
  REQUIRE(*std::max_element(saved_episodes.data(), saved_episodes.data() + n) > 1);

  Env resumed(space, n, seed);
  resumed.step(space, random_actions());
  load(resumed, path);
  const auto bits_equal = [&](const Env& a, const Env& b) {
    const auto& x = a.state();
    const auto& y = b.state();
    return same_bits(foxrl::test::to_host(space, x.theta1), foxrl::test::to_host(space, y.theta1)) &&
           same_bits(foxrl::test::to_host(space, x.theta2), foxrl::test::to_host(space, y.theta2)) &&
           same_bits(foxrl::test::to_host(space, x.dtheta1), foxrl::test::to_host(space, y.dtheta1)) &&
           same_bits(foxrl::test::to_host(space, x.dtheta2), foxrl::test::to_host(space, y.dtheta2)) &&
           same_bits(foxrl::test::to_host(space, x.episode_steps), foxrl::test::to_host(space, y.episode_steps)) &&
           same_bits(foxrl::test::to_host(space, x.episodes), foxrl::test::to_host(space, y.episodes));
  };
  CHECK(bits_equal(saved, resumed));
  // Both go on alike, auto-resets included (the reset stream is the seed's).
  for (int t = 0; t < 100; ++t) {
    const auto a = random_actions();
    saved.step(space, a);
    resumed.step(space, a);
    INFO("step " << t << " after the load");
    CHECK(same_bits(foxrl::test::to_host(space, saved.step_result().next_observations),
                    foxrl::test::to_host(space, resumed.step_result().next_observations)));
  }
  CHECK(bits_equal(saved, resumed));

  // A loaded value outside what a step leaves is refused with the tensor
  // named, before anything is copied.
  struct Corruption {
    std::string tensor;
    std::int64_t index;
    double value;
    std::string says;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<Corruption> cases = {
      {"env.acrobot.theta1", 2, 3.15, "element [2] is 3.15: must be finite and in [-pi, pi]"},
      {"env.acrobot.theta2", 7, -inf, "element [7] is -inf: must be finite and in [-pi, pi]"},
      {"env.acrobot.theta2", 0, nan, "element [0] is nan"},
      {"env.acrobot.dtheta1", 3, 12.6, "element [3] is 12.6: must be finite and in [-4 pi, 4 pi]"},
      {"env.acrobot.dtheta2", 5, -28.3, "element [5] is -28.3: must be finite and in [-9 pi, 9 pi]"},
      {"env.acrobot.episode_steps", 1, 500, "element [1] is 500: must be in [0, max_episode_steps = 500)"},
      {"env.acrobot.episode_steps", 4, -1, "element [4] is -1"},
  };
  for (const auto& c : cases) {
    INFO(c.tensor << "[" << c.index << "] = " << c.value);
    const std::string bad = dir.file("bad.safetensors");
    std::filesystem::copy_file(path, bad, std::filesystem::copy_options::overwrite_existing);
    set_element(bad, c.tensor, c.index, c.value);
    Env target(space, n, seed + 1);
    const auto before = device_states(space, target);
    try {
      load(target, bad);
      FAIL("loaded");
    } catch (const foxrl::UsageError& e) {
      const std::string what = e.what();
      CHECK_THAT(what, Catch::Contains("tensor '" + c.tensor + "'") && Catch::Contains(c.says));
    }
    CHECK(device_states(space, target) == before);  // nothing copied
  }
  // The bounds themselves load.
  set_element(path, "env.acrobot.theta1", 0, -ref::kPi);
  set_element(path, "env.acrobot.dtheta2", 0, ref::kMaxVel2);
  set_element(path, "env.acrobot.episode_steps", 0, 499);
  Env edge(space, n, seed);
  CHECK_NOTHROW(load(edge, path));
}

TEMPLATE_TEST_CASE("Acrobot step_choosing and a step into caller-owned Views equal a plain step", "[acrobot][collect]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const int n = 16;
  const std::uint64_t seed = 9;
  foxrl::AcrobotEnv<Exec> choosing(space, n, seed), plain(space, n, seed), into(space, n, seed);
  // `into` writes its step results into caller-owned Views (the collector's storage).
  const auto out = foxrl::EnvStep<Mem>::allocate(space, n, 6, "foxrl::test::out");
  foxrl::EpsilonSchedule schedule;
  schedule.decay_env_steps = 80.0 * n;
  const foxrl::ActionSelector<Exec> selector(3, 5, schedule);
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> acted_on("foxrl::test::acted_on", n, 6);
  Kokkos::View<std::int32_t*, Mem> chosen("foxrl::test::chosen", n);
  std::vector<std::int32_t> greedy(n);
  int differ = 0, wrong_kept = 0, ended = 0;
  for (int step = 0; step < 300; ++step) {
    // Greedy: pumping on the observed dtheta1, so that once epsilon has
    // fallen, episodes end and both envs reset.
    const auto before = foxrl::test::to_host(space, choosing.observations());
    for (int i = 0; i < n; ++i) greedy[static_cast<std::size_t>(i)] = before(i, 4) > 0 ? 0 : 2;
    const auto device_greedy = foxrl::test::to_device(space, greedy);
    const auto choose = selector.greedy_choice(device_greedy, std::int64_t(step) * n, chosen);
    // The three ways in: a launch of its own, an `act` that runs the
    // functor in its launch, an `act` that declines.
    if (step % 3 == 0)
      choosing.step_choosing(space, choose, acted_on);
    else if (step % 3 == 1)
      choosing.act_then_step_choosing(space, choose, acted_on, RunStepInOwnLaunch<Exec>{space});
    else
      choosing.act_then_step_choosing(space, choose, acted_on, LaunchNothing{});
    plain.step(space, chosen);
    into.step(space, chosen, out);
    wrong_kept += same_bits(foxrl::test::to_host(space, acted_on), before) ? 0 : 1;
    const auto& k = choosing.step_result();
    const auto& p = plain.step_result();
    differ += same_bits(foxrl::test::to_host(space, choosing.observations()),
                        foxrl::test::to_host(space, plain.observations()))
                  ? 0
                  : 1;
    differ +=
        same_bits(foxrl::test::to_host(space, k.next_observations), foxrl::test::to_host(space, p.next_observations))
            ? 0
            : 1;
    differ += same_bits(foxrl::test::to_host(space, k.rewards), foxrl::test::to_host(space, p.rewards)) ? 0 : 1;
    const auto terminated = foxrl::test::to_host(space, k.terminated);
    differ += same_bits(terminated, foxrl::test::to_host(space, p.terminated)) ? 0 : 1;
    differ += same_bits(foxrl::test::to_host(space, k.truncated), foxrl::test::to_host(space, p.truncated)) ? 0 : 1;
    for (int i = 0; i < n; ++i) ended += terminated(i);
    differ +=
        same_bits(foxrl::test::to_host(space, out.next_observations), foxrl::test::to_host(space, p.next_observations))
            ? 0
            : 1;
    differ += same_bits(foxrl::test::to_host(space, out.rewards), foxrl::test::to_host(space, p.rewards)) ? 0 : 1;
    differ += same_bits(foxrl::test::to_host(space, out.terminated), terminated) ? 0 : 1;
    differ += same_bits(foxrl::test::to_host(space, out.truncated), foxrl::test::to_host(space, p.truncated)) ? 0 : 1;
    differ +=
        same_bits(foxrl::test::to_host(space, into.observations()), foxrl::test::to_host(space, plain.observations()))
            ? 0
            : 1;
  }
  CHECK(wrong_kept == 0);
  CHECK(differ == 0);
  CHECK(ended > 0);  // the run crossed episode ends, where observations reset
}

TEMPLATE_TEST_CASE("Acrobot acting stays on the run's instance, one launch per step", "[acrobot][audit]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context(3);
  const auto& space = context.space();
  const auto id = foxrl::tools_device_id(space);
  const int n = 64;
  using Matrix = Kokkos::View<float**, Kokkos::LayoutRight, Mem>;
  // Created inside the audited region (so its labels are checked) but
  // destroyed after it: Kokkos 4 fences globally when it frees host memory,
  // which a run never does inside an iteration.
  std::optional<foxrl::AcrobotEnv<Exec>> env;
  std::optional<foxrl::SignalAdapter<Exec>> adapter;
  std::optional<foxrl::ActionSelector<Exec>> selector;
  Matrix normalized, q, acted_on;
  Kokkos::View<std::int32_t*, Mem> actions, chosen;
  const auto record = foxrl::audit([&] {
    env.emplace(space, n, context.seed());
    adapter.emplace(space, env->obs_dim());
    selector.emplace(env->num_actions(), context.seed());
    normalized =
        Matrix(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::test::normalized"), n, env->obs_dim());
    q = Matrix(Kokkos::view_alloc(space, "foxrl::test::q"), n, env->num_actions());
    acted_on = Matrix(Kokkos::view_alloc(space, "foxrl::test::acted_on"), n, env->obs_dim());
    actions = Kokkos::View<std::int32_t*, Mem>(Kokkos::view_alloc(space, "foxrl::test::actions"), n);
    chosen = Kokkos::View<std::int32_t*, Mem>(Kokkos::view_alloc(space, "foxrl::test::chosen"), n);
    for (int it = 0; it < 3; ++it) {
      adapter->process(space, env->observations(), normalized);
      selector->select(space, q, std::int64_t{it} * n, actions);
      env->step(space, actions);
    }
    env->step_choosing(space, selector->greedy_choice(actions, std::int64_t{3} * n, chosen), acted_on);
    env->set_state(space, 1, {0.5, -0.5, 1.0, -1.0});
    env->reset(space);
    context.fence("test::acrobot_acting_done");
  });
  require_clean(record, id);
  CHECK(record.launches.size() >= 10);

  const auto step = foxrl::audit([&] { env->step(space, actions); });
  require_clean(step, id);
  CHECK(step.launches.size() == 1);
  CHECK(step.allocations.empty());
  CHECK(step.fences.empty());
  for (const auto& launch : step.launches) CHECK(launch.name == "foxrl::Acrobot::step");
}

// --- trainable through the registry -------------------------------------------

TEST_CASE("Acrobot trains through the registry: foxrl train's run learns to swing up", "[acrobot][learning]") {
  // perf/configs/acrobot-learn.json's run, cut to 80,000 env steps: a
  // random policy's episodes last the full 500 steps (return -500); the
  // DQN's last-100 mean must be far better by then (seeds 1-3 reach -95 to
  // -113 on the host backend).
  foxrl::test::TempDir dir;
  foxrl::TrainConfig config = foxrl::TrainConfig::from_json_file(FOXRL_SOURCE_DIR "/perf/configs/acrobot-learn.json");
  config.epochs = 8;
  config.out_dir = dir.file("run");
  foxrl::TrainingRun run(config);
  const foxrl::TrainingSummary summary = run.run();
  REQUIRE(summary.epochs.size() == 8);
  const auto& last = summary.epochs.back();
  CHECK(last.env_steps == 80000);
  CHECK(last.episodes >= 100);
  CHECK(summary.epochs.front().mean_return_last_100 < -400);
  CHECK(last.mean_return_last_100 > -200);
  CHECK(run.trainer().env().name() == "acrobot");
}
