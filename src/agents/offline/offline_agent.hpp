#pragma once
// OfflineAgent: what an offline trainer needs from a learner (IqlLearner,
// CqlLearner, BcLearner), behind one interface, so the epoch loop,
// checkpoints and evaluation are written once. OfflineAgentOf<Exec, Learner>
// adapts any learner with the common method names; make_offline_agent
// (agents/learner_registry.hpp) builds the one `config.algo` names.

#include "agents/offline/offline_learner_common.hpp"
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
  /// The guard file carries `stamp` (e.g. the run identity) in its
  /// metadata; loading returns the file's metadata.
  virtual void save_guard_state(const ExecSpace& space, const std::string& path,
                                const std::map<std::string, std::string>& stamp) const = 0;
  virtual std::map<std::string, std::string> load_guard_state(const ExecSpace& space, const std::string& path) = 0;
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
  OfflineAgentOf(const ExecSpace& space, const typename Learner::Config& config)
      : learner_(space, config), slots_(Learner::metric_slots()) {}
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
  void save_guard_state(const ExecSpace& space, const std::string& path,
                        const std::map<std::string, std::string>& stamp) const override {
    StateWriter<ExecSpace> file;
    learner_.visit_guard_state(file, space);
    for (const auto& [key, value] : stamp) file.metadata()[key] = value;
    file.write(space, path);
  }
  std::map<std::string, std::string> load_guard_state(const ExecSpace& space, const std::string& path) override {
    StateReader<ExecSpace> file(path);
    learner_.visit_guard_state(file, space);  // checks every tensor and value first
    file.apply(space);
    return file.metadata();
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

}  // namespace foxrl
