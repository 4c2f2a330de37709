// The one-step record aliased to the step's buffers
// (NStepAccumulator::alias_one_step: the ring's row and the output's
// observations, next observations and actions are the step's own Views, the
// record writes each env's flags, reward and discount in the episode
// statistics' launch) against the copying record of n = 1 in launches of its
// own, bit for bit: the statistics, the ring (what a trainer state saves)
// and the transitions, over random steps with terminations, truncations and
// rewards of -0 (which the window's sum turns into +0).
#include "collect/nstep_accumulator.hpp"
#include "envs/episode_stats.hpp"
#include "kernels/collect/record_step.hpp"
#include "support/device_copy.hpp"
#include "support/element_bits.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using foxrl::test::bits_of;
using foxrl::test::device_bits;
using foxrl::test::to_host;

/// Host values into an existing device View of the same size.
template <class Exec, class V, class T>
void fill(const Exec& space, const V& v, const std::vector<T>& values) {
  const auto host = Kokkos::create_mirror_view(v);
  std::memcpy(host.data(), values.data(), values.size() * sizeof(T));
  Kokkos::deep_copy(space, v, host);
}

/// The step's buffers, allocated once and written anew each step, as a
/// collector's are.
template <class Mem>
struct StepBuffers {
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> obs, next;
  Kokkos::View<float*, Mem> rewards;
  Kokkos::View<std::int32_t*, Mem> actions;
  Kokkos::View<std::uint8_t*, Mem> terminated, truncated;
  StepBuffers(int envs, int dim)
      : obs("foxrl::test::obs", envs, dim),
        next("foxrl::test::next", envs, dim),
        rewards("foxrl::test::rewards", envs),
        actions("foxrl::test::actions", envs),
        terminated("foxrl::test::terminated", envs),
        truncated("foxrl::test::truncated", envs) {}
  foxrl::kernels::StepRecord<Mem> record() const { return {obs, actions, rewards, terminated, truncated, next}; }
};

}  // namespace

TEMPLATE_TEST_CASE("an aliased one-step record equals the copying record, bit for bit", "[collect][record_step]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  Exec space;
  struct Shape {
    int envs, dim;
  };
  // One team: 1 x 1, 8 x 4 (cartpole-learn-peers), 126 x 65 (a market
  // observation). Across teams, where the aliased record rides in the
  // statistics' launch and the copying one has launches of its own:
  // 2,500 x 3 (a last team of 68 envs), 3,000 x 65 (the market's width,
  // which the copying record never takes across teams).
  const Shape shape = GENERATE(Shape{1, 1}, Shape{8, 4}, Shape{126, 65}, Shape{2500, 3}, Shape{3000, 65});
  INFO(shape.envs << " envs, " << shape.dim << " components");
  const float gamma = 0.97f;
  const StepBuffers<Mem> buffers(shape.envs, shape.dim);
  const auto step = buffers.record();

  foxrl::EpisodeStats<Exec> stats_copying(space, shape.envs), stats_aliased(space, shape.envs);
  foxrl::NStepAccumulator<Exec> copying(space, shape.envs, shape.dim, 1, gamma),
      aliased(space, shape.envs, shape.dim, 1, gamma);
  aliased.alias_one_step(step);
  REQUIRE(aliased.aliases_step());
  REQUIRE_FALSE(copying.aliases_step());
  // Nothing is copied: the output is the step.
  CHECK(aliased.output().observations.data() == buffers.obs.data());
  CHECK(aliased.output().next_observations.data() == buffers.next.data());
  CHECK(aliased.output().actions.data() == buffers.actions.data());
  CHECK(aliased.ring().observations.data() == buffers.obs.data());

  std::mt19937 rng(29u + static_cast<std::uint32_t>(shape.envs));
  std::uniform_real_distribution<float> value(-2.f, 2.f);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  int negative_zeros = 0, terminations = 0, truncations = 0;
  for (int t = 0; t < 9; ++t) {
    INFO("step " << t);
    std::vector<float> obs(std::size_t(shape.envs) * shape.dim), next(obs.size()), rewards(shape.envs);
    std::vector<std::int32_t> actions(shape.envs);
    std::vector<std::uint8_t> terminated(shape.envs, 0), truncated(shape.envs, 0);
    for (auto& v : obs) v = value(rng);
    for (auto& v : next) v = value(rng);
    for (int e = 0; e < shape.envs; ++e) {
      const double c = coin(rng);
      rewards[e] = c < 0.2 ? -0.0f : value(rng);
      negative_zeros += c < 0.2 ? 1 : 0;
      actions[e] = static_cast<std::int32_t>(rng() % 3);
      // Step 4: every episode terminates; step 6: every episode is truncated.
      const double end = t == 4 ? 0.0 : t == 6 ? 0.12 : coin(rng);
      if (end < 0.1)
        terminated[e] = 1;
      else if (end < 0.15)
        truncated[e] = 1;
      terminations += terminated[e];
      truncations += truncated[e];
    }
    fill(space, buffers.obs, obs);
    fill(space, buffers.next, next);
    fill(space, buffers.rewards, rewards);
    fill(space, buffers.actions, actions);
    fill(space, buffers.terminated, terminated);
    fill(space, buffers.truncated, truncated);

    // The copying record as the collector runs it by default before the
    // aliasing: launches of its own past one team.
    const auto stats_step_c = stats_copying.step_of(buffers.rewards, buffers.terminated, buffers.truncated);
    const bool emit_c =
        copying.push_with(step, foxrl::kernels::CounterRead::host(copying.steps_pushed()), [&](const auto& record) {
          foxrl::kernels::record_step(space, stats_step_c, record, foxrl::kernels::NothingAfterRecord(), false);
        });
    // The aliased record as the collector runs it: across teams.
    const auto stats_step_a = stats_aliased.step_of(buffers.rewards, buffers.terminated, buffers.truncated);
    const bool emit_a =
        aliased.push_with(step, foxrl::kernels::CounterRead::host(aliased.steps_pushed()), [&](const auto& record) {
          REQUIRE(record.one_step_aliased);
          foxrl::kernels::record_step(space, stats_step_a, record, foxrl::kernels::NothingAfterRecord(),
                                      record.one_step_aliased);
        });
    REQUIRE(emit_c);
    REQUIRE(emit_a);

    CHECK(device_bits(space, stats_aliased.running()) == device_bits(space, stats_copying.running()));
    CHECK(device_bits(space, stats_aliased.ring()) == device_bits(space, stats_copying.ring()));
    CHECK(to_host(space, stats_aliased.count())() == to_host(space, stats_copying.count())());
    const auto& ring_c = copying.ring();
    const auto& ring_a = aliased.ring();
    CHECK(ring_a.observations.extent(0) == 1);
    CHECK(ring_a.observations.size() == ring_c.observations.size());
    CHECK(device_bits(space, ring_a.observations) == device_bits(space, ring_c.observations));
    CHECK(device_bits(space, ring_a.next_observations) == device_bits(space, ring_c.next_observations));
    CHECK(device_bits(space, ring_a.actions) == device_bits(space, ring_c.actions));
    CHECK(device_bits(space, ring_a.rewards) == device_bits(space, ring_c.rewards));
    CHECK(device_bits(space, ring_a.episode_end) == device_bits(space, ring_c.episode_end));
    const auto& out_c = copying.output();
    const auto& out_a = aliased.output();
    CHECK(device_bits(space, out_a.observations) == device_bits(space, out_c.observations));
    CHECK(device_bits(space, out_a.next_observations) == device_bits(space, out_c.next_observations));
    CHECK(device_bits(space, out_a.actions) == device_bits(space, out_c.actions));
    CHECK(device_bits(space, out_a.rewards) == device_bits(space, out_c.rewards));
    CHECK(device_bits(space, out_a.discounts) == device_bits(space, out_c.discounts));
    CHECK(device_bits(space, out_a.next_is_successor) == device_bits(space, out_c.next_is_successor));

    // Against the published definition of a one-step transition.
    const auto out_rewards = to_host(space, out_a.rewards);
    const auto out_discounts = to_host(space, out_a.discounts);
    const auto successor = to_host(space, out_a.next_is_successor);
    int wrong = 0;
    for (int e = 0; e < shape.envs; ++e) {
      const float expected_reward = rewards[e] == 0.0f ? 0.0f : rewards[e];  // +0 for -0
      wrong += bits_of(std::vector<float>{out_rewards(e)}) != bits_of(std::vector<float>{expected_reward}) ? 1 : 0;
      wrong += out_discounts(e) != (terminated[e] != 0 ? 0.0f : gamma) ? 1 : 0;
      wrong += successor(e) != (terminated[e] == 0 && truncated[e] == 0 ? 1 : 0) ? 1 : 0;
    }
    CHECK(wrong == 0);
  }
  // The steps exercised what they are for.
  CHECK(negative_zeros > 0);
  CHECK(terminations > 0);
  CHECK(truncations > 0);
}

TEMPLATE_TEST_CASE("alias_one_step takes only n = 1 and the step's shape, and a push only the aliased Views",
                   "[collect][record_step]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  using Catch::Matchers::Contains;
  Exec space;
  const StepBuffers<Mem> buffers(6, 3), other(6, 3), narrower(6, 2);
  foxrl::NStepAccumulator<Exec> three_step(space, 6, 3, 3, 0.9f);
  CHECK_THROWS_WITH(three_step.alias_one_step(buffers.record()), Contains("needs n = 1 (got 3)"));
  CHECK_FALSE(three_step.aliases_step());

  foxrl::NStepAccumulator<Exec> one_step(space, 6, 3, 1, 0.9f);
  CHECK_THROWS_WITH(one_step.alias_one_step(narrower.record()), Contains("do not match 6 envs of 3 components"));
  CHECK_FALSE(one_step.aliases_step());
  one_step.alias_one_step(buffers.record());
  REQUIRE(one_step.aliases_step());
  int launches = 0;
  CHECK_THROWS_WITH(
      one_step.push_with(other.record(), foxrl::kernels::CounterRead::host(0), [&](const auto&) { ++launches; }),
      Contains("other Views than the step it aliases"));
  CHECK(launches == 0);
  CHECK(one_step.steps_pushed() == 0);
  CHECK(one_step.push_with(buffers.record(), foxrl::kernels::CounterRead::host(0), [&](const auto&) { ++launches; }));
  CHECK(launches == 1);
}
