// DqnLearner against a float64 host reference: initialisation, forward,
// dueling identity, double-DQN targets, loss, gradients (central finite
// differences of the float64 loss), Adam, clipping, target updates, and the
// one-stream rule for a full update.
#include "agents/dqn/dqn_learner.hpp"
#include "core/execution_context.hpp"
#include "core/kernel_paths.hpp"
#include "core/kokkos_tools_audit.hpp"
#include "kernels/nn/adam.hpp"
#include "kernels/nn/weight_init.hpp"
#include "support/reference_dqn.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {

using foxrl::test::RefBatch;
using foxrl::test::RefNet;

foxrl::DqnLearnerConfig small_config(foxrl::DenseBackend backend = foxrl::DenseBackend::portable) {
  foxrl::DqnLearnerConfig c;
  c.obs_dim = 5;
  c.hidden = {7, 6};
  c.num_actions = 3;
  c.max_batch = 32;
  c.max_inference_batch = 40;
  c.seed = 1234;
  c.dense_backend = backend;
  return c;
}

using foxrl::test::flat_host;
using foxrl::test::to_device;

RefNet ref_net(const foxrl::NetworkLayout& layout, const std::vector<float>& p) {
  return RefNet{layout, std::vector<double>(p.begin(), p.end())};
}

bool is_padding(const foxrl::NetworkLayout& layout, std::size_t i) {
  for (int l = 0; l < layout.num_layers; ++l) {
    const auto& s = layout.layers[l];
    if (i >= s.weight_offset && i < s.weight_offset + s.weight_size()) return false;
    if (i >= s.bias_offset && i < s.bias_offset + std::size_t(s.out)) return false;
  }
  return true;
}

}  // namespace

TEMPLATE_TEST_CASE("weights come from the counter hash, bit for bit", "[learner][init]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  for (const auto scheme :
       {foxrl::InitScheme::torch_default, foxrl::InitScheme::he_uniform, foxrl::InitScheme::xavier_uniform}) {
    auto config = small_config();
    config.init = scheme;
    foxrl::DqnLearner<Exec> learner(context.space(), config);
    const auto& layout = learner.layout();
    const auto online = flat_host(context.space(), learner.weights().online);
    const auto target = flat_host(context.space(), learner.weights().target);
    const auto bounds = foxrl::kernels::init_bounds(layout, scheme);
    std::size_t mismatches = 0, out_of_range = 0;
    for (std::size_t i = 0; i < layout.total; ++i) {
      // Bit equality with the host evaluation of the same hash.
      const float expect = foxrl::kernels::init_value(layout, bounds, config.seed, i);
      if (std::memcmp(&expect, &online[i], sizeof(float)) != 0) ++mismatches;
      if (std::memcmp(&online[i], &target[i], sizeof(float)) != 0) ++mismatches;
      if (is_padding(layout, i) && online[i] != 0.0f) ++mismatches;
    }
    for (int l = 0; l < layout.num_layers; ++l) {
      const auto& s = layout.layers[l];
      const double bound = scheme == foxrl::InitScheme::torch_default ? 1.0 / std::sqrt(double(s.in))
                           : scheme == foxrl::InitScheme::he_uniform  ? std::sqrt(6.0 / s.in)
                                                                      : std::sqrt(6.0 / (s.in + s.out));
      for (std::size_t k = 0; k < s.weight_size(); ++k)
        if (std::abs(online[s.weight_offset + k]) > bound * (1 + 1e-6)) ++out_of_range;
    }
    CHECK(mismatches == 0);
    CHECK(out_of_range == 0);
  }
  // A different seed gives different weights.
  auto other = small_config();
  other.seed = 1235;
  foxrl::DqnLearner<Exec> a(context.space(), small_config()), b(context.space(), other);
  CHECK(flat_host(context.space(), a.weights().online) != flat_host(context.space(), b.weights().online));
}

#ifdef KOKKOS_ENABLE_CUDA
TEST_CASE("the same seed gives bit-identical weights on Cuda and Serial", "[learner][init][cuda]") {
  foxrl::ExecutionContext<Kokkos::Cuda> cuda;
  foxrl::ExecutionContext<Kokkos::Serial> serial;
  auto config = small_config();
  config.hidden = {300, 200};
  foxrl::DqnLearner<Kokkos::Cuda> on_cuda(cuda.space(), config);
  foxrl::DqnLearner<Kokkos::Serial> on_serial(serial.space(), config);
  const auto a = flat_host(cuda.space(), on_cuda.weights().online);
  const auto b = flat_host(serial.space(), on_serial.weights().online);
  REQUIRE(a.size() == b.size());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}
#endif

TEMPLATE_TEST_CASE("inference matches the float64 reference and the dueling identity holds", "[learner][forward]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  for (const auto backend : {foxrl::DenseBackend::portable, foxrl::DenseBackend::blas}) {
    foxrl::DqnLearner<Exec> learner(space, small_config(backend));
    const auto net = ref_net(learner.layout(), flat_host(space, learner.weights().online));
    const int R = 40;
    const auto batch = foxrl::test::random_batch(R, 5, 3, 7);
    auto states = foxrl::test::to_device(space, batch.states, R, 5);
    Kokkos::View<float**, Kokkos::LayoutRight, Mem> q("foxrl::test::q", R, 3);
    Kokkos::View<std::int32_t*, Mem> actions("foxrl::test::actions", R);
    learner.q_values(space, foxrl::ConstMatrix<Mem>(states), foxrl::MutableMatrix<Mem>(q));
    const auto head = foxrl::test::to_host(space, learner.online_head());
    learner.greedy_actions(space, foxrl::ConstMatrix<Mem>(states), actions);
    const auto qh = foxrl::test::to_host(space, q);
    const auto ah = foxrl::test::to_host(space, actions);
    double worst = 0.0, worst_identity = 0.0;
    int wrong_actions = 0, disagreeing_actions = 0;
    for (int i = 0; i < R; ++i) {
      const auto ref =
          net.q(std::vector<double>(batch.states.begin() + i * 5, batch.states.begin() + i * 5 + 5).data());
      double mean_q_minus_v = 0.0;
      for (int j = 0; j < 3; ++j) {
        worst = std::max(worst, std::abs(ref[j] - qh(i, j)));
        mean_q_minus_v += (double(qh(i, j)) - head(i, 0)) / 3.0;
      }
      worst_identity = std::max(worst_identity, std::abs(mean_q_minus_v));
      if (ah(i) != foxrl::test::ref_argmax(ref)) ++wrong_actions;
      // The greedy action (fused into the head kernel on the blas backend)
      // is the argmax of the very Q-values q_values returns, lowest index on ties.
      int first_best = 0;
      for (int j = 1; j < 3; ++j)
        if (qh(i, j) > qh(i, first_best)) first_best = j;
      if (ah(i) != first_best) ++disagreeing_actions;
    }
    INFO("backend " << foxrl::to_string(backend));
    CHECK(disagreeing_actions == 0);
    CHECK(worst < 1e-5);           // float32 forward of a 5-7-6-4 net vs float64
    CHECK(worst_identity < 1e-6);  // mean_a(Q - V) = mean_a(A - mean A) = 0 up to rounding
    CHECK(wrong_actions == 0);
  }
}

TEMPLATE_TEST_CASE("update: loss, targets and gradients match the float64 reference", "[learner][grad]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  for (const auto backend : {foxrl::DenseBackend::portable, foxrl::DenseBackend::blas}) {
    for (const auto kind : {foxrl::LossKind::huber, foxrl::LossKind::mse}) {
      auto config = small_config(backend);
      config.loss = kind;
      foxrl::DqnLearner<Exec> learner(space, config);
      const auto& layout = learner.layout();
      // Make target differ from online so double DQN's two networks matter.
      foxrl::kernels::init_weights(space, learner.weights().target, layout, 99, foxrl::InitScheme::torch_default);
      const auto online = flat_host(space, learner.weights().online);
      const auto target = flat_host(space, learner.weights().target);
      const int B = 24;
      const auto batch = foxrl::test::random_batch(B, 5, 3, 11);
      learner.update(space, to_device(space, batch));

      const auto net = ref_net(layout, online);
      const auto tnet = ref_net(layout, target);
      const auto ref = foxrl::test::ref_loss(net, tnet, batch, kind);
      const auto metrics = foxrl::test::to_host(space, learner.metrics());
      const auto td = foxrl::test::to_host(space, learner.td_errors());
      const auto grads = flat_host(space, learner.weights().grads);

      INFO("backend " << foxrl::to_string(backend) << ", loss " << (kind == foxrl::LossKind::huber ? "huber" : "mse"));
      int beyond_delta = 0;
      for (const double t : ref.abs_td) beyond_delta += t > 1.0;
      REQUIRE(beyond_delta > 0);  // both sides of the Huber delta are exercised
      REQUIRE(beyond_delta < B);
      CHECK(metrics(foxrl::LearnerMetrics::loss) == Approx(ref.loss).epsilon(1e-5));
      CHECK(metrics(foxrl::LearnerMetrics::mean_q) == Approx(ref.mean_q).epsilon(1e-5).margin(1e-6));
      CHECK(metrics(foxrl::LearnerMetrics::mean_abs_td) == Approx(ref.mean_abs_td).epsilon(1e-5));
      double worst_td = 0.0;
      for (int i = 0; i < B; ++i) worst_td = std::max(worst_td, std::abs(ref.abs_td[i] - td(i)));
      CHECK(worst_td < 1e-5);

      // Central differences of the float64 loss in every online parameter
      // (target parameters are constants of the loss).
      const double h = 1e-6;
      double worst = 0.0, scale = 0.0, norm_sq = 0.0;
      std::size_t padding_nonzero = 0;
      for (std::size_t k = 0; k < layout.total; ++k) {
        if (is_padding(layout, k)) {
          padding_nonzero += grads[k] != 0.0f;
          continue;
        }
        RefNet plus = net, minus = net;
        plus.p[k] += h;
        minus.p[k] -= h;
        const double fd = (foxrl::test::ref_loss(plus, tnet, batch, kind).loss -
                           foxrl::test::ref_loss(minus, tnet, batch, kind).loss) /
                          (2 * h);
        worst = std::max(worst, std::abs(fd - grads[k]));
        scale = std::max(scale, std::abs(fd));
        norm_sq += fd * fd;
      }
      // float32 backward vs float64 differences: agreement to 1e-5 of the
      // largest gradient entry (float rounding is ~1e-7 of it; the finite
      // difference error ~1e-9).
      CHECK(worst <= 1e-5 * scale);
      CHECK(padding_nonzero == 0);
      CHECK(metrics(foxrl::LearnerMetrics::grad_norm) == Approx(std::sqrt(norm_sq)).epsilon(1e-4));
    }
  }
}

TEMPLATE_TEST_CASE("a large-batch update (several loss teams and row chunks) matches the float64 reference",
                   "[learner][grad]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const int B = 300;  // more rows than one team of the loss and one chunk of relu_backward on every backend
  const auto batch = foxrl::test::random_batch(B, 5, 3, 17);
  for (const auto backend : {foxrl::DenseBackend::portable, foxrl::DenseBackend::blas}) {
    auto config = small_config(backend);
    config.max_batch = B;
    foxrl::DqnLearner<Exec> learner(space, config);
    const auto& layout = learner.layout();
    foxrl::kernels::init_weights(space, learner.weights().target, layout, 98, foxrl::InitScheme::torch_default);
    const auto online = flat_host(space, learner.weights().online);
    const auto target = flat_host(space, learner.weights().target);
    const auto device_batch = to_device(space, batch);
    const auto net = ref_net(layout, online);
    const auto tnet = ref_net(layout, target);
    const auto ref = foxrl::test::ref_loss(net, tnet, batch, foxrl::LossKind::huber);
    // The first update against central differences; a second one against
    // the reference at the updated weights (it must not see tickets left
    // over by the first).
    learner.update(space, device_batch);
    const auto metrics = foxrl::test::to_host(space, learner.metrics());
    const auto grads = flat_host(space, learner.weights().grads);
    // Central differences of the float64 loss, as in the small-batch test.
    double worst = 0.0, scale = 0.0, norm_sq = 0.0;
    const double h = 1e-6;
    for (std::size_t k = 0; k < layout.total; ++k) {
      if (is_padding(layout, k)) continue;
      RefNet plus = net, minus = net;
      plus.p[k] += h;
      minus.p[k] -= h;
      const double fd = (foxrl::test::ref_loss(plus, tnet, batch, foxrl::LossKind::huber).loss -
                         foxrl::test::ref_loss(minus, tnet, batch, foxrl::LossKind::huber).loss) /
                        (2 * h);
      worst = std::max(worst, std::abs(fd - grads[k]));
      scale = std::max(scale, std::abs(fd));
      norm_sq += fd * fd;
    }
    INFO("backend " << foxrl::to_string(backend));
    CHECK(metrics(foxrl::LearnerMetrics::loss) == Approx(ref.loss).epsilon(1e-5));
    CHECK(metrics(foxrl::LearnerMetrics::mean_q) == Approx(ref.mean_q).epsilon(1e-5).margin(1e-6));
    CHECK(metrics(foxrl::LearnerMetrics::mean_abs_td) == Approx(ref.mean_abs_td).epsilon(1e-5));
    CHECK(worst <= 1e-5 * scale);
    CHECK(metrics(foxrl::LearnerMetrics::grad_norm) == Approx(std::sqrt(norm_sq)).epsilon(1e-4));

    const auto online_after_one = flat_host(space, learner.weights().online);
    const auto net1 = ref_net(layout, online_after_one);
    const auto ref1 = foxrl::test::ref_loss(net1, tnet, batch, foxrl::LossKind::huber);
    learner.update(space, device_batch);
    const auto metrics2 = foxrl::test::to_host(space, learner.metrics());
    CHECK(metrics2(foxrl::LearnerMetrics::loss) == Approx(ref1.loss).epsilon(1e-5));
    CHECK(metrics2(foxrl::LearnerMetrics::mean_abs_td) == Approx(ref1.mean_abs_td).epsilon(1e-5));
  }
}

TEMPLATE_TEST_CASE("Adam with clipping and weight decay matches a float64 reference", "[learner][adam]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const int P = 53;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> p0(P);
  for (auto& x : p0) x = u(rng);

  struct Case {
    const char* name;
    float wd;
    foxrl::WeightDecayMode mode;
    float max_norm;
  };
  for (const Case c : {Case{"plain", 0.0f, foxrl::WeightDecayMode::decoupled, 0.0f},
                       Case{"clipped", 0.0f, foxrl::WeightDecayMode::decoupled, 0.5f},
                       Case{"adamw", 0.1f, foxrl::WeightDecayMode::decoupled, 0.0f},
                       Case{"l2 + clip", 0.1f, foxrl::WeightDecayMode::l2, 1.0f}}) {
    DYNAMIC_SECTION(c.name) {
      foxrl::AdamHyper hyper;
      hyper.lr = 1e-2f;
      hyper.weight_decay = c.wd;
      hyper.weight_decay_mode = c.mode;
      hyper.max_grad_norm = c.max_norm;
      auto params = foxrl::test::to_device(space, p0);
      foxrl::FlatParams<Mem> m("foxrl::test::m", P), v("foxrl::test::v", P);
      Kokkos::View<std::int64_t, Mem> step("foxrl::test::step");
      Kokkos::View<float*, Mem> metrics("foxrl::test::metrics", foxrl::LearnerMetrics::count);
      std::vector<double> rp(p0.begin(), p0.end()), rm(P, 0.0), rv(P, 0.0);
      int clipped_steps = 0;
      for (int t = 1; t <= 5; ++t) {
        std::vector<float> g(P);
        for (auto& x : g) x = 0.3f * u(rng);
        auto grads = foxrl::test::to_device(space, g);
        Kokkos::deep_copy(space, step, std::int64_t(t));
        foxrl::kernels::gradient_sq_norm(space, grads, metrics);
        foxrl::kernels::adam_update(space, hyper, params, grads, m, v, step, metrics);
        // float64 reference: torch.nn.utils.clip_grad_norm_ then torch.optim.Adam/AdamW.
        double norm = 0.0;
        for (const float x : g) norm += double(x) * x;
        norm = std::sqrt(norm);
        double coef = 1.0;
        if (c.max_norm > 0) coef = std::min(1.0, c.max_norm / (norm + 1e-6));
        clipped_steps += coef < 1.0;
        const double b1 = hyper.beta1, b2 = hyper.beta2;
        for (int i = 0; i < P; ++i) {
          double gi = g[i] * coef;
          if (c.wd > 0 && c.mode == foxrl::WeightDecayMode::l2) gi += double(c.wd) * rp[i];
          if (c.wd > 0 && c.mode == foxrl::WeightDecayMode::decoupled) rp[i] *= 1.0 - double(hyper.lr) * c.wd;
          rm[i] = b1 * rm[i] + (1 - b1) * gi;
          rv[i] = b2 * rv[i] + (1 - b2) * gi * gi;
          const double mhat = rm[i] / (1 - std::pow(b1, t));
          const double vhat = rv[i] / (1 - std::pow(b2, t));
          rp[i] -= double(hyper.lr) * mhat / (std::sqrt(vhat) + double(hyper.eps));
        }
        const auto mh = foxrl::test::to_host(space, metrics);
        CHECK(mh(foxrl::LearnerMetrics::grad_norm) == Approx(norm).epsilon(1e-6));
      }
      if (c.max_norm > 0) CHECK(clipped_steps > 0);
      const auto ph = foxrl::test::to_host(space, params);
      double worst = 0.0;
      for (int i = 0; i < P; ++i) worst = std::max(worst, std::abs(ph(i) - rp[i]));
      // 5 steps of size ~lr = 1e-2 in float32: parameter error ~1e-7 each.
      CHECK(worst < 2e-6);
    }
  }
}

TEMPLATE_TEST_CASE("target network: Polyak every update, hard copy every K updates", "[learner][target]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const auto batch = foxrl::test::random_batch(16, 5, 3, 3);
  const auto device_batch = to_device(space, batch);
  SECTION("Polyak") {
    auto config = small_config();
    config.polyak_tau = 0.25f;
    foxrl::DqnLearner<Exec> learner(space, config);
    foxrl::kernels::init_weights(space, learner.weights().target, learner.layout(), 7, foxrl::InitScheme::he_uniform);
    const auto before = flat_host(space, learner.weights().target);
    learner.update(space, device_batch);
    const auto online = flat_host(space, learner.weights().online);
    const auto after = flat_host(space, learner.weights().target);
    double worst = 0.0;
    for (std::size_t i = 0; i < before.size(); ++i)
      worst = std::max(worst, std::abs(after[i] - (0.25 * online[i] + 0.75 * before[i])));
    CHECK(worst < 1e-6);  // float32 of values <= ~1.1
    CHECK(online != before);
  }
  SECTION("hard copy") {
    auto config = small_config();
    config.target_update_every = 2;
    foxrl::DqnLearner<Exec> learner(space, config);
    const auto initial = flat_host(space, learner.weights().target);
    learner.update(space, device_batch);
    CHECK(flat_host(space, learner.weights().target) == initial);
    CHECK(flat_host(space, learner.weights().online) != initial);
    learner.update(space, device_batch);
    CHECK(learner.updates() == 2);
    CHECK(flat_host(space, learner.weights().target) == flat_host(space, learner.weights().online));
    const auto steps = foxrl::test::to_host(space, learner.weights().adam_step);
    CHECK(steps() == 2);
  }
}

TEMPLATE_TEST_CASE("a full update runs on the context's instance", "[learner][audit]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  for (const auto backend : {foxrl::DenseBackend::portable, foxrl::DenseBackend::blas}) {
    auto config = small_config(backend);
    // The Kokkos launches of the sequence; the fused CUDA kernels
    // (kernels/cuda/) go to the instance's stream by construction and are
    // not Kokkos launches the tools could see.
    config.fused_update = false;
    foxrl::DqnLearner<Exec> learner(space, config);
    const auto batch = to_device(space, foxrl::test::random_batch(32, 5, 3, 1));
    Kokkos::View<std::int32_t*, Mem> actions("foxrl::test::actions", 40);
    auto states = foxrl::test::to_device(space, foxrl::test::random_batch(40, 5, 3, 2).states, 40, 5);
    // Warm-up: Kokkos sizes its internal scratch on first use of a kernel.
    learner.update(space, batch);
    learner.greedy_actions(space, foxrl::ConstMatrix<Mem>(states), actions);
    context.fence("test::warm");
    const auto record = foxrl::audit([&] {
      learner.update(space, batch);
      learner.greedy_actions(space, foxrl::ConstMatrix<Mem>(states), actions);
      context.fence("test::done");
    });
    const auto id = foxrl::tools_device_id(space);
    INFO("backend " << foxrl::to_string(backend));
    for (const auto& a : record.allocations) UNSCOPED_INFO("allocated: " << a.label << " in " << a.space);
    CHECK(record.allocations.empty());  // nothing allocated in the hot path
    CHECK(record.launches_off(id).empty());
    CHECK(record.fences_off(id).empty());
    if (backend == foxrl::DenseBackend::portable) {
      // Kokkos Kernels' own kernels carry its labels; foxrl's must carry foxrl's.
      const auto violations = record.violations(id);
      INFO("first: " << (violations.empty() ? "" : violations.front()));
      CHECK(violations.empty());
    }
    CHECK(!record.launches.empty());
  }
}

TEMPLATE_TEST_CASE("update() (a CUDA graph replay there) gives the split path's results bit for bit",
                   "[learner][graph]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  for (const auto backend : {foxrl::DenseBackend::portable, foxrl::DenseBackend::blas}) {
    INFO("backend " << foxrl::to_string(backend));
    auto config = small_config(backend);
    config.target_update_every = 3;  // two graphs: with and without the hard copy
    config.max_grad_norm = 1.0f;
    // The graph of the launch sequence; the fused update (one launch, to
    // rounding of the sequence) has its own tests (test_fused_small_update.cpp).
    config.fused_update = false;
    foxrl::DqnLearner<Exec> graphed(space, config), split(space, config);
    // Two batches in turn: each set of buffers is its own graph.
    const auto first = to_device(space, foxrl::test::random_batch(32, 5, 3, 11));
    const auto second = to_device(space, foxrl::test::random_batch(32, 5, 3, 12));
    for (int u = 0; u < 12; ++u) {
      const auto& batch = u % 2 == 0 ? first : second;
      graphed.update(space, batch);
      REQUIRE(split.compute_gradients(space, batch));
      split.apply_gradients(space);
      INFO("update " << u);
      CHECK(flat_host(space, graphed.td_errors()) == flat_host(space, split.td_errors()));
      CHECK(flat_host(space, graphed.metrics()) == flat_host(space, split.metrics()));
    }
    const auto g = graphed.weights();
    const auto s = split.weights();
    CHECK(flat_host(space, g.online) == flat_host(space, s.online));
    CHECK(flat_host(space, g.target) == flat_host(space, s.target));
    CHECK(flat_host(space, g.adam_m) == flat_host(space, s.adam_m));
    CHECK(flat_host(space, g.adam_v) == flat_host(space, s.adam_v));
    CHECK(graphed.updates() == split.updates());
#ifdef KOKKOS_ENABLE_CUDA
    // Four keys (two batches x hard copy or not), each run directly once and
    // captured once: the other updates are replays.
    if (std::is_same_v<Exec, Kokkos::Cuda> && foxrl::kernel_path_on(foxrl::KernelPath::cuda_graphs))
      CHECK(graphed.graph_replays() > 0);
#endif
    CHECK(split.graph_replays() == 0);
  }
}
