// BcLearner: one update's gradient against central differences of the
// float64 cross-entropy (tests/support/reference_offline.hpp over the
// float64 MLP of reference_dqn.hpp), convergence to the dataset's action
// frequencies on a one-state dataset, a one-instance audit of an update,
// checkpoints and their errors, config and batch errors.

#include "agents/offline/bc_learner.hpp"
#include "agents/offline/cql_learner.hpp"
#include "agents/offline/iql_learner.hpp"
#include "core/execution_context.hpp"
#include "core/kokkos_tools_audit.hpp"
#include "io/safetensors.hpp"
#include "support/reference_dqn.hpp"
#include "support/reference_offline.hpp"
#include "support/reference_offline_learner.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

using foxrl::test::flat_host;
using foxrl::test::heads;
using foxrl::test::is_padding;
using foxrl::test::offline_columns;
using foxrl::test::ref_net;
using foxrl::test::RefBatch;
using foxrl::test::RefNet;
using foxrl::test::to_device;

/// Ragged sizes: obs 5, hidden {7, 3}, 3 actions; batches of up to 16 rows.
foxrl::BcLearnerConfig small_config(foxrl::DenseBackend backend) {
  foxrl::BcLearnerConfig c;
  c.obs_dim = 5;
  c.hidden = {7, 3};
  c.num_actions = 3;
  c.max_batch = 16;
  c.max_inference_batch = 20;
  c.seed = 43;
  c.dense_backend = backend;
  return c;
}

std::string temp_path(const std::string& stem, const char* space) {
  return (std::filesystem::temp_directory_path() /
          ("foxrl_" + stem + "_" + std::to_string(::getpid()) + "_" + space + ".safetensors"))
      .string();
}

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// Everything a BcLearner's checkpoint holds, on the host.
struct BcState {
  std::vector<float> params, m, v;
  std::int64_t step = 0, updates = 0;
  bool operator==(const BcState& o) const {
    return params == o.params && m == o.m && v == o.v && step == o.step && updates == o.updates;
  }
};

template <class Exec>
BcState state_of(const Exec& space, const foxrl::BcLearner<Exec>& l) {
  BcState s;
  s.params = flat_host(space, l.params().flat);
  s.m = flat_host(space, l.optimizer().m());
  s.v = flat_host(space, l.optimizer().v());
  s.step = foxrl::test::to_host(space, l.optimizer().step())();
  s.updates = l.updates();
  return s;
}

}  // namespace

TEMPLATE_TEST_CASE("BC update: the policy's gradient matches central differences of the float64 cross-entropy",
                   "[bc][grad]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  for (const auto backend : {foxrl::DenseBackend::portable, foxrl::DenseBackend::blas}) {
    foxrl::BcLearner<Exec> learner(space, small_config(backend));
    const auto& layout = learner.layout();
    REQUIRE(layout.head_kind == foxrl::HeadKind::plain);
    REQUIRE(layout.head_outputs() == 3);
    const auto p0 = flat_host(space, learner.params().flat);
    const int B = 13;  // fewer rows than max_batch
    const auto batch = foxrl::test::random_batch(B, 5, 3, 29);
    learner.update(space, to_device(space, batch));
    CHECK(learner.updates() == 1);

    const auto b = offline_columns(batch, 3);
    const RefNet net = ref_net(layout, p0);
    const auto ref = foxrl::test::ref_bc_loss(b, heads(net, batch.states, B));
    INFO("backend " << foxrl::to_string(backend));
    using M = foxrl::OfflineMetrics;
    const auto metrics = foxrl::test::to_host(space, learner.metrics());
    CHECK(metrics(M::bc_loss) == Approx(ref.loss).epsilon(1e-5));
    CHECK(metrics(M::bc_accuracy) == Approx(ref.accuracy).epsilon(1e-6));

    const auto grads = flat_host(space, learner.gradients());
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
      const double fd = (foxrl::test::ref_bc_loss(b, heads(plus, batch.states, B)).loss -
                         foxrl::test::ref_bc_loss(b, heads(minus, batch.states, B)).loss) /
                        (2 * h);
      worst = std::max(worst, std::abs(fd - grads[k]));
      scale = std::max(scale, std::abs(fd));
      norm_sq += fd * fd;
    }
    REQUIRE(scale > 0.0);
    // float32 backward against float64 differences: agreement to 1e-5 of
    // the largest gradient entry (float rounding is ~1e-7 of it; the
    // finite-difference error ~1e-9).
    CHECK(worst <= 1e-5 * scale);
    CHECK(padding_nonzero == 0);
    const auto om = foxrl::test::to_host(space, learner.optimizer_metrics());
    CHECK(om(foxrl::LearnerMetrics::grad_norm) == Approx(std::sqrt(norm_sq)).epsilon(1e-4));
    CHECK(flat_host(space, learner.params().flat) != p0);
    CHECK(foxrl::test::to_host(space, learner.optimizer().step())() == 1);
  }
}

TEMPLATE_TEST_CASE("BC on a one-state dataset converges to the action frequencies and picks their mode", "[bc][fixed]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  // One state, action j drawn counts[j] times: mu = (3, 7, 2, 4) / 16, mode 1.
  const int A = 4;
  const int counts[A] = {3, 7, 2, 4};
  const float obs[3] = {-0.3f, 0.8f, 1.1f};
  RefBatch data;
  data.obs_dim = 3;
  for (int a = 0; a < A; ++a)
    for (int c = 0; c < counts[a]; ++c) {
      data.states.insert(data.states.end(), obs, obs + 3);
      data.next_states.insert(data.next_states.end(), obs, obs + 3);
      data.actions.push_back(a);
      data.rewards.push_back(0.0f);
      data.discounts.push_back(0.0f);
      data.is_weights.push_back(1.0f);
      ++data.size;
    }
  foxrl::BcLearnerConfig c;
  c.obs_dim = 3;
  c.hidden = {16, 16};
  c.num_actions = A;
  c.max_batch = data.size;
  c.lr = 1e-3f;
  c.seed = 12;
  c.dense_backend = foxrl::DenseBackend::portable;
  foxrl::BcLearner<Exec> learner(space, c);
  const auto batch = to_device(space, data);
  for (int i = 0; i < 2000; ++i) learner.update(space, batch);

  // The policy at the state by the float64 forward of the learned weights.
  const RefNet net = ref_net(learner.layout(), flat_host(space, learner.params().flat));
  const std::vector<double> x(obs, obs + 3);
  const auto logits = net.head(x.data());
  const double lse = foxrl::test::ref_logsumexp(logits.data(), A);
  // Full-batch Adam at lr 1e-3 settles on the minimum softmax = mu to
  // float32 rounding (observed: within 3e-8 after 2000 updates); 1e-5
  // absolute on probabilities leaves room for another backend's summation
  // order.
  const double tol = 1e-5;
  for (int a = 0; a < A; ++a) {
    const double p = std::exp(logits[a] - lse);
    INFO("action " << a << ": learned " << p << ", frequency " << counts[a] / 16.0);
    CHECK(std::abs(p - counts[a] / 16.0) <= tol);
  }
  // The loss of the last update (taken just before its step) is the entropy
  // of mu at the minimum.
  double entropy = 0.0;
  for (int a = 0; a < A; ++a) entropy -= counts[a] / 16.0 * std::log(counts[a] / 16.0);
  CHECK(std::abs(foxrl::test::to_host(space, learner.metrics())(foxrl::OfflineMetrics::bc_loss) - entropy) <= tol);

  const auto states = to_device(space, std::vector<float>(obs, obs + 3), 1, 3);
  Kokkos::View<std::int32_t*, Mem> actions("foxrl::test::actions", 1);
  learner.greedy_actions(space, foxrl::ConstMatrix<Mem>(states), actions);
  CHECK(foxrl::test::to_host(space, actions)(0) == 1);
}

TEMPLATE_TEST_CASE("a BC update and greedy actions run on the context's instance", "[bc][audit]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  for (const auto backend : {foxrl::DenseBackend::portable, foxrl::DenseBackend::blas}) {
    foxrl::BcLearner<Exec> learner(space, small_config(backend));
    const auto batch = to_device(space, foxrl::test::random_batch(16, 5, 3, 1));
    Kokkos::View<std::int32_t*, Mem> actions("foxrl::test::actions", 20);
    auto states = foxrl::test::to_device(space, foxrl::test::random_batch(20, 5, 3, 2).states, 20, 5);
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

TEMPLATE_TEST_CASE("BC checkpoints: save then load restores the policy, Adam state and counter", "[bc][io]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const auto config = small_config(foxrl::DenseBackend::portable);
  foxrl::BcLearner<Exec> a(space, config);
  const auto batch = to_device(space, foxrl::test::random_batch(16, 5, 3, 4));
  for (int i = 0; i < 3; ++i) a.update(space, batch);
  const std::string path = temp_path("bc", Exec::name());
  a.save(space, path, {{"run", "test"}});

  auto other = config;
  other.seed = 1;
  foxrl::BcLearner<Exec> b(space, other);
  REQUIRE(!(state_of(space, b) == state_of(space, a)));
  const auto metadata = b.load(space, path);
  CHECK(metadata.at("run") == "test");
  CHECK(metadata.at("format") == "foxrl-bc");
  CHECK(state_of(space, b) == state_of(space, a));
  CHECK(b.updates() == 3);

  // Training on from the checkpoint equals training on without it, bit for bit.
  for (int i = 0; i < 2; ++i) {
    a.update(space, batch);
    b.update(space, batch);
  }
  CHECK(state_of(space, b) == state_of(space, a));
  std::remove(path.c_str());
}

TEMPLATE_TEST_CASE("BC load refuses a bad file with a UsageError naming it and changes nothing", "[bc][io]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const auto config = small_config(foxrl::DenseBackend::portable);
  const auto batch = to_device(space, foxrl::test::random_batch(16, 5, 3, 4));
  foxrl::BcLearner<Exec> learner(space, config);
  learner.update(space, batch);
  const auto before = state_of(space, learner);

  const auto refused = [&](const std::string& path, const std::string& why) {
    INFO(why);
    try {
      learner.load(space, path);
      FAIL("load accepted " << path);
    } catch (const foxrl::UsageError& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(path) != std::string::npos);
    }
    CHECK(state_of(space, learner) == before);
  };

  // Another architecture.
  {
    auto deeper = config;
    deeper.hidden = {7, 3, 3};
    foxrl::BcLearner<Exec> d(space, deeper);
    const auto path = temp_path("bc_deeper", Exec::name());
    d.save(space, path);
    refused(path, "another hidden layer");
    std::remove(path.c_str());
  }
  // A truncated and a corrupted copy of a good file.
  {
    foxrl::BcLearner<Exec> good(space, config);
    good.update(space, batch);
    const auto path = temp_path("bc_good", Exec::name());
    good.save(space, path);
    const auto bytes = read_bytes(path);
    REQUIRE(bytes.size() > 64);
    const auto cut = temp_path("bc_truncated", Exec::name());
    write_bytes(cut, std::vector<char>(bytes.begin(), bytes.end() - 9));
    refused(cut, "truncated");
    auto flipped = bytes;
    flipped[flipped.size() - 5] ^= 0x10;  // inside the last tensor's data
    const auto bad = temp_path("bc_corrupt", Exec::name());
    write_bytes(bad, flipped);
    refused(bad, "corrupted");
    // The right tensors under another learner's format: refused by the
    // format alone, and the message says so.
    auto file = foxrl::safetensors::read(path);
    file.metadata["format"] = "foxrl-cql";
    const auto relabelled = temp_path("bc_relabelled", Exec::name());
    foxrl::safetensors::write(relabelled, file);
    refused(relabelled, "another format");
    CHECK_THROWS_WITH(learner.load(space, relabelled), Catch::Contains("'format' is 'foxrl-cql'"));
    for (const auto& p : {path, cut, bad, relabelled}) std::remove(p.c_str());
  }
  // Checkpoints of the other offline learners, same shapes.
  {
    foxrl::IqlLearnerConfig ic;
    ic.obs_dim = config.obs_dim;
    ic.hidden = config.hidden;
    ic.num_actions = config.num_actions;
    ic.max_batch = config.max_batch;
    foxrl::IqlLearner<Exec> iql(space, ic);
    const auto path = temp_path("bc_from_iql", Exec::name());
    iql.save(space, path);
    refused(path, "an IQL checkpoint");
    std::remove(path.c_str());
  }
  {
    foxrl::CqlLearnerConfig cc;
    cc.obs_dim = config.obs_dim;
    cc.hidden = config.hidden;
    cc.num_actions = config.num_actions;
    cc.max_batch = config.max_batch;
    foxrl::CqlLearner<Exec> cql(space, cc);
    const auto path = temp_path("bc_from_cql", Exec::name());
    cql.save(space, path);
    refused(path, "a CQL checkpoint");
    std::remove(path.c_str());
  }
  refused(temp_path("bc_missing", Exec::name()), "a missing file");
}

TEST_CASE("BcLearnerConfig::validate names each bad field", "[bc][config]") {
  const auto base = small_config(foxrl::DenseBackend::portable);
  REQUIRE_NOTHROW(base.validate());
  struct Bad {
    const char* field;
    std::function<void(foxrl::BcLearnerConfig&)> set;
  };
  const Bad cases[] = {
      {"obs_dim", [](auto& c) { c.obs_dim = 0; }},
      {"hidden size 1",
       [](auto& c) {
         c.hidden = {4, 0};
       }},
      {"num_actions", [](auto& c) { c.num_actions = 0; }},
      {"max_batch", [](auto& c) { c.max_batch = 0; }},
      {"max_inference_batch", [](auto& c) { c.max_inference_batch = -1; }},
      {"lr", [](auto& c) { c.lr = -1e-3f; }},
      {"beta1", [](auto& c) { c.beta1 = -0.1f; }},
      {"beta2", [](auto& c) { c.beta2 = 1.0f; }},
      {"eps", [](auto& c) { c.eps = -1.0f; }},
      {"max_grad_norm", [](auto& c) { c.max_grad_norm = std::nanf(""); }},
  };
  for (const auto& bad : cases) {
    auto c = base;
    bad.set(c);
    INFO(bad.field);
    CHECK_THROWS_AS(c.validate(), foxrl::UsageError);
    CHECK_THROWS_WITH(c.validate(), Catch::Contains(bad.field) && Catch::Contains("BcLearnerConfig"));
  }
}

TEMPLATE_TEST_CASE("BcLearner refuses a batch larger than max_batch, of another obs_dim, or too many inference rows",
                   "[bc][errors]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  foxrl::BcLearner<Exec> learner(space, small_config(foxrl::DenseBackend::portable));
  CHECK(learner.max_inference_rows() == 20);
  CHECK_THROWS_AS(learner.update(space, to_device(space, foxrl::test::random_batch(17, 5, 3, 1))), foxrl::LogicError);
  CHECK_THROWS_AS(learner.update(space, to_device(space, foxrl::test::random_batch(8, 4, 3, 1))), foxrl::LogicError);
  CHECK(learner.updates() == 0);
  auto states = foxrl::test::to_device(space, foxrl::test::random_batch(21, 5, 3, 2).states, 21, 5);
  Kokkos::View<std::int32_t*, Mem> actions("foxrl::test::actions", 21);
  CHECK_THROWS_AS(learner.greedy_actions(space, foxrl::ConstMatrix<Mem>(states), actions), foxrl::LogicError);
}
