#pragma once
// Optimizer kernels over the flat parameter View: the global gradient norm
// (reduced into a device View, optionally with a count of non-finite
// parameters handed to the training guard's decision), and one fused launch
// that clips, applies Adam and (optionally) the Polyak target update or the
// hard target copy, or carries out the guard's verdict instead.

#include "core/compat.hpp"
#include "core/error.hpp"
#include "kernels/core/reduce_scratch.hpp"
#include "kernels/core/team_tree_sum.hpp"
#include "views/agents/dqn/learner_metrics.hpp"
#include "views/nn/guard_state.hpp"
#include "views/nn/parameter_set.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>

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
  static constexpr int adam_per_thread = 4096;
};
template <class ExecSpace>
struct OptimizerTiling<ExecSpace, false> {
  static constexpr int team_size = 256, per_thread = 8, max_teams = 528;
  // One parameter per Adam thread: with several, each element's stores may
  // alias the next one's loads, so a thread waits one memory latency per
  // element instead of overlapping them.
  static constexpr int adam_per_thread = 1;
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

/// What gradient_sq_norm does with its totals: the squared norm goes to
/// metrics(grad_sq).
template <class MemorySpace>
struct StoreGradSq {
  Kokkos::View<float*, MemorySpace> metrics;
  KOKKOS_INLINE_FUNCTION void operator()(float grad_sq, float /*nonfinite_params*/) const {
    metrics(LearnerMetrics::grad_sq) = grad_sq;
  }
};

/// Floats of ReduceScratch that gradient_sq_norm_then needs to spread `n`
/// elements over several teams (two partials per team when it also scans
/// parameters) and one ticket.
template <class ExecSpace>
std::size_t gradient_norm_scratch(std::size_t n, bool scan_params) {
  return std::size_t(gradient_norm_teams<ExecSpace>(n)) * (scan_params ? 2 : 1);
}

/// gradient_sq_norm_then's kernel: team t's squared-gradient sum (and count
/// of non-finite params) in a scratch tree; the last team (or the only
/// one) adds the teams' sums in team order and calls `finish`. A named
/// functor, not a KOKKOS_LAMBDA (see RecordStepInOneTeam in
/// kernels/collect/record_step.hpp).
template <class MemorySpace, class Finish>
struct GradientSqNormKernel {
  FlatParams<MemorySpace> grads, params;
  Finish finish;
  float* global;
  unsigned* ticket;
  std::size_t n, per_team;
  int sums;
  bool scan;
  template <class Member>
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    const int rank = team.team_rank();
    const int size = team.team_size();
    float* partial = static_cast<float*>(team.team_shmem().get_shmem(sizeof(float) * sums * size));
    const std::size_t begin = std::size_t(team.league_rank()) * per_team;
    const std::size_t end = begin + per_team < n ? begin + per_team : n;
    float acc = 0.0f, bad = 0.0f;
    for (std::size_t i = begin + rank; i < end; i += size) {
      acc += grads(i) * grads(i);
      if (scan && !math::isfinite(params(i))) bad += 1.0f;
    }
    partial[rank] = acc;
    if (scan) partial[size + rank] = bad;
    team_tree_sum(team, partial, sums, size);
    const int league = team.league_size();
    if (league == 1) {
      if (rank == 0) finish(partial[0], scan ? partial[size] : 0.0f);
      return;
    }
    if (rank == 0)
      for (int s = 0; s < sums; ++s) global[std::size_t(team.league_rank()) * sums + s] = partial[s * size];
    if (!arrive_last(team, ticket, static_cast<unsigned>(league))) return;
    if (rank == 0) {
      const float total = sum_partials(global, league, std::size_t(sums), 0);
      const float total_bad = scan ? sum_partials(global, league, std::size_t(sums), 1) : 0.0f;
      finish(total, total_bad);
    }
  }
};

/// sum_i grads(i)^2 and (when `params` is allocated) the number of
/// non-finite params(i), on the device, in one launch: each team reduces a
/// contiguous range in a scratch tree; with several teams (when `scratch`
/// holds gradient_norm_scratch(n, ...) floats) the last team adds the
/// teams' sums in team order (deterministic). One thread then calls
/// `finish(grad_sq, nonfinite_params)`, the only place both totals exist:
/// the training guard makes its decision there without a launch of its own.
template <class ExecSpace, class MemorySpace, class Finish>
void gradient_sq_norm_then(const ExecSpace& space, const FlatParams<MemorySpace>& grads,
                           const FlatParams<MemorySpace>& params, const Finish& finish,
                           const ReduceScratch<MemorySpace>& scratch = ReduceScratch<MemorySpace>()) {
  using T = OptimizerTiling<ExecSpace>;
  using policy_type = Kokkos::TeamPolicy<ExecSpace>;
  const std::size_t n = grads.extent(0);
  const bool scan = params.extent(0) > 0;
  if (scan && params.extent(0) != n)
    throw LogicError("foxrl::kernels::gradient_sq_norm_then: params and grads differ in length");
  const int sums = scan ? 2 : 1;
  int teams = gradient_norm_teams<ExecSpace>(n);
  if (!scratch.holds(std::size_t(teams) * sums, 1)) teams = 1;
  const std::size_t per_team = (n + teams - 1) / teams;
  float* global = scratch.partials.data();
  unsigned* ticket = scratch.tickets.data();
  const int team_size = teams == 1 && T::team_size > 1 ? 512 : T::team_size;
  policy_type policy(space, teams, team_size);
  Kokkos::parallel_for(
      "foxrl::kernels::gradient_sq_norm",
      compat::light(policy.set_scratch_size(0, Kokkos::PerTeam(sizeof(float) * sums * team_size))),
      GradientSqNormKernel<MemorySpace, Finish>{grads, params, finish, global, ticket, n, per_team, sums, scan});
}

/// metrics(grad_sq) = sum_i grads(i)^2 (gradient_sq_norm_then without a
/// parameter scan; `scratch` needs gradient_norm_teams(n) floats).
template <class ExecSpace, class MemorySpace>
void gradient_sq_norm(const ExecSpace& space, const FlatParams<MemorySpace>& grads,
                      const Kokkos::View<float*, MemorySpace>& metrics,
                      const ReduceScratch<MemorySpace>& scratch = ReduceScratch<MemorySpace>()) {
  gradient_sq_norm_then(space, grads, FlatParams<MemorySpace>(), StoreGradSq<MemorySpace>{metrics}, scratch);
}

/// The training guard's side of an optimizer step (src/nn/training_guard.hpp):
/// the verdict and learning-rate scale its decision left in `state`, the
/// guarded buffers a restore copies back from their snapshots, and the td
/// errors a rejected update invalidates. Default-constructed: no guard
/// (every step applied at the configured learning rate).
template <class MemorySpace>
struct GuardedStep {
  /// Most buffers one guard restores (e.g. online, target, m, v).
  static constexpr int max_buffers = 8;
  Kokkos::View<const double*, MemorySpace> state;  ///< GuardState slots
  int buffers = 0;
  std::size_t length = 0;          ///< elements of every guarded buffer
  float* live[max_buffers] = {};   ///< restored in place ...
  float* saved[max_buffers] = {};  ///< ... from these snapshots
  /// Rewritten when the update is rejected: it taught nothing, so healthy
  /// rows get keep_priority_td (a spike's outsized errors would otherwise
  /// dominate sampling) and rows with their own non-finite td error keep it
  /// (the replay quarantines them).
  Kokkos::View<float*, MemorySpace> td_errors;
};

/// Where an optimizer step also updates a target network: target =
/// tau * p + (1 - tau) * target when tau > 0; tau >= 1 is the hard copy
/// target = p, as an assignment so nothing of the old target survives
/// (0 x NaN would). Default: no target update.
template <class MemorySpace>
struct TargetUpdate {
  FlatParams<MemorySpace> target;
  float tau = 0.0f;
};

/// One optimizer step's work of thread `t` of `threads` (adam_update's
/// body, shared with the fused CUDA optimizer of kernels/cuda/, so both
/// apply the same arithmetic to every element). GPUs: thread t takes
/// elements t, t + threads, ...; host backends: a contiguous chunk of
/// adam_per_thread elements.
template <class MemorySpace, bool host>
struct AdamStep {
  AdamHyper h;
  FlatParams<MemorySpace> params, grads, m, v;
  Kokkos::View<std::int64_t, MemorySpace> step;
  Kokkos::View<float*, MemorySpace> metrics;
  FlatParams<MemorySpace> target;
  bool polyak = false, copy = false, guarded = false;
  float tau = 0.0f;
  Kokkos::View<const double*, MemorySpace> gs;
  GuardedStep<MemorySpace> g;
  Kokkos::View<float*, MemorySpace> td;
  std::size_t n = 0, rows = 0, threads = 1;
  std::size_t per_thread = 1;  ///< host: elements of one thread's chunk

  /// What every thread of one step needs besides its elements: the
  /// guard's verdict and the step's scalars, derived from the norm, the
  /// step counter and the guard's state (the bias corrections in double).
  struct Scalars {
    float norm = 0.0f, lr = 0.0f, coef = 1.0f, step_size = 0.0f, bc2_sqrt = 1.0f;
    int verdict = GuardState::apply;
    int weights_bad = 0;
  };

  KOKKOS_INLINE_FUNCTION Scalars scalars() const {
    Scalars sc;
    sc.norm = math::sqrt(metrics(LearnerMetrics::grad_sq));
    // lr x 1.0 is lr bit for bit: a guard that never restored changes no result.
    sc.lr = h.lr;
    if (guarded) {
      sc.verdict = static_cast<int>(gs(GuardState::verdict));
      if (sc.verdict != GuardState::apply) {
        sc.weights_bad = gs(GuardState::weights_nonfinite) > 0.0 ? 1 : 0;
        return sc;
      }
      sc.lr = static_cast<float>(static_cast<double>(h.lr) * gs(GuardState::lr_scale));
    }
    if (h.max_grad_norm > 0.0f) {
      sc.coef = h.max_grad_norm / (sc.norm + 1e-6f);
      sc.coef = sc.coef < 1.0f ? sc.coef : 1.0f;
    }
    const double ts = static_cast<double>(step());
    const double bc1 = 1.0 - math::pow(static_cast<double>(h.beta1), ts);
    const double bc2 = 1.0 - math::pow(static_cast<double>(h.beta2), ts);
    sc.step_size = static_cast<float>(static_cast<double>(sc.lr) / bc1);
    sc.bc2_sqrt = static_cast<float>(math::sqrt(bc2));
    return sc;
  }

  KOKKOS_INLINE_FUNCTION void operator()(std::size_t t) const { apply(t, scalars()); }

  /// Thread t's elements with the step's scalars `sc` (scalars(): each
  /// thread of the portable launch derives them itself; the fused CUDA
  /// launch derives them once and hands them to every thread).
  KOKKOS_INLINE_FUNCTION void apply(std::size_t t, const Scalars& sc) const {
    if (t == 0) metrics(LearnerMetrics::grad_norm) = sc.norm;
    const std::size_t begin = host ? t * per_thread : t;
    const std::size_t stride = host ? 1 : threads;
    const std::size_t end = host ? (begin + per_thread < n ? begin + per_thread : n) : n;
    if (sc.verdict != GuardState::apply) {
      // Healthy rows keep their priority; rows whose own td error is
      // non-finite (finite weights: a broken reward or state) keep it and
      // are quarantined by the replay's priority update.
      for (std::size_t i = t; i < rows; i += threads)
        if (sc.weights_bad || math::isfinite(td(i))) td(i) = keep_priority_td;
      if (sc.verdict == GuardState::restore)
        for (std::size_t i = begin; i < end; i += stride)
          for (int b = 0; b < g.buffers; ++b) g.live[b][i] = g.saved[b][i];
      return;
    }
    const float lr = sc.lr, coef = sc.coef, step_size = sc.step_size, bc2_sqrt = sc.bc2_sqrt;
    for (std::size_t i = begin; i < end; i += stride) {
      float p = params(i);
      float gi = grads(i) * coef;
      if (h.weight_decay != 0.0f) {
        if (h.weight_decay_mode == WeightDecayMode::l2)
          gi += h.weight_decay * p;
        else
          p *= 1.0f - lr * h.weight_decay;
      }
      float mi = m(i);
      mi += (1.0f - h.beta1) * (gi - mi);
      const float vi = v(i) * h.beta2 + (1.0f - h.beta2) * gi * gi;
      const float denom = math::sqrt(vi) / bc2_sqrt + h.eps;
      p -= step_size * (mi / denom);
      m(i) = mi;
      v(i) = vi;
      params(i) = p;
      if (copy)
        target(i) = p;
      else if (polyak)
        target(i) = tau * p + (1.0f - tau) * target(i);
    }
  }
};

/// The AdamStep of one optimizer step, checked: `threads` threads share
/// the elements (host backends: chunks of OptimizerTiling's
/// adam_per_thread; `threads` is then derived from n).
template <class ExecSpace, class MemorySpace>
AdamStep<MemorySpace, OptimizerTiling<ExecSpace>::team_size == 1> make_adam_step(
    const AdamHyper& hyper, const FlatParams<MemorySpace>& params, const FlatParams<MemorySpace>& grads,
    const FlatParams<MemorySpace>& m, const FlatParams<MemorySpace>& v,
    const Kokkos::View<std::int64_t, MemorySpace>& step, const Kokkos::View<float*, MemorySpace>& metrics,
    const TargetUpdate<MemorySpace>& target_update, const GuardedStep<MemorySpace>& guard) {
  using T = OptimizerTiling<ExecSpace>;
  AdamStep<MemorySpace, T::team_size == 1> s;
  s.h = hyper;
  s.n = params.extent(0);
  if (grads.extent(0) != s.n || m.extent(0) != s.n || v.extent(0) != s.n)
    throw LogicError("foxrl::kernels::adam_update: params, grads and moments differ in length");
  s.params = params;
  s.grads = grads;
  s.m = m;
  s.v = v;
  s.step = step;
  s.metrics = metrics;
  s.target = target_update.target;
  s.polyak = target_update.tau > 0.0f && s.target.extent(0) == s.n;
  s.copy = s.polyak && target_update.tau >= 1.0f;
  s.tau = target_update.tau;
  s.guarded = guard.state.extent(0) > 0;
  if (s.guarded && (guard.state.extent(0) < std::size_t(GuardState::count) || guard.length != s.n))
    throw LogicError("foxrl::kernels::adam_update: the guard's state or snapshot does not match the parameters");
  s.gs = guard.state;
  s.g = guard;
  s.td = guard.td_errors;
  s.rows = s.td.extent(0);
  s.per_thread = T::adam_per_thread;
  const std::size_t threads = (s.n + T::adam_per_thread - 1) / T::adam_per_thread;
  s.threads = threads > 0 ? threads : 1;
  return s;
}

/// Clip + Adam (+ Polyak) in one pass over the flat buffers. `step` must
/// already count this step (t >= 1); metrics(grad_sq) must hold the squared
/// gradient norm; metrics(grad_norm) receives its root. `target` (see
/// TargetUpdate) is updated in the same pass. Torch's formulas
/// (single-tensor Adam), bias corrections in double. Each thread derives
/// the step's scalars (clip coefficient, bias corrections) once and applies
/// them to several elements. With a `guard`, its verdict decides: apply
/// (at lr x lr_scale), skip (nothing written, target included), or restore
/// (every guarded buffer copied back from its snapshot; the guard's
/// decision already reset the step counter).
template <class ExecSpace, class MemorySpace>
void adam_update(const ExecSpace& space, const AdamHyper& hyper, const FlatParams<MemorySpace>& params,
                 const FlatParams<MemorySpace>& grads, const FlatParams<MemorySpace>& m,
                 const FlatParams<MemorySpace>& v, const Kokkos::View<std::int64_t, MemorySpace>& step,
                 const Kokkos::View<float*, MemorySpace>& metrics,
                 const TargetUpdate<MemorySpace>& target_update = TargetUpdate<MemorySpace>(),
                 const GuardedStep<MemorySpace>& guard = GuardedStep<MemorySpace>()) {
  const auto s = make_adam_step<ExecSpace>(hyper, params, grads, m, v, step, metrics, target_update, guard);
  Kokkos::parallel_for("foxrl::kernels::adam_update",
                       compat::light(Kokkos::RangePolicy<ExecSpace>(space, 0, s.threads)), s);
}

/// polyak_update's kernel: target(i) = tau * online(i) + (1 - tau) * target(i).
template <class MemorySpace>
struct PolyakUpdateKernel {
  FlatParams<MemorySpace> online, target;
  float tau;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const {
    target(i) = tau * online(i) + (1.0f - tau) * target(i);
  }
};

/// target = tau * online + (1 - tau) * target (a standalone Polyak update).
template <class ExecSpace, class MemorySpace>
void polyak_update(const ExecSpace& space, const FlatParams<MemorySpace>& online, const FlatParams<MemorySpace>& target,
                   float tau) {
  Kokkos::parallel_for("foxrl::kernels::polyak_update", Kokkos::RangePolicy<ExecSpace>(space, 0, online.extent(0)),
                       PolyakUpdateKernel<MemorySpace>{online, target, tau});
}

/// Adds one to an optimizer's step counter: AdamOptimizer::count_step's
/// work, for learners whose loss kernel does not count the step in passing.
template <class MemorySpace>
struct CountStep {
  Kokkos::View<std::int64_t, MemorySpace> step;
  KOKKOS_INLINE_FUNCTION void operator()() const { step() += 1; }
};

}  // namespace kernels
}  // namespace foxrl
