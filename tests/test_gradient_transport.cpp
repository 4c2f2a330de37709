// make_gradient_reducer: NCCL on the run's stream where this build has it
// and the Views live on the GPU, MPI's host path elsewhere. With one rank
// either transport's mean is its input, bit for bit, so a learner updating
// through a reducer must match one updating without: that pins down that
// the NCCL path reduces the right buffers, in place, in stream order (a
// reduction racing the optimizer, or reading stale gradients, would show as
// different weights).
#include "agents/dqn/dqn_learner.hpp"
#include "core/error.hpp"
#include "core/execution_context.hpp"
#include "dist/communicator.hpp"
#include "dist/gradient_reducer.hpp"
#include "dist/reduction_transport.hpp"
#include "support/device_copy.hpp"
#include "support/reference_dqn.hpp"
#include "support/test_spaces.hpp"
#include "views/agents/dqn/learner_metrics.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

template <class Exec, class View>
std::vector<float> host_floats(const Exec& space, const View& v) {
  const auto h = foxrl::test::to_host(space, v);
  return std::vector<float>(h.data(), h.data() + h.extent(0));
}

/// Two ranks that gather this rank's word and another one's: the same word
/// (both on one GPU) or a different one.
class TwoRanks final : public foxrl::dist::Communicator {
 public:
  explicit TwoRanks(bool same_gpu) : same_gpu_(same_gpu) {}
  int rank() const override { return 0; }
  int size() const override { return 2; }
  int local_rank() const override { return 0; }
  std::string transport() const override { return "two test ranks"; }
  void sum(float*, std::size_t) override {}
  void sum(double*, std::size_t) override {}
  void max(double*, std::size_t) override {}
  void broadcast(std::uint64_t*, std::size_t, int) override {}
  void broadcast(std::string&, int) override {}
  std::vector<std::uint64_t> all_gather(std::uint64_t value) override {
    return {value, same_gpu_ ? value : value ^ 1u};
  }
  void barrier() override {}
  [[noreturn]] void abort(int exit_code) override { std::_Exit(exit_code); }

 private:
  bool same_gpu_;
};

}  // namespace

TEST_CASE("ranks on one GPU are told apart from ranks on their own GPUs", "[dist]") {
  TwoRanks same(true), apart(false);
  CHECK(foxrl::dist::ranks_share_a_device(same, 0));
  CHECK_FALSE(foxrl::dist::ranks_share_a_device(apart, 0));
  CHECK_FALSE(foxrl::dist::ranks_share_a_device(*foxrl::dist::single_process(), 3));
}

TEST_CASE("FOXRL_ALL_REDUCE chooses the gradient transport", "[dist]") {
  const char* saved = std::getenv("FOXRL_ALL_REDUCE");
  const std::string restore = saved == nullptr ? "" : saved;
  unsetenv("FOXRL_ALL_REDUCE");
  CHECK(foxrl::reduction_transport_from_environment() == foxrl::ReductionTransport::automatic);
  setenv("FOXRL_ALL_REDUCE", "auto", 1);
  CHECK(foxrl::reduction_transport_from_environment() == foxrl::ReductionTransport::automatic);
  setenv("FOXRL_ALL_REDUCE", "mpi", 1);
  CHECK(foxrl::reduction_transport_from_environment() == foxrl::ReductionTransport::host);
  setenv("FOXRL_ALL_REDUCE", "nccl", 1);
  CHECK(foxrl::reduction_transport_from_environment() == foxrl::ReductionTransport::nccl);
  setenv("FOXRL_ALL_REDUCE", "gloo", 1);
  CHECK_THROWS_WITH(foxrl::reduction_transport_from_environment(), Catch::Contains("FOXRL_ALL_REDUCE") &&
                                                                       Catch::Contains("gloo") &&
                                                                       Catch::Contains("auto, mpi or nccl"));
  if (saved == nullptr)
    unsetenv("FOXRL_ALL_REDUCE");
  else
    setenv("FOXRL_ALL_REDUCE", restore.c_str(), 1);
}

TEST_CASE("a rank's GPU is its rank on the node modulo the node's GPUs", "[dist]") {
  CHECK(foxrl::dist::device_for_local_rank(0, 1) == 0);
  CHECK(foxrl::dist::device_for_local_rank(0, 8) == 0);
  CHECK(foxrl::dist::device_for_local_rank(3, 8) == 3);
  CHECK(foxrl::dist::device_for_local_rank(7, 8) == 7);
  CHECK(foxrl::dist::device_for_local_rank(9, 8) == 1);  // more ranks than GPUs: shared, round robin
  CHECK(foxrl::dist::device_for_local_rank(5, 4) == 1);
  CHECK_THROWS_AS(foxrl::dist::device_for_local_rank(0, 0), foxrl::UsageError);
  CHECK_THROWS_AS(foxrl::dist::device_for_local_rank(-1, 2), foxrl::LogicError);
}

TEMPLATE_TEST_CASE("make_gradient_reducer picks NCCL on the GPU where built in, else the host path", "[dist]",
                   FOXRL_TEST_SPACES) {
  using Space = TestType;
  foxrl::ExecutionContext<Space> context(0);
  const auto& space = context.space();
  std::vector<float> grads, metrics = {0.75f, -3.5f, 1.25f, 9.0f};
  for (int i = 0; i < 777; ++i) grads.push_back(std::sin(0.37f * float(i)) * std::pow(2.0f, float(i % 17 - 8)));
  const auto g = foxrl::test::to_device<Space>(space, grads);
  const auto m = foxrl::test::to_device<Space>(space, metrics);
  const auto comm = foxrl::dist::single_process();

  const auto automatic = foxrl::make_gradient_reducer<Space>(comm, g, m, 3);
  const auto host = foxrl::make_gradient_reducer<Space>(comm, g, m, 3, foxrl::ReductionTransport::host);
  CHECK(host->transport() == "single process on host buffers");
  if (foxrl::nccl_reduction_available<Space>()) {
    INFO(automatic->transport());
    CHECK(automatic->transport().find("NCCL ") == 0);
    CHECK(automatic->transport().find("1 rank on CUDA device") != std::string::npos);
  } else {
    CHECK(automatic->transport() == host->transport());
    CHECK_THROWS_AS(foxrl::make_gradient_reducer<Space>(comm, g, m, 3, foxrl::ReductionTransport::nccl),
                    foxrl::UsageError);
  }
  // One rank: the mean of one copy is that copy, bit for bit, in either path.
  for (auto* reducer : {automatic.get(), host.get()}) {
    INFO(reducer->transport());
    reducer->mean(space, g, m);
    CHECK(same_bits(host_floats(space, g), grads));
    CHECK(same_bits(host_floats(space, m), metrics));
  }
  const auto shorter = foxrl::test::to_device<Space>(space, std::vector<float>(grads.size() - 1, 1.0f));
  CHECK_THROWS_AS(automatic->mean(space, shorter, m), foxrl::LogicError);
}

TEMPLATE_TEST_CASE("one-rank training through the gradient reducer equals training without it, bit for bit",
                   "[dist][learner]", FOXRL_TEST_SPACES) {
  using Space = TestType;
  using Mem = typename Space::memory_space;
  foxrl::ExecutionContext<Space> context(0);
  const auto& space = context.space();
  foxrl::DqnLearnerConfig cfg;
  cfg.obs_dim = 7;
  cfg.hidden = {33, 20};  // ragged: no shape is a multiple of a warp or a tile
  cfg.num_actions = 3;
  cfg.max_batch = 50;
  cfg.seed = 21;
  cfg.lr = 3e-3f;
  cfg.max_grad_norm = 0.5f;  // clipping active: the norm reads the reduced gradients
  cfg.target_update_every = 2;
  cfg.dense_backend = foxrl::DenseBackend::blas;
  // A hooked update runs the launch sequence; so must the plain one here
  // (the fused update agrees with it to rounding, not bit for bit).
  cfg.fused_update = false;
  foxrl::DqnLearner<Space> reduced(space, cfg), plain(space, cfg);
  const auto reducer = foxrl::make_gradient_reducer<Space>(foxrl::dist::single_process(), reduced.gradients(),
                                                           reduced.metrics(), foxrl::LearnerMetrics::grad_norm);
  INFO(reducer->transport());
  int calls = 0;
  reduced.set_gradient_hook(
      [&](const Space& s, const foxrl::FlatParams<Mem>& grads, const Kokkos::View<float*, Mem>& metrics) {
        ++calls;
        reducer->mean(s, grads, metrics);
      });
  for (int u = 0; u < 6; ++u) {
    const auto batch = foxrl::test::to_device(space, foxrl::test::random_batch(50 - u, 7, 3, 100 + u));
    reduced.update(space, batch);
    plain.update(space, batch);
  }
  CHECK(calls == 6);
  const auto a = reduced.weights(), b = plain.weights();
  CHECK(same_bits(host_floats(space, a.online), host_floats(space, b.online)));
  CHECK(same_bits(host_floats(space, a.target), host_floats(space, b.target)));
  CHECK(same_bits(host_floats(space, a.adam_m), host_floats(space, b.adam_m)));
  CHECK(same_bits(host_floats(space, a.adam_v), host_floats(space, b.adam_v)));
  CHECK(same_bits(host_floats(space, reduced.metrics()), host_floats(space, plain.metrics())));
  // And the weights moved: the comparison is not between two untouched copies.
  foxrl::DqnLearner<Space> fresh(space, cfg);
  CHECK_FALSE(same_bits(host_floats(space, a.online), host_floats(space, fresh.weights().online)));
}
