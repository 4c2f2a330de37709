#pragma once
// OfflineGuards: the training guards of an offline learner, one per network
// (src/nn/training_guard.hpp), as `foxrl train` guards the DQN learner.
// Each guards its network's parameters, its target when it has one, its
// Adam moments and step counter, and judges the network's own loss (the
// learner's OfflineMetrics slot of that network): a batch that breaks one
// loss (a non-finite reward breaks the Q losses, not the value or policy
// loss) rejects that network's step only. Decisions and restores happen on
// the device inside each network's optimizer launch; the host reads the
// counters once per epoch. Spikes are judged against the largest loss of
// the recent window, not its median (GuardConfig::spike_over_window_max).

#include "core/error.hpp"
#include "nn/adam_optimizer.hpp"
#include "nn/training_guard.hpp"
#include "views/nn/parameter_set.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace foxrl {

template <class ExecSpace>
class OfflineGuards {
 public:
  using memory_space = typename ExecSpace::memory_space;
  using flat = FlatParams<memory_space>;

  /// Adds network `name`'s guard (its first snapshot taken) and returns its
  /// index; `target` may be empty (no target network); its loss is slot
  /// `loss_slot` of the learner's metrics.
  int add(const ExecSpace& space, const std::string& name, const flat& params, const flat& target,
          const AdamOptimizer<ExecSpace>& adam, int loss_slot, const GuardConfig& config) {
    std::vector<GuardedBuffer<memory_space>> buffers{{"params", params, false}};
    if (target.extent(0) > 0) buffers.push_back({"target", target, false});
    buffers.push_back({"adam_m", adam.m(), false});
    buffers.push_back({"adam_v", adam.v(), true});
    GuardConfig offline = config;
    offline.spike_over_window_max = true;  // see GuardConfig: losses on a fixed dataset can approach zero
    entries_.push_back({name, TrainingGuard<ExecSpace>(space, buffers, adam.step(), offline), loss_slot, buffers});
    entries_.back().guard.snapshot(space, true);
    return static_cast<int>(entries_.size()) - 1;
  }

  /// What network k's optimizer launch needs: the decision on the loss in
  /// `losses` and the verdict's step.
  kernels::GuardDecision<memory_space> decision(int k, const Kokkos::View<float*, memory_space>& opt_metrics,
                                                const Kokkos::View<float*, memory_space>& losses) const {
    const Entry& e = entries_.at(std::size_t(k));
    return e.guard.decision(opt_metrics, Kokkos::View<const float*, memory_space>(losses), e.loss_slot);
  }
  kernels::GuardedStep<memory_space> step(int k) const {
    return entries_.at(std::size_t(k)).guard.step(Kokkos::View<float*, memory_space>());
  }

  /// Queues a snapshot of every network (taken only where the last update
  /// was applied, unless `force`).
  void snapshot(const ExecSpace& space, bool force = false) const {
    for (const auto& e : entries_) e.guard.snapshot(space, force);
  }

  /// The counters of every network's guard, summed (lr_scale: the smallest,
  /// verdict: the worst); fences `space` once per network.
  GuardCounters counters(const ExecSpace& space) const {
    GuardCounters sum;
    for (const auto& e : entries_) {
      const GuardCounters c = e.guard.counters(space);
      sum.rejected += c.rejected;
      sum.nonfinite += c.nonfinite;
      sum.spikes += c.spikes;
      sum.restores += c.restores;
      sum.snapshots += c.snapshots;
      sum.consecutive_bad = std::max(sum.consecutive_bad, c.consecutive_bad);
      sum.lr_scale = std::min(sum.lr_scale, c.lr_scale);
      sum.verdict = std::max(sum.verdict, c.verdict);
    }
    return sum;
  }
  /// Network k's own guard and name.
  const TrainingGuard<ExecSpace>& guard(int k) const { return entries_.at(std::size_t(k)).guard; }
  const std::string& name(int k) const { return entries_.at(std::size_t(k)).name; }
  int size() const { return static_cast<int>(entries_.size()); }
  /// The metrics slot network k's guard judges (its loss).
  int loss_slot(int k) const { return entries_.at(std::size_t(k)).loss_slot; }
  /// Every guarded buffer of every network, named "<network>.<buffer>"
  /// (params, target, adam_m, adam_v): the whole learned state, which
  /// data-parallel replicas must hold alike.
  std::vector<std::pair<std::string, flat>> buffers() const {
    std::vector<std::pair<std::string, flat>> all;
    for (const auto& e : entries_)
      for (const auto& b : e.buffers) all.emplace_back(e.name + "." + b.name, b.view);
    return all;
  }

  /// Every guard's state as tensors "<network>.guard.*" of a StateWriter
  /// or StateReader (see TrainingGuard::visit_state).
  template <class Archive>
  void visit_state(Archive& a, const ExecSpace& space) const {
    for (const auto& e : entries_) e.guard.visit_state(a, space, e.name + ".guard.");
  }

 private:
  struct Entry {
    std::string name;
    TrainingGuard<ExecSpace> guard;
    int loss_slot = 0;
    std::vector<GuardedBuffer<memory_space>> buffers;
  };
  std::vector<Entry> entries_;
};

}  // namespace foxrl
