#pragma once
// CqlLearner: discrete conservative Q-learning (Kumar, Zhou, Tucker, Levine
// 2020, CQL(H)) on one plain-head Q MLP obs -> A with its own flat
// parameters, gradients and AdamOptimizer, trailed by a TargetNetwork:
//   L = alpha mean(logsumexp_a Q(s, a) - Q(s, a_data)) + mean (Q(s, a_data) - y)^2,
//   y = r + discount Q_target(s', a*) (Batch::discounts holds
//   gamma^n (1 - terminated)); a* = argmax of the online Q at s' with
//   double_q, of Q_target at s' without.
// update() queues on the run's instance, with no host read and no
// allocation: the target forward at s', one online forward over [s; s']
// (only s without double_q), cql_loss (kernels/agents/offline/), the
// backward from Q(s), and the gradient norm + clip + Adam with the target
// update in the optimizer's own launch: Polyak every update when
// polyak_tau > 0, else a hard copy (tau 1) on every target_update_every-th
// update. The update counter lives on the host, so which update copies is
// known without a device read.

#include "agents/offline/offline_learner_common.hpp"
#include "core/error.hpp"
#include "kernels/agents/offline/cql_loss.hpp"
#include "kernels/agents/offline/iql_inference.hpp"
#include "kernels/core/reduce_scratch.hpp"
#include "kernels/nn/adam.hpp"
#include "kernels/nn/weight_init.hpp"
#include "nn/adam_optimizer.hpp"
#include "nn/dense_ops.hpp"
#include "nn/mlp.hpp"
#include "nn/parameter_file.hpp"
#include "nn/target_network.hpp"
#include "views/agents/dqn/learner_metrics.hpp"
#include "views/agents/offline/offline_metrics.hpp"
#include "views/nn/matrix.hpp"
#include "views/nn/network_layout.hpp"
#include "views/nn/parameter_set.hpp"
#include "views/replay/batch.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace foxrl {

/// Hyperparameters of a CqlLearner. gamma is not here: Batch::discounts
/// already holds gamma^n (1 - terminated).
struct CqlLearnerConfig : OfflineLearnerConfigBase {
  float alpha = 1.0f;              ///< weight of the conservative penalty, >= 0 (0: the TD loss alone)
  bool double_q = true;            ///< a* chosen by the online Q at s' (else by the target)
  int target_update_every = 1000;  ///< hard copy after every K-th update; 0 with polyak_tau > 0
  float polyak_tau = 0.0f;         ///< > 0 (<= 1): target = tau Q + (1 - tau) target after every update instead

  /// Throws UsageError naming the first bad field. Exactly one target
  /// scheme: target_update_every > 0 with polyak_tau 0, or polyak_tau in
  /// (0, 1] with target_update_every 0.
  void validate() const {
    const std::string who = "CqlLearnerConfig";
    validate_offline_common(who, *this);
    if (!(alpha >= 0.0f) || !std::isfinite(alpha))
      offline_config_error(who, "alpha", "must be finite and >= 0, got " + std::to_string(alpha));
    if (!(polyak_tau >= 0.0f && polyak_tau <= 1.0f))
      offline_config_error(who, "polyak_tau", "must be in [0, 1], got " + std::to_string(polyak_tau));
    if (target_update_every < 0)
      offline_config_error(who, "target_update_every", "must be >= 0, got " + std::to_string(target_update_every));
    if (polyak_tau == 0.0f && target_update_every == 0)
      offline_config_error(who, "target_update_every", "must be > 0 when polyak_tau is 0 (no target update otherwise)");
    if (polyak_tau > 0.0f && target_update_every != 0)
      offline_config_error(who, "target_update_every",
                           "must be 0 when polyak_tau is > 0 (one target scheme), got " +
                               std::to_string(target_update_every) + " with polyak_tau " + std::to_string(polyak_tau));
  }
};

/// Discrete-action CQL learner; see the file comment.
template <class ExecSpace>
class CqlLearner {
 public:
  // --- the registered offline learner's contract (agents/learner_registry.hpp)
  static constexpr const char* name = "cql";
  static constexpr const char* summary = "discrete conservative Q-learning (CQL(H)) with a double-DQN target";
  using Config = CqlLearnerConfig;
  static CqlLearnerConfig config_for(const OfflineTrainConfig& config, int obs_dim, int num_actions,
                                     int inference_rows) {
    CqlLearnerConfig c;
    c.set_from(config, obs_dim, num_actions, inference_rows);
    c.alpha = static_cast<float>(config.cql_alpha);
    c.target_update_every = static_cast<int>(config.cql_target_update_every);
    c.polyak_tau = config.cql_target_update_every > 0 ? 0.0f : static_cast<float>(config.polyak_tau);
    return c;
  }
  static std::vector<OfflineMetricSlot> metric_slots() {
    using M = OfflineMetrics;
    return {{"cql_loss", M::cql_loss},
            {"cql_penalty", M::cql_penalty},
            {"cql_td_loss", M::cql_td_loss},
            {"mean_q", M::cql_mean_q}};
  }

  using execution_space = ExecSpace;
  using memory_space = typename ExecSpace::memory_space;
  using matrix = Kokkos::View<float**, Kokkos::LayoutRight, memory_space>;
  using vector = Kokkos::View<float*, memory_space>;
  using flat = FlatParams<memory_space>;

  /// Allocates everything and initialises the Q network from config.seed
  /// (target = online); work is queued on `space`.
  CqlLearner(const ExecSpace& space, const CqlLearnerConfig& config) : config_(config) {
    config_.validate();
    const int B = config_.max_batch;
    const int A = config_.num_actions;
    infer_rows_ = std::max(B, config_.max_inference_batch);
    const std::string label = "foxrl::CqlLearner::q";
    layout_ = NetworkLayout::plain(config_.obs_dim, config_.hidden, A);
    ops_ = std::make_shared<DenseOps<ExecSpace>>(space, config_.dense_backend);
    reduce_ = offline_reduce_scratch(space, "foxrl::CqlLearner::reduce", {layout_}, B);
    params_ = ParameterSet<memory_space>(space, layout_, label);
    grads_ = alloc_flat(space, layout_, label + "::grads");
    adam_ = AdamOptimizer<ExecSpace>(space, layout_.total, config_.adam(), label);
    opt_metrics_ = vector(Kokkos::view_alloc(space, label + "::optimizer_metrics"), LearnerMetrics::count);
    // With double_q the online network runs [s; s'] in one forward.
    net_ = Mlp<ExecSpace>(space, layout_, std::max(config_.double_q ? 2 * B : B, infer_rows_), B, ops_, reduce_, label);
    kernels::init_weights(space, params_.flat, layout_, offline_network_seed(config_.seed, 0), config_.init);
    target_ = TargetNetwork<ExecSpace>(space, layout_, label + "_target");
    target_net_ = Mlp<ExecSpace>(space, layout_, B, 0, ops_, reduce_, label + "_target");
    Kokkos::deep_copy(space, target_.params().flat, params_.flat);
    d_q_ = matrix(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::CqlLearner::d_q"), B, A);
    metrics_ = vector(Kokkos::view_alloc(space, "foxrl::CqlLearner::metrics"), OfflineMetrics::count);
    guards_.add(space, network_name(), params_.flat, target_.params().flat, adam_, OfflineMetrics::cql_loss,
                config_.guard);
  }

  /// One CQL step on `batch` (size <= max_batch), all on `space`; see the
  /// file comment. An empty batch does nothing.
  void update(const ExecSpace& space, const Batch<memory_space>& batch) {
    check_offline_batch(who(), batch, config_.max_batch, config_.obs_dim);
    const int B = batch.size();
    if (B == 0) return;
    const ConstMatrix<memory_space> s = batch.states;
    const ConstMatrix<memory_space> s_next = batch.next_states;

    const ConstMatrix<memory_space> target_next = target_net_.forward(space, target_.params().flat, s_next, {});
    const auto online = net_.forward(space, params_.flat, s, config_.double_q ? s_next : ConstMatrix<memory_space>());

    kernels::CqlLossArgs<memory_space> args;
    args.q = matrix_rows(online, 0, B);
    args.target_next = target_next;
    if (config_.double_q) args.online_next = matrix_rows(online, B, 2 * B);
    args.actions = batch.actions;
    args.rewards = batch.rewards;
    args.discounts = batch.discounts;
    args.alpha = config_.alpha;
    args.d_q = matrix_rows(d_q_, 0, B);
    args.metrics = metrics_;
    args.scratch = reduce_;
    kernels::cql_loss(space, args);
    offline_network_step(space, net_, params_.flat, grads_, adam_, opt_metrics_, reduce_, s, args.d_q,
                         target_.fused(next_target_tau()), guards_, 0, metrics_, hook_);
    ++updates_;
  }

  /// argmax_a Q(s, a) per row of `states` [R, obs_dim] (lowest index on ties).
  void greedy_actions(const ExecSpace& space, const ConstMatrix<memory_space>& states,
                      const Kokkos::View<std::int32_t*, memory_space>& actions_out) {
    if (actions_out.extent(0) != states.extent(0))
      throw LogicError("foxrl::CqlLearner::greedy_actions: actions_out must have " + std::to_string(states.extent(0)) +
                       " rows");
    const ConstMatrix<memory_space> q = infer(space, states, "greedy_actions");
    kernels::row_argmax_actions(space, q, actions_out);
  }

  /// Q [R, A] of the online network for `states` [R, obs_dim].
  void q_values(const ExecSpace& space, const ConstMatrix<memory_space>& states,
                const MutableMatrix<memory_space>& q_out) {
    const int R = static_cast<int>(states.extent(0));
    if (q_out.extent(0) != std::size_t(R) || q_out.extent(1) != std::size_t(config_.num_actions))
      throw LogicError("foxrl::CqlLearner::q_values: q_out must be [" + std::to_string(R) + ", " +
                       std::to_string(config_.num_actions) + "]");
    const auto q = infer(space, states, "q_values");
    Kokkos::deep_copy(space, q_out, q);  // both contiguous row-major: one copy, no kernel
  }

  /// OfflineMetrics slots of the last update (cql_loss, cql_penalty,
  /// cql_td_loss, cql_mean_q).
  const vector& metrics() const { return metrics_; }
  /// LearnerMetrics slots grad_norm (before clipping) and grad_sq of the
  /// last optimizer step.
  const vector& optimizer_metrics() const { return opt_metrics_; }
  /// The Q network's parameters, gradients of the last update, optimizer.
  const ParameterSet<memory_space>& params() const { return params_; }
  const flat& gradients() const { return grads_; }
  const AdamOptimizer<ExecSpace>& optimizer() const { return adam_; }
  /// The target of the Q network.
  const TargetNetwork<ExecSpace>& target() const { return target_; }
  const NetworkLayout& layout() const { return layout_; }
  /// The most rows one inference call takes.
  int max_inference_rows() const { return infer_rows_; }
  const CqlLearnerConfig& config() const { return config_; }
  /// update() calls so far with a non-empty batch.
  std::int64_t updates() const { return updates_; }
  /// Queues a snapshot of every network's guard (taken where the last
  /// update was applied): the trainer's once-per-epoch restore point.
  void snapshot(const ExecSpace& space) const { guards_.snapshot(space); }
  /// The guards' counters summed over the networks; fences `space`.
  GuardCounters guard_counters(const ExecSpace& space) const { return guards_.counters(space); }
  const OfflineGuards<ExecSpace>& guards() const { return guards_; }
  /// The guards' state ("<network>.guard.*") to or from a StateWriter or
  /// StateReader, for a checkpoint that resumes bit for bit.
  template <class Archive>
  void visit_guard_state(Archive& a, const ExecSpace& space) const {
    guards_.visit_state(a, space);
  }
  /// Sets (or, with an empty function, clears) the hook every network's
  /// step calls between its backward and its optimizer step (see
  /// OfflineGradientHook).
  void set_gradient_hook(OfflineGradientHook<ExecSpace> hook) { hook_ = std::move(hook); }

  /// Writes the Q network, its target, the Adam state and the update
  /// counter to `path` (safetensors, atomic), with `stamp` added to its
  /// metadata. Fences `space` (not for the hot path).
  void save(const ExecSpace& space, const std::string& path,
            const std::map<std::string, std::string>& stamp = {}) const {
    ParameterFileWriter<ExecSpace> file;
    file.add(space, network_name(), params_);
    file.add(space, AdamTensorNames::under(network_name()), layout_, adam_);
    file.add(space, target_name(), target_.params());
    file.add_counter(updates_name(), updates_);
    file.metadata()["format"] = format();
    file.metadata()["architecture"] = layout_.describe();
    for (const auto& [key, value] : stamp) file.metadata()[key] = value;
    file.write(space, path);
  }

  /// Replaces the Q network, its target, the Adam state and the counter
  /// with the contents of `path` and returns the file's metadata. The file
  /// is validated completely first (format "foxrl-cql", every tensor); on
  /// any error (foxrl::UsageError naming the file, tensor and problem)
  /// nothing changes.
  std::map<std::string, std::string> load(const ExecSpace& space, const std::string& path) {
    ParameterFileReader<ExecSpace> file(path, "CQL " + layout_.describe());
    std::map<std::string, std::string> metadata = file.tensors().file().metadata;
    check_checkpoint_format(path, metadata, format());
    check_checkpoint_entry(path, metadata, "architecture", layout_.describe(), " (the run's config)");
    file.take(network_name(), params_);
    file.take(AdamTensorNames::under(network_name()), layout_, adam_);
    file.take(target_name(), target_.params());
    const std::int64_t updates = file.counter(updates_name());
    file.commit(space);
    updates_ = updates;
    guards_.snapshot(space, true);  // the loaded state is the guard's restore point
    return metadata;
  }

  /// The checkpoint's metadata "format".
  static std::string format() { return "foxrl-cql"; }
  /// Tensor-name prefix of the Q network in checkpoints.
  static std::string network_name() { return "q"; }
  /// Tensor-name prefix of its target in checkpoints.
  static std::string target_name() { return "q_target"; }
  /// Name of the update counter in checkpoints.
  static std::string updates_name() { return "learner.updates"; }

 private:
  static std::string who() { return "CqlLearner"; }

  /// The target update fused into the coming update's optimizer launch:
  /// Polyak tau, 1 for a due hard copy, 0 for none.
  float next_target_tau() const {
    if (config_.polyak_tau > 0.0f) return config_.polyak_tau;
    return (updates_ + 1) % config_.target_update_every == 0 ? 1.0f : 0.0f;
  }

  /// Forward of the online network for inference; returns its head rows.
  MutableMatrix<memory_space> infer(const ExecSpace& space, const ConstMatrix<memory_space>& states, const char* what) {
    check_offline_inference(who(), what, states, max_inference_rows(), config_.obs_dim);
    return net_.forward(space, params_.flat, states, {});
  }

  CqlLearnerConfig config_;
  NetworkLayout layout_;
  std::shared_ptr<DenseOps<ExecSpace>> ops_;
  kernels::ReduceScratch<memory_space> reduce_;
  ParameterSet<memory_space> params_;
  flat grads_;
  AdamOptimizer<ExecSpace> adam_;
  vector opt_metrics_;
  Mlp<ExecSpace> net_;
  TargetNetwork<ExecSpace> target_;
  Mlp<ExecSpace> target_net_;
  matrix d_q_;
  vector metrics_;
  OfflineGuards<ExecSpace> guards_;
  OfflineGradientHook<ExecSpace> hook_;
  int infer_rows_ = 0;
  std::int64_t updates_ = 0;
};

}  // namespace foxrl
