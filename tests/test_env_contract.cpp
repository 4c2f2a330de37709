// The env contract, over every registered env (envs/env_registry.hpp) on
// every backend: what the collector, the trainers, resume and rollouts
// rely on of an env, checked the same way for each, so a new env is held to
// it by its one registration line.
#include "core/execution_context.hpp"
#include "core/kokkos_tools_audit.hpp"
#include "envs/env_registry.hpp"
#include "envs/vector_env.hpp"
#include "io/state_archive.hpp"
#include "kernels/core/counter_rng.hpp"
#include "kernels/envs/choose_then_step.hpp"
#include "support/device_copy.hpp"
#include "support/env_test_util.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace {

/// The config of a small run of `env`: the market's keys shrunk so its
/// data builds fast (other envs ignore them).
foxrl::TrainConfig contract_config(const std::string& env) {
  foxrl::TrainConfig c;
  c.env = env;
  c.num_envs = 5;
  c.seed = 11;
  c.synthetic_bars = 4000;
  c.window = 8;
  c.episode_length = 40;
  return c;
}

/// Random actions in [0, num_actions) for `steps` steps of `n` envs.
std::vector<std::int32_t> random_actions(int steps, int n, int num_actions, std::uint64_t seed) {
  std::vector<std::int32_t> a(static_cast<std::size_t>(steps) * n);
  for (std::size_t k = 0; k < a.size(); ++k)
    a[k] =
        static_cast<std::int32_t>(foxrl::kernels::counter_index(seed, 0, k, static_cast<std::uint32_t>(num_actions)));
  return a;
}

template <class MemorySpace>
struct FixedChoice {
  Kokkos::View<const std::int32_t*, MemorySpace> actions;
  KOKKOS_INLINE_FUNCTION std::int32_t operator()(int i) const { return actions(i); }
};

/// What one step left: the real next observations, rewards, flags and the
/// observations acted on next, as host vectors.
struct StepBits {
  std::vector<float> next, rewards, obs;
  std::vector<std::uint8_t> terminated, truncated;
  bool operator==(const StepBits& o) const {
    const auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
      return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
    };
    return same(next, o.next) && same(rewards, o.rewards) && same(obs, o.obs) && terminated == o.terminated &&
           truncated == o.truncated;
  }
};

template <class Exec>
StepBits bits_of(const Exec& space, const foxrl::VectorEnv<Exec>& env) {
  const auto& r = env.step_result();
  StepBits b;
  const auto next = foxrl::test::to_host(space, r.next_observations);
  const auto obs = foxrl::test::to_host(space, env.observations());
  const auto rewards = foxrl::test::to_host(space, r.rewards);
  const auto term = foxrl::test::to_host(space, r.terminated);
  const auto trunc = foxrl::test::to_host(space, r.truncated);
  b.next.assign(next.data(), next.data() + next.size());
  b.obs.assign(obs.data(), obs.data() + obs.size());
  b.rewards.assign(rewards.data(), rewards.data() + rewards.size());
  b.terminated.assign(term.data(), term.data() + term.size());
  b.truncated.assign(trunc.data(), trunc.data() + trunc.size());
  return b;
}

/// Runs an env's per-env step functor inside a launch of its own (what a
/// forward kernel that forms the actions does with it).
template <class Exec>
struct RunInside {
  Exec space;
  int n;
  template <class PerEnv>
  bool operator()(const PerEnv& f) const {
    if constexpr (std::is_same_v<PerEnv, foxrl::kernels::NoPerEnvStep>) {
      return false;
    } else {
      Kokkos::parallel_for("foxrl::test::per_env_step", Kokkos::RangePolicy<Exec>(space, 0, n), f);
      return true;
    }
  }
};

}  // namespace

TEMPLATE_TEST_CASE("every registered env keeps the env contract", "[env][contract]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  REQUIRE(foxrl::registered_envs().size() >= 3);
  for (const auto& info : foxrl::registered_envs()) {
    INFO("env " << info.name);
    foxrl::ExecutionContext<Exec> context(3);
    const Exec& space = context.space();
    const foxrl::TrainConfig config = contract_config(info.name);
    const int n = static_cast<int>(config.num_envs);
    CHECK(foxrl::env_info(info.name).name == info.name);
    CHECK(std::string(info.summary).size() > 10);
    const foxrl::EnvSpaces spaces = foxrl::env_spaces(config);
    const foxrl::EnvData<Exec> data(space, config);
    auto env = foxrl::make_vector_env(space, config, data, n, config.seed);
    auto twin = foxrl::make_vector_env(space, config, data, n, config.seed);
    auto chosen = foxrl::make_vector_env(space, config, data, n, config.seed);
    auto inside = foxrl::make_vector_env(space, config, data, n, config.seed);
    // Its spaces are what the registry says, its name is its entry's.
    CHECK(env.name() == info.name);
    CHECK(env.num_envs() == n);
    CHECK(env.obs_dim() == spaces.obs_dim);
    CHECK(env.num_actions() == spaces.num_actions);
    CHECK((spaces.normalize_mask.empty() || spaces.normalize_mask.size() == std::size_t(spaces.obs_dim)));
    CHECK(env.observations().extent(0) == std::size_t(n));
    CHECK(env.observations().extent(1) == std::size_t(spaces.obs_dim));

    const int steps = 120;
    const auto actions = random_actions(steps, n, spaces.num_actions, 5);
    Kokkos::View<std::int32_t*, Mem> step_actions("foxrl::test::actions", n);
    typename foxrl::VectorEnv<Exec>::obs_view acted_on("foxrl::test::acted_on", n, spaces.obs_dim);
    auto h_actions = Kokkos::create_mirror_view(step_actions);
    foxrl::test::TempDir dir;
    std::vector<StepBits> after_save;
    for (int t = 0; t < steps; ++t) {
      for (int i = 0; i < n; ++i) h_actions(i) = actions[static_cast<std::size_t>(t) * n + i];
      Kokkos::deep_copy(space, step_actions, h_actions);
      const auto before = foxrl::test::to_host(space, env.observations());
      if (t == steps / 2) {
        // Save the state half way: a reload must replay the second half bit for bit.
        foxrl::StateWriter<Exec> w;
        env.visit_state(w, space);
        w.write(space, dir.file("env.safetensors"));
      }
      // Every env on one instance: one launch or a few, no fence, no allocation.
      const auto record = foxrl::audit([&] { env.step(space, step_actions); });
      const auto violations = record.violations(foxrl::tools_device_id(space));
      INFO("first violation: " << (violations.empty() ? std::string() : violations.front()));
      CHECK(violations.empty());
      twin.step(space, step_actions);
      const FixedChoice<Mem> choose{step_actions};
      chosen.step_choosing(space, choose, acted_on);
      inside.act_then_step_choosing(space, choose, acted_on, RunInside<Exec>{space, n});
      const StepBits b = bits_of(space, env);
      // Deterministic, and the same whether the actions come in a View, are
      // chosen inside the step's launch, or the step runs inside another.
      CHECK(b == bits_of(space, twin));
      CHECK(b == bits_of(space, chosen));
      CHECK(b == bits_of(space, inside));
      const auto h_acted = foxrl::test::to_host(space, acted_on);
      CHECK(std::memcmp(h_acted.data(), before.data(), before.size() * sizeof(float)) == 0);
      for (std::size_t k = 0; k < b.next.size(); ++k) REQUIRE(std::isfinite(b.next[k]));
      for (int i = 0; i < n; ++i) {
        REQUIRE(std::isfinite(b.rewards[std::size_t(i)]));
        REQUIRE(b.terminated[std::size_t(i)] <= 1);
        REQUIRE(b.truncated[std::size_t(i)] <= 1);
      }
      if (t >= steps / 2) after_save.push_back(b);
    }
    // The saved state restores the env: the second half replays identically.
    {
      foxrl::StateReader<Exec> r(dir.file("env.safetensors"));
      env.visit_state(r, space);
      r.apply(space);
      for (int t = steps / 2; t < steps; ++t) {
        for (int i = 0; i < n; ++i) h_actions(i) = actions[static_cast<std::size_t>(t) * n + i];
        Kokkos::deep_copy(space, step_actions, h_actions);
        env.step(space, step_actions);
        CHECK(bits_of(space, env) == after_save[std::size_t(t - steps / 2)]);
      }
    }
    // Another seed draws other episodes.
    auto other = foxrl::make_vector_env(space, config, data, n, config.seed + 1);
    const auto a = foxrl::test::to_host(space, other.observations());
    const auto b = foxrl::test::to_host(space, twin.observations());
    CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) != 0);
  }
}

TEST_CASE("the registry names its envs once and refuses others", "[env][contract]") {
  const auto& envs = foxrl::registered_envs();
  for (std::size_t i = 0; i < envs.size(); ++i) {
    CHECK(foxrl::env_index(envs[i].name) == i);
    for (std::size_t j = i + 1; j < envs.size(); ++j) CHECK(envs[i].name != envs[j].name);
  }
  CHECK_THROWS_WITH(foxrl::env_info("pong"), Catch::Contains("env 'pong': not a registered env (") &&
                                                 Catch::Contains(foxrl::registered_env_names()));
  CHECK(foxrl::env_info("market").evaluation == foxrl::EvaluationKind::backtest);
  CHECK(foxrl::env_info("cartpole").evaluation == foxrl::EvaluationKind::episodes);
  CHECK(foxrl::env_info("acrobot").evaluation == foxrl::EvaluationKind::episodes);
}
