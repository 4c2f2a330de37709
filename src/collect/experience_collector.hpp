#pragma once
// ExperienceCollector: the acting half of one iteration. One call = forward
// pass of the online network on the current observations, epsilon-greedy
// action selection, one step of every env, n-step accumulation and the
// episode statistics: all on the run's instance, no host copy, no fence. The
// finished n-step transitions (nstep().output()) are the caller's to insert,
// so that insert is a phase of its own.

#include "collect/action_selector.hpp"
#include "collect/nstep_accumulator.hpp"
#include "core/kernel_paths.hpp"
#include "envs/episode_stats.hpp"
#include "envs/vector_env.hpp"
#include "kernels/collect/record_step.hpp"
#include "market/signal_adapter.hpp"

#include <cstdint>

namespace foxrl {

template <class ExecSpace>
class ExperienceCollector {
 public:
  using memory_space = typename ExecSpace::memory_space;
  using obs_view = Kokkos::View<float**, Kokkos::LayoutRight, memory_space>;
  using action_view = Kokkos::View<std::int32_t*, memory_space>;

  /// The collector uses the components; it owns none of them. `adapter` may
  /// be null (observations go to the network as the env gives them). The
  /// policy that acts comes with each step: any learner with
  /// greedy_actions_then (e.g. DqnLearner).
  ExperienceCollector(const ExecSpace& space, VectorEnv<ExecSpace>& env, const ActionSelector<ExecSpace>& selector,
                      SignalAdapter<ExecSpace>* adapter, int n_step, float gamma)
      : env_(env),
        selector_(selector),
        adapter_(adapter),
        nstep_(space, env.num_envs(), env.obs_dim(), n_step, gamma),
        stats_(space, env.num_envs()),
        acted_on_(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::Collector::acted_on"), env.num_envs(),
                  env.obs_dim()),
        greedy_(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::Collector::greedy"), env.num_envs()),
        actions_(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::Collector::actions"), env.num_envs()) {
    if (adapter_ != nullptr) {
      normalized_ = obs_view(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::Collector::normalized"),
                             env.num_envs(), env.obs_dim());
    }
    // One-step returns need no window: the transition is the step itself,
    // so the n-step ring and output are the step's own buffers (written
    // anew by each env step, inserted before the next), and the record
    // writes only each env's flags, reward and discount. That little work
    // rides in the episode statistics' launch across teams.
    if (n_step == 1 && kernel_path_on(KernelPath::one_step_aliased)) {
      const auto& result = env.step_result();
      nstep_.alias_one_step(
          {acted_on_, actions_, result.rewards, result.terminated, result.truncated, result.next_observations});
    }
  }

  /// One vectorized step of every env, epsilon-greedy around `policy`'s
  /// greedy actions; `global_step` = env steps taken before it (the epsilon
  /// schedule's clock). Returns whether every env finished an n-step
  /// transition (false while the windows fill): then nstep().output()
  /// holds them until the next step.
  template <class Policy>
  bool step(const ExecSpace& space, Policy& policy, std::int64_t global_step) {
    return step_then_push(space, policy, selector_.greedy_choice(greedy_, global_step, actions_),
                          kernels::CounterRead::host(nstep_.steps_pushed()));
  }

  /// The same with the global step and the n-step push count read when the
  /// kernels run (a trainer's device clock; the values must equal
  /// global_step and nstep().steps_pushed(); epsilon is then evaluated on
  /// the device, the same bits as the host's). Only launches: the trainer
  /// may capture this call in a graph (count_replayed_step() then stands
  /// for it on each replay).
  template <class Policy>
  bool step(const ExecSpace& space, Policy& policy, kernels::CounterRead global_step,
            kernels::CounterRead nstep_pushed) {
    return step_then_push(space, policy, selector_.greedy_choice(greedy_, global_step, actions_), nstep_pushed);
  }

  /// The same, with `after(team)` run once the step's record is complete,
  /// in the record's own launch where one team records (a few envs), else in
  /// a one-team launch of its own (kernels::record_step): e.g. the replay's
  /// insert of what the step emitted (ReplayBuffer::insert_in_team).
  template <class Policy, class After>
  bool step(const ExecSpace& space, Policy& policy, kernels::CounterRead global_step, kernels::CounterRead nstep_pushed,
            const After& after) {
    return step_then_push(space, policy, selector_.greedy_choice(greedy_, global_step, actions_), nstep_pushed, after);
  }

  /// The host side of a step whose launches ran in a replayed graph.
  void count_replayed_step() noexcept { nstep_.count_replayed_push(); }

  const EpisodeStats<ExecSpace>& episode_stats() const { return stats_; }
  EpisodeStats<ExecSpace>& episode_stats() { return stats_; }

  /// Actions of the last step (for evaluation traces).
  const action_view& actions() const { return actions_; }
  const NStepAccumulator<ExecSpace>& nstep() const { return nstep_; }
  NStepAccumulator<ExecSpace>& nstep() { return nstep_; }

 private:
  /// The greedy actions, then one env step that makes the epsilon-greedy
  /// `choice` (recording the actions in actions_) and keeps the
  /// observations acted on in acted_on_ for the n-step record, both inside
  /// the env's own launch: a selection launch and a copy beforehand would
  /// each be one more node on the iteration's chain.
  template <class Policy, class After = kernels::NothingAfterRecord>
  bool step_then_push(const ExecSpace& space, Policy& policy, const kernels::EpsilonGreedyChoice<memory_space>& choice,
                      kernels::CounterRead nstep_pushed, const After& after = After()) {
    obs_view network_input = env_.observations();
    if (adapter_ != nullptr) {
      adapter_->process(space, env_.observations(), normalized_);
      network_input = normalized_;
    }
    // CartPole's step runs inside the launch that forms the greedy actions
    // (the fused forward for a few envs on CUDA, else the head kernel:
    // DqnLearner::greedy_actions_then), one node fewer again.
    env_.act_then_step_choosing(space, choice, acted_on_, [&](const auto& per_env) {
      return policy.greedy_actions_then(space, network_input, greedy_, per_env);
    });
    const auto& result = env_.step_result();
    // The episode statistics and the n-step record: one launch for a few
    // envs (kernels/collect/record_step.hpp), two for more.
    const auto stats_step = stats_.step_of(result.rewards, result.terminated, result.truncated);
    return nstep_.push_with(
        {acted_on_, actions_, result.rewards, result.terminated, result.truncated, result.next_observations},
        nstep_pushed,
        [&](const auto& record) { kernels::record_step(space, stats_step, record, after, record.one_step_aliased); });
  }

  VectorEnv<ExecSpace>& env_;
  const ActionSelector<ExecSpace>& selector_;
  SignalAdapter<ExecSpace>* adapter_;
  NStepAccumulator<ExecSpace> nstep_;
  EpisodeStats<ExecSpace> stats_;
  obs_view acted_on_;
  obs_view normalized_;
  action_view greedy_;
  action_view actions_;

 public:
  /// The collector's host counter in a trainer state: n-step pushes.
  struct HostState {
    std::int64_t nstep_pushed = 0;
  };

  /// Saving: writes the push count. Loading: reads and checks it into
  /// `h`; the collector is not touched until restore_host_state().
  template <class Archive>
  void visit_host_state(Archive& a, HostState& h) const {
    if constexpr (Archive::saving) h.nstep_pushed = nstep_.steps_pushed();
    a.scalar("nstep.steps_pushed", h.nstep_pushed);
    if constexpr (!Archive::saving) {
      if (h.nstep_pushed < 0) a.fail("nstep.steps_pushed", "negative counter " + std::to_string(h.nstep_pushed));
    }
  }

  /// The device state: the n-step windows, then the episode statistics
  /// (`h`: the push count, read before; it tells which window rows a
  /// loaded state has written).
  template <class Archive>
  void visit_state(Archive& a, const ExecSpace& space, const HostState& h) {
    nstep_.visit_state(a, space, h.nstep_pushed, env_.num_actions());
    stats_.visit_state(a, space);
  }

  /// After the reader applied visit_state's copies.
  void restore_host_state(const HostState& h) { nstep_.restore_steps_pushed(h.nstep_pushed); }
};

}  // namespace foxrl
