#pragma once
// Greedy-policy evaluation in episodes: every env of a VectorEnv plays its
// first episode under a given policy, on the device, and the returns of
// those episodes are summarised (mean, spread, extremes). The policy is a
// callable act(space, observations, actions_out) that launches its work on
// `space` (e.g. DqnLearner::greedy_actions, or a normaliser followed by a
// learner). What `foxrl eval` reports for CartPole runs, and what an
// offline trainer reports per epoch.
//
// A tool path, not a hot path: it checks once every `check_every` steps
// whether every episode has ended (one small read-back).

#include "core/compat.hpp"
#include "core/error.hpp"
#include "envs/vector_env.hpp"
#include "kernels/envs/first_episode.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace foxrl {

/// The first episode of every env: its return and length, and their
/// summary. An episode still running after max_steps is not finished: it
/// is left out of the summary and counted in `unfinished`.
struct EpisodeEvaluation {
  std::vector<double> returns;        ///< per env (the partial return if unfinished)
  std::vector<std::int64_t> lengths;  ///< per env, steps of the episode
  std::vector<std::uint8_t> finished;
  int episodes = 0;                                    ///< finished episodes
  int unfinished = 0;                                  ///< envs whose first episode outlasted max_steps
  double mean = 0.0, std = 0.0, min = 0.0, max = 0.0;  ///< over finished episodes (population std)
  double mean_length = 0.0;
};

/// Summary statistics of the finished entries of `e` (fills episodes,
/// unfinished, mean, std, min, max, mean_length).
inline void summarise(EpisodeEvaluation& e) {
  e.episodes = 0;
  double sum = 0.0, length = 0.0;
  e.min = 0.0;
  e.max = 0.0;
  for (std::size_t i = 0; i < e.returns.size(); ++i) {
    if (!e.finished[i]) continue;
    const double r = e.returns[i];
    e.min = e.episodes == 0 ? r : std::min(e.min, r);
    e.max = e.episodes == 0 ? r : std::max(e.max, r);
    sum += r;
    length += static_cast<double>(e.lengths[i]);
    ++e.episodes;
  }
  e.unfinished = static_cast<int>(e.returns.size()) - e.episodes;
  e.mean = e.episodes > 0 ? sum / e.episodes : 0.0;
  e.mean_length = e.episodes > 0 ? length / e.episodes : 0.0;
  double sq = 0.0;
  for (std::size_t i = 0; i < e.returns.size(); ++i)
    if (e.finished[i]) sq += (e.returns[i] - e.mean) * (e.returns[i] - e.mean);
  e.std = e.episodes > 0 ? std::sqrt(sq / e.episodes) : 0.0;
}

/// Resets `env` and plays until every env has ended its first episode (or
/// `max_steps` steps): act(space, env.observations(), actions) chooses the
/// actions, the env steps, and a kernel adds each env's reward to its
/// return until its first termination or truncation. Returns per env are
/// accumulated in double on the device.
template <class ExecSpace, class Act>
EpisodeEvaluation evaluate_first_episodes(const ExecSpace& space, VectorEnv<ExecSpace>& env, Act&& act,
                                          std::int64_t max_steps, int check_every = 32) {
  using memory_space = typename ExecSpace::memory_space;
  if (max_steps < 1) throw LogicError("foxrl::evaluate_first_episodes: max_steps must be >= 1");
  if (check_every < 1) throw LogicError("foxrl::evaluate_first_episodes: check_every must be >= 1");
  const int n = env.num_envs();
  Kokkos::View<double*, memory_space> returns(Kokkos::view_alloc(space, "foxrl::evaluate_first_episodes::returns"), n);
  Kokkos::View<std::int64_t*, memory_space> lengths(
      Kokkos::view_alloc(space, "foxrl::evaluate_first_episodes::lengths"), n);
  Kokkos::View<std::uint8_t*, memory_space> done(Kokkos::view_alloc(space, "foxrl::evaluate_first_episodes::done"), n);
  Kokkos::View<std::int32_t*, memory_space> actions(
      Kokkos::view_alloc(space, "foxrl::evaluate_first_episodes::actions"), n);
  Kokkos::View<int, memory_space> ended(Kokkos::view_alloc(space, "foxrl::evaluate_first_episodes::ended"));
  auto ended_host = Kokkos::create_mirror_view(ended);
  env.reset(space);
  for (std::int64_t step = 0; step < max_steps; ++step) {
    act(space, env.observations(), actions);
    env.step(space, actions);
    const auto result = env.step_result();
    kernels::accumulate_first_episode(space, result.rewards, result.terminated, result.truncated, returns, lengths,
                                      done);
    if ((step + 1) % check_every != 0 && step + 1 != max_steps) continue;
    kernels::count_ended(space, done, ended);
    Kokkos::deep_copy(space, ended_host, ended);
    compat::fence(space, "foxrl::evaluate_first_episodes::check");
    if (ended_host() == n) break;
  }
  EpisodeEvaluation e;
  const auto r = Kokkos::create_mirror_view(returns);
  const auto l = Kokkos::create_mirror_view(lengths);
  const auto d = Kokkos::create_mirror_view(done);
  Kokkos::deep_copy(space, r, returns);
  Kokkos::deep_copy(space, l, lengths);
  Kokkos::deep_copy(space, d, done);
  compat::fence(space, "foxrl::evaluate_first_episodes::results");
  e.returns.assign(r.data(), r.data() + n);
  e.lengths.assign(l.data(), l.data() + n);
  e.finished.assign(d.data(), d.data() + n);
  summarise(e);
  return e;
}

}  // namespace foxrl
