// The fused CUDA optimizer step (kernels/cuda/fused_optimizer.cuh) against
// its portable twin (gradient_sq_norm_then, then adam_update) on the same
// random buffers, with ragged sizes: the parameters of dueling networks
// with hidden layers of 120 and 84 (observation 65 and 4) and of the
// market network (65-512-512, more elements than the fused grid has
// threads), a few odd lengths, and 1000 td-error rows. Both share the
// per-element arithmetic (kernels::AdamStep); only the norm's summation
// order differs. So without clipping every buffer must agree bit for bit,
// and with clipping to the rounding of the norm; the norm itself is held
// against a float64 sum. CUDA builds only (the fused path exists only
// there).
#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_CUDA

#include "core/execution_context.hpp"
#include "kernels/cuda/fused_optimizer.cuh"
#include "kernels/nn/adam.hpp"
#include "nn/training_guard.hpp"
#include "support/device_copy.hpp"
#include "support/reference_dqn.hpp"
#include "views/agents/dqn/learner_metrics.hpp"
#include "views/nn/network_layout.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using Exec = Kokkos::Cuda;
using Mem = Exec::memory_space;
using Flat = foxrl::FlatParams<Mem>;

/// One optimizer's buffers, filled from a seed.
struct OptimizerBuffers {
  Flat params, grads, m, v, target;
  Kokkos::View<std::int64_t, Mem> step;
  Kokkos::View<float*, Mem> metrics, td;
  foxrl::TrainingGuard<Exec> guard;

  OptimizerBuffers(const Exec& space, std::size_t n, std::uint32_t seed, float grad_scale, float nan_at = -1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    auto fill = [&](float scale, bool positive) {
      std::vector<float> x(n);
      for (auto& e : x) e = positive ? std::abs(normal(rng)) * scale : normal(rng) * scale;
      return x;
    };
    params = foxrl::test::to_device(space, fill(0.1f, false));
    grads = foxrl::test::to_device(space, fill(grad_scale, false));
    m = foxrl::test::to_device(space, fill(0.01f, false));
    v = foxrl::test::to_device(space, fill(1e-4f, true));
    target = foxrl::test::to_device(space, fill(0.1f, false));
    std::vector<float> td_rows(1000);
    for (auto& e : td_rows) e = std::abs(normal(rng));
    td_rows[17] = std::numeric_limits<float>::quiet_NaN();  // a row's own broken td error
    td = foxrl::test::to_device(space, td_rows);
    step = Kokkos::View<std::int64_t, Mem>(Kokkos::view_alloc(space, "foxrl::test::step"));
    Kokkos::deep_copy(space, step, std::int64_t(7));  // the loss kernel already counted this step
    metrics =
        Kokkos::View<float*, Mem>(Kokkos::view_alloc(space, "foxrl::test::metrics"), foxrl::LearnerMetrics::count);
    Kokkos::deep_copy(space, Kokkos::subview(metrics, int(foxrl::LearnerMetrics::loss)), 0.25f);
    guard =
        foxrl::TrainingGuard<Exec>(space, {{"online", params}, {"target", target}, {"adam_m", m}, {"adam_v", v, true}},
                                   step, foxrl::GuardConfig{});
    guard.snapshot(space, true);
    if (nan_at >= 0.0f) {
      Kokkos::deep_copy(space, Kokkos::subview(params, std::size_t(nan_at)), std::numeric_limits<float>::quiet_NaN());
    }
    space.fence("foxrl::test::OptimizerBuffers");
  }

  foxrl::kernels::AdamStep<Mem, false> step_of(const foxrl::AdamHyper& hyper, float tau) const {
    return foxrl::kernels::make_adam_step<Exec>(hyper, params, grads, m, v, step, metrics, {target, tau},
                                                guard.step(td));
  }
};

double float64_sq_norm(const std::vector<float>& g) {
  double s = 0.0;
  for (const float x : g) s += double(x) * double(x);
  return s;
}

/// The largest |a - b| / (floor + |b|) over the elements.
double worst_relative(const std::vector<float>& a, const std::vector<float>& b, double floor) {
  double worst = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (std::isnan(a[i]) || std::isnan(b[i])) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, std::abs(double(a[i]) - double(b[i])) / (floor + std::abs(double(b[i]))));
  }
  return worst;
}

}  // namespace

TEST_CASE("the fused CUDA optimizer step matches its portable twin", "[optimizer][fused][cuda]") {
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const std::vector<std::size_t> sizes = {foxrl::NetworkLayout::dueling(65, {120, 84}, 3).total,
                                          foxrl::NetworkLayout::dueling(4, {120, 84}, 2).total,
                                          foxrl::NetworkLayout::dueling(65, {512, 512}, 3).total,
                                          1,
                                          1000,
                                          257};
  struct Case {
    std::string name;
    float max_grad_norm, tau, weight_decay;
    foxrl::WeightDecayMode mode;
    float nan_at;  ///< a non-finite online weight at this index (< 0: none)
  };
  const std::vector<Case> cases = {
      {"clipped, Polyak target", 0.5f, 0.005f, 0.0f, foxrl::WeightDecayMode::decoupled, -1.0f},
      {"no clipping, hard copy, L2 decay", 0.0f, 1.0f, 1e-2f, foxrl::WeightDecayMode::l2, -1.0f},
      {"no clipping, no target update, AdamW", 0.0f, 0.0f, 1e-2f, foxrl::WeightDecayMode::decoupled, -1.0f},
      {"a non-finite weight: the guard restores", 0.5f, 0.005f, 0.0f, foxrl::WeightDecayMode::decoupled, 0.0f},
  };
  for (const std::size_t n : sizes) {
    for (const auto& c : cases) {
      INFO("n = " << n << ", " << c.name);
      foxrl::AdamHyper hyper;
      hyper.lr = 1e-3f;
      hyper.max_grad_norm = c.max_grad_norm;
      hyper.weight_decay = c.weight_decay;
      hyper.weight_decay_mode = c.mode;
      const float nan_at = c.nan_at < 0.0f ? -1.0f : float(n / 2);
      OptimizerBuffers portable(space, n, 99, 0.05f, nan_at), fused(space, n, 99, 0.05f, nan_at);
      const auto grads_host = foxrl::test::flat_host(space, portable.grads);

      foxrl::kernels::ReduceScratch<Mem> scratch(space, "foxrl::test::scratch",
                                                 foxrl::kernels::gradient_norm_scratch<Exec>(n, true), 1);
      foxrl::kernels::gradient_sq_norm_then(space, portable.grads, portable.params,
                                            portable.guard.decision(portable.metrics), scratch);
      foxrl::kernels::adam_update(space, hyper, portable.params, portable.grads, portable.m, portable.v, portable.step,
                                  portable.metrics, {portable.target, c.tau}, portable.guard.step(portable.td));

      int device = 0, sms = 0;
      cudaGetDevice(&device);
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
      Kokkos::View<float*, Mem> partials(Kokkos::view_alloc(space, "foxrl::test::partials"),
                                         2 * std::size_t(sms) * 8 + foxrl::kernels::cuda::fused_optimizer_extra_floats);
      foxrl::kernels::cuda::fused_optimizer_step(space, fused.grads, fused.params, fused.guard.decision(fused.metrics),
                                                 fused.step_of(hyper, c.tau), partials.data(), partials.extent(0));
      space.fence("foxrl::test::fused");

      const auto pm = foxrl::test::flat_host(space, portable.metrics);
      const auto fm = foxrl::test::flat_host(space, fused.metrics);
      const double reference = float64_sq_norm(grads_host);
      // float32 sums of up to ~3e5 squares in two fixed orders.
      CHECK(std::abs(pm[foxrl::LearnerMetrics::grad_sq] - reference) <= 1e-5 * reference);
      CHECK(std::abs(fm[foxrl::LearnerMetrics::grad_sq] - reference) <= 1e-5 * reference);
      CHECK(fm[foxrl::LearnerMetrics::rejected] == pm[foxrl::LearnerMetrics::rejected]);
      // Row 17's own NaN stays where the step is applied (NaN == NaN here).
      CHECK(worst_relative(foxrl::test::flat_host(space, fused.td), foxrl::test::flat_host(space, portable.td), 0.0) ==
            0.0);
      const auto ps = foxrl::test::to_host(space, portable.guard.state());
      const auto fs = foxrl::test::to_host(space, fused.guard.state());
      for (int s = 0; s < foxrl::GuardState::count; ++s) CHECK(fs(s) == ps(s));
      CHECK(foxrl::test::to_host(space, fused.step)() == foxrl::test::to_host(space, portable.step)());

      const auto buffers = {std::make_pair(&portable.params, &fused.params), std::make_pair(&portable.m, &fused.m),
                            std::make_pair(&portable.v, &fused.v), std::make_pair(&portable.target, &fused.target)};
      for (const auto& [p, f] : buffers) {
        const auto a = foxrl::test::flat_host(space, *f);
        const auto b = foxrl::test::flat_host(space, *p);
        if (c.max_grad_norm <= 0.0f || c.nan_at >= 0.0f) {
          // The norm enters nowhere (or the step is not applied): the same
          // arithmetic on the same values.
          CHECK(worst_relative(a, b, 0.0) == 0.0);
        } else {
          // The clip coefficient differs by the norm's rounding (<= ~1e-5
          // relative), and m, v and the step with it.
          CHECK(worst_relative(a, b, 1e-6) <= 1e-4);
        }
      }
    }
  }
}

#endif  // KOKKOS_ENABLE_CUDA
