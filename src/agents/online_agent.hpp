#pragma once
// OnlineAgent: what evaluation and inference need of a trained online
// learner (a DqnLearner, or another registered online algorithm), behind
// one interface: its checkpoint loaded, Q-values and greedy actions. The
// online twin of OfflineAgent; make_online_agent
// (agents/learner_registry.hpp) builds the one a run's `algo` names. The
// trainer itself holds its learner by type (its hot path is compile-time).

#include "views/nn/matrix.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace foxrl {

template <class ExecSpace>
class OnlineAgent {
 public:
  using memory_space = typename ExecSpace::memory_space;
  virtual ~OnlineAgent() = default;
  /// The learner's state from a checkpoint file; returns the file's
  /// metadata. UsageError naming the file and tensor when it is not this
  /// learner's (nothing changes then).
  virtual std::map<std::string, std::string> load(const ExecSpace& space, const std::string& path) = 0;
  /// Q-values [R, A] for `states` [R, obs_dim].
  virtual void q_values(const ExecSpace& space, const ConstMatrix<memory_space>& states,
                        const MutableMatrix<memory_space>& q_out) = 0;
  /// argmax_a Q(states, a) per row (lowest index on ties).
  virtual void greedy_actions(const ExecSpace& space, const ConstMatrix<memory_space>& states,
                              const Kokkos::View<std::int32_t*, memory_space>& actions_out) = 0;
  /// The most rows one call takes.
  virtual int max_inference_rows() const = 0;
};

/// OnlineAgent over a learner of the common method names.
template <class ExecSpace, class Learner>
class OnlineAgentOf final : public OnlineAgent<ExecSpace> {
 public:
  using memory_space = typename ExecSpace::memory_space;
  OnlineAgentOf(const ExecSpace& space, const typename Learner::Config& config) : learner_(space, config) {}
  std::map<std::string, std::string> load(const ExecSpace& space, const std::string& path) override {
    return learner_.load(space, path);
  }
  void q_values(const ExecSpace& space, const ConstMatrix<memory_space>& states,
                const MutableMatrix<memory_space>& q_out) override {
    learner_.q_values(space, states, q_out);
  }
  void greedy_actions(const ExecSpace& space, const ConstMatrix<memory_space>& states,
                      const Kokkos::View<std::int32_t*, memory_space>& actions_out) override {
    learner_.greedy_actions(space, states, actions_out);
  }
  int max_inference_rows() const override { return learner_.max_inference_rows(); }
  Learner& learner() { return learner_; }

 private:
  Learner learner_;
};

}  // namespace foxrl
