#pragma once
// VectorEnv: one of the device environments (CartPole or market replay)
// behind a single interface, so the collector and the trainer are written
// once. Dispatch happens on the host, once per call; the kernels are the
// environments' own.

#include "config/env_kind.hpp"
#include "envs/cartpole_env.hpp"
#include "market/market_env.hpp"

#include <variant>

namespace foxrl {

template <class ExecSpace>
class VectorEnv {
 public:
  using memory_space = typename ExecSpace::memory_space;
  using obs_view = Kokkos::View<float**, Kokkos::LayoutRight, memory_space>;
  using action_view = Kokkos::View<const std::int32_t*, memory_space>;

  explicit VectorEnv(CartPoleEnv<ExecSpace> env) : env_(std::move(env)) {}
  explicit VectorEnv(MarketEnv<ExecSpace> env) : env_(std::move(env)) {}

  int num_envs() const {
    return std::visit([](const auto& e) { return e.num_envs(); }, env_);
  }
  int obs_dim() const {
    return std::visit([](const auto& e) { return e.obs_dim(); }, env_);
  }
  int num_actions() const {
    return std::visit([](const auto& e) { return e.num_actions(); }, env_);
  }
  bool is_market() const { return std::holds_alternative<MarketEnv<ExecSpace>>(env_); }

  /// Observations the next actions are chosen from (post-reset).
  const obs_view& observations() const {
    return std::visit([](const auto& e) -> const obs_view& { return e.observations(); }, env_);
  }
  /// Result of the last step (real next observations, rewards, flags).
  const EnvStep<memory_space>& step_result() const {
    return std::visit([](const auto& e) -> const EnvStep<memory_space>& { return e.step_result(); }, env_);
  }
  void step(const ExecSpace& space, const action_view& actions) {
    std::visit([&](auto& e) { e.step(space, actions); }, env_);
  }
  /// step() with each env's action chosen by `choose` inside the step's
  /// launch (no selection launch of its own), also writing the
  /// observations the actions were chosen from (observations() before the
  /// step) into `acted_on` there (no copy of its own). `choose` records the
  /// actions where its caller wants them (kernels::EpsilonGreedyChoice).
  template <class Choose>
  void step_choosing(const ExecSpace& space, const Choose& choose, const obs_view& acted_on) {
    std::visit([&](auto& e) { e.step_choosing(space, choose, acted_on); }, env_);
  }
  /// step_choosing() after `act`, which forms the actions `choose` reads:
  /// act(f) gets the step's per-env functor f (f(i) steps env i, as
  /// step_choosing's launch) and may run it inside its own launch,
  /// returning true; false, or an env whose step is not one per-env
  /// functor (act then gets kernels::NoPerEnvStep), and the step launches
  /// as step_choosing().
  template <class Choose, class Act>
  void act_then_step_choosing(const ExecSpace& space, const Choose& choose, const obs_view& acted_on, const Act& act) {
    std::visit([&](auto& e) { e.act_then_step_choosing(space, choose, acted_on, act); }, env_);
  }
  void reset(const ExecSpace& space) {
    std::visit([&](auto& e) { e.reset(space); }, env_);
  }

  CartPoleEnv<ExecSpace>* cartpole() { return std::get_if<CartPoleEnv<ExecSpace>>(&env_); }
  MarketEnv<ExecSpace>* market() { return std::get_if<MarketEnv<ExecSpace>>(&env_); }
  EnvKind kind() const { return is_market() ? EnvKind::market : EnvKind::cartpole; }

  /// The env's device state in a trainer state file: the environment's own
  /// tensors, then env.observations. `a` is a StateWriter or StateReader.
  template <class Archive>
  void visit_state(Archive& a, const ExecSpace& space) {
    std::visit([&](auto& e) { e.visit_state(a, space); }, env_);
    a.tensor(space, "env.observations", observations());
  }

 private:
  std::variant<CartPoleEnv<ExecSpace>, MarketEnv<ExecSpace>> env_;
};

}  // namespace foxrl
