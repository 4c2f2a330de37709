#pragma once
// What every offline learner (IqlLearner, CqlLearner, BcLearner) does the
// same way, so each states only its own algorithm: the checks of the
// config fields they share, the AdamHyper of those fields, the per-network
// seed streams, the one ReduceScratch of an update, the batch and
// inference shape checks, one network's optimizer step (backward, gradient
// norm, clip + Adam with a fused target update, and between backward and
// Adam the gradient hook data-parallel training averages through) and the
// checkpoint format check. The learners' configs share their common fields
// (OfflineLearnerConfigBase) and how `foxrl train-offline`'s config sets them.

#include "agents/offline/offline_guards.hpp"
#include "config/offline_train_config.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"
#include "kernels/agents/offline/row_loss_reduction.hpp"
#include "kernels/core/reduce_scratch.hpp"
#include "kernels/nn/adam.hpp"
#include "kernels/nn/weight_init.hpp"
#include "nn/adam_optimizer.hpp"
#include "nn/mlp.hpp"
#include "views/nn/matrix.hpp"
#include "views/nn/network_layout.hpp"
#include "views/nn/parameter_set.hpp"
#include "views/replay/batch.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace foxrl {

/// A named OfflineMetrics slot a learner reports.
struct OfflineMetricSlot {
  const char* name;
  int slot;
};

/// The fields every offline learner's config has.
struct OfflineLearnerConfigBase {
  int obs_dim = 0;
  std::vector<int> hidden = {256, 256};  ///< trunk of every network
  int num_actions = 0;
  int max_batch = 256;          ///< largest Batch::size() update() accepts
  int max_inference_batch = 0;  ///< largest row count of the inference calls; 0: max_batch
  float lr = 3e-4f;             ///< Adam learning rate of every network
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float max_grad_norm = 0.0f;  ///< <= 0: no clipping (per network)
  std::uint64_t seed = 0;
  InitScheme init = InitScheme::torch_default;
  DenseBackend dense_backend = DenseBackend::blas;
  GuardConfig guard;  ///< each network's training guard

  AdamHyper adam() const {
    AdamHyper h;
    h.lr = lr;
    h.beta1 = beta1;
    h.beta2 = beta2;
    h.eps = eps;
    h.max_grad_norm = max_grad_norm;
    return h;
  }

  /// The shared fields as `foxrl train-offline`'s config sets them, for
  /// observations of `obs_dim` features and `num_actions` actions, batches
  /// of config.batch_size and inference calls of up to `inference_rows` rows.
  void set_from(const OfflineTrainConfig& config, int obs_dim_, int num_actions_, int inference_rows) {
    obs_dim = obs_dim_;
    hidden.assign(config.hidden.begin(), config.hidden.end());
    num_actions = num_actions_;
    max_batch = static_cast<int>(config.batch_size);
    max_inference_batch = inference_rows;
    lr = static_cast<float>(config.lr);
    eps = static_cast<float>(config.adam_eps);
    max_grad_norm = static_cast<float>(config.max_grad_norm);
    seed = config.seed;
    guard.spike_factor = static_cast<float>(config.guard_spike_factor);
    guard.max_bad = static_cast<int>(config.guard_max_bad);
    guard.lr_decay = static_cast<float>(config.guard_lr_decay);
  }
};

/// Throws UsageError "foxrl::<who>: <field> <why>".
[[noreturn]] inline void offline_config_error(const std::string& who, const std::string& field,
                                              const std::string& why) {
  throw UsageError("foxrl::" + who + ": " + field + " " + why);
}

/// Checks the fields every offline learner config has (obs_dim, hidden,
/// num_actions, max_batch, max_inference_batch, lr, beta1, beta2, eps,
/// max_grad_norm, guard); throws UsageError naming `who`, the first bad field and
/// its value. The head has num_actions outputs.
template <class Config>
void validate_offline_common(const std::string& who, const Config& c) {
  const auto bad = [&who](const std::string& field, const std::string& why) { offline_config_error(who, field, why); };
  if (c.obs_dim <= 0) bad("obs_dim", "must be > 0, got " + std::to_string(c.obs_dim));
  if (c.num_actions <= 0) bad("num_actions", "must be > 0, got " + std::to_string(c.num_actions));
  if (c.max_batch <= 0) bad("max_batch", "must be > 0, got " + std::to_string(c.max_batch));
  if (c.max_inference_batch < 0)
    bad("max_inference_batch", "must be >= 0, got " + std::to_string(c.max_inference_batch));
  if (!(c.lr > 0.0f) || !std::isfinite(c.lr)) bad("lr", "must be finite and > 0, got " + std::to_string(c.lr));
  if (!(c.beta1 >= 0.0f && c.beta1 < 1.0f)) bad("beta1", "must be in [0, 1), got " + std::to_string(c.beta1));
  if (!(c.beta2 >= 0.0f && c.beta2 < 1.0f)) bad("beta2", "must be in [0, 1), got " + std::to_string(c.beta2));
  if (!(c.eps > 0.0f)) bad("eps", "must be > 0, got " + std::to_string(c.eps));
  if (std::isnan(c.max_grad_norm)) bad("max_grad_norm", "must be a number");
  try {
    c.guard.validate();
  } catch (const UsageError& e) {
    throw UsageError("foxrl::" + who + ": guard: " + e.what());
  }
  try {
    (void)NetworkLayout::plain(c.obs_dim, c.hidden, c.num_actions);  // checks hidden
  } catch (const UsageError& e) {
    throw UsageError("foxrl::" + who + ": " + e.what());  // names the config as the other fields do
  }
}

/// Network k's stream of initial weights: distinct per network and seed.
inline std::uint64_t offline_network_seed(std::uint64_t seed, int k) {
  return seed ^ (0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(k + 1));
}

/// One ReduceScratch for every single-launch reduction of an update of
/// up to `batch` rows (they run one after the other on the instance): the
/// backwards of `layouts`, the offline losses and the gradient norms.
template <class ExecSpace>
kernels::ReduceScratch<typename ExecSpace::memory_space> offline_reduce_scratch(
    const ExecSpace& space, const std::string& label, const std::vector<NetworkLayout>& layouts, int batch) {
  const auto loss = kernels::offline_loss_scratch<ExecSpace>(batch);
  std::size_t floats = loss.floats, tickets = std::max(loss.tickets, std::size_t(1)), widest = 0;
  for (const auto& layout : layouts) {
    const auto mlp = Mlp<ExecSpace>::scratch_need(layout, batch);
    floats = std::max(floats, mlp.floats);
    tickets = std::max(tickets, mlp.tickets);
    widest = std::max(widest, layout.total);
  }
  floats = std::max(floats, kernels::gradient_norm_scratch<ExecSpace>(widest, false));
  return kernels::ReduceScratch<typename ExecSpace::memory_space>(space, label, floats, tickets);
}

/// Throws LogicError "foxrl::<who>::update: ..." unless `batch` has at most
/// `max_batch` rows and all its fields agree with its row count and `obs_dim`.
template <class MemorySpace>
void check_offline_batch(const std::string& who, const Batch<MemorySpace>& batch, int max_batch, int obs_dim) {
  const int B = batch.size();
  if (B < 0 || B > max_batch)
    throw LogicError("foxrl::" + who + "::update: " + std::to_string(B) + " rows, more than the configured maximum " +
                     std::to_string(max_batch));
  if (batch.obs_dim() != obs_dim || batch.next_states.extent(0) != std::size_t(B) ||
      batch.next_states.extent(1) != std::size_t(obs_dim) || batch.actions.extent(0) != std::size_t(B) ||
      batch.rewards.extent(0) != std::size_t(B) || batch.discounts.extent(0) != std::size_t(B))
    throw LogicError("foxrl::" + who + "::update: batch fields must all have " + std::to_string(B) +
                     " rows and states obs_dim " + std::to_string(obs_dim));
}

/// Throws LogicError "foxrl::<who>::<what>: ..." unless `states` has at most
/// `max_rows` rows of `obs_dim` columns.
template <class MemorySpace>
void check_offline_inference(const std::string& who, const char* what, const ConstMatrix<MemorySpace>& states,
                             int max_rows, int obs_dim) {
  if (states.extent(0) > std::size_t(max_rows))
    throw LogicError("foxrl::" + who + "::" + what + ": " + std::to_string(states.extent(0)) +
                     " rows, more than the configured maximum " + std::to_string(max_rows));
  if (states.extent(1) != std::size_t(obs_dim))
    throw LogicError("foxrl::" + who + "::" + what + ": states have " + std::to_string(states.extent(1)) +
                     " columns, obs_dim is " + std::to_string(obs_dim));
}

/// Called by every network's optimizer step between its backward and its
/// Adam step, with the network's index, its gradients and the one-element
/// view of the loss slot its guard judges, on the learner's instance: data-
/// parallel training replaces both with their means over the ranks, so
/// every rank's guard decides alike. It must leave every launch on `space`.
template <class ExecSpace>
using OfflineGradientHook =
    std::function<void(const ExecSpace&, int network, const FlatParams<typename ExecSpace::memory_space>& grads,
                       const Kokkos::View<float*, typename ExecSpace::memory_space>& loss)>;

/// One network's optimizer step after its loss: backward of `net` (its
/// last forward's first rows, input `s`) with dL/dhead `d_head` into
/// `grads`, then the step count, the gradient norm (into `opt_metrics`'
/// LearnerMetrics slots), guard `k` of `guards` judging the network's loss
/// in `losses` (and its weights), and clip + Adam with `target` updated in
/// the same launch, or the guard's skip or restore, all on `space`; `hook`
/// (if set) runs between the backward and the step count.
template <class ExecSpace>
void offline_network_step(const ExecSpace& space, Mlp<ExecSpace>& net,
                          const FlatParams<typename ExecSpace::memory_space>& params,
                          const FlatParams<typename ExecSpace::memory_space>& grads,
                          const AdamOptimizer<ExecSpace>& adam,
                          const Kokkos::View<float*, typename ExecSpace::memory_space>& opt_metrics,
                          const kernels::ReduceScratch<typename ExecSpace::memory_space>& scratch,
                          const ConstMatrix<typename ExecSpace::memory_space>& s,
                          const MutableMatrix<typename ExecSpace::memory_space>& d_head,
                          const kernels::TargetUpdate<typename ExecSpace::memory_space>& target,
                          const OfflineGuards<ExecSpace>& guards, int k,
                          const Kokkos::View<float*, typename ExecSpace::memory_space>& losses,
                          const OfflineGradientHook<ExecSpace>& hook) {
  using memory_space = typename ExecSpace::memory_space;
  net.backward(space, params, s, ConstMatrix<memory_space>(d_head), grads);
  if (hook) {
    const int slot = guards.loss_slot(k);
    hook(space, k, grads, Kokkos::subview(losses, std::make_pair(slot, slot + 1)));
  }
  adam.count_step(space);
  adam.step_with_norm(space, params, grads, opt_metrics, guards.decision(k, opt_metrics, losses), scratch, true, target,
                      guards.step(k));
}

}  // namespace foxrl
