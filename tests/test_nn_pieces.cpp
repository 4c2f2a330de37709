// The reusable learning pieces on their own: AdamOptimizer (with a fused
// Polyak target) against a float64 host Adam, two parameter sets and an
// optimizer state in one checkpoint file, and DqnLearner's gradient hook
// between compute_gradients and apply_gradients.
#include "agents/dqn/dqn_learner.hpp"
#include "core/execution_context.hpp"
#include "io/safetensors.hpp"
#include "kernels/nn/weight_init.hpp"
#include "nn/adam_optimizer.hpp"
#include "nn/parameter_file.hpp"
#include "nn/target_network.hpp"
#include "nn/training_guard.hpp"
#include "support/reference_dqn.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// Largest |a - b| relative to |b| (a float multiply may contract
/// differently on a device; an Adam step of ~lr = 1e-2 would be 1e4 times
/// over the bound the callers use).
double worst_relative(const std::vector<float>& a, const std::vector<double>& b) {
  double w = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) w = std::max(w, std::abs(a[i] - b[i]) / std::max(std::abs(b[i]), 1e-3));
  return w;
}

}  // namespace

TEMPLATE_TEST_CASE("AdamOptimizer matches a float64 Adam, with the Polyak target fused", "[nn][adam]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const int P = 1000;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> p0(P), t0(P);
  for (auto& x : p0) x = u(rng);
  for (auto& x : t0) x = u(rng);
  for (const auto mode : {foxrl::WeightDecayMode::decoupled, foxrl::WeightDecayMode::l2}) {
    DYNAMIC_SECTION((mode == foxrl::WeightDecayMode::l2 ? "l2" : "decoupled")) {
      foxrl::AdamHyper hyper;
      hyper.lr = 1e-2f;
      hyper.weight_decay = 0.05f;
      hyper.weight_decay_mode = mode;
      hyper.max_grad_norm = 4.0f;
      foxrl::AdamOptimizer<Exec> adam(space, P, hyper, "foxrl::test::adam");
      const auto params = foxrl::test::to_device(space, p0);
      const auto target = foxrl::test::to_device(space, t0);
      Kokkos::View<float*, Mem> metrics("foxrl::test::metrics", foxrl::LearnerMetrics::count);
      const double tau = 0.25;
      std::vector<double> rp(p0.begin(), p0.end()), rt(t0.begin(), t0.end()), rm(P, 0.0), rv(P, 0.0);
      int clipped = 0;
      for (int t = 1; t <= 6; ++t) {
        std::vector<float> g(P);
        for (auto& x : g) x = 0.3f * u(rng);
        const auto grads = foxrl::test::to_device(space, g);
        adam.count_step(space);
        foxrl::kernels::gradient_sq_norm(space, grads, metrics);
        adam.apply(space, params, grads, metrics, {target, static_cast<float>(tau)});
        double norm = 0.0;
        for (const float x : g) norm += double(x) * x;
        norm = std::sqrt(norm);
        const double coef = std::min(1.0, hyper.max_grad_norm / (norm + 1e-6));
        clipped += coef < 1.0;
        for (int i = 0; i < P; ++i) {
          double gi = g[i] * coef;
          if (mode == foxrl::WeightDecayMode::l2)
            gi += double(hyper.weight_decay) * rp[i];
          else
            rp[i] *= 1.0 - double(hyper.lr) * hyper.weight_decay;
          rm[i] = 0.9 * rm[i] + 0.1 * gi;
          rv[i] = 0.999 * rv[i] + 0.001 * gi * gi;
          const double mhat = rm[i] / (1 - std::pow(0.9, t)), vhat = rv[i] / (1 - std::pow(0.999, t));
          rp[i] -= double(hyper.lr) * mhat / (std::sqrt(vhat) + double(hyper.eps));
          rt[i] = tau * rp[i] + (1 - tau) * rt[i];
        }
      }
      CHECK(clipped > 0);
      CHECK(foxrl::test::to_host(space, adam.step())() == 6);
      const auto ph = foxrl::test::flat_host(space, params), th = foxrl::test::flat_host(space, target);
      double worst_p = 0.0, worst_t = 0.0;
      for (int i = 0; i < P; ++i) {
        worst_p = std::max(worst_p, std::abs(ph[i] - rp[i]));
        worst_t = std::max(worst_t, std::abs(th[i] - rt[i]));
      }
      // 6 steps of size ~lr = 1e-2 in float32: parameter error ~1e-7 each.
      CHECK(worst_p < 2e-6);
      CHECK(worst_t < 2e-6);
    }
  }
  foxrl::AdamOptimizer<Exec> adam(space, 8, foxrl::AdamHyper(), "foxrl::test::small");
  Kokkos::View<float*, Mem> metrics("foxrl::test::metrics", foxrl::LearnerMetrics::count);
  const foxrl::FlatParams<Mem> wrong("foxrl::test::wrong", 9);
  CHECK_THROWS_AS(adam.apply(space, wrong, wrong, metrics), foxrl::LogicError);
}

TEMPLATE_TEST_CASE("two parameter sets and an optimizer state share one checkpoint file", "[nn][checkpoint]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const auto v_layout = foxrl::NetworkLayout::plain(5, {16}, 1);
  const auto pi_layout = foxrl::NetworkLayout::plain(5, {12, 8}, 4);
  foxrl::ParameterSet<Mem> v(space, v_layout, "foxrl::test::v"), pi(space, pi_layout, "foxrl::test::pi");
  foxrl::kernels::init_weights(space, v.flat, v_layout, 1, foxrl::InitScheme::torch_default);
  foxrl::kernels::init_weights(space, pi.flat, pi_layout, 2, foxrl::InitScheme::he_uniform);
  foxrl::AdamOptimizer<Exec> adam(space, v_layout.total, foxrl::AdamHyper(), "foxrl::test::v");
  foxrl::kernels::init_weights(space, adam.m(), v_layout, 3, foxrl::InitScheme::torch_default);
  foxrl::kernels::init_weights(space, adam.v(), v_layout, 4, foxrl::InitScheme::xavier_uniform);
  {
    // Second moments are >= 0 (the reader refuses others): their magnitudes.
    auto v_host = foxrl::test::flat_host(space, adam.v());
    for (auto& x : v_host) x = std::abs(x);
    Kokkos::deep_copy(space, adam.v(),
                      Kokkos::View<const float*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                          v_host.data(), v_host.size()));
    context.fence("test::abs_second_moments");
  }
  Kokkos::deep_copy(space, adam.step(), std::int64_t(9));

  const std::string path = "/tmp/foxrl_test_" + std::to_string(::getpid()) + "_sets.safetensors";
  {
    foxrl::ParameterFileWriter<Exec> w;
    w.add(space, "v", v);
    w.add(space, foxrl::AdamTensorNames::under("v"), v_layout, adam);
    w.add(space, "policy", pi);
    w.add_counter("updates", 17);
    w.metadata()["format"] = "foxrl.test";
    w.write(space, path);
  }
  const auto file = foxrl::safetensors::read(path);
  REQUIRE(file.find("v.trunk.0.weight") != nullptr);
  CHECK(file.find("v.trunk.0.weight")->shape == std::vector<std::int64_t>{16, 5});
  CHECK(file.find("v.head.bias")->shape == std::vector<std::int64_t>{1});
  CHECK(file.find("v.adam_m.head.weight")->shape == std::vector<std::int64_t>{1, 16});
  CHECK(file.find("v.adam.step") != nullptr);
  CHECK(file.find("policy.trunk.2.weight")->shape == std::vector<std::int64_t>{8, 12});
  CHECK(file.find("policy.head.weight")->shape == std::vector<std::int64_t>{4, 8});
  CHECK(file.metadata.at("format") == "foxrl.test");

  foxrl::ParameterSet<Mem> v2(space, v_layout, "foxrl::test::v2"), pi2(space, pi_layout, "foxrl::test::pi2");
  foxrl::AdamOptimizer<Exec> adam2(space, v_layout.total, foxrl::AdamHyper(), "foxrl::test::v2");
  {
    // A reader that leaves a set untaken changes nothing.
    foxrl::ParameterFileReader<Exec> r(path, "test");
    r.take("policy", pi2);
    r.take("v", v2);
    CHECK_THROWS_WITH(r.commit(space), Catch::Contains("unexpected tensor"));
    CHECK(foxrl::test::flat_host(space, v2.flat) == std::vector<float>(v_layout.total, 0.0f));
  }
  {
    // Sets are found by name, in any order.
    foxrl::ParameterFileReader<Exec> r(path, "test");
    r.take("policy", pi2);
    r.take(foxrl::AdamTensorNames::under("v"), v_layout, adam2);
    r.take("v", v2);
    CHECK(r.counter("updates") == 17);
    r.commit(space);
  }
  CHECK(same_bits(foxrl::test::flat_host(space, v2.flat), foxrl::test::flat_host(space, v.flat)));
  CHECK(same_bits(foxrl::test::flat_host(space, pi2.flat), foxrl::test::flat_host(space, pi.flat)));
  CHECK(same_bits(foxrl::test::flat_host(space, adam2.m()), foxrl::test::flat_host(space, adam.m())));
  CHECK(same_bits(foxrl::test::flat_host(space, adam2.v()), foxrl::test::flat_host(space, adam.v())));
  CHECK(foxrl::test::to_host(space, adam2.step())() == 9);
  // The wrong layout for a prefix names the tensor.
  foxrl::ParameterFileReader<Exec> r(path, "test");
  CHECK_THROWS_WITH(r.take("v", pi2), Catch::Contains("'v.trunk.0.weight'"));
  std::remove(path.c_str());
}

TEMPLATE_TEST_CASE("the gradient hook runs between compute_gradients and apply_gradients", "[learner][hook]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  for (const auto backend : {foxrl::DenseBackend::portable, foxrl::DenseBackend::blas}) {
    INFO("backend " << foxrl::to_string(backend));
    foxrl::DqnLearnerConfig cfg;
    cfg.obs_dim = 5;
    cfg.hidden = {7, 6};
    cfg.num_actions = 3;
    cfg.max_batch = 24;
    cfg.seed = 11;
    cfg.lr = 1e-2f;
    cfg.weight_decay = 0.1f;  // decoupled: the one change a zero gradient leaves
    cfg.dense_backend = backend;
    foxrl::DqnLearner<Exec> learner(space, cfg);
    const auto batch = foxrl::test::to_device(space, foxrl::test::random_batch(24, 5, 3, 4));
    const auto before = foxrl::test::flat_host(space, learner.online().flat);
    int calls = 0;
    double grad_sum = 0.0;
    learner.set_gradient_hook(
        [&](const Exec& s, const foxrl::FlatParams<Mem>& grads, const Kokkos::View<float*, Mem>& metrics) {
          ++calls;
          CHECK(grads.data() == learner.gradients().data());
          CHECK(metrics.data() == learner.metrics().data());
          // The gradients are there (computed), and the weights not yet changed.
          for (const float g : foxrl::test::flat_host(s, grads)) grad_sum += std::abs(g);
          CHECK(same_bits(foxrl::test::flat_host(s, learner.online().flat), before));
          Kokkos::deep_copy(s, grads, 0.0f);
        });
    learner.update(space, batch);
    CHECK(calls == 1);
    CHECK(grad_sum > 0.0);
    // A zero gradient: Adam's step is 0 / (0 + eps) = 0, so only the decay acts.
    const auto after = foxrl::test::flat_host(space, learner.online().flat);
    const double keep = 1.0 - double(cfg.lr) * cfg.weight_decay;
    std::vector<double> expected(before.begin(), before.end());
    for (auto& x : expected) x *= keep;
    CHECK(worst_relative(after, expected) < 1e-6);
    CHECK(foxrl::test::to_host(space, learner.metrics())(foxrl::LearnerMetrics::grad_norm) == 0.0f);

    // compute -> user code -> apply by hand is the same sequence.
    learner.set_gradient_hook({});
    const auto g = learner.compute_gradients(space, batch);
    REQUIRE(g);
    Kokkos::deep_copy(space, g.grads, 0.0f);
    learner.apply_gradients(space);
    for (auto& x : expected) x *= keep;
    CHECK(worst_relative(foxrl::test::flat_host(space, learner.online().flat), expected) < 1e-6);
    CHECK_THROWS_AS(learner.apply_gradients(space), foxrl::LogicError);
  }
}

TEMPLATE_TEST_CASE("a guard over any named buffers restores them all in the optimizer launch", "[nn][guard]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const auto layout = foxrl::NetworkLayout::plain(5, {12}, 1);
  foxrl::ParameterSet<Mem> v(space, layout, "foxrl::test::v");
  foxrl::kernels::init_weights(space, v.flat, layout, 8, foxrl::InitScheme::torch_default);
  foxrl::AdamOptimizer<Exec> adam(space, layout.total, foxrl::AdamHyper(), "foxrl::test::v");
  foxrl::kernels::init_weights(space, adam.m(), layout, 9, foxrl::InitScheme::torch_default);
  Kokkos::deep_copy(space, adam.step(), std::int64_t(3));
  foxrl::GuardConfig config;
  config.lr_decay = 0.25f;
  foxrl::TrainingGuard<Exec> guard(space, {{"v", v.flat}, {"v_m", adam.m()}, {"v_v", adam.v()}}, adam.step(), config);
  guard.snapshot(space, true);
  const auto saved_v = foxrl::test::flat_host(space, v.flat), saved_m = foxrl::test::flat_host(space, adam.m());
  REQUIRE(guard.snapshot_buffers().size() == 3);
  CHECK(guard.snapshot_buffers()[1].name == "v_m");
  CHECK(same_bits(foxrl::test::flat_host(space, guard.snapshot_buffers()[0].view), saved_v));

  // A NaN weight: the decision restores, the optimizer launch copies back.
  Kokkos::deep_copy(space, Kokkos::subview(v.flat, 0), std::nanf(""));
  Kokkos::deep_copy(space, adam.m(), 0.5f);
  Kokkos::deep_copy(space, adam.step(), std::int64_t(7));
  const auto grads = foxrl::alloc_flat(space, layout, "foxrl::test::grads");
  Kokkos::deep_copy(space, grads, 0.1f);
  Kokkos::View<float*, Mem> metrics("foxrl::test::metrics", foxrl::LearnerMetrics::count);
  Kokkos::View<float*, Mem> td("foxrl::test::td", 4);
  foxrl::kernels::gradient_sq_norm_then(space, grads, v.flat, guard.decision(metrics));
  adam.apply(space, v.flat, grads, metrics, {}, guard.step(td));
  CHECK(same_bits(foxrl::test::flat_host(space, v.flat), saved_v));
  CHECK(same_bits(foxrl::test::flat_host(space, adam.m()), saved_m));
  CHECK(foxrl::test::to_host(space, adam.step())() == 3);
  const auto c = guard.counters(space);
  CHECK(c.restores == 1);
  CHECK(c.lr_scale == 0.25);

  const foxrl::FlatParams<Mem> shorter("foxrl::test::shorter", layout.total - 1);
  CHECK_THROWS_AS(foxrl::TrainingGuard<Exec>(space, {{"v", v.flat}, {"x", shorter}}, adam.step(), config),
                  foxrl::LogicError);
}
