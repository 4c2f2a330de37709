#pragma once
// The registered environments: the one list of what the config key `env`
// may name. Everything that builds or names an env goes through it (the
// trainers, evaluation, datasets, rollouts, the study report, `foxrl
// info`), so adding an environment is its own files and one line in
// RegisteredEnvs below (docs/design.md, "How to add an environment").
//
// A registered env class carries its entry as static members:
//   name, summary                 the config spelling and a line for `foxrl info`
//   evaluation                    EvaluationKind: greedy episodes or a backtest
//   spaces(const TrainConfig&)    EnvSpaces: observation and action sizes, normaliser mask
//   Data, make_data(space, cfg)   what all instances of a run share (NoEnvData for a simulator)
//   make(space, cfg, data, num_envs, seed, EnvSplit)
// and the instance interface VectorEnv dispatches to (num_envs, obs_dim,
// num_actions, observations, step_result, step, step_choosing,
// act_then_step_choosing, reset, visit_state).

#include "config/train_config.hpp"
#include "core/error.hpp"
#include "envs/acrobot_env.hpp"
#include "envs/cartpole_env.hpp"
#include "market/market_env.hpp"
#include "views/envs/env_traits.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace foxrl {

/// A list of env classes.
template <class... Envs>
struct EnvTypes {
  static constexpr std::size_t size = sizeof...(Envs);
};

/// The registered environments, in the order `foxrl info` lists them.
template <class ExecSpace>
using RegisteredEnvs = EnvTypes<CartPoleEnv<ExecSpace>, MarketEnv<ExecSpace>, AcrobotEnv<ExecSpace>>;

/// Host facts of a registered env, for code that builds no env (config
/// checks, dataset metadata, reports, `foxrl info`).
struct EnvInfo {
  std::string name;
  std::string summary;
  EvaluationKind evaluation = EvaluationKind::episodes;
  EnvSpaces (*spaces)(const TrainConfig&) = nullptr;
};

/// Every registered env, in registration order.
const std::vector<EnvInfo>& registered_envs();
/// The registered env called `name`; UsageError naming the value and the
/// registered names otherwise ("env 'pong': not a registered env (...)").
const EnvInfo& env_info(const std::string& name);
/// Its position in RegisteredEnvs (the index of VectorEnv's alternative).
std::size_t env_index(const std::string& name);
/// "cartpole, market, ...": the registered names, for messages.
std::string registered_env_names();
/// The spaces of `config`'s env (env_info(config.env).spaces(config)).
EnvSpaces env_spaces(const TrainConfig& config);
/// "train", "validation", "test" or "whole" as an EnvSplit; UsageError
/// naming `option` and the value otherwise.
EnvSplit parse_env_split(const std::string& name, const std::string& option);

namespace detail {

template <class List>
struct EnvVariants;
template <class... Envs>
struct EnvVariants<EnvTypes<Envs...>> {
  using envs = std::variant<Envs...>;
  /// Index i holds the Data of the i-th env (alternatives may repeat a type).
  using data = std::variant<typename Envs::Data...>;
};

template <class List, std::size_t I>
struct EnvAt;
template <class First, class... Rest>
struct EnvAt<EnvTypes<First, Rest...>, 0> {
  using type = First;
};
template <class First, class... Rest, std::size_t I>
struct EnvAt<EnvTypes<First, Rest...>, I> {
  using type = typename EnvAt<EnvTypes<Rest...>, I - 1>::type;
};

template <std::size_t I, std::size_t N, class F>
auto dispatch_env(std::size_t index, F& f) {
  if constexpr (I + 1 == N) {
    return f(std::integral_constant<std::size_t, I>{});
  } else {
    if (index == I) return f(std::integral_constant<std::size_t, I>{});
    return dispatch_env<I + 1, N>(index, f);
  }
}

}  // namespace detail

/// The env class at `I` of RegisteredEnvs.
template <class ExecSpace, std::size_t I>
using RegisteredEnv = typename detail::EnvAt<RegisteredEnvs<ExecSpace>, I>::type;

/// Calls f(std::integral_constant<std::size_t, I>) for the registered env
/// at `index` (RegisteredEnv<ExecSpace, I> is its class); every call of f
/// returns the same type.
template <class ExecSpace, class F>
auto with_registered_env(std::size_t index, F&& f) {
  constexpr std::size_t n = RegisteredEnvs<ExecSpace>::size;
  if (index >= n) throw LogicError("with_registered_env: index " + std::to_string(index) + " of " + std::to_string(n));
  return detail::dispatch_env<0, n>(index, f);
}

/// What the envs of one run share, built once (the market's series,
/// splits and features; nothing for a simulator): the registered env's
/// Data, at its index.
template <class ExecSpace>
class EnvData {
 public:
  using variant = typename detail::EnvVariants<RegisteredEnvs<ExecSpace>>::data;
  /// The data of `config`'s env (Env::make_data). Setup: may fence.
  EnvData(const ExecSpace& space, const TrainConfig& config) : index_(env_index(config.env)) {
    with_registered_env<ExecSpace>(index_, [&](auto i) {
      data_.template emplace<decltype(i)::value>(
          RegisteredEnv<ExecSpace, decltype(i)::value>::make_data(space, config));
    });
  }
  std::size_t index() const { return index_; }
  /// The data of env class `Env` (null when the run's env is another one).
  template <class Env>
  const typename Env::Data* of() const {
    const typename Env::Data* found = nullptr;
    with_registered_env<ExecSpace>(index_, [&](auto i) {
      if constexpr (std::is_same_v<RegisteredEnv<ExecSpace, decltype(i)::value>, Env>)
        found = &std::get<decltype(i)::value>(data_);
    });
    return found;
  }
  const variant& get() const { return data_; }

 private:
  std::size_t index_;
  variant data_;
};

}  // namespace foxrl
