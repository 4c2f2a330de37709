// Counter-based RNG and ActionSelector: device draws equal host evaluations
// bit for bit (so a seed gives the same actions on every backend), the
// epsilon schedules follow their formulas, greedy mode is the argmax.
#include "collect/action_selector.hpp"
#include "core/execution_context.hpp"
#include "kernels/core/counter_rng.hpp"
#include "support/env_test_util.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

TEMPLATE_TEST_CASE("counter RNG: device draws equal host draws bit for bit", "[rng]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const int streams = 64, counters = 256, n = streams * counters;
  const std::uint64_t seed = 0xDEADBEEFULL;
  Kokkos::View<float*, typename Exec::memory_space> u(Kokkos::view_alloc(space, "foxrl::test::u"), n);
  Kokkos::View<std::uint32_t*, typename Exec::memory_space> k(Kokkos::view_alloc(space, "foxrl::test::k"), n);
  Kokkos::View<std::uint64_t*, typename Exec::memory_space> bits(Kokkos::view_alloc(space, "foxrl::test::bits"), n);
  Kokkos::parallel_for(
      "foxrl::test::draw", Kokkos::RangePolicy<Exec>(space, 0, n), KOKKOS_LAMBDA(int i) {
        const auto s = static_cast<std::uint64_t>(i / counters), c = static_cast<std::uint64_t>(i % counters);
        u(i) = foxrl::kernels::counter_uniform(seed, s, c);
        k(i) = foxrl::kernels::counter_index(seed, s, c, 7);
        bits(i) = foxrl::kernels::counter_bits(seed, s, c);
      });
  const auto hu = foxrl::test::to_host(space, u);
  const auto hk = foxrl::test::to_host(space, k);
  const auto hb = foxrl::test::to_host(space, bits);
  double sum = 0;
  std::vector<int> histogram(7, 0);
  for (int i = 0; i < n; ++i) {
    const auto s = static_cast<std::uint64_t>(i / counters), c = static_cast<std::uint64_t>(i % counters);
    REQUIRE(hb(i) == foxrl::kernels::counter_bits(seed, s, c));
    REQUIRE(hu(i) == foxrl::kernels::counter_uniform(seed, s, c));
    REQUIRE(hk(i) == foxrl::kernels::counter_index(seed, s, c, 7));
    REQUIRE(hu(i) >= 0.0f);
    REQUIRE(hu(i) < 1.0f);
    sum += hu(i);
    ++histogram[hk(i)];
  }
  // Uniformity, loosely (5 sigma): mean 1/2 with sd sqrt(1/12/n); chi-square of 7 bins.
  CHECK(std::fabs(sum / n - 0.5) < 5.0 * std::sqrt(1.0 / 12.0 / n));
  double chi2 = 0;
  for (int h : histogram) chi2 += (h - n / 7.0) * (h - n / 7.0) / (n / 7.0);
  CHECK(chi2 < 30.0);  // 6 degrees of freedom: P(chi2 > 30) < 1e-4
}

TEST_CASE("epsilon schedules follow their formulas", "[action_selector]") {
  foxrl::EpsilonSchedule lin;  // BENCHMARKS.md cartpole-learn: 1.0 -> 0.05 over 250,000 env steps
  lin.decay_env_steps = 250000;
  CHECK(lin(0) == 1.0);
  CHECK(lin(125000) == Approx(0.525).epsilon(1e-12));
  CHECK(lin(250000) == Approx(0.05).epsilon(1e-12));
  CHECK(lin(1000000) == 0.05);
  CHECK(lin(8 * 1250) == Approx(1.0 - 0.95 * 10000.0 / 250000.0).epsilon(1e-12));
  foxrl::EpsilonSchedule ex;
  ex.kind = foxrl::EpsilonSchedule::Kind::exponential;
  ex.decay_env_steps = 1000;
  CHECK(ex(0) == Approx(1.0).epsilon(1e-12));
  CHECK(ex(1000) == Approx(0.05 + 0.95 / M_E).epsilon(1e-12));
  CHECK(ex(100000) == Approx(0.05).epsilon(1e-9));
  foxrl::ActionSelector<Kokkos::DefaultHostExecutionSpace> selector(3, 1, lin);
  CHECK(selector.epsilon(125000) == Approx(0.525).epsilon(1e-12));
  selector.set_greedy(true);
  CHECK(selector.epsilon(0) == 0.0);
}

TEMPLATE_TEST_CASE("ActionSelector: same seed, same actions as a host evaluation", "[action_selector][rng]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const int n = 2000, A = 3;
  std::mt19937 rng(5);
  std::normal_distribution<float> z;
  std::vector<float> q(static_cast<std::size_t>(n) * A);
  for (auto& v : q) v = z(rng);
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> d_q(Kokkos::view_alloc(space, "foxrl::test::q"), n, A);
  Kokkos::deep_copy(
      space, d_q,
      Kokkos::View<const float**, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
          q.data(), n, A));
  std::vector<std::int32_t> argmax(n);
  for (int i = 0; i < n; ++i) {
    int best = 0;
    for (int a = 1; a < A; ++a) {
      if (q[static_cast<std::size_t>(i) * A + a] > q[static_cast<std::size_t>(i) * A + best]) best = a;
    }
    argmax[static_cast<std::size_t>(i)] = best;
  }
  foxrl::EpsilonSchedule schedule;
  schedule.decay_env_steps = 100000;
  const std::uint64_t seed = 2024;
  foxrl::ActionSelector<Exec> selector(A, seed, schedule);
  Kokkos::View<std::int32_t*, Mem> actions(Kokkos::view_alloc(space, "foxrl::test::actions"), n);
  Kokkos::View<std::int64_t, Mem> device_step(Kokkos::view_alloc(space, "foxrl::test::step"));
  const auto d_greedy = foxrl::test::to_device(space, argmax);
  const std::uint64_t explore_seed = foxrl::kernels::derive_seed(seed, foxrl::kernels::rng_tag::explore);
  CHECK(selector.explore_seed() == explore_seed);

  for (std::int64_t step :
       {std::int64_t{0}, std::int64_t{8000}, std::int64_t{50000}, std::int64_t{90000}, std::int64_t{500000}}) {
    const float eps = static_cast<float>(schedule(step));
    selector.select(space, d_q, step, actions);
    const auto a1 = foxrl::test::to_host(space, actions);
    Kokkos::deep_copy(space, device_step, step);
    selector.select(space, d_q, device_step, actions);
    const auto a2 = foxrl::test::to_host(space, actions);
    selector.select_from_greedy(space, d_greedy, step, actions);
    const auto a3 = foxrl::test::to_host(space, actions);
    int explored = 0;
    for (int i = 0; i < n; ++i) {
      const auto expect =
          foxrl::kernels::epsilon_greedy_action(explore_seed, i, step, eps, argmax[static_cast<std::size_t>(i)], A);
      INFO("env " << i << " step " << step);
      REQUIRE(a1(i) == expect);
      REQUIRE(a2(i) == expect);
      REQUIRE(a3(i) == expect);
      explored += foxrl::kernels::counter_uniform(explore_seed, static_cast<std::uint64_t>(i),
                                                  2 * static_cast<std::uint64_t>(step)) < eps;
    }
    // The share of exploring envs is Binomial(n, eps): within 5 sigma.
    CHECK(std::fabs(explored - n * eps) <= 5.0 * std::sqrt(n * eps * (1 - eps)) + 1);
  }
  // Greedy mode: the argmax, whatever the step.
  selector.set_greedy(true);
  selector.select(space, d_q, 0, actions);
  const auto g = foxrl::test::to_host(space, actions);
  for (int i = 0; i < n; ++i) REQUIRE(g(i) == argmax[static_cast<std::size_t>(i)]);
  selector.select(space, d_q, device_step, actions);
  const auto g2 = foxrl::test::to_host(space, actions);
  for (int i = 0; i < n; ++i) REQUIRE(g2(i) == argmax[static_cast<std::size_t>(i)]);
  // A shape mismatch is the calling program's error.
  Kokkos::View<std::int32_t*, Mem> short_actions(Kokkos::view_alloc(space, "foxrl::test::short"), n - 1);
  CHECK_THROWS_AS(selector.select(space, d_q, 0, short_actions), foxrl::LogicError);
}
