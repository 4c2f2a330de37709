// Market replay env: rewards and costs against a float64 host reference,
// observations against the host series, truncation-only episodes with
// auto-reset from the counter RNG, and splits that stay inside their bars.
#include "core/execution_context.hpp"
#include "kernels/core/counter_rng.hpp"
#include "market/market_data.hpp"
#include "market/market_env.hpp"
#include "support/env_test_util.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

TEST_CASE("market cost from spread and commission", "[market_env]") {
  CHECK(foxrl::MarketEnvConfig::cost_from_bps(2.0, 1.0) == Approx(2e-4).epsilon(1e-12));
  CHECK(foxrl::MarketEnvConfig::cost_from_bps(10.0, 0.0) == Approx(5e-4).epsilon(1e-12));
  CHECK(foxrl::MarketEnvConfig{}.cost == 0.0005);  // the benchmark's flat cost
  CHECK(foxrl::MarketEnvConfig{}.observation.obs_dim() == 65);
}

TEMPLATE_TEST_CASE("market env rewards, costs and observations match a host reference", "[market_env]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const auto series = foxrl::generate_benchmark_market(3000, 2);
  const auto r = foxrl::host_log_returns(series);
  // The benchmark series' returns are r[i] = 0.01 z + 0.002 sin(...): |r| stays far below 1.
  for (double v : r) REQUIRE(std::fabs(v) < 0.1);
  foxrl::MarketFeatures<Exec> market(space, series, 64);
  foxrl::MarketEnvConfig config;
  config.episode_length = 40;
  config.cost = foxrl::MarketEnvConfig::cost_from_bps(3.0, 0.5);
  const int n = 32, W = 64, D = 65;
  foxrl::MarketEnv<Exec> env(space, market, {0, market.size()}, n, 17, config);
  REQUIRE(env.obs_dim() == D);
  std::mt19937 rng(4);
  std::uniform_int_distribution<int> pick(0, 2);
  std::vector<std::int32_t> actions(n);
  for (int step = 0; step < 100; ++step) {
    const auto time = foxrl::test::to_host(space, env.state().time);
    const auto pos = foxrl::test::to_host(space, env.state().position);
    const auto obs = foxrl::test::to_host(space, env.observations());
    for (auto& a : actions) a = pick(rng);
    env.step(space, foxrl::test::to_device(space, actions));
    const auto reward = foxrl::test::to_host(space, env.step_result().rewards);
    const auto term = foxrl::test::to_host(space, env.step_result().terminated);
    const auto next = foxrl::test::to_host(space, env.step_result().next_observations);
    for (int i = 0; i < n; ++i) {
      const int t = time(i), p = pos(i), q = actions[static_cast<std::size_t>(i)] - 1;
      INFO("env " << i << " step " << step << " t " << t);
      // Observation: r[t-64..t-1] oldest first, then the position.
      for (int j = 0; j < W; ++j) {
        CHECK(std::fabs(obs(i, j) - r[static_cast<std::size_t>(t - W + j)]) <=
              1e-7 * std::fabs(r[static_cast<std::size_t>(t - W + j)]));
      }
      CHECK(obs(i, W) == static_cast<float>(p));
      const double expect = q * r[static_cast<std::size_t>(t)] - config.cost * std::abs(q - p);
      // float32 reward of a float64 expression: one rounding of the float32 return and one of the result.
      CHECK(std::fabs(reward(i) - expect) <=
            2e-7 * (std::fabs(r[static_cast<std::size_t>(t)]) + config.cost * 2) + 1e-12);
      CHECK(term(i) == 0);
      CHECK(next(i, W) == static_cast<float>(q));
      CHECK(std::fabs(next(i, W - 1) - r[static_cast<std::size_t>(t)]) <=
            1e-7 * std::fabs(r[static_cast<std::size_t>(t)]));
    }
  }
}

TEMPLATE_TEST_CASE("market env truncates and auto-resets to a counter-RNG start bar", "[market_env]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  foxrl::RegimeMarketConfig rc;
  rc.bars = 1000;
  const auto series = foxrl::generate_regime_market(rc, 3);
  foxrl::MarketFeatures<Exec> market(space, series, 8);
  foxrl::MarketEnvConfig config;
  config.observation = {foxrl::FeatureSet::ohlcv, 8, 8};
  config.episode_length = 5;
  const auto splits = foxrl::split_by_fraction(market.size(), 0.6, 0.2);
  const int n = 20;
  const std::uint64_t seed = 77;
  foxrl::MarketEnv<Exec> env(space, market, splits.validation, n, seed, config);
  CHECK(env.first_start() == 600);
  CHECK(env.num_starts() == 800 - 5 - 600 + 1);
  const std::uint64_t start_seed = foxrl::kernels::derive_seed(seed, foxrl::kernels::rng_tag::market_start);
  auto expected_start = [&](int i, std::uint64_t episode) {
    return env.first_start() +
           static_cast<int>(foxrl::kernels::counter_index(start_seed, static_cast<std::uint64_t>(i), episode,
                                                          static_cast<std::uint32_t>(env.num_starts())));
  };
  auto time = foxrl::test::to_host(space, env.state().time);
  for (int i = 0; i < n; ++i) CHECK(time(i) == expected_start(i, 0));

  std::vector<std::int32_t> actions(n, 2);
  std::uint64_t episode = 1;
  for (int step = 1; step <= 15; ++step) {
    const auto before = foxrl::test::to_host(space, env.state().time);
    env.step(space, foxrl::test::to_device(space, actions));
    const auto trunc = foxrl::test::to_host(space, env.step_result().truncated);
    const auto term = foxrl::test::to_host(space, env.step_result().terminated);
    const auto next = foxrl::test::to_host(space, env.step_result().next_observations);
    const auto obs = foxrl::test::to_host(space, env.observations());
    const auto after = foxrl::test::to_host(space, env.state().time);
    const auto steps = foxrl::test::to_host(space, env.episode_steps());
    const bool done = step % 5 == 0;
    for (int i = 0; i < n; ++i) {
      INFO("env " << i << " step " << step);
      CHECK(term(i) == 0);
      CHECK(static_cast<bool>(trunc(i)) == done);
      // Decisions and rewards stay inside the validation split.
      CHECK(before(i) >= splits.validation.begin);
      CHECK(before(i) < splits.validation.end);
      CHECK(next(i, env.obs_dim() - 1) == 1.0f);  // long after action 2
      if (done) {
        CHECK(after(i) == expected_start(i, episode));
        CHECK(steps(i) == 0);
        CHECK(obs(i, env.obs_dim() - 1) == 0.0f);  // flat at the episode start
      } else {
        CHECK(after(i) == before(i) + 1);
        CHECK(steps(i) == step % 5);
        for (int j = 0; j < env.obs_dim(); ++j) CHECK(obs(i, j) == next(i, j));
      }
    }
    if (done) ++episode;
  }
}

TEST_CASE("market splits by fraction and by timestamp do not overlap", "[market_env]") {
  const auto s = foxrl::split_by_fraction(1000, 0.7, 0.15);
  CHECK(s.train.begin == 0);
  CHECK(s.train.end == 700);
  CHECK(s.validation.begin == 700);
  CHECK(s.validation.end == 850);
  CHECK(s.test.begin == 850);
  CHECK(s.test.end == 1000);
  CHECK_THROWS_AS(foxrl::split_by_fraction(1000, 0.9, 0.2), foxrl::UsageError);

  foxrl::RegimeMarketConfig rc;
  rc.bars = 100;
  rc.bar_seconds = 60;
  const auto series = foxrl::generate_regime_market(rc, 1);
  const auto t = foxrl::split_by_timestamp(series, series.timestamp[30] - 1, series.timestamp[80]);
  CHECK(t.train.end == 30);
  CHECK(t.validation.begin == 30);
  CHECK(t.validation.end == 80);
  CHECK(t.test.begin == 80);
  CHECK(t.test.end == 100);

  using Exec = Kokkos::DefaultHostExecutionSpace;
  foxrl::ExecutionContext<Exec> context;
  foxrl::MarketFeatures<Exec> market(context.space(), series, 64);
  foxrl::MarketEnvConfig config;
  config.episode_length = 30;
  // The train split [0, 30) cannot hold 30 decisions after a 64-bar lookback.
  CHECK_THROWS_WITH((foxrl::MarketEnv<Exec>(context.space(), market, t.train, 4, 1, config)),
                    Catch::Contains("too short"));
}

TEST_CASE("synthetic markets are valid, seeded and named", "[market_env][market_data]") {
  for (const auto& name : foxrl::synthetic_market_names()) {
    const auto a = foxrl::make_synthetic_market(name, 5000, 9);
    const auto b = foxrl::make_synthetic_market(name, 5000, 9);
    const auto c = foxrl::make_synthetic_market(name, 5000, 10);
    INFO(name);
    CHECK(a.close == b.close);
    CHECK(a.close != c.close);
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!(a.high[i] >= std::max(a.open[i], a.close[i]) && a.low[i] <= std::min(a.open[i], a.close[i]) &&
            a.low[i] > 0 && a.volume[i] >= 0 && (i == 0 || a.timestamp[i] > a.timestamp[i - 1]))) {
        FAIL("invalid bar " << i);
      }
    }
  }
  // The benchmark generator's returns follow r[i] = 0.01 z + 0.002 sin(2 pi i / 10000):
  // the residual after removing the sine has standard deviation ~0.01.
  const auto m = foxrl::generate_benchmark_market(20000, 0);
  const auto r = foxrl::host_log_returns(m);
  double s1 = 0, s2 = 0;
  for (std::size_t i = 0; i < r.size(); ++i) {
    const double z = (r[i] - 0.002 * std::sin(2 * M_PI * static_cast<double>(i) / 10000.0)) / 0.01;
    s1 += z;
    s2 += z * z;
  }
  const double mean = s1 / r.size(), var = s2 / r.size() - mean * mean;
  CHECK(std::fabs(mean) < 5.0 / std::sqrt(20000.0));
  CHECK(std::fabs(var - 1.0) < 5.0 * std::sqrt(2.0 / 20000.0));
  CHECK_THROWS_AS(foxrl::make_synthetic_market("nope", 10, 0), foxrl::UsageError);
}
