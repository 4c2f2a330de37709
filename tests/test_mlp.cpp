// Mlp with a plain head (a value head, policy logits wider than one pass of
// the head kernel, a net without hidden layers) against a float64 host
// MLP: forward over stacked inputs, backward of a linear loss, and the host
// reference's gradient against central finite differences of its loss.
#include "core/execution_context.hpp"
#include "kernels/nn/weight_init.hpp"
#include "nn/mlp.hpp"
#include "support/random_values.hpp"
#include "support/reference_dqn.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <utility>
#include <vector>

namespace {

using foxrl::test::random_values;

/// Float64 MLP over a flat parameter vector (ReLU trunk, plain head).
struct HostMlp {
  foxrl::NetworkLayout layout;
  std::vector<double> p;

  /// Head outputs of one row; `acts` (if given) receives every layer's output.
  std::vector<double> forward(const double* x, std::vector<std::vector<double>>* acts = nullptr) const {
    std::vector<double> in(x, x + layout.obs_dim);
    if (acts) acts->assign(1, in);
    for (int l = 0; l < layout.num_layers; ++l) {
      const auto& s = layout.layers[l];
      std::vector<double> out(s.out);
      for (int o = 0; o < s.out; ++o) {
        double acc = p[s.bias_offset + o];
        for (int i = 0; i < s.in; ++i) acc += p[s.weight_offset + std::size_t(o) * s.in + i] * in[i];
        out[o] = l + 1 < layout.num_layers ? std::max(acc, 0.0) : acc;
      }
      in.swap(out);
      if (acts) acts->push_back(in);
    }
    return in;
  }

  /// L = sum_{m, n} c[m, n] out[m, n] over `rows` rows of x.
  double loss(const std::vector<double>& x, const std::vector<double>& c, int rows) const {
    const int N = layout.head_outputs();
    double l = 0.0;
    for (int m = 0; m < rows; ++m) {
      const auto out = forward(&x[std::size_t(m) * layout.obs_dim]);
      for (int n = 0; n < N; ++n) l += c[std::size_t(m) * N + n] * out[n];
    }
    return l;
  }

  /// dL/dp by backpropagation (flat, gaps zero).
  std::vector<double> gradient(const std::vector<double>& x, const std::vector<double>& c, int rows) const {
    std::vector<double> g(p.size(), 0.0);
    const int N = layout.head_outputs();
    for (int m = 0; m < rows; ++m) {
      std::vector<std::vector<double>> acts;
      forward(&x[std::size_t(m) * layout.obs_dim], &acts);
      std::vector<double> dy(c.begin() + std::size_t(m) * N, c.begin() + std::size_t(m + 1) * N);
      for (int l = layout.num_layers - 1; l >= 0; --l) {
        const auto& s = layout.layers[l];
        const auto& in = acts[l];
        std::vector<double> dx(s.in, 0.0);
        for (int o = 0; o < s.out; ++o) {
          g[s.bias_offset + o] += dy[o];
          for (int i = 0; i < s.in; ++i) {
            g[s.weight_offset + std::size_t(o) * s.in + i] += dy[o] * in[i];
            dx[i] += dy[o] * p[s.weight_offset + std::size_t(o) * s.in + i];
          }
        }
        for (int i = 0; i < s.in; ++i)
          if (l > 0 && !(in[i] > 0.0)) dx[i] = 0.0;
        dy.swap(dx);
      }
    }
    return g;
  }
};

bool is_padding(const foxrl::NetworkLayout& layout, std::size_t i) {
  for (int l = 0; l < layout.num_layers; ++l) {
    const auto& s = layout.layers[l];
    if (i >= s.weight_offset && i < s.weight_offset + s.weight_size()) return false;
    if (i >= s.bias_offset && i < s.bias_offset + std::size_t(s.out)) return false;
  }
  return true;
}

struct Shape {
  std::vector<int> hidden;
  int outputs;
};

}  // namespace

TEMPLATE_TEST_CASE("a plain-head Mlp matches a float64 MLP forward and backward", "[mlp]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const int obs = 5, B = 37, B2 = 20;
  // The blas backend also with fused gemm epilogues where it has them
  // (CUDA): bias + ReLU in the forward's epilogue, and with ReLU bitmasks
  // the trunk's masks also carry the backward's.
  // The blas backend also with the narrow-input path (the first layer's 5
  // inputs: its weight gradient in the mask pass), on every backend (the
  // default on GPUs only).
  enum class Epilogues { off, bias_relu, with_masks };
  struct Variant {
    foxrl::DenseBackend backend;
    Epilogues epilogues;
    bool narrow;
  };
  std::vector<Variant> variants = {{foxrl::DenseBackend::portable, Epilogues::off, false},
                                   {foxrl::DenseBackend::blas, Epilogues::off, false},
                                   {foxrl::DenseBackend::blas, Epilogues::off, true}};
  if (foxrl::EpilogueGemm<Exec>::available) {
    variants.push_back({foxrl::DenseBackend::blas, Epilogues::bias_relu, false});
    variants.push_back({foxrl::DenseBackend::blas, Epilogues::with_masks, false});
    variants.push_back({foxrl::DenseBackend::blas, Epilogues::bias_relu, true});
  }
  for (const auto& [backend, epilogues, narrow] : variants) {
    const bool masks = epilogues == Epilogues::with_masks;
    for (const Shape& shape : {Shape{{120, 84}, 1}, Shape{{120, 84}, 11}, Shape{{}, 3}, Shape{{120, 84, 33}, 3}}) {
      const auto layout = foxrl::NetworkLayout::plain(obs, shape.hidden, shape.outputs);
      const int N = layout.head_outputs();
      DYNAMIC_SECTION(foxrl::to_string(backend)
                      << (epilogues == Epilogues::off ? " " : " with fused epilogues ")
                      << (masks ? "and bitmasks " : "") << (narrow ? "narrow inputs " : "") << layout.describe()) {
        CHECK(N == shape.outputs);
        foxrl::ParameterSet<Mem> params(space, layout, "foxrl::test::params");
        foxrl::kernels::init_weights(space, params.flat, layout, 17, foxrl::InitScheme::torch_default);
        const auto grads = foxrl::alloc_flat(space, layout, "foxrl::test::grads");
        auto ops = std::make_shared<foxrl::DenseOps<Exec>>(space, backend);
        ops->set_fused_epilogues(space, epilogues != Epilogues::off);
        ops->set_epilogue_masks(masks);
        ops->set_narrow_inputs(narrow);
        const auto need = foxrl::Mlp<Exec>::scratch_need(layout, B);
        const foxrl::kernels::ReduceScratch<Mem> scratch(space, "foxrl::test::reduce", need.floats, need.tickets);
        foxrl::Mlp<Exec> mlp(space, layout, B + B2, B, ops, scratch, "foxrl::test::mlp");
        CHECK(!mlp.fuses_greedy());

        const auto x1 = random_values(std::size_t(B) * obs, 1), x2 = random_values(std::size_t(B2) * obs, 2);
        const auto c = random_values(std::size_t(B) * N, 3);
        const auto X1 = foxrl::test::to_device(space, x1, B, obs);
        const auto X2 = foxrl::test::to_device(space, x2, B2, obs);
        const auto C = foxrl::test::to_device(space, c, B, N);
        const auto out = mlp.forward(space, params.flat, X1, X2);
        REQUIRE(out.extent(0) == std::size_t(B + B2));
        REQUIRE(out.extent(1) == std::size_t(N));
        // With bitmasks every trunk layer but the last (which the head kernel
        // finishes) holds its ReLU bitmask of the B backward rows.
        for (int l = 0; l < layout.num_hidden(); ++l)
          CHECK(mlp.relu_mask_rows(l) == (masks && l + 1 < layout.num_hidden() ? B : 0));
        mlp.backward(space, params.flat, X1, foxrl::ConstMatrix<Mem>(C), grads);

        const auto p = foxrl::test::flat_host(space, params.flat);
        const HostMlp ref{layout, std::vector<double>(p.begin(), p.end())};
        std::vector<double> x(x1.begin(), x1.end());
        x.insert(x.end(), x2.begin(), x2.end());
        const auto y = foxrl::test::to_host(space, out);
        double worst_y = 0.0;
        for (int m = 0; m < B + B2; ++m) {
          const auto r = ref.forward(&x[std::size_t(m) * obs]);
          for (int n = 0; n < N; ++n) worst_y = std::max(worst_y, std::abs(r[n] - y(m, n)));
        }
        // float32 dot products of <= 120 terms of size ~1 against float64.
        CHECK(worst_y < 2e-5);

        const std::vector<double> cd(c.begin(), c.end());
        const auto g_ref = ref.gradient(x, cd, B);
        const auto g = foxrl::test::flat_host(space, grads);
        double worst_g = 0.0, scale = 1.0;
        for (std::size_t i = 0; i < g.size(); ++i) {
          if (is_padding(layout, i)) {
            CHECK(g[i] == 0.0f);
            continue;
          }
          scale = std::max(scale, std::abs(g_ref[i]));
          worst_g = std::max(worst_g, std::abs(g_ref[i] - g[i]));
        }
        // Sums over 37 rows of float32 products: ~1e-6 relative to the largest gradient.
        CHECK(worst_g < 1e-5 * scale);

        // A forward of more rows than a backward takes (as the collector's
        // through the online network) writes no bitmask and leaves none.
        std::vector<float> x12(x1);
        x12.insert(x12.end(), x2.begin(), x2.end());
        mlp.forward(space, params.flat, foxrl::test::to_device(space, x12, B + B2, obs), {});
        for (int l = 0; l < layout.num_hidden(); ++l) CHECK(mlp.relu_mask_rows(l) == 0);

        // The reference's gradient is the derivative of its loss (central
        // differences in float64) at weights and biases of every layer.
        std::mt19937 pick(5);
        int checked = 0;
        for (int l = 0; l < layout.num_layers; ++l) {
          const auto& s = layout.layers[l];
          for (int k = 0; k < 6; ++k) {
            const std::size_t i =
                k % 2 == 0 ? s.weight_offset + pick() % s.weight_size() : s.bias_offset + pick() % s.out;
            const double h = 1e-6;
            HostMlp plus = ref, minus = ref;
            plus.p[i] += h;
            minus.p[i] -= h;
            const double fd = (plus.loss(x, cd, B) - minus.loss(x, cd, B)) / (2 * h);
            INFO("layer " << l << " index " << i);
            CHECK(std::abs(fd - g_ref[i]) < 1e-6 * std::max(1.0, std::abs(fd)));
            ++checked;
          }
        }
        CHECK(checked == 6 * layout.num_layers);
      }
    }
  }
}

TEMPLATE_TEST_CASE("Mlp rejects calls that do not fit its scratch or layout", "[mlp]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const auto layout = foxrl::NetworkLayout::plain(5, {8}, 1);
  CHECK(layout.describe() == "5-8-linear(1)");
  CHECK(foxrl::NetworkLayout::dueling(65, {512, 512}, 3).describe() == "65-512-512-dueling(3)");
  CHECK(!(layout == foxrl::NetworkLayout::dueling(5, {8}, 0 + 1)));
  foxrl::ParameterSet<Mem> params(space, layout, "foxrl::test::params");
  auto ops = std::make_shared<foxrl::DenseOps<Exec>>(space, foxrl::DenseBackend::blas);
  foxrl::Mlp<Exec> mlp(space, layout, 4, 2, ops, foxrl::kernels::ReduceScratch<Mem>(), "foxrl::test::mlp");
  const auto X = foxrl::test::to_device(space, std::vector<float>(5 * 5, 0.5f), 5, 5);
  CHECK_THROWS_AS(mlp.forward(space, params.flat, X, {}), foxrl::LogicError);
  const auto other = foxrl::alloc_flat(space, foxrl::NetworkLayout::plain(5, {40}, 1), "foxrl::test::other");
  CHECK_THROWS_AS(mlp.forward(space, other, foxrl::ConstMatrix<Mem>(foxrl::matrix_rows(X, 0, 2)), {}),
                  foxrl::LogicError);
}
