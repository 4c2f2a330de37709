// The training guard under fault injection: NaN or Inf planted in a batch,
// a gradient or a weight, and loss spikes. Rejected updates must leave
// weights and Adam state bit-identical; K consecutive rejections must bring
// back the snapshot bit for bit and scale the learning rate (checked against
// a learner configured with the scaled rate); a good update must be exactly
// the unguarded optimizer step; the spike threshold is checked against a
// host median and the float64 reference loss.
#include "agents/dqn/dqn_learner.hpp"
#include "core/execution_context.hpp"
#include "core/kokkos_tools_audit.hpp"
#include "kernels/nn/adam.hpp"
#include "support/reference_dqn.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace {

using foxrl::test::RefBatch;
using foxrl::test::RefNet;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

foxrl::DqnLearnerConfig small_config(foxrl::DenseBackend backend) {
  foxrl::DqnLearnerConfig c;
  c.obs_dim = 5;
  c.hidden = {7, 6};
  c.num_actions = 3;
  c.max_batch = 32;
  c.max_inference_batch = 32;
  c.seed = 4321;
  c.lr = 1e-3f;
  c.dense_backend = backend;
  return c;
}

using foxrl::test::flat_host;
using foxrl::test::to_device;

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

bool all_finite(const std::vector<float>& a) {
  return std::all_of(a.begin(), a.end(), [](float x) { return std::isfinite(x); });
}

/// Everything an update may change (but the gradients and scratch).
struct State {
  std::vector<float> online, target, m, v;
  std::int64_t step = 0;

  bool operator==(const State& o) const {
    return same_bits(online, o.online) && same_bits(target, o.target) && same_bits(m, o.m) && same_bits(v, o.v) &&
           step == o.step;
  }
  bool finite() const { return all_finite(online) && all_finite(target) && all_finite(m) && all_finite(v); }
};

template <class Exec, class W>
State capture(const Exec& space, const W& w) {
  State s;
  s.online = flat_host(space, w.online);
  s.target = flat_host(space, w.target);
  s.m = flat_host(space, w.adam_m);
  s.v = flat_host(space, w.adam_v);
  s.step = foxrl::test::to_host(space, w.adam_step)();
  return s;
}

/// Writes `value` into element `i` of a device View (fences).
template <class Exec, class View>
void plant(const Exec& space, const View& v, std::size_t i, float value) {
  Kokkos::deep_copy(space, Kokkos::subview(v, i), value);
  foxrl::compat::fence(space, "foxrl::test::plant");
}

/// First weight of layer 0 (behind a ReLU: a NaN there may never reach the loss).
std::size_t first_weight(const foxrl::NetworkLayout& layout) { return layout.layers[0].weight_offset; }

template <class Exec>
float device_metric(const Exec& space, const foxrl::DqnLearner<Exec>& learner, int slot) {
  return foxrl::test::to_host(space, learner.metrics())(slot);
}

const foxrl::DenseBackend kBackends[] = {foxrl::DenseBackend::portable, foxrl::DenseBackend::blas};

}  // namespace

TEMPLATE_TEST_CASE("a good update through the guard is the unguarded optimizer step, bit for bit", "[guard]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  for (const auto backend : kBackends) {
    INFO("backend " << foxrl::to_string(backend));
    auto config = small_config(backend);
    config.max_grad_norm = 0.5f;  // the clip path too
    config.weight_decay = 0.01f;
    foxrl::DqnLearner<Exec> learner(space, config);
    const auto& w = learner.weights();
    learner.update(space, to_device(space, foxrl::test::random_batch(24, 5, 3, 1)));
    REQUIRE(learner.compute_gradients(space, to_device(space, foxrl::test::random_batch(24, 5, 3, 2))));

    // The same step by the unguarded kernels on copies.
    const std::size_t n = w.online.extent(0);
    auto copy = [&](const foxrl::FlatParams<Mem>& src) {
      foxrl::FlatParams<Mem> dst(Kokkos::view_alloc(space, "foxrl::test::copy"), n);
      Kokkos::deep_copy(space, dst, src);
      return dst;
    };
    const auto p = copy(w.online), g = copy(w.grads), m = copy(w.adam_m), v = copy(w.adam_v);
    Kokkos::View<std::int64_t, Mem> step("foxrl::test::step");
    Kokkos::deep_copy(space, step, w.adam_step);
    Kokkos::View<float*, Mem> metrics("foxrl::test::metrics", foxrl::LearnerMetrics::count);
    foxrl::kernels::gradient_sq_norm(space, g, metrics);
    foxrl::kernels::adam_update(space, config.adam(), p, g, m, v, step, metrics);

    learner.apply_gradients(space);
    const auto after = capture(space, w);
    CHECK(same_bits(after.online, flat_host(space, p)));
    CHECK(same_bits(after.m, flat_host(space, m)));
    CHECK(same_bits(after.v, flat_host(space, v)));
    CHECK(after.step == foxrl::test::to_host(space, step)());
    CHECK(after.step == 2);
    CHECK(device_metric(space, learner, foxrl::LearnerMetrics::rejected) == 0.0f);
    const auto c = learner.guard().counters(space);
    CHECK(c.rejected == 0);
    CHECK(c.verdict == foxrl::GuardState::apply);
    CHECK(c.lr_scale == 1.0);
  }
}

TEMPLATE_TEST_CASE("a NaN or Inf planted in a batch or a gradient: the update is skipped, counted, changes nothing",
                   "[guard]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  // (A fault in a next state can vanish before the loss: the ReLU maps NaN
  // to 0, and no gradient flows through s'. Faults in s reach the gradient
  // through dW0 = dZ0^T s even when masked.)
  enum class Fault { reward_nan, state_nan, reward_inf, gradient_nan, gradient_inf };
  const struct {
    Fault fault;
    const char* name;
  } cases[] = {{Fault::reward_nan, "NaN reward"},
               {Fault::state_nan, "NaN state"},
               {Fault::reward_inf, "Inf reward"},
               {Fault::gradient_nan, "NaN gradient"},
               {Fault::gradient_inf, "Inf gradient"}};
  const auto good = foxrl::test::random_batch(24, 5, 3, 7);
  for (const auto backend : kBackends) {
    for (const auto& c : cases) {
      INFO("backend " << foxrl::to_string(backend) << ", fault: " << c.name);
      foxrl::DqnLearner<Exec> learner(space, small_config(backend));
      const auto& w = learner.weights();
      learner.update(space, to_device(space, foxrl::test::random_batch(24, 5, 3, 5)));
      learner.update(space, to_device(space, foxrl::test::random_batch(24, 5, 3, 6)));
      const auto before = capture(space, w);
      REQUIRE(before.step == 2);

      auto bad = good;
      if (c.fault == Fault::reward_nan) bad.rewards[3] = kNaN;
      if (c.fault == Fault::state_nan) bad.states[7] = kNaN;
      if (c.fault == Fault::reward_inf) bad.rewards[11] = kInf;
      if (c.fault == Fault::gradient_nan || c.fault == Fault::gradient_inf) {
        REQUIRE(learner.compute_gradients(space, to_device(space, good)));
        plant(space, w.grads, first_weight(learner.layout()) + 2, c.fault == Fault::gradient_nan ? kNaN : kInf);
        learner.apply_gradients(space);
        // Only the gradient was bad: the guard saw it there, not in the loss.
        CHECK(std::isfinite(device_metric(space, learner, foxrl::LearnerMetrics::loss)));
      } else {
        learner.update(space, to_device(space, bad));
      }

      CHECK(capture(space, w) == before);
      CHECK(device_metric(space, learner, foxrl::LearnerMetrics::rejected) == 1.0f);
      // Healthy rows keep their replay priority; a planted reward keeps its
      // row's non-finite td error, which quarantines the transition.
      const auto td = flat_host(space, learner.td_errors());
      int planted_row = -1;
      if (c.fault == Fault::reward_nan) planted_row = 3;
      if (c.fault == Fault::reward_inf) planted_row = 11;
      // (A NaN state is caught in the gradient: the ReLU zeroes it before Q.)
      for (int i = 0; i < 24; ++i) {
        INFO("row " << i);
        if (i == planted_row)
          CHECK_FALSE(std::isfinite(td[std::size_t(i)]));
        else
          CHECK(td[std::size_t(i)] == foxrl::keep_priority_td);
      }
      auto counters = learner.guard().counters(space);
      CHECK(counters.rejected == 1);
      CHECK(counters.nonfinite == 1);
      CHECK(counters.spikes == 0);
      CHECK(counters.restores == 0);
      CHECK(counters.consecutive_bad == 1);
      CHECK(counters.verdict == foxrl::GuardState::skip);

      // The run goes on: the next good update is applied as usual.
      learner.update(space, to_device(space, good));
      const auto next = capture(space, w);
      CHECK(next.step == 3);
      CHECK(!same_bits(next.online, before.online));
      CHECK(next.finite());
      counters = learner.guard().counters(space);
      CHECK(counters.consecutive_bad == 0);
      CHECK(counters.rejected == 1);
    }
  }
}

TEMPLATE_TEST_CASE("a NaN planted in a weight restores the snapshot at once and never reaches the target", "[guard]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const auto batch = to_device(space, foxrl::test::random_batch(24, 5, 3, 8));
  for (const auto backend : kBackends) {
    INFO("backend " << foxrl::to_string(backend));
    auto config = small_config(backend);
    config.target_update_every = 3;  // the faulty update is the one with a hard copy
    config.guard.lr_decay = 0.25f;
    foxrl::DqnLearner<Exec> learner(space, config);
    const auto& w = learner.weights();
    learner.update(space, batch);
    learner.snapshot(space);
    const auto snapshot = capture(space, w);
    learner.update(space, batch);
    REQUIRE(!(capture(space, w) == snapshot));

    plant(space, w.online, first_weight(learner.layout()), kNaN);
    learner.update(space, batch);
    const auto after = capture(space, w);
    CHECK(after == snapshot);
    CHECK(after.finite());
    const auto c = learner.guard().counters(space);
    CHECK(c.rejected == 1);
    CHECK(c.nonfinite == 1);
    CHECK(c.restores == 1);
    CHECK(c.snapshots == 2);
    CHECK(c.lr_scale == 0.25);
    CHECK(c.verdict == foxrl::GuardState::restore);

    // The explicit hard copy keeps the target's value where online is not finite.
    const std::size_t k = first_weight(learner.layout()) + 1;
    plant(space, w.online, k, kInf);
    learner.hard_target_update(space);
    const auto online = flat_host(space, w.online);
    const auto target = flat_host(space, w.target);
    CHECK(target[k] == snapshot.target[k]);
    std::size_t copied = 0;
    for (std::size_t i = 0; i < online.size(); ++i) copied += i != k && target[i] == online[i];
    CHECK(copied == online.size() - 1);
  }
}

TEMPLATE_TEST_CASE("K consecutive rejected updates restore the last good snapshot and scale the learning rate",
                   "[guard]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  auto bad_host = foxrl::test::random_batch(24, 5, 3, 9);
  bad_host.rewards[0] = kNaN;
  const auto bad = to_device(space, bad_host);
  for (const auto backend : kBackends) {
    INFO("backend " << foxrl::to_string(backend));
    auto config = small_config(backend);
    config.guard.max_bad = 3;
    config.guard.lr_decay = 0.5f;
    foxrl::DqnLearner<Exec> learner(space, config);
    const auto& w = learner.weights();
    learner.update(space, to_device(space, foxrl::test::random_batch(24, 5, 3, 10)));
    learner.update(space, to_device(space, foxrl::test::random_batch(24, 5, 3, 11)));
    learner.snapshot(space);
    const auto snapshot = capture(space, w);
    learner.update(space, to_device(space, foxrl::test::random_batch(24, 5, 3, 12)));
    const auto good = capture(space, w);
    REQUIRE(!(good == snapshot));

    learner.update(space, bad);
    CHECK(capture(space, w) == good);
    // A snapshot during a rejection streak is refused on the device.
    learner.snapshot(space);
    CHECK(learner.guard().counters(space).snapshots == 2);
    learner.update(space, bad);
    CHECK(capture(space, w) == good);
    auto c = learner.guard().counters(space);
    CHECK(c.consecutive_bad == 2);
    CHECK(c.restores == 0);
    CHECK(c.lr_scale == 1.0);

    learner.update(space, bad);
    CHECK(capture(space, w) == snapshot);
    c = learner.guard().counters(space);
    CHECK(c.rejected == 3);
    CHECK(c.nonfinite == 3);
    CHECK(c.restores == 1);
    CHECK(c.consecutive_bad == 0);
    CHECK(c.lr_scale == 0.5);

    // The next step runs at lr / 2: the same step as a learner configured
    // with lr / 2 from the same state, and not the one at the full rate.
    auto half = config;
    half.lr = config.lr * 0.5f;
    foxrl::DqnLearner<Exec> reference(space, half), full(space, config);
    for (auto* other : {&reference, &full}) {
      const auto& o = other->weights();
      Kokkos::deep_copy(space, o.online, w.online);
      Kokkos::deep_copy(space, o.target, w.target);
      Kokkos::deep_copy(space, o.adam_m, w.adam_m);
      Kokkos::deep_copy(space, o.adam_v, w.adam_v);
      Kokkos::deep_copy(space, o.adam_step, w.adam_step);
    }
    const auto next = to_device(space, foxrl::test::random_batch(24, 5, 3, 13));
    learner.update(space, next);
    reference.update(space, next);
    full.update(space, next);
    const auto mine = capture(space, w);
    CHECK(mine == capture(space, reference.weights()));
    CHECK(!same_bits(mine.online, capture(space, full.weights()).online));
    CHECK(mine.step == snapshot.step + 1);
  }
}

TEMPLATE_TEST_CASE("a loss spike over the running median of recent losses is rejected", "[guard]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  for (const auto backend : kBackends) {
    INFO("backend " << foxrl::to_string(backend));
    auto config = small_config(backend);
    config.guard.spike_factor = 10.0f;
    const float factor = config.guard.spike_factor;
    const auto base = foxrl::test::random_batch(24, 5, 3, 99);

    // A batch of `base` with rewards scaled by s.
    auto scaled = [&](float s) {
      auto b = base;
      for (auto& r : b.rewards) r *= s;
      return b;
    };
    // Float64 reference loss of a batch at the learner's current weights.
    auto ref_loss = [&](const foxrl::DqnLearner<Exec>& l, const RefBatch& b) {
      const auto st = capture(space, l.weights());
      const RefNet on{l.layout(), std::vector<double>(st.online.begin(), st.online.end())};
      const RefNet tg{l.layout(), std::vector<double>(st.target.begin(), st.target.end())};
      return foxrl::test::ref_loss(on, tg, b, config.loss).loss;
    };

    {
      // Too few losses: no spike test yet.
      foxrl::DqnLearner<Exec> learner(space, config);
      learner.update(space, to_device(space, foxrl::test::random_batch(24, 5, 3, 20)));
      const double first = device_metric(space, learner, foxrl::LearnerMetrics::loss);
      REQUIRE(ref_loss(learner, scaled(1000.0f)) > 10 * factor * first);
      learner.update(space, to_device(space, scaled(1000.0f)));
      CHECK(device_metric(space, learner, foxrl::LearnerMetrics::rejected) == 0.0f);
      CHECK(learner.guard().counters(space).rejected == 0);
    }
    {
      // After the warm-up.
      foxrl::DqnLearner<Exec> learner(space, config);
      std::vector<double> losses;
      for (int i = 0; i < 20; ++i) {
        learner.update(space, to_device(space, foxrl::test::random_batch(24, 5, 3, 100 + i)));
        losses.push_back(device_metric(space, learner, foxrl::LearnerMetrics::loss));
      }
      REQUIRE(learner.guard().counters(space).rejected == 0);
      std::sort(losses.begin(), losses.end());
      const double median = 0.5 * (losses[9] + losses[10]);
      const double threshold = factor * median;

      // Reward scales whose reference loss is well above and well below the threshold.
      float high = 0, low = 0;
      for (float s = 1.0f; s <= 4096.0f; s *= 1.25f) {
        const double l = ref_loss(learner, scaled(s));
        if (l < 0.8 * threshold) low = s;
        if (l > 1.25 * threshold && high == 0) high = s;
      }
      REQUIRE(low > 0);
      REQUIRE(high > 0);

      const auto before = capture(space, learner.weights());
      learner.update(space, to_device(space, scaled(high)));
      CHECK(capture(space, learner.weights()) == before);
      CHECK(device_metric(space, learner, foxrl::LearnerMetrics::loss) > threshold);
      auto c = learner.guard().counters(space);
      CHECK(c.rejected == 1);
      CHECK(c.spikes == 1);
      CHECK(c.nonfinite == 0);
      CHECK(c.verdict == foxrl::GuardState::skip);

      learner.update(space, to_device(space, scaled(low)));
      CHECK(!(capture(space, learner.weights()) == before));
      c = learner.guard().counters(space);
      CHECK(c.rejected == 1);
      CHECK(c.consecutive_bad == 0);
      CHECK(c.verdict == foxrl::GuardState::apply);
    }
  }
}

TEMPLATE_TEST_CASE("rejections, restores and snapshots run on the context's instance", "[guard][audit]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  auto config = small_config(foxrl::DenseBackend::portable);
  config.guard.max_bad = 2;
  config.target_update_every = 2;
  foxrl::DqnLearner<Exec> learner(space, config);
  auto bad_host = foxrl::test::random_batch(32, 5, 3, 14);
  bad_host.states[0] = kNaN;
  const auto good = to_device(space, foxrl::test::random_batch(32, 5, 3, 15));
  const auto bad = to_device(space, bad_host);
  learner.update(space, good);
  learner.update(space, bad);
  learner.snapshot(space);
  learner.hard_target_update(space);
  context.fence("test::warm");
  const auto record = foxrl::audit([&] {
    learner.update(space, good);
    learner.snapshot(space);
    learner.update(space, bad);
    learner.update(space, bad);  // restore
    learner.hard_target_update(space);
    context.fence("test::done");
  });
  const auto id = foxrl::tools_device_id(space);
  for (const auto& a : record.allocations) UNSCOPED_INFO("allocated: " << a.label << " in " << a.space);
  CHECK(record.allocations.empty());
  CHECK(record.launches_off(id).empty());
  CHECK(record.fences_off(id).empty());
  const auto violations = record.violations(id);
  INFO("first: " << (violations.empty() ? "" : violations.front()));
  CHECK(violations.empty());
  CHECK(learner.guard().counters(space).restores == 1);
}
