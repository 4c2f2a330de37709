#pragma once
// IqlLearner: implicit Q-learning (Kostrikov, Nair, Levine 2021) for
// discrete actions, composed of the nn pieces. Four plain-head MLPs, each
// with its own flat parameters, gradients and AdamOptimizer:
//   V       obs -> 1, trained by expectile regression on
//           min(Q1_target, Q2_target)(s, a) - V(s);
//   Q1, Q2  obs -> A, trained on y = r + discount V(s') (Batch::discounts
//           holds gamma^n (1 - terminated)), each trailed by a Polyak
//           target updated inside its own optimizer launch;
//   policy  obs -> A logits of a softmax policy, trained by
//           advantage-weighted log-likelihood with weights
//           min(exp(beta (Q_target - V)), max_weight).
// update() queues on the run's instance, with no host read and no
// allocation: the forwards (both target Qs at s, V at [s; s'], both Qs at
// s, the policy at s), then value loss -> V backward -> Adam, twin Q loss
// -> both Q backwards -> Adam + Polyak, policy loss -> policy backward ->
// Adam. Every loss reads the forwards made before any step, so the three
// updates are those of one set of parameters (as in the paper's joint step).

#include "agents/offline/offline_learner_common.hpp"
#include "core/error.hpp"
#include "kernels/agents/offline/iql_inference.hpp"
#include "kernels/agents/offline/iql_policy_loss.hpp"
#include "kernels/agents/offline/iql_q_loss.hpp"
#include "kernels/agents/offline/iql_value_loss.hpp"
#include "kernels/agents/offline/row_loss_reduction.hpp"
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

/// Hyperparameters of an IqlLearner (defaults: the paper's). gamma is not
/// here: Batch::discounts already holds gamma^n (1 - terminated).
struct IqlLearnerConfig : OfflineLearnerConfigBase {
  float expectile = 0.7f;     ///< tau of the value loss, in (0, 1)
  float beta = 3.0f;          ///< inverse temperature of the advantage weights, >= 0
  float max_weight = 100.0f;  ///< clip of the advantage weights, > 0
  float polyak_tau = 0.005f;  ///< target Q = tau Q + (1 - tau) target Q after every update, in (0, 1]

  /// Throws UsageError naming the first bad field.
  void validate() const {
    auto bad = [](const std::string& field, const std::string& why) {
      throw UsageError("foxrl::IqlLearnerConfig: " + field + " " + why);
    };
    validate_offline_common("IqlLearnerConfig", *this);
    if (!(expectile > 0.0f && expectile < 1.0f))
      bad("expectile", "must be in (0, 1), got " + std::to_string(expectile));
    if (!(beta >= 0.0f) || !std::isfinite(beta)) bad("beta", "must be finite and >= 0, got " + std::to_string(beta));
    if (!(max_weight > 0.0f) || !std::isfinite(max_weight))
      bad("max_weight", "must be finite and > 0, got " + std::to_string(max_weight));
    if (!(polyak_tau > 0.0f && polyak_tau <= 1.0f))
      bad("polyak_tau", "must be in (0, 1], got " + std::to_string(polyak_tau));
  }
};

/// The four networks of an IqlLearner (indices of its per-network accessors).
enum class IqlNetwork : int { value = 0, q1 = 1, q2 = 2, policy = 3 };

/// Discrete-action IQL learner; see the file comment.
template <class ExecSpace>
class IqlLearner {
 public:
  // --- the registered offline learner's contract (agents/learner_registry.hpp)
  static constexpr const char* name = "iql";
  static constexpr const char* summary =
      "implicit Q-learning: expectile value, twin Q, advantage-weighted softmax policy";
  using Config = IqlLearnerConfig;
  static IqlLearnerConfig config_for(const OfflineTrainConfig& config, int obs_dim, int num_actions,
                                     int inference_rows) {
    IqlLearnerConfig c;
    c.set_from(config, obs_dim, num_actions, inference_rows);
    c.expectile = static_cast<float>(config.expectile);
    c.beta = static_cast<float>(config.iql_beta);
    c.max_weight = static_cast<float>(config.max_weight);
    c.polyak_tau = static_cast<float>(config.polyak_tau);
    return c;
  }
  /// The OfflineMetrics slots an update writes, by name.
  static std::vector<OfflineMetricSlot> metric_slots() {
    using M = OfflineMetrics;
    return {{"value_loss", M::value_loss},
            {"q1_loss", M::q1_loss},
            {"q2_loss", M::q2_loss},
            {"policy_loss", M::policy_loss},
            {"mean_value", M::mean_value},
            {"mean_q", M::mean_q},
            {"mean_advantage", M::mean_advantage},
            {"mean_weight", M::mean_weight},
            {"clipped_weights", M::clipped_weights}};
  }

  using execution_space = ExecSpace;
  using memory_space = typename ExecSpace::memory_space;
  using matrix = Kokkos::View<float**, Kokkos::LayoutRight, memory_space>;
  using vector = Kokkos::View<float*, memory_space>;
  using flat = FlatParams<memory_space>;
  static constexpr int networks = 4;

  /// Allocates everything and initialises the four networks from
  /// config.seed (each its own stream; targets = online Qs); work is queued
  /// on `space`.
  IqlLearner(const ExecSpace& space, const IqlLearnerConfig& config) : config_(config) {
    config_.validate();
    const int B = config_.max_batch;
    const int A = config_.num_actions;
    const int infer = std::max(B, config_.max_inference_batch);
    value_layout_ = NetworkLayout::plain(config_.obs_dim, config_.hidden, 1);
    action_layout_ = NetworkLayout::plain(config_.obs_dim, config_.hidden, A);
    ops_ = std::make_shared<DenseOps<ExecSpace>>(space, config_.dense_backend);
    reduce_ = offline_reduce_scratch(space, "foxrl::IqlLearner::reduce", {value_layout_, action_layout_}, B);
    const char* names[networks] = {"value", "q1", "q2", "policy"};
    for (int k = 0; k < networks; ++k) {
      const NetworkLayout& layout = k == 0 ? value_layout_ : action_layout_;
      const std::string label = std::string("foxrl::IqlLearner::") + names[k];
      params_[k] = ParameterSet<memory_space>(space, layout, label);
      grads_[k] = alloc_flat(space, layout, label + "::grads");
      adam_[k] = AdamOptimizer<ExecSpace>(space, layout.total, config_.adam(), label);
      opt_metrics_[k] = vector(Kokkos::view_alloc(space, label + "::optimizer_metrics"), LearnerMetrics::count);
      // The value network runs [s; s'] in one forward.
      net_[k] = Mlp<ExecSpace>(space, layout, k == 0 ? std::max(2 * B, infer) : infer, B, ops_, reduce_, label);
      kernels::init_weights(space, params_[k].flat, layout, offline_network_seed(config_.seed, k), config_.init);
    }
    for (int t = 0; t < 2; ++t) {
      const std::string label = std::string("foxrl::IqlLearner::") + names[1 + t] + "_target";
      target_[t] = TargetNetwork<ExecSpace>(space, action_layout_, label);
      target_net_[t] = Mlp<ExecSpace>(space, action_layout_, B, 0, ops_, reduce_, label);
      Kokkos::deep_copy(space, target_[t].params().flat, params_[1 + t].flat);
    }
    const int loss_slots[networks] = {OfflineMetrics::value_loss, OfflineMetrics::q1_loss, OfflineMetrics::q2_loss,
                                      OfflineMetrics::policy_loss};
    for (int k = 0; k < networks; ++k)
      guards_.add(space, network_name(k), params_[k].flat, k == 1 || k == 2 ? target_[k - 1].params().flat : flat(),
                  adam_[k], loss_slots[k], config_.guard);
    d_value_ = matrix(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::IqlLearner::d_value"), B, 1);
    for (auto& d : d_q_)
      d = matrix(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::IqlLearner::d_q"), B, A);
    d_logits_ = matrix(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::IqlLearner::d_logits"), B, A);
    metrics_ = vector(Kokkos::view_alloc(space, "foxrl::IqlLearner::metrics"), OfflineMetrics::count);
  }

  /// One IQL step of all four networks on `batch` (size <= max_batch), all
  /// on `space`; see the file comment. An empty batch does nothing.
  void update(const ExecSpace& space, const Batch<memory_space>& batch) {
    check_batch(batch);
    const int B = batch.size();
    if (B == 0) return;
    const ConstMatrix<memory_space> s = batch.states;
    const ConstMatrix<memory_space> s_next = batch.next_states;

    const ConstMatrix<memory_space> q1_target = target_net_[0].forward(space, target_[0].params().flat, s, {});
    const ConstMatrix<memory_space> q2_target = target_net_[1].forward(space, target_[1].params().flat, s, {});
    const auto v_out = net_[0].forward(space, params_[0].flat, s, s_next);
    const ConstMatrix<memory_space> v_s = matrix_rows(v_out, 0, B);
    const ConstMatrix<memory_space> v_next = matrix_rows(v_out, B, 2 * B);
    const ConstMatrix<memory_space> q1 = net_[1].forward(space, params_[1].flat, s, {});
    const ConstMatrix<memory_space> q2 = net_[2].forward(space, params_[2].flat, s, {});
    const ConstMatrix<memory_space> logits = net_[3].forward(space, params_[3].flat, s, {});

    {
      kernels::IqlValueLossArgs<memory_space> args;
      args.q1_target = q1_target;
      args.q2_target = q2_target;
      args.value = v_s;
      args.actions = batch.actions;
      args.expectile = config_.expectile;
      args.d_value = matrix_rows(d_value_, 0, B);
      args.metrics = metrics_;
      args.scratch = reduce_;
      kernels::iql_value_loss(space, args);
      step(space, 0, s, args.d_value, kernels::TargetUpdate<memory_space>());
    }
    {
      kernels::IqlQLossArgs<memory_space> args;
      args.q1 = q1;
      args.q2 = q2;
      args.value_next = v_next;
      args.actions = batch.actions;
      args.rewards = batch.rewards;
      args.discounts = batch.discounts;
      args.d_q1 = matrix_rows(d_q_[0], 0, B);
      args.d_q2 = matrix_rows(d_q_[1], 0, B);
      args.metrics = metrics_;
      args.scratch = reduce_;
      kernels::iql_q_loss(space, args);
      step(space, 1, s, args.d_q1, target_[0].fused(config_.polyak_tau));
      step(space, 2, s, args.d_q2, target_[1].fused(config_.polyak_tau));
    }
    {
      kernels::IqlPolicyLossArgs<memory_space> args;
      args.logits = logits;
      args.q1_target = q1_target;
      args.q2_target = q2_target;
      args.value = v_s;
      args.actions = batch.actions;
      args.beta = config_.beta;
      args.max_weight = config_.max_weight;
      args.d_logits = matrix_rows(d_logits_, 0, B);
      args.metrics = metrics_;
      args.scratch = reduce_;
      kernels::iql_policy_loss(space, args);
      step(space, 3, s, args.d_logits, kernels::TargetUpdate<memory_space>());
    }
    ++updates_;
  }

  /// argmax_a of the policy's logits per row of `states` [R, obs_dim]
  /// (lowest index on ties).
  void greedy_actions(const ExecSpace& space, const ConstMatrix<memory_space>& states,
                      const Kokkos::View<std::int32_t*, memory_space>& actions_out) {
    if (actions_out.extent(0) != states.extent(0))
      throw LogicError("foxrl::IqlLearner::greedy_actions: actions_out must have " + std::to_string(states.extent(0)) +
                       " rows");
    const ConstMatrix<memory_space> logits = infer(space, IqlNetwork::policy, states, "greedy_actions");
    kernels::row_argmax_actions(space, logits, actions_out);
  }

  /// min(Q1, Q2) [R, A] of the online twins for `states` [R, obs_dim].
  void q_values(const ExecSpace& space, const ConstMatrix<memory_space>& states,
                const MutableMatrix<memory_space>& q_out) {
    const int R = static_cast<int>(states.extent(0));
    if (q_out.extent(0) != std::size_t(R) || q_out.extent(1) != std::size_t(config_.num_actions))
      throw LogicError("foxrl::IqlLearner::q_values: q_out must be [" + std::to_string(R) + ", " +
                       std::to_string(config_.num_actions) + "]");
    const auto q1 = infer(space, IqlNetwork::q1, states, "q_values");
    const auto q2 = infer(space, IqlNetwork::q2, states, "q_values");
    kernels::twin_q_min(space, ConstMatrix<memory_space>(q1), ConstMatrix<memory_space>(q2), q_out);
  }

  /// V(s) [R] of the value network for `states` [R, obs_dim].
  void values(const ExecSpace& space, const ConstMatrix<memory_space>& states, const vector& v_out) {
    if (v_out.extent(0) != states.extent(0))
      throw LogicError("foxrl::IqlLearner::values: v_out must have " + std::to_string(states.extent(0)) + " rows");
    const auto v = infer(space, IqlNetwork::value, states, "values");
    kernels::first_column(space, ConstMatrix<memory_space>(v), v_out);
  }

  /// OfflineMetrics slots of the last update (value, Q and policy losses).
  const vector& metrics() const { return metrics_; }
  /// LearnerMetrics slots grad_norm (before clipping) and grad_sq of
  /// network k's last optimizer step.
  const vector& optimizer_metrics(IqlNetwork k) const { return opt_metrics_[index(k)]; }
  /// Network k's parameters, gradients of the last update, optimizer.
  const ParameterSet<memory_space>& params(IqlNetwork k) const { return params_[index(k)]; }
  const flat& gradients(IqlNetwork k) const { return grads_[index(k)]; }
  const AdamOptimizer<ExecSpace>& optimizer(IqlNetwork k) const { return adam_[index(k)]; }
  /// The Polyak target of Q1 (twin 0) or Q2 (twin 1).
  const TargetNetwork<ExecSpace>& target(int twin) const { return target_[twin == 0 ? 0 : 1]; }
  const NetworkLayout& layout(IqlNetwork k) const { return k == IqlNetwork::value ? value_layout_ : action_layout_; }
  /// The most rows one inference call takes.
  int max_inference_rows() const { return static_cast<int>(net_[3].output().extent(0)); }
  const IqlLearnerConfig& config() const { return config_; }
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

  /// Writes all four networks, both target Qs, the four Adam states and
  /// the update counter to `path` (safetensors, atomic), with `stamp` added
  /// to its metadata. Fences `space` (not for the hot path).
  void save(const ExecSpace& space, const std::string& path,
            const std::map<std::string, std::string>& stamp = {}) const {
    ParameterFileWriter<ExecSpace> file;
    for (int k = 0; k < networks; ++k) {
      file.add(space, network_name(k), params_[k]);
      file.add(space, AdamTensorNames::under(network_name(k)), params_[k].layout, adam_[k]);
    }
    for (int t = 0; t < 2; ++t) file.add(space, target_name(t), target_[t].params());
    file.add_counter(updates_name(), updates_);
    file.metadata()["format"] = "foxrl-iql";
    file.metadata()["value_architecture"] = value_layout_.describe();
    file.metadata()["action_architecture"] = action_layout_.describe();
    for (const auto& [key, value] : stamp) file.metadata()[key] = value;
    file.write(space, path);
  }

  /// Replaces every network, target, Adam state and the counter with the
  /// contents of `path` and returns the file's metadata. The file is
  /// validated completely first; on any error (foxrl::UsageError naming
  /// the file, tensor and problem) nothing changes.
  std::map<std::string, std::string> load(const ExecSpace& space, const std::string& path) {
    ParameterFileReader<ExecSpace> file(path, "IQL " + value_layout_.describe() + " / " + action_layout_.describe());
    std::map<std::string, std::string> metadata = file.tensors().file().metadata;
    // Files of the first IQL release carry no format; any other learner's
    // format is refused before a tensor is read.
    if (metadata.count("format") != 0) {
      check_checkpoint_format(path, metadata, "foxrl-iql");
      check_checkpoint_entry(path, metadata, "value_architecture", value_layout_.describe(), " (the run's config)");
      check_checkpoint_entry(path, metadata, "action_architecture", action_layout_.describe(), " (the run's config)");
    }
    for (int k = 0; k < networks; ++k) {
      file.take(network_name(k), params_[k]);
      file.take(AdamTensorNames::under(network_name(k)), params_[k].layout, adam_[k]);
    }
    for (int t = 0; t < 2; ++t) file.take(target_name(t), target_[t].params());
    const std::int64_t updates = file.counter(updates_name());
    file.commit(space);
    updates_ = updates;
    guards_.snapshot(space, true);  // the loaded state is the guards' restore point
    return metadata;
  }

  /// Tensor-name prefix of network k in checkpoints.
  static std::string network_name(int k) {
    static const char* const names[networks] = {"value", "q1", "q2", "policy"};
    return names[k];
  }
  /// Tensor-name prefix of the target of twin t in checkpoints.
  static std::string target_name(int t) { return t == 0 ? "q1_target" : "q2_target"; }
  /// Name of the update counter in checkpoints.
  static std::string updates_name() { return "learner.updates"; }

 private:
  static int index(IqlNetwork k) { return static_cast<int>(k); }

  /// Backward of network k (its last forward's first rows, input `s`) with
  /// dL/dhead `d_head`, then its gradient norm, clip + Adam and `target`
  /// update.
  void step(const ExecSpace& space, int k, const ConstMatrix<memory_space>& s,
            const MutableMatrix<memory_space>& d_head, const kernels::TargetUpdate<memory_space>& target) {
    offline_network_step(space, net_[k], params_[k].flat, grads_[k], adam_[k], opt_metrics_[k], reduce_, s, d_head,
                         target, guards_, k, metrics_, hook_);
  }

  void check_batch(const Batch<memory_space>& batch) const {
    check_offline_batch("IqlLearner", batch, config_.max_batch, config_.obs_dim);
  }

  /// Forward of network k for inference; returns its head rows.
  MutableMatrix<memory_space> infer(const ExecSpace& space, IqlNetwork k, const ConstMatrix<memory_space>& states,
                                    const char* what) {
    check_offline_inference("IqlLearner", what, states, max_inference_rows(), config_.obs_dim);
    return net_[index(k)].forward(space, params_[index(k)].flat, states, {});
  }

  IqlLearnerConfig config_;
  NetworkLayout value_layout_, action_layout_;
  std::shared_ptr<DenseOps<ExecSpace>> ops_;
  kernels::ReduceScratch<memory_space> reduce_;
  ParameterSet<memory_space> params_[networks];
  flat grads_[networks];
  AdamOptimizer<ExecSpace> adam_[networks];
  vector opt_metrics_[networks];
  Mlp<ExecSpace> net_[networks];
  TargetNetwork<ExecSpace> target_[2];
  Mlp<ExecSpace> target_net_[2];
  matrix d_value_, d_q_[2], d_logits_;
  vector metrics_;
  OfflineGuards<ExecSpace> guards_;
  OfflineGradientHook<ExecSpace> hook_;
  std::int64_t updates_ = 0;
};

}  // namespace foxrl
