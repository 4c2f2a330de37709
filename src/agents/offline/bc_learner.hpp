#pragma once
// BcLearner: behavior cloning of the dataset's actions by a softmax policy,
// one plain-head MLP obs -> A logits with its own flat parameters,
// gradients and AdamOptimizer, trained by the cross-entropy
//   L = -mean log softmax(logits(s))(a_data)
// (bc_loss, kernels/agents/offline/). Its minimum over a state's logits is
// softmax(logits) = the dataset's action frequencies at that state.
// update() queues on the run's instance, with no host read and no
// allocation: the forward at s, bc_loss, the backward and the gradient
// norm + clip + Adam. Rewards, next states and discounts are not read.

#include "agents/offline/offline_learner_common.hpp"
#include "core/error.hpp"
#include "kernels/agents/offline/bc_loss.hpp"
#include "kernels/agents/offline/iql_inference.hpp"
#include "kernels/core/reduce_scratch.hpp"
#include "kernels/nn/adam.hpp"
#include "kernels/nn/weight_init.hpp"
#include "nn/adam_optimizer.hpp"
#include "nn/dense_ops.hpp"
#include "nn/mlp.hpp"
#include "nn/parameter_file.hpp"
#include "views/agents/dqn/learner_metrics.hpp"
#include "views/agents/offline/offline_metrics.hpp"
#include "views/nn/matrix.hpp"
#include "views/nn/network_layout.hpp"
#include "views/nn/parameter_set.hpp"
#include "views/replay/batch.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace foxrl {

/// Hyperparameters of a BcLearner.
struct BcLearnerConfig : OfflineLearnerConfigBase {
  /// Throws UsageError naming the first bad field.
  void validate() const { validate_offline_common("BcLearnerConfig", *this); }
};

/// Behavior cloning learner for discrete actions; see the file comment.
template <class ExecSpace>
class BcLearner {
 public:
  // --- the registered offline learner's contract (agents/learner_registry.hpp)
  static constexpr const char* name = "bc";
  static constexpr const char* summary = "behaviour cloning: a softmax policy fit to the dataset's actions";
  using Config = BcLearnerConfig;
  static BcLearnerConfig config_for(const OfflineTrainConfig& config, int obs_dim, int num_actions,
                                    int inference_rows) {
    BcLearnerConfig c;
    c.set_from(config, obs_dim, num_actions, inference_rows);
    return c;
  }
  static std::vector<OfflineMetricSlot> metric_slots() {
    using M = OfflineMetrics;
    return {{"bc_loss", M::bc_loss}, {"bc_accuracy", M::bc_accuracy}};
  }

  using execution_space = ExecSpace;
  using memory_space = typename ExecSpace::memory_space;
  using matrix = Kokkos::View<float**, Kokkos::LayoutRight, memory_space>;
  using vector = Kokkos::View<float*, memory_space>;
  using flat = FlatParams<memory_space>;

  /// Allocates everything and initialises the policy from config.seed;
  /// work is queued on `space`.
  BcLearner(const ExecSpace& space, const BcLearnerConfig& config) : config_(config) {
    config_.validate();
    const int B = config_.max_batch;
    const int A = config_.num_actions;
    infer_rows_ = std::max(B, config_.max_inference_batch);
    const std::string label = "foxrl::BcLearner::policy";
    layout_ = NetworkLayout::plain(config_.obs_dim, config_.hidden, A);
    ops_ = std::make_shared<DenseOps<ExecSpace>>(space, config_.dense_backend);
    reduce_ = offline_reduce_scratch(space, "foxrl::BcLearner::reduce", {layout_}, B);
    params_ = ParameterSet<memory_space>(space, layout_, label);
    grads_ = alloc_flat(space, layout_, label + "::grads");
    adam_ = AdamOptimizer<ExecSpace>(space, layout_.total, config_.adam(), label);
    opt_metrics_ = vector(Kokkos::view_alloc(space, label + "::optimizer_metrics"), LearnerMetrics::count);
    net_ = Mlp<ExecSpace>(space, layout_, infer_rows_, B, ops_, reduce_, label);
    kernels::init_weights(space, params_.flat, layout_, offline_network_seed(config_.seed, 0), config_.init);
    d_logits_ = matrix(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::BcLearner::d_logits"), B, A);
    metrics_ = vector(Kokkos::view_alloc(space, "foxrl::BcLearner::metrics"), OfflineMetrics::count);
    guards_.add(space, network_name(), params_.flat, flat(), adam_, OfflineMetrics::bc_loss, config_.guard);
  }

  /// One cross-entropy step on `batch` (size <= max_batch), all on
  /// `space`; see the file comment. An empty batch does nothing.
  void update(const ExecSpace& space, const Batch<memory_space>& batch) {
    check_offline_batch(who(), batch, config_.max_batch, config_.obs_dim);
    const int B = batch.size();
    if (B == 0) return;
    const ConstMatrix<memory_space> s = batch.states;
    kernels::BcLossArgs<memory_space> args;
    args.logits = net_.forward(space, params_.flat, s, {});
    args.actions = batch.actions;
    args.d_logits = matrix_rows(d_logits_, 0, B);
    args.metrics = metrics_;
    args.scratch = reduce_;
    kernels::bc_loss(space, args);
    offline_network_step(space, net_, params_.flat, grads_, adam_, opt_metrics_, reduce_, s, args.d_logits,
                         kernels::TargetUpdate<memory_space>(), guards_, 0, metrics_, hook_);
    ++updates_;
  }

  /// argmax_a of the policy's logits per row of `states` [R, obs_dim]
  /// (lowest index on ties): the mode of the cloned policy.
  void greedy_actions(const ExecSpace& space, const ConstMatrix<memory_space>& states,
                      const Kokkos::View<std::int32_t*, memory_space>& actions_out) {
    if (actions_out.extent(0) != states.extent(0))
      throw LogicError("foxrl::BcLearner::greedy_actions: actions_out must have " + std::to_string(states.extent(0)) +
                       " rows");
    check_offline_inference(who(), "greedy_actions", states, infer_rows_, config_.obs_dim);
    const ConstMatrix<memory_space> logits = net_.forward(space, params_.flat, states, {});
    kernels::row_argmax_actions(space, logits, actions_out);
  }

  /// OfflineMetrics slots of the last update (bc_loss, bc_accuracy).
  const vector& metrics() const { return metrics_; }
  /// LearnerMetrics slots grad_norm (before clipping) and grad_sq of the
  /// last optimizer step.
  const vector& optimizer_metrics() const { return opt_metrics_; }
  /// The policy's parameters, gradients of the last update, optimizer.
  const ParameterSet<memory_space>& params() const { return params_; }
  const flat& gradients() const { return grads_; }
  const AdamOptimizer<ExecSpace>& optimizer() const { return adam_; }
  const NetworkLayout& layout() const { return layout_; }
  /// The most rows one inference call takes.
  int max_inference_rows() const { return infer_rows_; }
  const BcLearnerConfig& config() const { return config_; }
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

  /// Writes the policy, its Adam state and the update counter to `path`
  /// (safetensors, atomic), with `stamp` added to its metadata. Fences
  /// `space` (not for the hot path).
  void save(const ExecSpace& space, const std::string& path,
            const std::map<std::string, std::string>& stamp = {}) const {
    ParameterFileWriter<ExecSpace> file;
    file.add(space, network_name(), params_);
    file.add(space, AdamTensorNames::under(network_name()), layout_, adam_);
    file.add_counter(updates_name(), updates_);
    file.metadata()["format"] = format();
    file.metadata()["architecture"] = layout_.describe();
    for (const auto& [key, value] : stamp) file.metadata()[key] = value;
    file.write(space, path);
  }

  /// Replaces the policy, its Adam state and the counter with the contents
  /// of `path` and returns the file's metadata. The file is validated
  /// completely first (format "foxrl-bc", every tensor); on any error
  /// (foxrl::UsageError naming the file, tensor and problem) nothing
  /// changes.
  std::map<std::string, std::string> load(const ExecSpace& space, const std::string& path) {
    ParameterFileReader<ExecSpace> file(path, "BC " + layout_.describe());
    std::map<std::string, std::string> metadata = file.tensors().file().metadata;
    check_checkpoint_format(path, metadata, format());
    check_checkpoint_entry(path, metadata, "architecture", layout_.describe(), " (the run's config)");
    file.take(network_name(), params_);
    file.take(AdamTensorNames::under(network_name()), layout_, adam_);
    const std::int64_t updates = file.counter(updates_name());
    file.commit(space);
    updates_ = updates;
    guards_.snapshot(space, true);  // the loaded state is the guard's restore point
    return metadata;
  }

  /// The checkpoint's metadata "format".
  static std::string format() { return "foxrl-bc"; }
  /// Tensor-name prefix of the policy in checkpoints.
  static std::string network_name() { return "policy"; }
  /// Name of the update counter in checkpoints.
  static std::string updates_name() { return "learner.updates"; }

 private:
  static std::string who() { return "BcLearner"; }

  BcLearnerConfig config_;
  NetworkLayout layout_;
  std::shared_ptr<DenseOps<ExecSpace>> ops_;
  kernels::ReduceScratch<memory_space> reduce_;
  ParameterSet<memory_space> params_;
  flat grads_;
  AdamOptimizer<ExecSpace> adam_;
  vector opt_metrics_;
  Mlp<ExecSpace> net_;
  matrix d_logits_;
  vector metrics_;
  OfflineGuards<ExecSpace> guards_;
  OfflineGradientHook<ExecSpace> hook_;
  int infer_rows_ = 0;
  std::int64_t updates_ = 0;
};

}  // namespace foxrl
