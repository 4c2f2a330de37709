#pragma once
// OfflineAgent: what an offline trainer needs from a learner (IqlLearner,
// CqlLearner, BcLearner), behind one interface, so the epoch loop,
// checkpoints and evaluation are written once. make_offline_agent builds
// the learner `config.algo` names; OfflineAgentOf<Exec, Learner> adapts any
// learner with the common method names.

#include "agents/offline/bc_learner.hpp"
#include "agents/offline/cql_learner.hpp"
#include "agents/offline/iql_learner.hpp"
#include "config/offline_train_config.hpp"
#include "core/error.hpp"
#include "io/state_archive.hpp"
#include "nn/training_guard.hpp"
#include "views/agents/offline/offline_metrics.hpp"
#include "views/nn/matrix.hpp"
#include "views/replay/batch.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace foxrl {

/// A named OfflineMetrics slot a learner reports.
struct OfflineMetricSlot {
  const char* name;
  int slot;
};

template <class ExecSpace>
class OfflineAgent {
 public:
  using memory_space = typename ExecSpace::memory_space;
  virtual ~OfflineAgent() = default;
  /// One update on `batch`, queued on `space` (no host read).
  virtual void update(const ExecSpace& space, const Batch<memory_space>& batch) = 0;
  /// The greedy action of each row of `states`.
  virtual void greedy_actions(const ExecSpace& space, const ConstMatrix<memory_space>& states,
                              const Kokkos::View<std::int32_t*, memory_space>& actions_out) = 0;
  /// The most rows one greedy_actions call takes.
  virtual int max_inference_rows() const = 0;
  /// OfflineMetrics of the last update; the slots this learner writes.
  virtual const Kokkos::View<float*, memory_space>& metrics() const = 0;
  virtual const std::vector<OfflineMetricSlot>& metric_slots() const = 0;
  virtual std::int64_t updates() const = 0;
  /// The learner's whole state (weights, targets, optimizer moments,
  /// counter) to and from a safetensors file.
  virtual void save(const ExecSpace& space, const std::string& path,
                    const std::map<std::string, std::string>& stamp) const = 0;
  virtual std::map<std::string, std::string> load(const ExecSpace& space, const std::string& path) = 0;
  /// The training guards (one per network): queue their snapshot (the
  /// restore point, once per epoch), read their counters summed over the
  /// networks (fences), and their state to and from a file (a resumed run
  /// goes on bit for bit; a bad file is a UsageError and changes nothing).
  virtual void snapshot_guards(const ExecSpace& space) const = 0;
  virtual GuardCounters guard_counters(const ExecSpace& space) const = 0;
  virtual void save_guard_state(const ExecSpace& space, const std::string& path) const = 0;
  virtual void load_guard_state(const ExecSpace& space, const std::string& path) = 0;
  /// The learner's gradient hook (data-parallel training; see
  /// OfflineGradientHook).
  virtual void set_gradient_hook(OfflineGradientHook<ExecSpace> hook) = 0;
  /// The whole learned state as named flat buffers ("<network>.params",
  /// ".target", ".adam_m", ".adam_v"), for the replicas' checksum.
  virtual std::vector<std::pair<std::string, FlatParams<memory_space>>> state_buffers() const = 0;
};

/// OfflineAgent over a learner of the common method names.
template <class ExecSpace, class Learner>
class OfflineAgentOf final : public OfflineAgent<ExecSpace> {
 public:
  using memory_space = typename ExecSpace::memory_space;
  template <class LearnerConfig>
  OfflineAgentOf(const ExecSpace& space, const LearnerConfig& config, std::vector<OfflineMetricSlot> slots)
      : learner_(space, config), slots_(std::move(slots)) {}
  void update(const ExecSpace& space, const Batch<memory_space>& batch) override { learner_.update(space, batch); }
  void greedy_actions(const ExecSpace& space, const ConstMatrix<memory_space>& states,
                      const Kokkos::View<std::int32_t*, memory_space>& actions_out) override {
    learner_.greedy_actions(space, states, actions_out);
  }
  int max_inference_rows() const override { return learner_.max_inference_rows(); }
  const Kokkos::View<float*, memory_space>& metrics() const override { return learner_.metrics(); }
  const std::vector<OfflineMetricSlot>& metric_slots() const override { return slots_; }
  std::int64_t updates() const override { return learner_.updates(); }
  void save(const ExecSpace& space, const std::string& path,
            const std::map<std::string, std::string>& stamp) const override {
    learner_.save(space, path, stamp);
  }
  std::map<std::string, std::string> load(const ExecSpace& space, const std::string& path) override {
    return learner_.load(space, path);
  }
  void snapshot_guards(const ExecSpace& space) const override { learner_.snapshot(space); }
  GuardCounters guard_counters(const ExecSpace& space) const override { return learner_.guard_counters(space); }
  void save_guard_state(const ExecSpace& space, const std::string& path) const override {
    StateWriter<ExecSpace> file;
    learner_.visit_guard_state(file, space);
    file.write(space, path);
  }
  void load_guard_state(const ExecSpace& space, const std::string& path) override {
    StateReader<ExecSpace> file(path);
    learner_.visit_guard_state(file, space);  // checks every tensor and value first
    file.apply(space);
  }
  void set_gradient_hook(OfflineGradientHook<ExecSpace> hook) override { learner_.set_gradient_hook(std::move(hook)); }
  std::vector<std::pair<std::string, FlatParams<memory_space>>> state_buffers() const override {
    return learner_.guards().buffers();
  }
  Learner& learner() { return learner_; }

 private:
  Learner learner_;
  std::vector<OfflineMetricSlot> slots_;
};

/// The learner `config.algo` names, for observations of `obs_dim` features
/// and `num_actions` actions, taking batches of config.batch_size and
/// inference calls of up to `inference_rows` rows.
template <class ExecSpace>
std::unique_ptr<OfflineAgent<ExecSpace>> make_offline_agent(const ExecSpace& space, const OfflineTrainConfig& config,
                                                            int obs_dim, int num_actions, int inference_rows) {
  std::vector<int> hidden;
  for (const auto h : config.hidden) hidden.push_back(static_cast<int>(h));
  const auto common = [&](auto& c) {
    c.obs_dim = obs_dim;
    c.hidden = hidden;
    c.num_actions = num_actions;
    c.max_batch = static_cast<int>(config.batch_size);
    c.max_inference_batch = inference_rows;
    c.lr = static_cast<float>(config.lr);
    c.eps = static_cast<float>(config.adam_eps);
    c.max_grad_norm = static_cast<float>(config.max_grad_norm);
    c.seed = config.seed;
    c.guard.spike_factor = static_cast<float>(config.guard_spike_factor);
    c.guard.max_bad = static_cast<int>(config.guard_max_bad);
    c.guard.lr_decay = static_cast<float>(config.guard_lr_decay);
  };
  using M = OfflineMetrics;
  if (config.algo == "iql") {
    IqlLearnerConfig c;
    common(c);
    c.expectile = static_cast<float>(config.expectile);
    c.beta = static_cast<float>(config.iql_beta);
    c.max_weight = static_cast<float>(config.max_weight);
    c.polyak_tau = static_cast<float>(config.polyak_tau);
    return std::make_unique<OfflineAgentOf<ExecSpace, IqlLearner<ExecSpace>>>(
        space, c,
        std::vector<OfflineMetricSlot>{{"value_loss", M::value_loss},
                                       {"q1_loss", M::q1_loss},
                                       {"q2_loss", M::q2_loss},
                                       {"policy_loss", M::policy_loss},
                                       {"mean_value", M::mean_value},
                                       {"mean_q", M::mean_q},
                                       {"mean_advantage", M::mean_advantage},
                                       {"mean_weight", M::mean_weight},
                                       {"clipped_weights", M::clipped_weights}});
  }
  if (config.algo == "cql") {
    CqlLearnerConfig c;
    common(c);
    c.alpha = static_cast<float>(config.cql_alpha);
    c.target_update_every = static_cast<int>(config.cql_target_update_every);
    c.polyak_tau = config.cql_target_update_every > 0 ? 0.0f : static_cast<float>(config.polyak_tau);
    return std::make_unique<OfflineAgentOf<ExecSpace, CqlLearner<ExecSpace>>>(
        space, c,
        std::vector<OfflineMetricSlot>{{"cql_loss", M::cql_loss},
                                       {"cql_penalty", M::cql_penalty},
                                       {"cql_td_loss", M::cql_td_loss},
                                       {"mean_q", M::cql_mean_q}});
  }
  if (config.algo == "bc") {
    BcLearnerConfig c;
    common(c);
    return std::make_unique<OfflineAgentOf<ExecSpace, BcLearner<ExecSpace>>>(
        space, c, std::vector<OfflineMetricSlot>{{"bc_loss", M::bc_loss}, {"bc_accuracy", M::bc_accuracy}});
  }
  throw UsageError("algo '" + config.algo + "': expected iql, cql or bc");
}

}  // namespace foxrl
