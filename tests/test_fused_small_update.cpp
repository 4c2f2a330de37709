// The fused small-network update (kernels/cuda/fused_small_update.cuh, one
// launch for forward, loss, backward and the optimizer) against its
// portable twin, the learner's sequence of launches on the same weights
// and batch, with ragged sizes: observation 65 with hidden 120 and 84 and
// batch 1000 (the last block takes fewer rows), the cartpole-learn network
// (4-120-84-2, batch 128), one env's single row, and a tiny 5-7-6 network
// also held against float64 finite differences. What must agree:
// - gradients to 1e-5 of the largest entry (float32 sums over up to 1000
//   rows in another order: rounding is ~1e-6 of it);
// - td errors to 1e-5 (absolute, |td| is O(1)) and the metrics to 1e-5
//   relative;
// - the new weights and moments equal a float64 Adam step taken on the
//   fused path's own gradient to 1e-3 of the learning rate (the first
//   step moves each weight by about lr; float32 arithmetic of the step
//   is ~1e-7 of it), with and without clipping;
// - a hard target copy, the guard's rejection of a non-finite loss (no
//   weight moves, the td errors as the twin writes them), a spike and a
//   streak of rejections ending in a restore (the same verdicts, counters
//   and step counter as the twin's, the snapshot's weights exactly), and
//   run-to-run and graph-replay determinism bit for bit.
// The update and forward comparisons run with every block size the kernels
// are built for (DqnLearnerConfig::fused_threads = 256, 512, 1024).
// CUDA builds only (the fused path exists only there).
#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_CUDA

#include "agents/dqn/dqn_learner.hpp"
#include "core/execution_context.hpp"
#include "kernels/nn/weight_init.hpp"
#include "support/device_copy.hpp"
#include "support/reference_dqn.hpp"
#include "support/scoped_environment.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace {

using Exec = Kokkos::Cuda;
using foxrl::test::flat_host;

struct Shape {
  std::string name;
  int obs_dim;
  std::vector<int> hidden;
  int num_actions;
  int batch;
};

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s = {
      {"65-120-84-3, batch 1000", 65, {120, 84}, 3, 1000},
      {"cartpole-learn 4-120-84-2, batch 128", 4, {120, 84}, 2, 128},
      {"65-120-84-3, one env's row", 65, {120, 84}, 3, 1},
      {"5-7-6-3, batch 37", 5, {7, 6}, 3, 37},
  };
  return s;
}

foxrl::DqnLearnerConfig config_of(const Shape& shape, bool fused,
                                  int threads = foxrl::kernels::small_network_default_threads) {
  foxrl::DqnLearnerConfig c;
  c.obs_dim = shape.obs_dim;
  c.hidden = shape.hidden;
  c.num_actions = shape.num_actions;
  c.max_batch = shape.batch;
  c.max_inference_batch = foxrl::kernels::cuda::small_forward_max_rows;
  c.seed = 4321;
  c.lr = 1e-3f;
  c.dense_backend = foxrl::DenseBackend::blas;
  c.fused_update = fused;
  c.fused_threads = threads;
  c.target_update_every = 1000;
  return c;
}

/// A learner whose target differs from its online network (so double DQN's
/// two networks matter).
struct Learner {
  foxrl::DqnLearner<Exec> learner;
  Learner(const Exec& space, const foxrl::DqnLearnerConfig& config) : learner(space, config) {
    foxrl::kernels::init_weights(space, learner.weights().target, learner.layout(), 77,
                                 foxrl::InitScheme::torch_default);
  }
};

double max_abs(const std::vector<float>& v) {
  double m = 0.0;
  for (const float x : v) m = std::max(m, std::abs(double(x)));
  return m;
}

/// Largest |a - b| over the elements.
double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double m = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(double(a[i]) - double(b[i])));
  return m;
}

/// The first Adam step (moments zero before it, step counter 1) in float64
/// from gradient `g` with clip coefficient `coef`: the new parameters, m
/// and v.
struct RefAdam {
  std::vector<double> p, m, v;
};
RefAdam first_adam_step(const foxrl::DqnLearnerConfig& c, const std::vector<float>& p0, const std::vector<float>& g,
                        double coef) {
  RefAdam r;
  const double b1 = c.beta1, b2 = c.beta2;
  for (std::size_t i = 0; i < p0.size(); ++i) {
    const double gi = double(g[i]) * coef;
    const double m = (1.0 - b1) * gi, v = (1.0 - b2) * gi * gi;
    const double mhat = m / (1.0 - b1), vhat = v / (1.0 - b2);
    r.p.push_back(double(p0[i]) - double(c.lr) * mhat / (std::sqrt(vhat) + double(c.eps)));
    r.m.push_back(m);
    r.v.push_back(v);
  }
  return r;
}

double max_diff(const std::vector<double>& ref, const std::vector<float>& got) {
  double m = 0.0;
  for (std::size_t i = 0; i < ref.size(); ++i) m = std::max(m, std::abs(ref[i] - double(got[i])));
  return m;
}

/// Every shape with every block size the fused kernels are built for.
std::vector<std::pair<Shape, int>> shapes_by_block_size() {
  std::vector<std::pair<Shape, int>> all;
  for (const int threads : {256, 512, 1024})
    for (const auto& shape : shapes()) all.emplace_back(shape, threads);
  return all;
}

/// One fused update against the twin's on the same weights and batch (see
/// the file comment for what must agree).
void check_against_twin(const Exec& space, const Shape& shape, foxrl::LossKind kind, float max_grad_norm, int threads) {
  auto fused_config = config_of(shape, true, threads), twin_config = config_of(shape, false);
  fused_config.loss = twin_config.loss = kind;
  fused_config.max_grad_norm = twin_config.max_grad_norm = max_grad_norm;
  Learner fused(space, fused_config), twin(space, twin_config);
  REQUIRE(fused.learner.fused_update());
  REQUIRE(fused.learner.fused_update_threads() == threads);
  REQUIRE(!twin.learner.fused_update());
  const auto p0 = flat_host(space, fused.learner.weights().online);
  REQUIRE(p0 == flat_host(space, twin.learner.weights().online));
  const auto batch = foxrl::test::random_batch(shape.batch, shape.obs_dim, shape.num_actions, 31);
  const auto device_batch = foxrl::test::to_device(space, batch);
  fused.learner.update(space, device_batch);
  twin.learner.update(space, device_batch);

  const auto g = flat_host(space, fused.learner.weights().grads);
  const auto g_twin = flat_host(space, twin.learner.weights().grads);
  const double scale = max_abs(g_twin);
  REQUIRE(scale > 0.0);
  CHECK(max_diff(g, g_twin) <= 1e-5 * scale);

  const auto td = flat_host(space, fused.learner.td_errors());
  const auto td_twin = flat_host(space, twin.learner.td_errors());
  CHECK(max_diff(std::vector<float>(td.begin(), td.begin() + shape.batch),
                 std::vector<float>(td_twin.begin(), td_twin.begin() + shape.batch)) <= 1e-5);
  const auto m = flat_host(space, fused.learner.metrics());
  const auto m_twin = flat_host(space, twin.learner.metrics());
  for (const int slot : {foxrl::LearnerMetrics::loss, foxrl::LearnerMetrics::mean_q, foxrl::LearnerMetrics::mean_abs_td,
                         foxrl::LearnerMetrics::grad_norm}) {
    INFO("metric slot " << slot);
    CHECK(m[slot] == Approx(m_twin[slot]).epsilon(1e-5).margin(1e-7));
  }
  CHECK(m[foxrl::LearnerMetrics::rejected] == 0.0f);

  // The optimizer tail against float64 Adam on the fused gradient.
  double norm_sq = 0.0;
  for (const float x : g) norm_sq += double(x) * double(x);
  const double norm = std::sqrt(norm_sq);
  const double coef = max_grad_norm > 0.0f ? std::min(1.0, max_grad_norm / (norm + 1e-6)) : 1.0;
  if (max_grad_norm > 0.0f) REQUIRE(coef < 1.0);  // the clipping case does clip
  const auto ref = first_adam_step(fused_config, p0, g, coef);
  const double lr = fused_config.lr;
  CHECK(max_diff(ref.p, flat_host(space, fused.learner.weights().online)) <= 1e-3 * lr);
  CHECK(max_diff(ref.m, flat_host(space, fused.learner.weights().adam_m)) <= 1e-6 * scale);
  CHECK(max_diff(ref.v, flat_host(space, fused.learner.weights().adam_v)) <= 1e-6 * scale * scale);
  auto step = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), fused.learner.weights().adam_step);
  CHECK(step() == 1);
}

}  // namespace

TEST_CASE("the fused small-network update matches its portable twin", "[learner][fused][cuda]") {
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  for (const auto& [shape, threads] : shapes_by_block_size()) {
    for (const auto kind : {foxrl::LossKind::huber, foxrl::LossKind::mse}) {
      for (const float max_grad_norm : {0.0f, 0.005f}) {
        INFO(threads << " threads per block, " << shape.name << ", "
                     << (kind == foxrl::LossKind::huber ? "huber" : "mse") << ", max_grad_norm " << max_grad_norm);
        check_against_twin(space, shape, kind, max_grad_norm, threads);
      }
    }
  }
}

TEST_CASE("a learner refuses a fused block size the kernels are not built for", "[learner][fused][cuda]") {
  foxrl::ExecutionContext<Exec> context;
  const auto construct = [&] { foxrl::DqnLearner<Exec> learner(context.space(), config_of(shapes()[1], true, 384)); };
  CHECK_THROWS_WITH(construct(), Catch::Contains("fused_threads must be 256, 512 or 1024, got 384"));
}

TEST_CASE("the fused update's gradient matches float64 finite differences", "[learner][fused][grad][cuda]") {
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const Shape shape = shapes().back();
  Learner fused(space, config_of(shape, true));
  REQUIRE(fused.learner.fused_update());
  const auto& layout = fused.learner.layout();
  const auto online = flat_host(space, fused.learner.weights().online);
  const auto target = flat_host(space, fused.learner.weights().target);
  const auto batch = foxrl::test::random_batch(shape.batch, shape.obs_dim, shape.num_actions, 5);
  fused.learner.update(space, foxrl::test::to_device(space, batch));
  const auto g = flat_host(space, fused.learner.weights().grads);
  const foxrl::test::RefNet net{layout, std::vector<double>(online.begin(), online.end())};
  const foxrl::test::RefNet tnet{layout, std::vector<double>(target.begin(), target.end())};
  const double h = 1e-6;
  double worst = 0.0, scale = 0.0;
  for (int l = 0; l < layout.num_layers; ++l) {
    const auto& s = layout.layers[l];
    std::vector<std::size_t> elements;
    for (std::size_t k = 0; k < s.weight_size(); ++k) elements.push_back(s.weight_offset + k);
    for (int k = 0; k < s.out; ++k) elements.push_back(s.bias_offset + std::size_t(k));
    for (const std::size_t k : elements) {
      auto plus = net, minus = net;
      plus.p[k] += h;
      minus.p[k] -= h;
      const double fd = (foxrl::test::ref_loss(plus, tnet, batch, foxrl::LossKind::huber).loss -
                         foxrl::test::ref_loss(minus, tnet, batch, foxrl::LossKind::huber).loss) /
                        (2 * h);
      worst = std::max(worst, std::abs(fd - g[k]));
      scale = std::max(scale, std::abs(fd));
    }
  }
  REQUIRE(scale > 0.0);
  CHECK(worst <= 1e-5 * scale);
}

TEST_CASE("the fused update: hard target copy, the guard's rejection, determinism", "[learner][fused][cuda]") {
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const Shape shape = shapes()[1];
  const auto batch = foxrl::test::random_batch(shape.batch, shape.obs_dim, shape.num_actions, 8);
  const auto device_batch = foxrl::test::to_device(space, batch);

  SECTION("a hard copy makes the target the updated online network") {
    auto config = config_of(shape, true);
    config.target_update_every = 2;
    Learner fused(space, config);
    fused.learner.update(space, device_batch);
    const auto target_before = flat_host(space, fused.learner.weights().target);
    CHECK(target_before != flat_host(space, fused.learner.weights().online));
    fused.learner.update(space, device_batch);  // the second update copies
    CHECK(flat_host(space, fused.learner.weights().target) == flat_host(space, fused.learner.weights().online));
  }

  SECTION("a non-finite loss is rejected as the twin rejects it") {
    auto bad = batch;
    bad.rewards[5] = std::numeric_limits<float>::quiet_NaN();
    const auto bad_device = foxrl::test::to_device(space, bad);
    Learner fused(space, config_of(shape, true)), twin(space, config_of(shape, false));
    const auto p0 = flat_host(space, fused.learner.weights().online);
    const auto t0 = flat_host(space, fused.learner.weights().target);
    fused.learner.update(space, bad_device);
    twin.learner.update(space, bad_device);
    CHECK(flat_host(space, fused.learner.weights().online) == p0);
    CHECK(flat_host(space, fused.learner.weights().target) == t0);
    const auto m = flat_host(space, fused.learner.metrics());
    CHECK(m[foxrl::LearnerMetrics::rejected] == 1.0f);
    const auto td = flat_host(space, fused.learner.td_errors());
    const auto td_twin = flat_host(space, twin.learner.td_errors());
    CHECK(std::isnan(td[5]));  // the row's own broken target: quarantined by the replay
    int same = 0;
    for (int i = 0; i < shape.batch; ++i)
      same += (td[i] == td_twin[i]) || (std::isnan(td[i]) && std::isnan(td_twin[i]));
    CHECK(same == shape.batch);
    CHECK(td[0] == foxrl::keep_priority_td);
    auto step = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), fused.learner.weights().adam_step);
    CHECK(step() == 0);  // a rejected step is not counted
  }

  SECTION("a spike and a streak of rejections leave the guard where the twin's is, restore included") {
    // Every block of the fused update takes the decision on its own copy
    // of the guard's state: a block that disagreed would leave some
    // weights stepped and others not, and the restore's weights would not
    // be the snapshot's.
    auto fused_config = config_of(shape, true), twin_config = config_of(shape, false);
    fused_config.guard.max_bad = twin_config.guard.max_bad = 3;
    Learner fused(space, fused_config), twin(space, twin_config);
    const auto p0 = flat_host(space, fused.learner.weights().online);
    auto spike = batch, broken = batch;
    for (auto& r : spike.rewards) r *= 1e5f;
    broken.rewards[3] = std::numeric_limits<float>::infinity();
    const auto spike_device = foxrl::test::to_device(space, spike);
    const auto broken_device = foxrl::test::to_device(space, broken);
    const int good_before = 20;  // past GuardState::min_losses: the spike test is on
    for (int k = 0; k < good_before + 4; ++k) {
      const auto& b = k == good_before                               ? spike_device
                      : k == good_before + 1 || k == good_before + 2 ? broken_device
                                                                     : device_batch;
      fused.learner.update(space, b);
      twin.learner.update(space, b);
      INFO("update " << k);
      const auto m = flat_host(space, fused.learner.metrics());
      const auto m_twin = flat_host(space, twin.learner.metrics());
      CHECK(m[foxrl::LearnerMetrics::rejected] == m_twin[foxrl::LearnerMetrics::rejected]);
      CHECK(m[foxrl::LearnerMetrics::rejected] == (k >= good_before && k < good_before + 3 ? 1.0f : 0.0f));
      auto step = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), fused.learner.weights().adam_step);
      auto step_twin = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), twin.learner.weights().adam_step);
      CHECK(step() == step_twin());
      if (k == good_before + 2) {
        CHECK(step() == 0);  // the restore's snapshot counter (taken at construction)
        CHECK(flat_host(space, fused.learner.weights().online) == p0);
      }
    }
    const auto c = fused.learner.guard().counters(space);
    const auto c_twin = twin.learner.guard().counters(space);
    CHECK(c.rejected == 3);
    CHECK(c.spikes == 1);
    CHECK(c.nonfinite == 2);
    CHECK(c.restores == 1);
    CHECK(c.lr_scale == fused_config.guard.lr_decay);
    for (const auto& [got, want] : {std::pair{c.rejected, c_twin.rejected}, std::pair{c.spikes, c_twin.spikes},
                                    std::pair{c.nonfinite, c_twin.nonfinite}, std::pair{c.restores, c_twin.restores},
                                    std::pair{c.consecutive_bad, c_twin.consecutive_bad}})
      CHECK(got == want);
    CHECK(c.lr_scale == c_twin.lr_scale);
    CHECK(c.verdict == c_twin.verdict);
    // The window after the restore: the one loss since, in both.
    const auto s = foxrl::test::to_host(space, fused.learner.guard().state());
    const auto s_twin = foxrl::test::to_host(space, twin.learner.guard().state());
    CHECK(s(foxrl::GuardState::losses) == 1.0);
    CHECK(s_twin(foxrl::GuardState::losses) == 1.0);
    CHECK(s(foxrl::GuardState::sorted) == Approx(s_twin(foxrl::GuardState::sorted)).epsilon(1e-5));
  }

  SECTION("the same inputs give the same bits, replayed as a graph or launched directly") {
    auto direct_config = config_of(shape, true);
    direct_config.cuda_graphs = false;
    Learner a(space, config_of(shape, true)), b(space, config_of(shape, true)), direct(space, direct_config);
    for (int k = 0; k < 5; ++k)
      for (auto* l : {&a.learner, &b.learner, &direct.learner}) l->update(space, device_batch);
    CHECK(a.learner.graph_replays() > 0);
    CHECK(direct.learner.graph_replays() == 0);
    const auto pa = flat_host(space, a.learner.weights().online);
    CHECK(pa == flat_host(space, b.learner.weights().online));
    CHECK(pa == flat_host(space, direct.learner.weights().online));
    CHECK(flat_host(space, a.learner.td_errors()) == flat_host(space, direct.learner.td_errors()));
  }
}

TEST_CASE("the fused small-network forward matches its portable twin", "[learner][fused][cuda]") {
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  using Mem = Exec::memory_space;
  for (const auto& [shape, threads] : shapes_by_block_size()) {
    foxrl::DqnLearner<Exec> fused(space, config_of(shape, true, threads)), twin(space, config_of(shape, false));
    REQUIRE(fused.fused_update_threads() == threads);
    for (const int rows : {1, 8, 37, foxrl::kernels::cuda::small_forward_max_rows}) {
      INFO(threads << " threads per block, " << shape.name << ", " << rows << " rows");
      REQUIRE(fused.fused_forward(rows));
      REQUIRE(!twin.fused_forward(rows));
      const auto batch = foxrl::test::random_batch(rows, shape.obs_dim, shape.num_actions, 60 + rows);
      const auto states = foxrl::test::to_device(space, batch.states, rows, shape.obs_dim);
      Kokkos::View<std::int32_t*, Mem> greedy("foxrl::test::greedy", rows), greedy_twin("foxrl::test::greedy", rows);
      fused.greedy_actions(space, foxrl::ConstMatrix<Mem>(states), greedy);
      twin.greedy_actions(space, foxrl::ConstMatrix<Mem>(states), greedy_twin);
      const auto head = foxrl::test::to_host(space, fused.online_head());
      const auto head_twin = foxrl::test::to_host(space, twin.online_head());
      const auto a = foxrl::test::to_host(space, greedy);
      const auto a_twin = foxrl::test::to_host(space, greedy_twin);
      double worst = 0.0;
      int disagree = 0, near_ties = 0;
      const int H = shape.num_actions + 1;
      for (int r = 0; r < rows; ++r) {
        for (int c = 0; c < H; ++c)
          worst = std::max(worst, std::abs(double(head(r, c)) - head_twin(r, c)) / (1.0 + std::abs(head_twin(r, c))));
        // The twin's advantage gap between its choice and the fused one:
        // only a near tie may be broken the other way by rounding.
        const double gap = std::abs(double(head_twin(r, 1 + a(r))) - head_twin(r, 1 + a_twin(r)));
        if (a(r) != a_twin(r)) (gap < 1e-5 ? near_ties : disagree) += 1;
      }
      CHECK(worst <= 1e-5);  // float32 sums of at most 120 products in another order
      CHECK(disagree == 0);
      CHECK(near_ties <= 1);
      // q_values through the same forward: the dueling combination of the head.
      Kokkos::View<float**, Kokkos::LayoutRight, Mem> q("foxrl::test::q", rows, shape.num_actions);
      fused.q_values(space, foxrl::ConstMatrix<Mem>(states), foxrl::MutableMatrix<Mem>(q));
      const auto qh = foxrl::test::to_host(space, q);
      const auto head_again = foxrl::test::to_host(space, fused.online_head());
      double worst_q = 0.0;
      for (int r = 0; r < rows; ++r) {
        double mean = 0.0;
        for (int j = 0; j < shape.num_actions; ++j) mean += head_again(r, 1 + j);
        mean /= shape.num_actions;
        for (int j = 0; j < shape.num_actions; ++j)
          worst_q = std::max(worst_q, std::abs(qh(r, j) - (head_again(r, 0) + head_again(r, 1 + j) - mean)));
      }
      CHECK(worst_q <= 1e-5);
    }
    CHECK(!fused.fused_forward(foxrl::kernels::cuda::small_forward_max_rows + 1));
  }
}

TEST_CASE("the fused update's phase probe records ordered stamps for every block", "[learner][fused][cuda]") {
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const Shape shape = shapes()[0];  // batch 1000: several blocks, the last one ragged
  Learner fused(space, config_of(shape, true));
  const int blocks = fused.learner.fused_update_blocks();
  REQUIRE(blocks > 1);
  const int updates = 3;
  foxrl::FusedUpdateStamps<Exec::memory_space> stamps("foxrl::test::stamps", updates, blocks,
                                                      foxrl::fused_update_stamp_count);
  fused.learner.set_fused_update_probe(stamps);
  const auto device_batch =
      foxrl::test::to_device(space, foxrl::test::random_batch(shape.batch, shape.obs_dim, shape.num_actions, 9));
  for (int k = 0; k < updates; ++k) fused.learner.update(space, device_batch);
  const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), stamps);
  // Update k (Adam step k before it) wrote row k: per block, the SM clock
  // never goes back from one phase boundary to the next, and the global
  // timer's start and end bound one update (well under a second).
  for (int u = 0; u < updates; ++u)
    for (int b = 0; b < blocks; ++b) {
      INFO("update " << u << ", block " << b);
      for (int k = foxrl::fused_update_stamp_start; k < foxrl::fused_update_stamp_end; ++k) {
        INFO("stamp " << k);
        CHECK(host(u, b, k) > 0);
        CHECK(host(u, b, k + 1) >= host(u, b, k));
      }
      const auto start_ns = host(u, b, foxrl::fused_update_stamp_start_ns);
      const auto end_ns = host(u, b, foxrl::fused_update_stamp_end_ns);
      CHECK(start_ns > 0);
      CHECK(end_ns >= start_ns);
      CHECK(end_ns - start_ns < 1000000000ull);
    }
  // The updates ran one after another.
  CHECK(host(1, 0, foxrl::fused_update_stamp_start_ns) >= host(0, 0, foxrl::fused_update_stamp_end_ns));
  CHECK(host(2, 0, foxrl::fused_update_stamp_start_ns) >= host(1, 0, foxrl::fused_update_stamp_end_ns));
}

TEST_CASE("a network too large for the fused update runs the launch sequence", "[learner][fused][cuda]") {
  foxrl::ExecutionContext<Exec> context;
  const Shape market{"market 65-512-512-3, batch 1024", 65, {512, 512}, 3, 1024};
  foxrl::DqnLearner<Exec> learner(context.space(), config_of(market, true));
  CHECK(!learner.fused_update());
  CHECK(!learner.fused_forward(8));
  CHECK(learner.fused_update_unfit().find("shared memory") != std::string::npos);
}

#endif  // KOKKOS_ENABLE_CUDA
