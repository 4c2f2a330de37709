// Mlp::forward_with_target (a learner's online forward over [s; s'] and
// target forward over s', with each hidden layer of the two networks in
// one library call where the ops allow) against a float64 host network,
// and against the two forwards it replaces (forward + target.forward),
// including the backward that reads its activations. On CUDA the shared
// calls must run for the CartPole and market shapes; elsewhere the two
// forwards run and the results are theirs bit for bit. Both heads in one
// launch give the two head kernels' bits. A learner's two networks pair
// however its allocations came out.
#include "agents/dqn/dqn_learner.hpp"
#include "core/execution_context.hpp"
#include "core/kernel_paths.hpp"
#include "kernels/nn/weight_init.hpp"
#include "nn/mlp.hpp"
#include "support/allclose.hpp"
#include "support/random_values.hpp"
#include "support/reference_dqn.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace {

struct Case {
  int obs;
  std::vector<int> hidden;
  int actions;
  int batch;
  bool must_pair_on_cuda;  ///< shapes the library batches (the pipeline configs')
};

/// Worst |device - float64| over `rows` rows of `y` (every `step`-th row)
/// against `net`'s head outputs of rows `first + m` of x, relative to 1 +
/// |reference|.
template <class HostMatrix>
double worst_head_error(const foxrl::test::RefNet& net, const std::vector<float>& x, int obs, int first, int rows,
                        int step, const HostMatrix& y) {
  double worst = 0.0;
  for (int m = 0; m < rows; m += step) {
    std::vector<double> in(x.begin() + std::size_t(first + m) * obs, x.begin() + std::size_t(first + m + 1) * obs);
    const auto ref = net.head(in.data());
    for (std::size_t n = 0; n < ref.size(); ++n)
      worst = std::max(worst, std::abs(ref[n] - double(y(m, n))) / (1.0 + std::abs(ref[n])));
  }
  return worst;
}

template <class HostView>
std::vector<float> host_rows(const HostView& v, int rows) {
  return std::vector<float>(v.data(), v.data() + std::size_t(rows) * v.extent(1));
}

}  // namespace

TEMPLATE_TEST_CASE("the paired forward of an update matches a float64 network and the two forwards it replaces",
                   "[mlp][paired]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  constexpr bool cuda = !Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible;
  const std::vector<Case> cases = {
      {4, {256, 256}, 2, 1024, true},   // cartpole-throughput
      {65, {512, 512}, 3, 1024, true},  // market-throughput
      {65, {120, 84}, 3, 1000, false},  // ragged widths, observation 65
      {5, {32, 24, 16}, 2, 77, false},  // a middle hidden layer
      {6, {40}, 3, 50, false},          // one hidden layer (the batched product reads the inputs)
  };
  for (const Case& c : cases) {
    const auto layout = foxrl::NetworkLayout::dueling(c.obs, c.hidden, c.actions);
    const int B = c.batch, N = layout.head_outputs(), L = layout.num_layers;
    DYNAMIC_SECTION(layout.describe() << " batch " << B) {
      // [s; s'] in one buffer, as the replay's sample stacks them.
      const auto x = foxrl::test::random_values(std::size_t(2 * B) * c.obs, 7);
      const auto X = foxrl::test::to_device(space, x, 2 * B, c.obs);
      const foxrl::ConstMatrix<Mem> s(X.data(), B, c.obs), s_next(X.data() + std::size_t(B) * c.obs, B, c.obs);
      const auto d_out = foxrl::test::to_device(space, foxrl::test::random_values(std::size_t(B) * N, 8), B, N);

      struct Run {
        std::vector<float> online_head, target_head, last_hidden, grads;
        bool paired = false;
      };
      // The learner's pair of networks on one DenseOps (one cuBLAS handle),
      // made as a learner makes them: both networks' parameters in one
      // allocation and their activations in another, online first, so the
      // layers pair wherever the allocator puts the two allocations.
      // `paired` false: the two forwards; `heads` false: the paired layers
      // with the two head kernels one after the other.
      auto ops = std::make_shared<foxrl::DenseOps<Exec>>(space, foxrl::DenseBackend::blas);
      const auto need = foxrl::Mlp<Exec>::scratch_need(layout, B);
      const foxrl::kernels::ReduceScratch<Mem> scratch(space, "foxrl::test::reduce", need.floats, need.tickets);
      // (No structured bindings: C++17 lambdas cannot capture them.)
      auto nets = foxrl::Mlp<Exec>::pair(space, layout, 2 * B, B, 2 * B, 0, ops, scratch, "foxrl::test::online_net",
                                         "foxrl::test::target_net");
      auto& online_net = nets.first;
      auto& target_net = nets.second;
      const auto flats = foxrl::alloc_flat_pair(space, layout, "foxrl::test::both");
      struct {
        foxrl::FlatParams<Mem> flat;
      } online{flats.first}, target{flats.second};
      foxrl::kernels::init_weights(space, online.flat, layout, 3, foxrl::InitScheme::torch_default);
      foxrl::kernels::init_weights(space, target.flat, layout, 4, foxrl::InitScheme::torch_default);
      const auto run = [&](bool paired, bool heads) {
        online_net.set_paired_forward(paired);
        online_net.set_paired_heads(heads);
        Run r;
        r.paired = online_net.pairs_with(space, online.flat, target_net, target.flat, s, s_next);
        const auto head = online_net.forward_with_target(space, online.flat, target_net, target.flat, s, s_next);
        REQUIRE(head.extent(0) == std::size_t(2 * B));
        r.online_head = host_rows(foxrl::test::to_host(space, head), 2 * B);
        r.target_head = host_rows(foxrl::test::to_host(space, target_net.output()), B);
        // The last hidden layer's ReLU output of the s rows (what the
        // backward reads).
        r.last_hidden = host_rows(foxrl::test::to_host(space, online_net.activation(L - 2)), B);
        const auto grads = foxrl::alloc_flat(space, layout, "foxrl::test::grads");
        online_net.backward(space, online.flat, s, foxrl::ConstMatrix<Mem>(d_out), grads);
        r.grads = foxrl::test::flat_host(space, grads);
        return r;
      };
      const Run two = run(false, true), paired = run(true, true), two_heads = run(true, false);
      // Both heads in one launch (kernels/nn/small_dense_pair.hpp) keep
      // each head kernel's bits.
      CHECK(two_heads.paired == paired.paired);
      CHECK(two_heads.online_head == paired.online_head);
      CHECK(two_heads.target_head == paired.target_head);
      CHECK(two_heads.last_hidden == paired.last_hidden);
      CHECK(two_heads.grads == paired.grads);
      CHECK(!two.paired);
      // The shared calls run where they are offered: CUDA with the fused
      // epilogues and the paired_forward path on (core/kernel_paths.hpp).
      const bool offered = cuda && foxrl::kernel_path_on(foxrl::KernelPath::paired_forward) &&
                           foxrl::kernel_path_on(foxrl::KernelPath::gemm_epilogues);
      if (offered && c.must_pair_on_cuda) CHECK(paired.paired);
      if (!cuda) CHECK(!paired.paired);

      // Against float64 (every row of s' and every 4th of s): sums of up to
      // 512 float32 products of terms of size ~1.
      const auto p_on = foxrl::test::flat_host(space, online.flat), p_tg = foxrl::test::flat_host(space, target.flat);
      const foxrl::test::RefNet ref_on{layout, std::vector<double>(p_on.begin(), p_on.end())};
      const foxrl::test::RefNet ref_tg{layout, std::vector<double>(p_tg.begin(), p_tg.end())};
      const auto as_matrix = [](const std::vector<float>& v, int cols) {
        return [&v, cols](int m, std::size_t n) { return v[std::size_t(m) * cols + n]; };
      };
      for (const Run* r : {&two, &paired}) {
        INFO((r == &two ? "two forwards" : "paired forward"));
        CHECK(worst_head_error(ref_on, x, c.obs, 0, B, 4, as_matrix(r->online_head, N)) < 1e-5);
        CHECK(worst_head_error(ref_on, x, c.obs, B, B, 1, [&](int m, std::size_t n) {
                return r->online_head[std::size_t(B + m) * N + n];
              }) < 1e-5);
        CHECK(worst_head_error(ref_tg, x, c.obs, B, B, 1, as_matrix(r->target_head, N)) < 1e-5);
      }
      // Against the two forwards: the same products, so the same values up
      // to the library's algorithm for the batch (float32 rounding of sums
      // of up to 512 terms), bit for bit where nothing was shared.
      if (!paired.paired) {
        CHECK(paired.online_head == two.online_head);
        CHECK(paired.target_head == two.target_head);
        CHECK(paired.last_hidden == two.last_hidden);
        CHECK(paired.grads == two.grads);
      } else {
        CHECK(foxrl::test::allclose(paired.online_head, two.online_head, 1e-5, 1e-5));
        CHECK(foxrl::test::allclose(paired.target_head, two.target_head, 1e-5, 1e-5));
        CHECK(foxrl::test::allclose(paired.last_hidden, two.last_hidden, 1e-5, 1e-5));
        // Gradients sum B rows: relative to the largest.
        float scale = 1.0f;
        for (float g : two.grads) scale = std::max(scale, std::abs(g));
        CHECK(foxrl::test::allclose(paired.grads, two.grads, 0.0, 1e-5 * scale));
      }
    }
  }
}

TEMPLATE_TEST_CASE("the paired forward falls back to the two forwards where its operands do not stack", "[mlp][paired]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const auto layout = foxrl::NetworkLayout::dueling(4, {64, 64}, 2);
  const int B = 40;
  foxrl::ParameterSet<Mem> online(space, layout, "foxrl::test::online");
  foxrl::kernels::init_weights(space, online.flat, layout, 3, foxrl::InitScheme::torch_default);
  auto ops = std::make_shared<foxrl::DenseOps<Exec>>(space, foxrl::DenseBackend::blas);
  const auto need = foxrl::Mlp<Exec>::scratch_need(layout, B);
  const foxrl::kernels::ReduceScratch<Mem> scratch(space, "foxrl::test::reduce", need.floats, need.tickets);
  foxrl::Mlp<Exec> online_net(space, layout, 2 * B, B, ops, scratch, "foxrl::test::online_net");
  foxrl::Mlp<Exec> target_net(space, layout, 2 * B, 0, ops, scratch, "foxrl::test::target_net");
  foxrl::Mlp<Exec> small_target(space, layout, B, 0, ops, scratch, "foxrl::test::small_target");
  const auto X = foxrl::test::to_device(space, foxrl::test::random_values(std::size_t(3 * B) * 4, 9), 3 * B, 4);
  const foxrl::ConstMatrix<Mem> s(X.data(), B, 4), next(X.data() + std::size_t(B) * 4, B, 4),
      apart(X.data() + std::size_t(2 * B) * 4, B, 4), shorter(X.data() + std::size_t(B) * 4, B - 1, 4);
  // Not stacked (a gap of B rows), of different row counts, or a target
  // whose first layer cannot hold 2 B rows: the two forwards.
  CHECK(!online_net.pairs_with(space, online.flat, target_net, online.flat, s, apart));
  CHECK(!online_net.pairs_with(space, online.flat, target_net, online.flat, s, shorter));
  CHECK(!online_net.pairs_with(space, online.flat, small_target, online.flat, s, next));
  // Turned off.
  online_net.set_paired_forward(false);
  CHECK(!online_net.pairs_with(space, online.flat, target_net, online.flat, s, next));
  // The fallback still gives both networks' outputs: the target (here the
  // same parameters) over the second rows equals the online network's
  // (products of other row counts: up to the library's algorithm).
  const auto head = online_net.forward_with_target(space, online.flat, small_target, online.flat, s, apart);
  const int N = layout.head_outputs();
  const auto h = foxrl::test::to_host(space, head);
  const auto t = foxrl::test::to_host(space, small_target.output());
  const std::vector<float> online_rows(h.data() + std::size_t(B) * N, h.data() + std::size_t(2 * B) * N);
  const std::vector<float> target_rows(t.data(), t.data() + std::size_t(B) * N);
  CHECK(foxrl::test::allclose(online_rows, target_rows, 1e-5, 1e-6));
}

TEMPLATE_TEST_CASE("a learner's two networks pair wherever the allocator puts their buffers", "[mlp][paired]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  using Learner = foxrl::DqnLearner<Exec>;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  constexpr bool cuda = !Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible;
  const bool offered = cuda && foxrl::kernel_path_on(foxrl::KernelPath::paired_forward) &&
                       foxrl::kernel_path_on(foxrl::KernelPath::gemm_epilogues);
  // The pipeline configs' update shapes (CartPole's and the market's), with
  // the collectors' 4,096 inference rows.
  const std::vector<Case> cases = {{4, {256, 256}, 2, 1024, true}, {65, {512, 512}, 3, 1024, true}};
  for (const Case& c : cases) {
    foxrl::DqnLearnerConfig config;
    config.obs_dim = c.obs;
    config.hidden = c.hidden;
    config.num_actions = c.actions;
    config.max_batch = c.batch;
    config.max_inference_batch = 4096;
    config.seed = 5;
    const auto layout = foxrl::NetworkLayout::dueling(c.obs, c.hidden, c.actions);
    const int B = c.batch;
    const auto X =
        foxrl::test::to_device(space, foxrl::test::random_values(std::size_t(2 * B) * c.obs, 11), 2 * B, c.obs);
    const foxrl::ConstMatrix<Mem> s(X.data(), B, c.obs), s_next(X.data() + std::size_t(B) * c.obs, B, c.obs);
    DYNAMIC_SECTION(layout.describe()) {
      // Learners built among allocations freed in different orders (memory
      // a pool hands out again, in whatever order): some kept alive, some
      // dropped, with buffers of their sizes allocated and freed between.
      std::vector<std::unique_ptr<Learner>> kept;
      for (int round = 0; round < 6; ++round) {
        {
          std::vector<foxrl::FlatParams<Mem>> churn;
          for (int k = 0; k < 4; ++k)
            churn.emplace_back(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::test::churn"),
                               (round % 2 == 0 ? layout.total : std::size_t(4096) * 512) * std::size_t(1 + k % 2));
          if (round % 3 == 1) std::reverse(churn.begin(), churn.end());
          while (!churn.empty()) churn.pop_back();
        }
        auto learner = std::make_unique<Learner>(space, config);
        const auto& online = learner->online().flat;
        const auto& target = learner->target().params().flat;
        INFO("round " << round);
        // The target's parameters right after the online network's, and
        // every hidden layer's target activations above the online ones.
        CHECK(target.data() == online.data() + foxrl::paired_flat_offset(layout));
        for (int l = 0; l < layout.num_hidden(); ++l) {
          const auto& a = learner->online_network().activation(l);
          const auto& t = learner->target_network().activation(l);
          CHECK(t.data() >= a.data() + a.extent(0) * a.extent(1));
        }
        // Where the library offers the paired products, the update takes them.
        const bool pairs =
            learner->online_network().pairs_with(space, online, learner->target_network(), target, s, s_next);
        if (offered) CHECK(pairs);
        if (!cuda) CHECK(!pairs);
        if (round % 2 == 1) kept.push_back(std::move(learner));
      }
    }
  }
}
