// n-step transitions against a float64 host reference computed from the full
// history of random episodes with terminations, truncations and resets.
#include "collect/nstep_accumulator.hpp"
#include "core/execution_context.hpp"
#include "core/kokkos_tools_audit.hpp"
#include "support/device_copy.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <optional>
#include <random>
#include <vector>

namespace {

struct HostStep {
  std::vector<float> obs, next_obs;  // [N*D]
  std::vector<std::int32_t> actions;
  std::vector<float> rewards;
  std::vector<std::uint8_t> terminated, truncated;
};

/// A consistent random trajectory: the next step's observation is this
/// step's real next observation unless the episode ended (then a reset one).
std::vector<HostStep> random_trajectory(int steps, int num_envs, int dim, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-1.f, 1.f);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  std::vector<HostStep> out(steps);
  std::vector<float> current(num_envs * dim);
  for (auto& v : current) v = value(rng);
  for (int t = 0; t < steps; ++t) {
    auto& s = out[t];
    s.obs = current;
    s.next_obs.resize(current.size());
    for (auto& v : s.next_obs) v = value(rng);
    s.actions.resize(num_envs);
    s.rewards.resize(num_envs);
    s.terminated.assign(num_envs, 0);
    s.truncated.assign(num_envs, 0);
    for (int e = 0; e < num_envs; ++e) {
      s.actions[e] = static_cast<std::int32_t>(rng() % 3);
      s.rewards[e] = value(rng);
      const double c = coin(rng);
      if (c < 0.12)
        s.terminated[e] = 1;
      else if (c < 0.18)
        s.truncated[e] = 1;
      for (int d = 0; d < dim; ++d) {
        current[e * dim + d] = (s.terminated[e] || s.truncated[e]) ? value(rng) : s.next_obs[e * dim + d];
      }
    }
  }
  return out;
}

struct Expected {
  std::vector<float> obs, next_obs;
  std::int32_t action;
  double reward, discount;
  int successor;
};

Expected reference(const std::vector<HostStep>& h, int start, int env, int n, double gamma, int dim) {
  Expected x{};
  x.obs.assign(h[start].obs.begin() + env * dim, h[start].obs.begin() + (env + 1) * dim);
  x.action = h[start].actions[env];
  double discount = 1.0;
  int k = 0;
  bool terminated = false, ended = false;
  for (; k < n; ++k) {
    const auto& s = h[start + k];
    x.reward += discount * s.rewards[env];
    discount *= gamma;
    if (s.terminated[env] || s.truncated[env]) {
      terminated = s.terminated[env] != 0;
      ended = true;
      ++k;
      break;
    }
  }
  const auto& last = h[start + k - 1];
  x.next_obs.assign(last.next_obs.begin() + env * dim, last.next_obs.begin() + (env + 1) * dim);
  x.discount = terminated ? 0.0 : discount;
  x.successor = ended ? 0 : 1;
  return x;
}

using foxrl::test::to_host;

}  // namespace

TEMPLATE_TEST_CASE("n-step transitions match a float64 reference across episode ends", "[nstep]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  const int num_envs = 7, dim = 3, steps = 60;
  const double gamma = 0.9;
  const int n = GENERATE(1, 3, 5);
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const auto history = random_trajectory(steps, num_envs, dim, 1234 + n);

  foxrl::NStepAccumulator<Exec> acc(space, num_envs, dim, n, static_cast<float>(gamma));
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> obs("foxrl::test::obs", num_envs, dim);
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> next("foxrl::test::next", num_envs, dim);
  Kokkos::View<std::int32_t*, Mem> actions("foxrl::test::actions", num_envs);
  Kokkos::View<float*, Mem> rewards("foxrl::test::rewards", num_envs);
  Kokkos::View<std::uint8_t*, Mem> term("foxrl::test::term", num_envs), trunc("foxrl::test::trunc", num_envs);

  // Per window start: emitted observation, next observation, successor flag.
  std::vector<std::vector<float>> emitted_obs(steps), emitted_next(steps);
  std::vector<std::vector<int>> emitted_successor(steps);
  int checked = 0;
  for (int t = 0; t < steps; ++t) {
    const auto& s = history[t];
    Kokkos::deep_copy(space, obs,
                      Kokkos::View<const float**, Kokkos::LayoutRight, Kokkos::HostSpace>(s.obs.data(), num_envs, dim));
    Kokkos::deep_copy(
        space, next,
        Kokkos::View<const float**, Kokkos::LayoutRight, Kokkos::HostSpace>(s.next_obs.data(), num_envs, dim));
    Kokkos::deep_copy(space, actions, Kokkos::View<const std::int32_t*, Kokkos::HostSpace>(s.actions.data(), num_envs));
    Kokkos::deep_copy(space, rewards, Kokkos::View<const float*, Kokkos::HostSpace>(s.rewards.data(), num_envs));
    Kokkos::deep_copy(space, term, Kokkos::View<const std::uint8_t*, Kokkos::HostSpace>(s.terminated.data(), num_envs));
    Kokkos::deep_copy(space, trunc, Kokkos::View<const std::uint8_t*, Kokkos::HostSpace>(s.truncated.data(), num_envs));
    const bool ready = acc.push(space, {obs, actions, rewards, term, trunc, next});
    REQUIRE(ready == (t >= n - 1));
    if (!ready) continue;
    context.fence("test::nstep");
    const auto& out = acc.output();
    const auto h_obs = to_host(space, out.observations);
    const auto h_next = to_host(space, out.next_observations);
    const auto h_act = to_host(space, out.actions);
    const auto h_rew = to_host(space, out.rewards);
    const auto h_disc = to_host(space, out.discounts);
    const auto h_succ = to_host(space, out.next_is_successor);
    const int start = t - n + 1;
    emitted_obs[start].assign(h_obs.data(), h_obs.data() + num_envs * dim);
    emitted_next[start].assign(h_next.data(), h_next.data() + num_envs * dim);
    emitted_successor[start].assign(h_succ.data(), h_succ.data() + num_envs);
    for (int e = 0; e < num_envs; ++e) {
      const auto x = reference(history, start, e, n, gamma, dim);
      INFO("n=" << n << " step " << t << " env " << e);
      CHECK(h_act(e) == x.action);
      CHECK(h_rew(e) == Approx(x.reward).epsilon(1e-5).margin(1e-6));
      CHECK(h_disc(e) == Approx(x.discount).epsilon(1e-6).margin(1e-7));
      CHECK(static_cast<int>(h_succ(e)) == x.successor);
      for (int d = 0; d < dim; ++d) {
        CHECK(h_obs(e, d) == x.obs[d]);
        CHECK(h_next(e, d) == x.next_obs[d]);
      }
      ++checked;
    }
  }
  CHECK(checked == num_envs * (steps - n + 1));
  // Storage contract: a successor's next observation is the observation the
  // same env hands over n steps later.
  int successors = 0;
  for (int start = 0; start + n <= steps - n; ++start) {
    for (int e = 0; e < num_envs; ++e) {
      if (!emitted_successor[start][e]) continue;
      ++successors;
      for (int d = 0; d < dim; ++d) {
        CHECK(emitted_next[start][e * dim + d] == emitted_obs[start + n][e * dim + d]);
      }
    }
  }
  CHECK(successors > 0);
}

TEMPLATE_TEST_CASE("n-step push runs on the run's instance only", "[nstep][audit]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const int num_envs = 4, dim = 2;
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> obs(Kokkos::view_alloc(space, "foxrl::test::obs"), num_envs, dim);
  Kokkos::View<std::int32_t*, Mem> actions(Kokkos::view_alloc(space, "foxrl::test::actions"), num_envs);
  Kokkos::View<float*, Mem> rewards(Kokkos::view_alloc(space, "foxrl::test::rewards"), num_envs);
  Kokkos::View<std::uint8_t*, Mem> flags(Kokkos::view_alloc(space, "foxrl::test::flags"), num_envs);
  // Kept alive past the audited region: freeing host memory fences globally
  // in Kokkos 4, and a run frees nothing inside an iteration.
  std::optional<foxrl::NStepAccumulator<Exec>> acc;
  const auto record = foxrl::audit([&] {
    acc.emplace(space, num_envs, dim, 2, 0.99f);
    for (int t = 0; t < 4; ++t) acc->push(space, {obs, actions, rewards, flags, flags, obs});
    context.fence("test::done");
  });
  const auto violations = record.violations(foxrl::tools_device_id(space));
  INFO((violations.empty() ? std::string() : violations.front()));
  CHECK(violations.empty());
  CHECK(record.launches.size() == 4);
}
