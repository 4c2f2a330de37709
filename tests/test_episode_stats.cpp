// EpisodeStats against a host model: per-env running returns, finished
// episodes entering the ring in env order, the count, and the last-100 mean,
// for a few envs, a thousand, 2,048 (the most one team records), and beyond
// (the record across teams: 2,049, 4,096 and 65,539), with a step where
// every env ends (far more episodes than the ring holds) and steps where a
// few do (fewer than it holds).
#include "core/execution_context.hpp"
#include "envs/episode_stats.hpp"

#include "support/env_test_util.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <vector>

TEMPLATE_TEST_CASE("EpisodeStats matches a host model of running returns and the finished ring", "[episode_stats]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using foxrl::test::to_device;
  using foxrl::test::to_host;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  constexpr int window = foxrl::EpisodeStats<Exec>::window;
  for (const int n : {7, 1000, 2048, 2049, 4096, 65539}) {
    INFO(n << " envs");
    foxrl::EpisodeStats<Exec> stats(space, n);
    std::vector<double> running(static_cast<std::size_t>(n), 0.0);
    std::vector<double> finished;  // every finished return, in order
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> reward(-1.0f, 2.0f);
    const int steps = n > 10000 ? 3 : 40;
    for (int t = 0; t < steps; ++t) {
      std::vector<float> r(static_cast<std::size_t>(n));
      std::vector<std::uint8_t> term(static_cast<std::size_t>(n)), trunc(static_cast<std::size_t>(n));
      // The last steps end a few episodes spread over the envs (fewer than
      // the ring holds: earlier steps' returns stay in the ring beside them).
      const bool rare = t >= steps - 4;
      for (int i = 0; i < n; ++i) {
        r[std::size_t(i)] = reward(rng);
        term[std::size_t(i)] = t == 1 || (rare ? rng() % 401 == 0 : rng() % 7 == 0);
        trunc[std::size_t(i)] = !term[std::size_t(i)] && !rare && rng() % 11 == 0;
      }
      stats.record(space, to_device(space, r), to_device(space, term), to_device(space, trunc));
      for (int i = 0; i < n; ++i) {
        running[std::size_t(i)] += r[std::size_t(i)];
        if (term[std::size_t(i)] || trunc[std::size_t(i)]) {
          finished.push_back(running[std::size_t(i)]);
          running[std::size_t(i)] = 0.0;
        }
      }
    }
    const auto summary = stats.summary(space);
    REQUIRE(summary.episodes == static_cast<std::int64_t>(finished.size()));
    const std::size_t kept = std::min<std::size_t>(finished.size(), window);
    REQUIRE(summary.last_returns.size() == kept);
    double mean = 0.0;
    for (std::size_t k = 0; k < kept; ++k) {
      const double expected = finished[finished.size() - kept + k];
      // float32 sums of at most 40 rewards in [-1, 2]: within 1e-5 relative.
      CHECK(summary.last_returns[k] == Approx(expected).epsilon(1e-5).margin(1e-5));
      mean += expected;
    }
    CHECK(summary.mean_last_100 == Approx(mean / double(kept)).epsilon(1e-5));
    const auto run = to_host(space, stats.running());
    for (int i = 0; i < n; i += 97) CHECK(run(i) == Approx(running[std::size_t(i)]).epsilon(1e-5).margin(1e-5));
  }
}
