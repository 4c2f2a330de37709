#pragma once
// Kernels of the market-replay envs (src/market/market_env.hpp): the state
// half of a step (reward, position, auto-reset to a drawn start bar), the
// observations after it, the reset of every env and the start of one env
// at a chosen bar.

#include "core/compat.hpp"
#include "kernels/core/counter_rng.hpp"
#include "kernels/envs/choose_then_step.hpp"
#include "kernels/market/features.hpp"
#include "views/envs/env_step.hpp"
#include "views/market/market_views.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl::kernels {

/// The state half of a market step (one thread per env).
template <class MemorySpace>
struct MarketStep {
  MarketState<MemorySpace> s;
  Kokkos::View<const float*, MemorySpace> log_return;
  Kokkos::View<const std::int32_t*, MemorySpace> actions;
  EnvStep<MemorySpace> out;
  Kokkos::View<std::int32_t*, MemorySpace> next_time, next_position;  // for the observation kernel
  double cost;
  int num_actions;   ///< 3 (short, flat, long) or 2 (flat, long)
  int min_position;  ///< the position of action 0: -1, or 0 long-only
  int episode_length;
  std::uint64_t start_seed;
  int first_start;
  std::uint32_t num_starts;

  KOKKOS_INLINE_FUNCTION void operator()(int i) const { step_with(i, actions(i)); }

  /// The step of env i taking action `a` (ChooseThenStep passes the one it
  /// chose in the same thread).
  KOKKOS_INLINE_FUNCTION void step_with(int i, std::int32_t a) const {
    const int t = s.time(i);
    const int p = s.position(i);
    const int q = (a < 0 ? 0 : (a >= num_actions ? num_actions - 1 : a)) + min_position;
    const int change = q > p ? q - p : p - q;
    // Flat earns exactly 0 (not -0 from 0 * a negative return).
    const double gain = q == 0 ? 0.0 : q * static_cast<double>(log_return(t));
    out.rewards(i) = static_cast<float>(gain - cost * change);
    const int steps = s.episode_steps(i) + 1;
    const bool truncated = steps >= episode_length;
    out.terminated(i) = 0;
    out.truncated(i) = truncated ? 1 : 0;
    next_time(i) = t + 1;
    next_position(i) = q;
    if (truncated) {
      start_episode(i);
    } else {
      s.time(i) = t + 1;
      s.position(i) = q;
      s.episode_steps(i) = steps;
    }
  }

  /// Episode e of env i starts at a bar drawn from (start_seed, i, e), flat.
  KOKKOS_INLINE_FUNCTION void start_episode(int i) const {
    const std::uint64_t e = s.episodes(i);
    s.episodes(i) = e + 1;
    s.time(i) = first_start +
                static_cast<int>(kernels::counter_index(start_seed, static_cast<std::uint64_t>(i), e, num_starts));
    s.position(i) = 0;
    s.episode_steps(i) = 0;
  }
};

template <class MemorySpace>
struct MarketReset {
  MarketStep<MemorySpace> step;
  KOKKOS_INLINE_FUNCTION void operator()(int i) const { step.start_episode(i); }
};

/// Launches the state half of a step over every env ("foxrl::MarketEnv::step").
template <class ExecSpace>
void market_step(const ExecSpace& space, const MarketStep<typename ExecSpace::memory_space>& f) {
  Kokkos::parallel_for("foxrl::MarketEnv::step", compat::light(Kokkos::RangePolicy<ExecSpace>(space, 0, f.s.size())),
                       f);
}

/// The same launch, each env's action chosen by `choose` in its thread
/// (kernels/envs/choose_then_step.hpp).
template <class ExecSpace, class Choose>
void market_step(const ExecSpace& space,
                 const ChooseThenStep<Choose, MarketStep<typename ExecSpace::memory_space>>& f) {
  Kokkos::parallel_for("foxrl::MarketEnv::step",
                       compat::light(Kokkos::RangePolicy<ExecSpace>(space, 0, f.step.s.size())), f);
}

/// Starts a new episode in every env ("foxrl::MarketEnv::reset"; the
/// observations follow with build_observations).
template <class ExecSpace>
void market_reset(const ExecSpace& space, const MarketStep<typename ExecSpace::memory_space>& f) {
  Kokkos::parallel_for("foxrl::MarketEnv::reset", compat::light(Kokkos::RangePolicy<ExecSpace>(space, 0, f.s.size())),
                       MarketReset<typename ExecSpace::memory_space>{f});
}

/// market_step_observations' kernel: entry j of env i's next_obs and obs (and acted_on, when kept).
/// A named functor, not a KOKKOS_LAMBDA (see RecordStepInOneTeam in kernels/collect/record_step.hpp).
template <class MemorySpace>
struct MarketStepObservationsKernel {
  BarFeatures<MemorySpace> f;
  FeatureSet set;
  int W, D;
  Kokkos::View<std::int32_t*, MemorySpace> nt, np, time, pos;
  Kokkos::View<std::uint8_t*, MemorySpace> truncated;
  Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace> next_obs, obs, acted_on;
  bool keep;
  KOKKOS_INLINE_FUNCTION void operator()(int idx) const {
    const int i = idx / D, j = idx % D;
    if (keep) acted_on(i, j) = obs(i, j);
    const float v = kernels::observation_value(f, set, W, nt(i), np(i), j);
    next_obs(i, j) = v;
    obs(i, j) = truncated(i) ? kernels::observation_value(f, set, W, time(i), pos(i), j) : v;
  }
};

/// The observations after a market step ("foxrl::MarketEnv::observations"):
/// next_obs from the bar and position the step moved to (next_time,
/// next_position), obs the same unless the env was truncated, then from its
/// new episode's start (time, position). When `acted_on` is allocated it
/// first receives obs as it was (the observations the actions were chosen
/// from), so a collector needs no copy of its own.
template <class ExecSpace, class MemorySpace>
void market_step_observations(const ExecSpace& space, const BarFeatures<MemorySpace>& f, FeatureSet set, int W, int D,
                              const Kokkos::View<std::int32_t*, MemorySpace>& nt,
                              const Kokkos::View<std::int32_t*, MemorySpace>& np,
                              const Kokkos::View<std::int32_t*, MemorySpace>& time,
                              const Kokkos::View<std::int32_t*, MemorySpace>& pos,
                              const Kokkos::View<std::uint8_t*, MemorySpace>& truncated,
                              const Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace>& next_obs,
                              const Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace>& obs,
                              const Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace>& acted_on = {}) {
  const int num_envs = static_cast<int>(nt.extent(0));
  const bool keep = acted_on.data() != nullptr;
  Kokkos::parallel_for("foxrl::MarketEnv::observations",
                       compat::light(Kokkos::RangePolicy<ExecSpace>(space, 0, num_envs * D)),
                       MarketStepObservationsKernel<MemorySpace>{f, set, W, D, nt, np, time, pos, truncated, next_obs,
                                                                 obs, acted_on, keep});
}

/// market_set_start's kernel: env i's episode starts at bar t0, flat, step 0.
template <class MemorySpace>
struct MarketSetStartKernel {
  MarketState<MemorySpace> s;
  int t0;
  KOKKOS_INLINE_FUNCTION void operator()(int i) const {
    s.time(i) = t0;
    s.position(i) = 0;
    s.episode_steps(i) = 0;
  }
};

/// Starts env `env`'s episode at bar t0, flat, step 0
/// ("foxrl::MarketEnv::set_start"; the observations follow with
/// build_observations).
template <class ExecSpace>
void market_set_start(const ExecSpace& space, const MarketState<typename ExecSpace::memory_space>& s, int env, int t0) {
  Kokkos::parallel_for("foxrl::MarketEnv::set_start",
                       compat::light(Kokkos::RangePolicy<ExecSpace>(space, env, env + 1)),
                       MarketSetStartKernel<typename ExecSpace::memory_space>{s, t0});
}

}  // namespace foxrl::kernels
