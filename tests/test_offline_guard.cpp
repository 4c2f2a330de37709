// The offline learners' training guards (one per network, src/agents/
// offline/offline_guards.hpp): a step whose own loss is non-finite or
// spikes is rejected and leaves that network's weights, target, Adam
// moments and step counter as they were, bit for bit, while the networks
// whose losses are healthy step; max_bad consecutive rejections restore
// the last snapshot and scale the learning rate; a healthy update is
// unchanged by the guard (the float64-reference tests of each learner
// cover its arithmetic).

#include "agents/offline/bc_learner.hpp"
#include "agents/offline/cql_learner.hpp"
#include "agents/offline/iql_learner.hpp"
#include "core/execution_context.hpp"
#include "io/state_archive.hpp"
#include "support/reference_dqn.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

using foxrl::test::flat_host;
using foxrl::test::random_batch;
using foxrl::test::RefBatch;
using foxrl::test::to_device;

/// Everything guard k of a learner protects, on the host.
struct NetworkState {
  std::vector<float> params, target, m, v;
  std::int64_t step = 0;
  bool operator==(const NetworkState& o) const {
    return params == o.params && target == o.target && m == o.m && v == o.v && step == o.step;
  }
};

template <class Exec>
NetworkState capture(const Exec& space, const foxrl::FlatParams<typename Exec::memory_space>& params,
                     const foxrl::FlatParams<typename Exec::memory_space>* target,
                     const foxrl::AdamOptimizer<Exec>& adam) {
  NetworkState s;
  s.params = flat_host(space, params);
  if (target != nullptr) s.target = flat_host(space, *target);
  s.m = flat_host(space, adam.m());
  s.v = flat_host(space, adam.v());
  const auto step = foxrl::test::to_host(space, adam.step());
  s.step = step();
  return s;
}

/// The guarded state of every network of `learner`, in its guards' order.
template <class Exec>
std::vector<NetworkState> networks(const Exec& space, const foxrl::IqlLearner<Exec>& l) {
  using foxrl::IqlNetwork;
  std::vector<NetworkState> out;
  out.push_back(capture(space, l.params(IqlNetwork::value).flat, nullptr, l.optimizer(IqlNetwork::value)));
  out.push_back(capture(space, l.params(IqlNetwork::q1).flat, &l.target(0).params().flat, l.optimizer(IqlNetwork::q1)));
  out.push_back(capture(space, l.params(IqlNetwork::q2).flat, &l.target(1).params().flat, l.optimizer(IqlNetwork::q2)));
  out.push_back(capture(space, l.params(IqlNetwork::policy).flat, nullptr, l.optimizer(IqlNetwork::policy)));
  return out;
}
template <class Exec>
std::vector<NetworkState> networks(const Exec& space, const foxrl::CqlLearner<Exec>& l) {
  return {capture(space, l.params().flat, &l.target().params().flat, l.optimizer())};
}
template <class Exec>
std::vector<NetworkState> networks(const Exec& space, const foxrl::BcLearner<Exec>& l) {
  return {capture(space, l.params().flat, nullptr, l.optimizer())};
}

template <class Config>
Config small_config() {
  Config c;
  c.obs_dim = 5;
  c.hidden = {7, 3};
  c.num_actions = 3;
  c.max_batch = 16;
  c.seed = 17;
  c.guard.max_bad = 3;
  c.guard.lr_decay = 0.5f;
  return c;
}

RefBatch healthy_batch(std::uint32_t seed) { return random_batch(16, 5, 3, seed); }

/// A batch with one NaN reward: it breaks the losses that read rewards.
RefBatch nan_reward_batch(std::uint32_t seed) {
  RefBatch b = healthy_batch(seed);
  b.rewards[3] = std::numeric_limits<float>::quiet_NaN();
  return b;
}

/// A batch with one NaN state: it breaks every network's loss.
RefBatch nan_state_batch(std::uint32_t seed) {
  RefBatch b = healthy_batch(seed);
  b.states[7] = std::numeric_limits<float>::quiet_NaN();
  return b;
}

/// Rewards scaled by 1e6: a loss spike for the networks that read rewards.
RefBatch spike_batch(std::uint32_t seed) {
  RefBatch b = healthy_batch(seed);
  for (auto& r : b.rewards) r *= 1e6f;
  return b;
}

/// Which networks read rewards (their losses break on a NaN reward).
template <class Learner>
std::vector<bool> reads_rewards() {
  if constexpr (std::is_same_v<Learner, foxrl::IqlLearner<typename Learner::execution_space>>)
    return {false, true, true, false};  // value, q1, q2, policy
  else if constexpr (std::is_same_v<Learner, foxrl::CqlLearner<typename Learner::execution_space>>)
    return {true};
  else
    return {false};  // BC
}

template <class Learner, class Config>
void check_guard(const Config& config) {
  using Exec = typename Learner::execution_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  Learner learner(space, config);
  const std::vector<bool> rewards = reads_rewards<Learner>();
  const int N = static_cast<int>(rewards.size());
  REQUIRE(learner.guards().size() == N);

  // Enough healthy updates to fill the loss windows past min_losses, then
  // the restore point.
  for (int u = 0; u < foxrl::GuardState::min_losses + 2; ++u)
    learner.update(space, to_device(space, healthy_batch(100 + u)));
  learner.snapshot(space);
  CHECK(learner.guard_counters(space).rejected == 0);

  SECTION("a non-finite state rejects every network's step, bit for bit") {
    const auto before = networks(space, learner);
    learner.update(space, to_device(space, nan_state_batch(7)));
    const auto after = networks(space, learner);
    for (int k = 0; k < N; ++k) {
      INFO("network " << learner.guards().name(k));
      CHECK(after[k] == before[k]);
    }
    const auto c = learner.guard_counters(space);
    CHECK(c.rejected == N);
    CHECK(c.nonfinite == N);
    CHECK(c.restores == 0);
  }

  SECTION("a non-finite reward rejects only the networks whose loss reads it") {
    const auto before = networks(space, learner);
    learner.update(space, to_device(space, nan_reward_batch(8)));
    const auto after = networks(space, learner);
    int rejected = 0;
    for (int k = 0; k < N; ++k) {
      INFO("network " << learner.guards().name(k));
      if (rewards[k]) {
        CHECK(after[k] == before[k]);
        ++rejected;
      } else {
        CHECK(after[k].params != before[k].params);  // stepped
        CHECK(after[k].step == before[k].step + 1);
      }
    }
    CHECK(learner.guard_counters(space).rejected == rejected);
  }

  if (rewards[0] || N > 1) {
    SECTION("a loss spike is rejected by the networks whose loss it inflates") {
      const auto before = networks(space, learner);
      learner.update(space, to_device(space, spike_batch(9)));
      const auto after = networks(space, learner);
      const auto c = learner.guard_counters(space);
      int rejected = 0;
      for (int k = 0; k < N; ++k)
        if (rewards[k]) {
          INFO("network " << learner.guards().name(k));
          CHECK(after[k] == before[k]);
          ++rejected;
        }
      CHECK(c.spikes == rejected);
      CHECK(c.nonfinite == 0);
    }
  }

  SECTION("max_bad consecutive rejections restore the snapshot and halve the learning rate") {
    const auto snapshot = networks(space, learner);
    learner.update(space, to_device(space, healthy_batch(11)));  // moves away from the snapshot
    for (int u = 0; u < config.guard.max_bad; ++u) learner.update(space, to_device(space, nan_state_batch(20 + u)));
    const auto restored = networks(space, learner);
    for (int k = 0; k < N; ++k) {
      INFO("network " << learner.guards().name(k));
      CHECK(restored[k] == snapshot[k]);
    }
    const auto c = learner.guard_counters(space);
    CHECK(c.restores == N);
    CHECK(c.lr_scale == 0.5);
    // Training goes on from the restored state.
    learner.update(space, to_device(space, healthy_batch(30)));
    CHECK(networks(space, learner)[0].params != snapshot[0].params);
  }

  SECTION("the guards' state survives a file round trip, checked on load") {
    learner.update(space, to_device(space, nan_state_batch(40)));
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("foxrl_offline_guard_" + std::to_string(::getpid()) + ".safetensors"))
                                 .string();
    {
      foxrl::StateWriter<Exec> w;
      learner.visit_guard_state(w, space);
      w.write(space, path);
    }
    Learner other(space, config);
    foxrl::StateReader<Exec> r(path);
    other.visit_guard_state(r, space);
    r.apply(space);
    const auto a = learner.guard_counters(space), b = other.guard_counters(space);
    CHECK(a.rejected == b.rejected);
    CHECK(a.nonfinite == b.nonfinite);
    CHECK(a.snapshots == b.snapshots);
    for (int k = 0; k < N; ++k) {
      const auto sa = flat_host(space, learner.guards().guard(k).snapshot_buffers()[0].view);
      const auto sb = flat_host(space, other.guards().guard(k).snapshot_buffers()[0].view);
      CHECK(sa == sb);
    }
    std::filesystem::remove(path);
  }
}

}  // namespace

TEMPLATE_TEST_CASE("IQL's four guards judge each network's own loss", "[offline][guard][iql]", FOXRL_TEST_SPACES) {
  check_guard<foxrl::IqlLearner<TestType>>(small_config<foxrl::IqlLearnerConfig>());
}

TEMPLATE_TEST_CASE("CQL's guard rejects a bad step and restores after max_bad", "[offline][guard][cql]",
                   FOXRL_TEST_SPACES) {
  auto c = small_config<foxrl::CqlLearnerConfig>();
  c.target_update_every = 0;
  c.polyak_tau = 0.01f;
  check_guard<foxrl::CqlLearner<TestType>>(c);
}

TEMPLATE_TEST_CASE("BC's guard rejects a bad step and restores after max_bad", "[offline][guard][bc]",
                   FOXRL_TEST_SPACES) {
  check_guard<foxrl::BcLearner<TestType>>(small_config<foxrl::BcLearnerConfig>());
}
