// One-stream rule for the acting half: env steps, the signal adapter and
// action selection run every kernel, allocation and fence on the run's
// instance with foxrl:: labels.
#include "collect/action_selector.hpp"
#include "core/execution_context.hpp"
#include "core/kokkos_tools_audit.hpp"
#include "envs/cartpole_env.hpp"
#include "market/market_data.hpp"
#include "market/market_env.hpp"
#include "market/signal_adapter.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <optional>

#include <string>

namespace {

void require_clean(const foxrl::AuditRecord& record, std::uint32_t device_id) {
  const auto violations = record.violations(device_id);
  INFO("violations: " << violations.size() << (violations.empty() ? "" : ", first: " + violations.front()));
  CHECK(violations.empty());
}

}  // namespace

TEMPLATE_TEST_CASE("acting half stays on the run's instance", "[audit][envs]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context(3);
  const auto& space = context.space();
  const auto id = foxrl::tools_device_id(space);
  const auto series = foxrl::generate_benchmark_market(2000, 1);

  // Everything is created inside the audited region (so its labels are
  // checked) but destroyed after it: Kokkos 4 fences globally when it frees
  // host memory, which a run never does inside an iteration.
  const int n = 64;
  using Matrix = Kokkos::View<float**, Kokkos::LayoutRight, Mem>;
  std::optional<foxrl::CartPoleEnv<Exec>> cartpole;
  std::optional<foxrl::SignalAdapter<Exec>> adapter, market_adapter;
  std::optional<foxrl::ActionSelector<Exec>> selector, market_selector;
  std::optional<foxrl::MarketFeatures<Exec>> market;
  std::optional<foxrl::MarketEnv<Exec>> env;
  Matrix normalized, q, market_norm, market_q;
  Kokkos::View<std::int32_t*, Mem> actions;
  // Loading market data stages it through host buffers: setup, not iteration.
  market.emplace(space, series, 64);
  context.fence("test::market_loaded");
  const auto record = foxrl::audit([&] {
    // CartPole: adapter -> selector -> env step.
    cartpole.emplace(space, n, context.seed());
    adapter.emplace(space, cartpole->obs_dim());
    selector.emplace(cartpole->num_actions(), context.seed());
    normalized = Matrix(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::test::normalized"), n,
                        cartpole->obs_dim());
    q = Matrix(Kokkos::view_alloc(space, "foxrl::test::q"), n, cartpole->num_actions());
    actions = Kokkos::View<std::int32_t*, Mem>(Kokkos::view_alloc(space, "foxrl::test::actions"), n);
    for (int it = 0; it < 3; ++it) {
      adapter->process(space, cartpole->observations(), normalized);
      selector->select(space, q, std::int64_t{it} * n, actions);
      cartpole->step(space, actions);
    }
    // Market: env step with the 65-float observation.
    foxrl::MarketEnvConfig config;
    config.episode_length = 50;
    env.emplace(space, *market, foxrl::MarketSplit{0, market->size()}, n, context.seed(), config);
    market_adapter.emplace(space, env->obs_dim());
    market_norm =
        Matrix(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::test::market_norm"), n, env->obs_dim());
    market_q = Matrix(Kokkos::view_alloc(space, "foxrl::test::market_q"), n, env->num_actions());
    market_selector.emplace(env->num_actions(), context.seed());
    for (int it = 0; it < 3; ++it) {
      market_adapter->process(space, env->observations(), market_norm);
      market_selector->select(space, market_q, std::int64_t{it} * n, actions);
      env->step(space, actions);
    }
    context.fence("test::acting_done");
  });
  require_clean(record, id);
  CHECK(record.launches.size() >= 12);
}

TEMPLATE_TEST_CASE("an env step is one launch (CartPole) or two (market)", "[audit][envs]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const int n = 32;
  foxrl::CartPoleEnv<Exec> cartpole(space, n, 1);
  foxrl::MarketFeatures<Exec> market(space, foxrl::generate_benchmark_market(500, 1), 64);
  foxrl::MarketEnvConfig config;
  config.episode_length = 100;
  foxrl::MarketEnv<Exec> env(space, market, {0, market.size()}, n, 1, config);
  Kokkos::View<std::int32_t*, Mem> actions(Kokkos::view_alloc(space, "foxrl::test::actions"), n);
  context.fence("test::setup");
  const auto c = foxrl::audit([&] { cartpole.step(space, actions); });
  const auto m = foxrl::audit([&] { env.step(space, actions); });
  require_clean(c, foxrl::tools_device_id(space));
  require_clean(m, foxrl::tools_device_id(space));
  CHECK(c.launches.size() == 1);
  CHECK(m.launches.size() == 2);
  CHECK(c.allocations.empty());
  CHECK(m.allocations.empty());
  CHECK(c.fences.empty());
  CHECK(m.fences.empty());
}
