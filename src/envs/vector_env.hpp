#pragma once
// VectorEnv: one of the registered device environments (envs/env_registry.hpp)
// behind a single interface, so the collector and the trainers are written
// once. Dispatch happens on the host, once per call; the kernels are the
// environments' own. make_vector_env builds the env a config names.

#include "config/train_config.hpp"
#include "core/error.hpp"
#include "envs/env_registry.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace foxrl {

namespace detail {
/// Whether Env names its settable state (static state_variables).
template <class Env, class = void>
struct has_state_variables : std::false_type {};
template <class Env>
struct has_state_variables<Env, std::void_t<decltype(Env::state_variables)>> : std::true_type {};
}  // namespace detail

/// The names in "a,b,c": 3.
inline std::size_t state_variable_count(const char* names) {
  std::size_t n = 1;
  for (const char* c = names; *c != 0; ++c) n += *c == ',' ? 1 : 0;
  return n;
}

template <class ExecSpace>
class VectorEnv {
 public:
  using memory_space = typename ExecSpace::memory_space;
  using obs_view = Kokkos::View<float**, Kokkos::LayoutRight, memory_space>;
  using action_view = Kokkos::View<const std::int32_t*, memory_space>;
  using variant = typename detail::EnvVariants<RegisteredEnvs<ExecSpace>>::envs;

  /// Any registered env.
  template <class Env, class = std::enable_if_t<!std::is_same_v<std::decay_t<Env>, VectorEnv>>>
  explicit VectorEnv(Env env) : env_(std::move(env)) {}

  int num_envs() const {
    return std::visit([](const auto& e) { return e.num_envs(); }, env_);
  }
  int obs_dim() const {
    return std::visit([](const auto& e) { return e.obs_dim(); }, env_);
  }
  int num_actions() const {
    return std::visit([](const auto& e) { return e.num_actions(); }, env_);
  }
  /// The registered name ("cartpole", "market", ...).
  std::string name() const {
    return std::visit([](const auto& e) { return std::string(std::decay_t<decltype(e)>::name); }, env_);
  }

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

  /// Puts env `env` into the state `values` (its env's state_variables, in
  /// order) at episode step 0, for rollouts; UsageError naming `option` for
  /// an env without a settable state or the wrong count of values.
  void set_state(const ExecSpace& space, int env, const std::vector<double>& values, const std::string& option) {
    std::visit(
        [&](auto& e) {
          using Env = std::decay_t<decltype(e)>;
          if constexpr (detail::has_state_variables<Env>::value) {
            const std::size_t n = state_variable_count(Env::state_variables);
            if (values.size() != n)
              throw UsageError(option + ": the " + std::string(Env::name) + " env takes " + std::to_string(n) +
                               " numbers " + Env::state_variables + ", got " + std::to_string(values.size()));
            e.set_state_values(space, env, values);
          } else {
            throw UsageError(option + ": the " + std::string(Env::name) + " env has no state to set");
          }
        },
        env_);
  }

  /// The env as class `Env` (null when it is another one).
  template <class Env>
  Env* as() {
    return std::get_if<Env>(&env_);
  }

  /// The env's device state in a trainer state file: the environment's own
  /// tensors, then env.observations. `a` is a StateWriter or StateReader.
  template <class Archive>
  void visit_state(Archive& a, const ExecSpace& space) {
    std::visit([&](auto& e) { e.visit_state(a, space); }, env_);
    a.tensor(space, "env.observations", observations());
  }

 private:
  variant env_;
};

/// `num_envs` envs of `config`'s env, replaying the split `which` of
/// `data` (built from the same config), their episodes drawn from `seed`.
template <class ExecSpace>
VectorEnv<ExecSpace> make_vector_env(const ExecSpace& space, const TrainConfig& config, const EnvData<ExecSpace>& data,
                                     int num_envs, std::uint64_t seed, EnvSplit which = EnvSplit::train) {
  return with_registered_env<ExecSpace>(data.index(), [&](auto i) {
    using Env = RegisteredEnv<ExecSpace, decltype(i)::value>;
    return VectorEnv<ExecSpace>(
        Env::make(space, config, std::get<decltype(i)::value>(data.get()), num_envs, seed, which));
  });
}

}  // namespace foxrl
