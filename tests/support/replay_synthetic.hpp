#pragma once
// Synthetic experience for the replay buffer's tests: every observation,
// action, reward and discount encodes its (env, iteration), so each value a
// sample or gather returns is known exactly.
#include "replay/replay_buffer.hpp"
#include "views/collect/transition_batch.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl::test {

/// Synthetic experience: observation of env e at iteration t is
/// (e, t, 0.5, 1.5, ...); rows at episode boundaries carry the distinct next
/// observation (e, t, -2, -3, ...); actions/rewards/discounts encode (e, t).
struct Synthetic {
  int num_envs;
  int obs_dim;
  int n_step;
  int boundary_period;  ///< every boundary_period-th (e, t) ends a window at a boundary

  bool boundary(int e, std::int64_t t) const { return boundary_period > 0 && (e * 7 + t * 3) % boundary_period == 0; }
  static float obs(int e, std::int64_t t, int c) {
    return c == 0 ? float(e) : (c == 1 ? float(t) : 0.5f + float(c - 2));
  }
  static float boundary_obs(int e, std::int64_t t, int c) {
    return c == 0 ? float(e) : (c == 1 ? float(t) : -2.0f - float(c - 2));
  }
  float next_obs(int e, std::int64_t t, int c) const {
    return boundary(e, t) ? boundary_obs(e, t, c) : obs(e, t + n_step, c);
  }
  static std::int32_t action(int e, std::int64_t t) { return std::int32_t(e * 1000 + t); }
  static float reward(int e, std::int64_t t) { return float(t) + 0.25f * float(e); }
  float discount(int e, std::int64_t t) const { return boundary(e, t) ? 0.0f : 0.9f; }
};

template <class Exec>
foxrl::TransitionBatch<typename Exec::memory_space> make_transitions(const Exec& space, const Synthetic& syn,
                                                                     std::int64_t t) {
  using TB = foxrl::TransitionBatch<typename Exec::memory_space>;
  const int n = syn.num_envs;
  const int d = syn.obs_dim;
  TB b;
  b.observations = typename TB::matrix(Kokkos::view_alloc(space, "foxrl::test::obs"), n, d);
  b.next_observations = typename TB::matrix(Kokkos::view_alloc(space, "foxrl::test::next_obs"), n, d);
  b.actions =
      Kokkos::View<std::int32_t*, typename Exec::memory_space>(Kokkos::view_alloc(space, "foxrl::test::actions"), n);
  b.rewards = typename TB::vector(Kokkos::view_alloc(space, "foxrl::test::rewards"), n);
  b.discounts = typename TB::vector(Kokkos::view_alloc(space, "foxrl::test::discounts"), n);
  b.next_is_successor = Kokkos::View<std::uint8_t*, typename Exec::memory_space>(
      Kokkos::view_alloc(space, "foxrl::test::next_is_successor"), n);
  auto obs = Kokkos::create_mirror_view(b.observations);
  auto next = Kokkos::create_mirror_view(b.next_observations);
  auto act = Kokkos::create_mirror_view(b.actions);
  auto rew = Kokkos::create_mirror_view(b.rewards);
  auto dis = Kokkos::create_mirror_view(b.discounts);
  auto succ = Kokkos::create_mirror_view(b.next_is_successor);
  for (int e = 0; e < n; ++e) {
    for (int c = 0; c < d; ++c) {
      obs(e, c) = Synthetic::obs(e, t, c);
      next(e, c) = syn.next_obs(e, t, c);
    }
    act(e) = Synthetic::action(e, t);
    rew(e) = Synthetic::reward(e, t);
    dis(e) = syn.discount(e, t);
    succ(e) = syn.boundary(e, t) ? 0 : 1;
  }
  Kokkos::deep_copy(space, b.observations, obs);
  Kokkos::deep_copy(space, b.next_observations, next);
  Kokkos::deep_copy(space, b.actions, act);
  Kokkos::deep_copy(space, b.rewards, rew);
  Kokkos::deep_copy(space, b.discounts, dis);
  Kokkos::deep_copy(space, b.next_is_successor, succ);
  return b;
}

/// Which transition slot s holds after `inserted` transitions.
inline std::int64_t transition_in_slot(std::int64_t s, std::int64_t inserted, std::int64_t capacity) {
  return s + capacity * ((inserted - 1 - s) / capacity);
}

inline foxrl::ReplayConfig small_config(std::int64_t capacity, int obs_dim, int num_envs, int n_step) {
  foxrl::ReplayConfig c;
  c.capacity = capacity;
  c.obs_dim = obs_dim;
  c.num_envs = num_envs;
  c.n_step = n_step;
  c.max_batch = 1024;
  c.seed = 1234;
  return c;
}

}  // namespace foxrl::test
