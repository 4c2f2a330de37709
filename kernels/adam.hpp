#pragma once
// Optimizer kernels over the flat parameter View: the global gradient norm
// (reduced into a device View), and one fused launch that clips, applies
// Adam and (optionally) the Polyak target update.

#include "compat.hpp"
#include "learner_metrics.hpp"
#include "reduce_scratch.hpp"
#include "weights.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

namespace foxrl {

/// How weight decay enters Adam.
enum class WeightDecayMode {
  decoupled,  ///< AdamW: p -= lr * wd * p before the Adam step (torch.optim.AdamW)
  l2,         ///< L2 penalty: g += wd * p before the moments (torch.optim.Adam)
};

/// Hyperparameters of one optimizer step.
struct AdamHyper {
  float lr = 2.5e-4f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  WeightDecayMode weight_decay_mode = WeightDecayMode::decoupled;
  /// Global gradient-norm clip (torch.nn.utils.clip_grad_norm_); <= 0: off.
  float max_grad_norm = 0.0f;
};

namespace kernels {

/// Team shape of gradient_sq_norm and the elements each thread of
/// adam_update handles (GPUs: strided, so a warp's loads stay coalesced; host
/// backends: a contiguous chunk).
template <class ExecSpace,
          bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible>
struct OptimizerTiling {
  static constexpr int team_size = 1, per_thread = 4096, max_teams = 64;
};
template <class ExecSpace>
struct OptimizerTiling<ExecSpace, false> {
  static constexpr int team_size = 256, per_thread = 8, max_teams = 528;
};

/// Teams gradient_sq_norm spreads `n` elements over (its ReduceScratch
/// needs that many floats and one ticket).
template <class ExecSpace>
int gradient_norm_teams(std::size_t n) {
  using T = OptimizerTiling<ExecSpace>;
  const std::size_t per_team = std::size_t(T::team_size) * T::per_thread;
  const std::size_t teams = (n + per_team - 1) / per_team;
  return static_cast<int>(teams < 1 ? 1 : (teams > std::size_t(T::max_teams) ? T::max_teams : teams));
}

/// metrics(grad_sq) = sum_i grads(i)^2, on the device (no host read-back),
/// in one launch: each team reduces a contiguous range in a scratch tree;
/// with several teams (when `scratch` holds gradient_norm_teams(n) floats)
/// the last team adds the teams' sums in team order (deterministic).
template <class ExecSpace, class MemorySpace>
void gradient_sq_norm(const ExecSpace& space, const FlatParams<MemorySpace>& grads,
                      const Kokkos::View<float*, MemorySpace>& metrics,
                      const ReduceScratch<MemorySpace>& scratch = ReduceScratch<MemorySpace>()) {
  using T = OptimizerTiling<ExecSpace>;
  using policy_type = Kokkos::TeamPolicy<ExecSpace>;
  using member_type = typename policy_type::member_type;
  const std::size_t n = grads.extent(0);
  int teams = gradient_norm_teams<ExecSpace>(n);
  if (!scratch.holds(std::size_t(teams), 1)) teams = 1;
  const std::size_t per_team = (n + teams - 1) / teams;
  float* global = scratch.partials.data();
  unsigned* ticket = scratch.tickets.data();
  const int team_size = teams == 1 && T::team_size > 1 ? 512 : T::team_size;
  policy_type policy(space, teams, team_size);
  Kokkos::parallel_for(
      "foxrl::kernels::gradient_sq_norm",
      policy.set_scratch_size(0, Kokkos::PerTeam(sizeof(float) * team_size)),
      KOKKOS_LAMBDA(const member_type& team) {
        const int rank = team.team_rank();
        const int size = team.team_size();
        float* partial = static_cast<float*>(team.team_shmem().get_shmem(sizeof(float) * size));
        const std::size_t begin = std::size_t(team.league_rank()) * per_team;
        const std::size_t end = begin + per_team < n ? begin + per_team : n;
        float acc = 0.0f;
        for (std::size_t i = begin + rank; i < end; i += size) acc += grads(i) * grads(i);
        partial[rank] = acc;
        int width = 1;
        while (width < size) width *= 2;
        for (int half = width / 2; half > 0; half /= 2) {
          team.team_barrier();
          if (rank < half && rank + half < size) partial[rank] += partial[rank + half];
        }
        team.team_barrier();
        const int league = team.league_size();
        if (league == 1) {
          if (rank == 0) metrics(LearnerMetrics::grad_sq) = partial[0];
          return;
        }
        if (rank == 0) global[team.league_rank()] = partial[0];
        if (!arrive_last(team, ticket, static_cast<unsigned>(league))) return;
        if (rank == 0) {
          float total = 0.0f;
          for (int t = 0; t < league; ++t) total += read_partial(global, std::size_t(t));
          metrics(LearnerMetrics::grad_sq) = total;
        }
      });
}

/// Clip + Adam (+ Polyak) in one pass over the flat buffers. `step` must
/// already count this step (t >= 1); metrics(grad_sq) must hold the squared
/// gradient norm; metrics(grad_norm) receives its root. `target` is updated
/// as tau * p + (1 - tau) * target when tau > 0 (pass an empty View
/// otherwise). Torch's formulas (single-tensor Adam), bias corrections in
/// double. Each thread derives the step's scalars (clip coefficient, bias
/// corrections) once and applies them to several elements.
template <class ExecSpace, class MemorySpace>
void adam_update(const ExecSpace& space, const AdamHyper& hyper, const FlatParams<MemorySpace>& params,
                 const FlatParams<MemorySpace>& grads, const FlatParams<MemorySpace>& m,
                 const FlatParams<MemorySpace>& v, const Kokkos::View<std::int64_t, MemorySpace>& step,
                 const Kokkos::View<float*, MemorySpace>& metrics, const FlatParams<MemorySpace>& target,
                 float polyak_tau) {
  using T = OptimizerTiling<ExecSpace>;
  constexpr bool host = T::team_size == 1;
  const AdamHyper h = hyper;
  const bool polyak = polyak_tau > 0.0f && target.extent(0) == params.extent(0);
  const float tau = polyak_tau;
  const std::size_t n = params.extent(0);
  const std::size_t threads = (n + T::per_thread - 1) / T::per_thread;
  Kokkos::parallel_for(
      "foxrl::kernels::adam_update", Kokkos::RangePolicy<ExecSpace>(space, 0, threads > 0 ? threads : 1),
      KOKKOS_LAMBDA(std::size_t t) {
        const float norm = math::sqrt(metrics(LearnerMetrics::grad_sq));
        if (t == 0) metrics(LearnerMetrics::grad_norm) = norm;
        float coef = 1.0f;
        if (h.max_grad_norm > 0.0f) {
          coef = h.max_grad_norm / (norm + 1e-6f);
          coef = coef < 1.0f ? coef : 1.0f;
        }
        const double ts = static_cast<double>(step());
        const double bc1 = 1.0 - math::pow(static_cast<double>(h.beta1), ts);
        const double bc2 = 1.0 - math::pow(static_cast<double>(h.beta2), ts);
        const float step_size = static_cast<float>(static_cast<double>(h.lr) / bc1);
        const float bc2_sqrt = static_cast<float>(math::sqrt(bc2));

        const std::size_t begin = host ? t * T::per_thread : t;
        const std::size_t stride = host ? 1 : threads;
        const std::size_t end = host ? (begin + T::per_thread < n ? begin + T::per_thread : n) : n;
        for (std::size_t i = begin; i < end; i += stride) {
          float p = params(i);
          float g = grads(i) * coef;
          if (h.weight_decay != 0.0f) {
            if (h.weight_decay_mode == WeightDecayMode::l2) g += h.weight_decay * p;
            else p *= 1.0f - h.lr * h.weight_decay;
          }
          float mi = m(i);
          mi += (1.0f - h.beta1) * (g - mi);
          const float vi = v(i) * h.beta2 + (1.0f - h.beta2) * g * g;
          const float denom = math::sqrt(vi) / bc2_sqrt + h.eps;
          p -= step_size * (mi / denom);
          m(i) = mi;
          v(i) = vi;
          params(i) = p;
          if (polyak) target(i) = tau * p + (1.0f - tau) * target(i);
        }
      });
}

/// target = tau * online + (1 - tau) * target (a standalone Polyak update).
template <class ExecSpace, class MemorySpace>
void polyak_update(const ExecSpace& space, const FlatParams<MemorySpace>& online, const FlatParams<MemorySpace>& target,
                   float tau) {
  Kokkos::parallel_for(
      "foxrl::kernels::polyak_update", Kokkos::RangePolicy<ExecSpace>(space, 0, online.extent(0)),
      KOKKOS_LAMBDA(std::size_t i) { target(i) = tau * online(i) + (1.0f - tau) * target(i); });
}

}  // namespace kernels
}  // namespace foxrl
