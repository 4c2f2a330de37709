// Market features and the SignalAdapter: per-bar features against a float64
// host reference, the no-lookahead property, and the Welford/Chan normalizer
// against float64 host statistics.
#include "core/execution_context.hpp"
#include "kernels/market/features.hpp"
#include "market/market_data.hpp"
#include "market/market_env.hpp"
#include "market/signal_adapter.hpp"
#include "support/allclose.hpp"
#include "support/env_test_util.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace {

struct HostFeatures {
  std::vector<double> log_return, range, volume_z, volatility;
};

HostFeatures host_features(const foxrl::MarketSeries& s, int W) {
  HostFeatures h;
  h.log_return = foxrl::host_log_returns(s);
  const std::size_t L = s.size();
  for (std::size_t t = 0; t < L; ++t) {
    h.range.push_back(std::log(s.high[t] / s.low[t]));
    const std::size_t first = t + 1 >= static_cast<std::size_t>(W) ? t + 1 - W : 0;
    const double n = static_cast<double>(t - first + 1);
    double mr = 0, mv = 0;
    for (std::size_t k = first; k <= t; ++k) {
      mr += h.log_return[k];
      mv += std::log1p(s.volume[k]);
    }
    mr /= n;
    mv /= n;
    double qr = 0, qv = 0;
    for (std::size_t k = first; k <= t; ++k) {
      qr += (h.log_return[k] - mr) * (h.log_return[k] - mr);
      qv += (std::log1p(s.volume[k]) - mv) * (std::log1p(s.volume[k]) - mv);
    }
    h.volatility.push_back(std::sqrt(qr / n));
    const double sd = std::sqrt(qv / n);
    h.volume_z.push_back(sd > 1e-12 ? (std::log1p(s.volume[t]) - mv) / sd : 0.0);
  }
  return h;
}

// Observations of decision times [W, L) for one feature set, all envs flat
// except a varying position, as a host array [times, D].
template <class Exec>
std::vector<float> all_observations(const Exec& space, const foxrl::MarketSeries& s,
                                    const foxrl::ObservationSpec& spec) {
  foxrl::MarketFeatures<Exec> market(space, s, spec.rolling_window());
  const int L = market.size(), W = spec.window, D = spec.obs_dim();
  std::vector<std::int32_t> times, positions;
  for (int t = W; t < L; ++t) {
    times.push_back(t);
    positions.push_back(t % 3 - 1);
  }
  const auto d_times = foxrl::test::to_device(space, times);
  const auto d_pos = foxrl::test::to_device(space, positions);
  Kokkos::View<float**, Kokkos::LayoutRight, typename Exec::memory_space> obs(
      Kokkos::view_alloc(space, "foxrl::test::obs"), times.size(), D);
  foxrl::kernels::build_observations(space, market.features(), spec, d_times, d_pos, obs);
  const auto h = foxrl::test::to_host(space, obs);
  return std::vector<float>(h.data(), h.data() + h.size());
}

}  // namespace

TEMPLATE_TEST_CASE("bar features match a float64 host reference", "[features]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  foxrl::RegimeMarketConfig config;
  config.bars = 400;
  const auto series = foxrl::generate_regime_market(config, 11);
  const int W = 20;
  foxrl::MarketFeatures<Exec> market(space, series, W);
  const auto ref = host_features(series, W);
  const auto f = market.features();
  const auto lr = foxrl::test::to_host(space, f.log_return);
  const auto range = foxrl::test::to_host(space, f.range);
  const auto vz = foxrl::test::to_host(space, f.volume_z);
  const auto vol = foxrl::test::to_host(space, f.volatility);
  // Computed in float64 on the device and rounded once to float32.
  CHECK(foxrl::test::allclose(lr, ref.log_return, 1e-7, 1e-12));
  CHECK(foxrl::test::allclose(range, ref.range, 1e-7, 1e-12));
  // Built from the float32 returns: their rounding (6e-8 relative) carries over.
  CHECK(foxrl::test::allclose(vol, ref.volatility, 1e-6, 1e-12));
  CHECK(foxrl::test::allclose(vz, ref.volume_z, 1e-6, 1e-6));
}

TEMPLATE_TEST_CASE("observations never read bars at or after the decision time", "[features][lookahead]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  foxrl::RegimeMarketConfig config;
  config.bars = 160;
  const auto base = foxrl::generate_regime_market(config, 5);
  for (const auto set : {foxrl::FeatureSet::returns, foxrl::FeatureSet::ohlcv}) {
    foxrl::ObservationSpec spec;
    spec.set = set;
    spec.window = 16;
    spec.stats_window = 10;
    const int W = spec.window, D = spec.obs_dim(), L = static_cast<int>(base.size());
    const auto reference = all_observations(space, base, spec);
    std::mt19937_64 rng(99);
    std::uniform_real_distribution<double> factor(0.5, 2.0);
    for (int t = W + 1; t < L; t += 7) {
      // The env decides at bar t knowing bars <= t-1: scramble every bar >= t
      // (prices and volume, keeping each bar valid).
      auto future = base;
      for (int b = t; b < L; ++b) {
        const double k = factor(rng);
        future.open[static_cast<std::size_t>(b)] *= k * factor(rng);
        future.close[static_cast<std::size_t>(b)] *= k;
        const double hi = std::max(future.open[static_cast<std::size_t>(b)], future.close[static_cast<std::size_t>(b)]);
        const double lo = std::min(future.open[static_cast<std::size_t>(b)], future.close[static_cast<std::size_t>(b)]);
        future.high[static_cast<std::size_t>(b)] = hi * factor(rng) * 1.5;
        future.low[static_cast<std::size_t>(b)] = lo / (factor(rng) * 1.5);
        future.volume[static_cast<std::size_t>(b)] *= factor(rng) * 3;
      }
      const auto perturbed = all_observations(space, future, spec);
      // Row r holds decision time W + r; rows up to decision time t must match bit for bit.
      bool same_up_to_t = true;
      for (int time = W; time <= t; ++time) {
        for (int j = 0; j < D; ++j) {
          const std::size_t idx = static_cast<std::size_t>(time - W) * D + j;
          if (reference[idx] != perturbed[idx]) same_up_to_t = false;
        }
      }
      INFO("feature set " << foxrl::feature_set_name(set) << ", future bars from " << t);
      CHECK(same_up_to_t);
      // Control: the observation at t+1 sees bar t, so it must change (the test can fail).
      bool next_changed = false;
      for (int j = 0; j < D; ++j) {
        const std::size_t idx = static_cast<std::size_t>(t + 1 - W) * D + j;
        if (t + 1 < L && reference[idx] != perturbed[idx]) next_changed = true;
      }
      if (t + 1 < L) CHECK(next_changed);
    }
  }
}

TEMPLATE_TEST_CASE("market env observations are unaffected by future bars", "[features][lookahead]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  foxrl::RegimeMarketConfig config;
  config.bars = 200;
  const auto base = foxrl::generate_regime_market(config, 8);
  foxrl::MarketEnvConfig ec;
  ec.observation = {foxrl::FeatureSet::ohlcv, 12, 12};
  ec.episode_length = 100;
  const int t0 = 50, steps = 30;  // decisions at bars 50..79; the last next_obs is at bar 80
  auto run = [&](const foxrl::MarketSeries& s) {
    foxrl::MarketFeatures<Exec> market(space, s, 12);
    foxrl::MarketEnv<Exec> env(space, market, {0, market.size()}, 1, 4, ec);
    env.set_start(space, 0, t0);
    std::vector<float> seen;
    Kokkos::View<std::int32_t*, typename Exec::memory_space> action(Kokkos::view_alloc(space, "foxrl::test::a"), 1);
    for (int k = 0; k < steps; ++k) {
      auto o = foxrl::test::to_host(space, env.observations());
      seen.insert(seen.end(), o.data(), o.data() + o.size());
      Kokkos::deep_copy(space, action, k % 3);
      env.step(space, action);
      auto n = foxrl::test::to_host(space, env.step_result().next_observations);
      seen.insert(seen.end(), n.data(), n.data() + n.size());
    }
    return seen;
  };
  const auto reference = run(base);
  auto future = base;
  for (std::size_t b = t0 + steps; b < future.size(); ++b) {
    future.open[b] *= 1.3;
    future.high[b] *= 1.6;
    future.close[b] *= 1.2;
    future.low[b] *= 0.9;
    future.volume[b] *= 5;
  }
  CHECK(run(future) == reference);
  auto present = base;
  present.close[t0 + steps - 1] *= 1.1;  // bar 79: the last next_obs sees it
  present.high[t0 + steps - 1] *= 1.1;
  CHECK(run(present) != reference);
}

TEMPLATE_TEST_CASE("SignalAdapter running statistics match float64 host mean and variance", "[signal_adapter]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const int D = 5;
  foxrl::SignalAdapterConfig config;
  config.clip = 3.0f;
  std::vector<std::uint8_t> mask = {1, 1, 1, 1, 0};
  foxrl::SignalAdapter<Exec> adapter(space, D, config, mask);
  std::mt19937_64 rng(1);
  std::normal_distribution<float> z(0.0f, 1.0f);
  const double offsets[D] = {0.0, 1000.0, -3.0, 0.5, 7.0};
  const double scales[D] = {1.0, 0.01, 5.0, 1e-3, 2.0};
  std::vector<std::vector<double>> all(D);
  std::vector<float> last_batch;
  int last_n = 0;
  // 1 and 7 rows: one chunk; 300 .. 5000: many chunks, 5000 past the
  // adapter's chunk limit (chunks then grow beyond the minimum size).
  for (int batch : {1, 7, 300, 64, 1000, 5000}) {
    std::vector<float> x(static_cast<std::size_t>(batch) * D);
    for (int i = 0; i < batch; ++i) {
      for (int d = 0; d < D; ++d) {
        const float v = static_cast<float>(offsets[d] + scales[d] * z(rng));
        x[static_cast<std::size_t>(i) * D + d] = v;
        all[static_cast<std::size_t>(d)].push_back(v);
      }
    }
    Kokkos::View<float**, Kokkos::LayoutRight, typename Exec::memory_space> raw(
        Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::test::raw"), batch, D);
    Kokkos::deep_copy(
        space, raw,
        Kokkos::View<const float**, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
            x.data(), batch, D));
    Kokkos::View<float**, Kokkos::LayoutRight, typename Exec::memory_space> out(
        Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::test::out"), batch, D);
    adapter.process(space, raw, out);
    const auto h_out = foxrl::test::to_host(space, out);
    last_batch = std::vector<float>(h_out.data(), h_out.data() + h_out.size());
    last_n = batch;

    const auto state = adapter.export_state(space);
    for (int d = 0; d < D; ++d) {
      const auto& v = all[static_cast<std::size_t>(d)];
      double mean = 0;
      for (double a : v) mean += a;
      mean /= static_cast<double>(v.size());
      double var = 0;
      for (double a : v) var += (a - mean) * (a - mean);
      var /= static_cast<double>(v.size());
      INFO("feature " << d << " after " << v.size() << " rows");
      CHECK(state.count[static_cast<std::size_t>(d)] == static_cast<double>(v.size()));
      // Both sides are float64 over the same float inputs: only summation order differs.
      CHECK(std::fabs(state.mean[static_cast<std::size_t>(d)] - mean) <= 1e-12 * (std::fabs(mean) + scales[d]));
      CHECK(std::fabs(state.m2[static_cast<std::size_t>(d)] / v.size() - var) <= 1e-9 * var);
      // The normalized output of this batch, against the host formula.
      for (int i = 0; i < batch; ++i) {
        const float xv = x[static_cast<std::size_t>(i) * D + d];
        double expect = mask[static_cast<std::size_t>(d)] ? (xv - mean) / std::sqrt(var + config.epsilon) : xv;
        if (mask[static_cast<std::size_t>(d)]) expect = std::max(-3.0, std::min(3.0, expect));
        CHECK(std::fabs(h_out(i, d) - expect) <= 1e-5 * std::max(1.0, std::fabs(expect)));
      }
    }
  }
  CHECK(last_n == 5000);

  // Frozen: statistics stay; export/import gives a second adapter the same output.
  const auto before = adapter.export_state(space);
  adapter.set_frozen(true);
  Kokkos::View<float**, Kokkos::LayoutRight, typename Exec::memory_space> probe(
      Kokkos::view_alloc(space, "foxrl::test::probe"), 3, D);
  Kokkos::deep_copy(space, probe, 1234.5f);
  adapter.update(space, probe);
  const auto after = adapter.export_state(space);
  CHECK(after.count == before.count);
  CHECK(after.mean == before.mean);
  CHECK(after.m2 == before.m2);

  foxrl::SignalAdapter<Exec> restored(space, D, config, mask);
  restored.import_state(space, before);
  restored.set_frozen(true);
  Kokkos::View<float**, Kokkos::LayoutRight, typename Exec::memory_space> a(Kokkos::view_alloc(space, "foxrl::test::a"),
                                                                            3, D),
      b(Kokkos::view_alloc(space, "foxrl::test::b"), 3, D);
  adapter.process(space, probe, a);
  restored.process(space, probe, b);
  const auto ha = foxrl::test::to_host(space, a);
  const auto hb = foxrl::test::to_host(space, b);
  CHECK(foxrl::test::allclose(ha, hb, 0.0, 0.0));
  CHECK(ha(0, 1) == 3.0f);     // 1234.5 is far above feature 1's mean of ~1000 in units of 0.01: clipped
  CHECK(ha(0, 4) == 1234.5f);  // masked: passed through

  foxrl::NormalizerState wrong = before;
  wrong.mean.pop_back();
  CHECK_THROWS_AS(restored.import_state(space, wrong), foxrl::UsageError);
}

namespace {
float raw_first_value(const std::vector<float>& x) { return x[0]; }
}  // namespace

TEMPLATE_TEST_CASE("SignalAdapter statistics with more features than a team has threads", "[signal_adapter]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const int D = 300, n = 777;
  foxrl::SignalAdapter<Exec> adapter(space, D);
  std::mt19937_64 rng(7);
  std::normal_distribution<float> z(0.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(n) * D);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(0.1 * (i % D) + z(rng));
  Kokkos::View<float**, Kokkos::LayoutRight, typename Exec::memory_space> raw(
      Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::test::raw"), n, D);
  Kokkos::deep_copy(
      space, raw,
      Kokkos::View<const float**, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
          x.data(), n, D));
  adapter.update(space, raw);
  const auto state = adapter.export_state(space);
  for (int d = 0; d < D; ++d) {
    double mean = 0.0, m2 = 0.0;
    for (int i = 0; i < n; ++i) mean += x[static_cast<std::size_t>(i) * D + d];
    mean /= n;
    for (int i = 0; i < n; ++i) {
      const double e = x[static_cast<std::size_t>(i) * D + d] - mean;
      m2 += e * e;
    }
    INFO("feature " << d);
    CHECK(state.count[static_cast<std::size_t>(d)] == n);
    CHECK(std::fabs(state.mean[static_cast<std::size_t>(d)] - mean) <= 1e-12 * (std::fabs(mean) + 1.0));
    CHECK(std::fabs(state.m2[static_cast<std::size_t>(d)] - m2) <= 1e-9 * m2);
  }

  // normalize_in_place over two blocks of rows gives normalize's values.
  using obs = Kokkos::View<float**, Kokkos::LayoutRight, typename Exec::memory_space>;
  const int n1 = 100, n2 = 677;
  obs separate(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::test::separate"), n, D);
  adapter.normalize(space, raw, separate);
  obs first(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::test::first"), n1, D);
  obs second(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::test::second"), n2, D);
  Kokkos::deep_copy(space, first, Kokkos::subview(raw, std::make_pair(0, n1), Kokkos::ALL));
  Kokkos::deep_copy(space, second, Kokkos::subview(raw, std::make_pair(n1, n), Kokkos::ALL));
  adapter.normalize_in_place(space, first, second);
  const auto h_sep = foxrl::test::to_host(space, separate);
  const auto h_first = foxrl::test::to_host(space, first);
  const auto h_second = foxrl::test::to_host(space, second);
  int mismatches = 0;
  for (int i = 0; i < n; ++i)
    for (int d = 0; d < D; ++d) {
      const float got = i < n1 ? h_first(i, d) : h_second(i - n1, d);
      if (got != h_sep(i, d)) ++mismatches;
    }
  CHECK(mismatches == 0);
  CHECK(h_sep(0, 0) != raw_first_value(x));  // the values were normalized, not copied
}
