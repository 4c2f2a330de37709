// The collector's one-team record of a step (kernels::record_step: the
// episode statistics and the n-step record in one launch) against its twin,
// the two launches of their own (EpisodeStats::record, then
// NStepAccumulator::push), bit for bit, over random steps with
// terminations, truncations and more episode ends in one step than the
// statistics' ring holds.
#include "collect/nstep_accumulator.hpp"
#include "envs/episode_stats.hpp"
#include "kernels/collect/record_step.hpp"
#include "support/device_copy.hpp"
#include "support/element_bits.hpp"
#include "support/test_spaces.hpp"
#include "views/collect/transition_batch.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using foxrl::test::bits_of;
using foxrl::test::device_bits;
using foxrl::test::to_device;
using foxrl::test::to_host;

/// Team work after the record: copies the transitions' returns the record
/// emitted (all of them, so it sees the whole team's writes) and the
/// observations, using its team scratch on the way.
template <class Exec>
struct CopyAfterRecord {
  using Mem = typename Exec::memory_space;
  using Scratch = Kokkos::View<float*, typename Exec::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  foxrl::TransitionBatch<Mem> from;
  Kokkos::View<float*, Mem> rewards;
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> observations;
  std::size_t scratch_bytes() const { return Scratch::shmem_size(from.rewards.extent(0)); }
  int team_threads() const { return 128; }
  template <class Member>
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    const int n = static_cast<int>(from.rewards.extent(0));
    const int dim = static_cast<int>(from.observations.extent(1));
    const Scratch staged(team.team_scratch(0), std::size_t(n));
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](const int i) { staged(i) = from.rewards(i); });
    team.team_barrier();
    // Reversed: each thread copies rows another thread staged.
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](const int i) { rewards(i) = staged(n - 1 - i); });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n * dim),
                         [&](const int k) { observations(k / dim, k % dim) = from.observations(k / dim, k % dim); });
  }
};

}  // namespace

TEMPLATE_TEST_CASE("work after the record sees every transition the record emitted", "[collect][record_step]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  Exec space;
  // 8 envs: inside the one-team record; 4,096: a launch of its own after
  // the two record launches.
  const int envs = GENERATE(8, 4096);
  const int dim = 4, n = 1;
  INFO(envs << " envs");
  foxrl::EpisodeStats<Exec> stats(space, envs);
  foxrl::NStepAccumulator<Exec> nstep(space, envs, dim, n, 0.9f);
  std::mt19937 rng(5u);
  std::uniform_real_distribution<float> value(-2.f, 2.f);
  for (int t = 0; t < 3; ++t) {
    INFO("step " << t);
    std::vector<float> obs(std::size_t(envs) * dim), next(std::size_t(envs) * dim), rewards(envs);
    for (auto& v : obs) v = value(rng);
    for (auto& v : next) v = value(rng);
    for (auto& v : rewards) v = value(rng);
    const auto d_obs = to_device(space, obs, envs, dim);
    const auto d_next = to_device(space, next, envs, dim);
    const auto d_rewards = to_device(space, rewards);
    const auto d_actions = to_device(space, std::vector<std::int32_t>(envs, 1));
    const auto d_term = to_device(space, std::vector<std::uint8_t>(envs, t == 1 ? 1 : 0));
    const auto d_trunc = to_device(space, std::vector<std::uint8_t>(envs, 0));
    const typename foxrl::NStepAccumulator<Exec>::StepRecord step{d_obs, d_actions, d_rewards, d_term, d_trunc, d_next};
    CopyAfterRecord<Exec> after;
    after.from = nstep.output();
    after.rewards = Kokkos::View<float*, Mem>("foxrl::test::after_rewards", envs);
    after.observations = Kokkos::View<float**, Kokkos::LayoutRight, Mem>("foxrl::test::after_obs", envs, dim);
    const auto stats_step = stats.step_of(d_rewards, d_term, d_trunc);
    const bool emitted =
        nstep.push_with(step, foxrl::kernels::CounterRead::host(nstep.steps_pushed()),
                        [&](const auto& record) { foxrl::kernels::record_step(space, stats_step, record, after); });
    REQUIRE(emitted);  // n = 1: every step
    const auto out_rewards = to_host(space, nstep.output().rewards);
    const auto copied = to_host(space, after.rewards);
    int wrong = 0;
    for (int i = 0; i < envs; ++i) wrong += copied(envs - 1 - i) != out_rewards(i) ? 1 : 0;
    CHECK(wrong == 0);
    // The returns of a 1-step window are the step's rewards.
    CHECK(bits_of(out_rewards) == bits_of(to_host(space, d_rewards)));
    CHECK(device_bits(space, after.observations) == device_bits(space, nstep.output().observations));
    CHECK(device_bits(space, after.observations) == bits_of(to_host(space, d_obs)));
  }
}

TEST_CASE("record_step_in_one_team takes up to 2,048 envs and 8,192 elements", "[collect][record_step]") {
  CHECK(foxrl::kernels::record_step_in_one_team(8, 4));
  CHECK(foxrl::kernels::record_step_in_one_team(2048, 4));
  CHECK(foxrl::kernels::record_step_in_one_team(126, 65));
  CHECK_FALSE(foxrl::kernels::record_step_in_one_team(127, 65));  // 8,255 elements
  CHECK_FALSE(foxrl::kernels::record_step_in_one_team(2049, 1));
  CHECK_FALSE(foxrl::kernels::record_step_in_one_team(4096, 4));
}

TEST_CASE("record_step_across_teams takes more envs than one team, with up to 8 components", "[collect][record_step]") {
  CHECK(foxrl::kernels::record_step_across_teams(2049, 1));
  CHECK(foxrl::kernels::record_step_across_teams(4096, 4));
  CHECK(foxrl::kernels::record_step_across_teams(4096, 8));
  CHECK_FALSE(foxrl::kernels::record_step_across_teams(4096, 9));
  CHECK_FALSE(foxrl::kernels::record_step_across_teams(4096, 65));  // the market: two launches
  CHECK_FALSE(foxrl::kernels::record_step_across_teams(2048, 4));   // one team
}

TEMPLATE_TEST_CASE("the record of a step in one launch equals the statistics' and the n-step launches, bit for bit",
                   "[collect][record_step]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  Exec space;
  struct Shape {
    int envs, dim, n;
  };
  // One team: 8 x 4: cartpole-learn; 2048 x 4: the most envs and elements
  // one team takes; 126 x 65: a market observation; 300 x 1 with n = 1:
  // every step emits and more episodes than the ring holds end in one step.
  // Across teams: 4096 x 4: cartpole-throughput; 2500 x 3 with n = 1: a
  // last team of 68 envs.
  const Shape shape = GENERATE(Shape{8, 4, 3}, Shape{2048, 4, 3}, Shape{126, 65, 5}, Shape{300, 1, 1},
                               Shape{4096, 4, 3}, Shape{2500, 3, 1});
  INFO(shape.envs << " envs, " << shape.dim << " components, n = " << shape.n);
  REQUIRE((foxrl::kernels::record_step_in_one_team(shape.envs, shape.dim) ||
           foxrl::kernels::record_step_across_teams(shape.envs, shape.dim)));
  const float gamma = 0.97f;

  foxrl::EpisodeStats<Exec> stats_twin(space, shape.envs), stats_fused(space, shape.envs);
  foxrl::NStepAccumulator<Exec> nstep_twin(space, shape.envs, shape.dim, shape.n, gamma),
      nstep_fused(space, shape.envs, shape.dim, shape.n, gamma);

  // The rings are allocated uninitialised; rows not yet written must not
  // differ between the twins.
  for (const auto* ring : {&nstep_twin.ring(), &nstep_fused.ring()}) {
    Kokkos::deep_copy(space, ring->observations, 0.0f);
    Kokkos::deep_copy(space, ring->next_observations, 0.0f);
    Kokkos::deep_copy(space, ring->actions, 0);
    Kokkos::deep_copy(space, ring->rewards, 0.0f);
    Kokkos::deep_copy(space, ring->episode_end, std::uint8_t(0));
  }
  std::mt19937 rng(17u + static_cast<std::uint32_t>(shape.envs));
  std::uniform_real_distribution<float> value(-2.f, 2.f);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  const int steps = 3 * shape.n + 7;
  int emitted = 0, episodes_ended = 0;
  for (int t = 0; t < steps; ++t) {
    INFO("step " << t);
    std::vector<float> obs(shape.envs * shape.dim), next(shape.envs * shape.dim), rewards(shape.envs);
    std::vector<std::int32_t> actions(shape.envs);
    std::vector<std::uint8_t> terminated(shape.envs, 0), truncated(shape.envs, 0);
    for (auto& v : obs) v = value(rng);
    for (auto& v : next) v = value(rng);
    // Step 5: every env ends its episode at once (hundreds for the ring of 100).
    for (int e = 0; e < shape.envs; ++e) {
      rewards[e] = value(rng);
      actions[e] = static_cast<std::int32_t>(rng() % 3);
      const double c = t == 5 ? 0.0 : coin(rng);
      if (c < 0.1)
        terminated[e] = 1;
      else if (c < 0.15)
        truncated[e] = 1;
      episodes_ended += terminated[e] + truncated[e];
    }
    const auto d_obs = to_device(space, obs, shape.envs, shape.dim);
    const auto d_next = to_device(space, next, shape.envs, shape.dim);
    const auto d_rewards = to_device(space, rewards);
    const auto d_actions = to_device(space, actions);
    const auto d_term = to_device(space, terminated);
    const auto d_trunc = to_device(space, truncated);
    const typename foxrl::NStepAccumulator<Exec>::StepRecord step{d_obs, d_actions, d_rewards, d_term, d_trunc, d_next};

    stats_twin.record(space, d_rewards, d_term, d_trunc);
    const bool emit_twin = nstep_twin.push(space, step);
    const auto stats_step = stats_fused.step_of(d_rewards, d_term, d_trunc);
    const bool emit_fused =
        nstep_fused.push_with(step, foxrl::kernels::CounterRead::host(nstep_fused.steps_pushed()),
                              [&](const auto& record) { foxrl::kernels::record_step(space, stats_step, record); });
    REQUIRE(emit_twin == emit_fused);

    CHECK(device_bits(space, stats_fused.running()) == device_bits(space, stats_twin.running()));
    CHECK(device_bits(space, stats_fused.ring()) == device_bits(space, stats_twin.ring()));
    CHECK(to_host(space, stats_fused.count())() == to_host(space, stats_twin.count())());
    const auto& ring_t = nstep_twin.ring();
    const auto& ring_f = nstep_fused.ring();
    CHECK(device_bits(space, ring_f.observations) == device_bits(space, ring_t.observations));
    CHECK(device_bits(space, ring_f.next_observations) == device_bits(space, ring_t.next_observations));
    CHECK(device_bits(space, ring_f.actions) == device_bits(space, ring_t.actions));
    CHECK(device_bits(space, ring_f.rewards) == device_bits(space, ring_t.rewards));
    CHECK(device_bits(space, ring_f.episode_end) == device_bits(space, ring_t.episode_end));
    if (!emit_twin) continue;
    ++emitted;
    const auto& out_t = nstep_twin.output();
    const auto& out_f = nstep_fused.output();
    CHECK(device_bits(space, out_f.observations) == device_bits(space, out_t.observations));
    CHECK(device_bits(space, out_f.next_observations) == device_bits(space, out_t.next_observations));
    CHECK(device_bits(space, out_f.actions) == device_bits(space, out_t.actions));
    CHECK(device_bits(space, out_f.rewards) == device_bits(space, out_t.rewards));
    CHECK(device_bits(space, out_f.discounts) == device_bits(space, out_t.discounts));
    CHECK(device_bits(space, out_f.next_is_successor) == device_bits(space, out_t.next_is_successor));
  }
  // The steps exercised what they are for.
  CHECK(emitted == steps - shape.n + 1);
  CHECK(episodes_ended > shape.envs);
  CHECK(to_host(space, stats_twin.count())() == episodes_ended);
}
