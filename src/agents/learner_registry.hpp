#pragma once
// The registered learners: the one list of what `foxrl train`'s `algo` key
// (online algorithms) and `foxrl train-offline`'s (offline algorithms) may
// name. A second online algorithm (C51, QR-DQN, ...) is its folder under
// agents/ and one entry in RegisteredOnlineLearners; the trainer
// (train/online_trainer.hpp), evaluation and inference take it from here
// (docs/design.md, "How to add a learner").
//
// A registered learner class carries its entry as static members: name,
// summary, Config, config_for(...) (online: from a TrainConfig and the
// env's spaces; offline: from an OfflineTrainConfig, the dataset's sizes and
// the inference rows), and offline learners metric_slots().

#include "agents/dqn/dqn_learner.hpp"
#include "agents/offline/bc_learner.hpp"
#include "agents/offline/cql_learner.hpp"
#include "agents/offline/iql_learner.hpp"
#include "agents/offline/offline_agent.hpp"
#include "agents/online_agent.hpp"
#include "config/offline_train_config.hpp"
#include "config/train_config.hpp"
#include "core/error.hpp"
#include "views/envs/env_traits.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace foxrl {

/// A list of learner classes.
template <class... Learners>
struct LearnerTypes {
  static constexpr std::size_t size = sizeof...(Learners);
};

/// The online algorithms `foxrl train --set algo=...` trains.
template <class ExecSpace>
using RegisteredOnlineLearners = LearnerTypes<DqnLearner<ExecSpace>>;

/// The offline algorithms `foxrl train-offline --algo ...` trains.
template <class ExecSpace>
using RegisteredOfflineLearners = LearnerTypes<IqlLearner<ExecSpace>, CqlLearner<ExecSpace>, BcLearner<ExecSpace>>;

/// Host facts of a registered learner.
struct LearnerInfo {
  std::string name;
  std::string summary;
};

const std::vector<LearnerInfo>& online_learners();
const std::vector<LearnerInfo>& offline_learners();
/// "dqn, ...": the registered names, for messages.
std::string online_learner_names();
std::string offline_learner_names();
/// The registered online (offline) learner called `name`; UsageError
/// naming the value and the registered names otherwise.
std::size_t online_learner_index(const std::string& name);
std::size_t offline_learner_index(const std::string& name);

namespace detail {

template <class List, std::size_t I>
struct LearnerAt;
template <class First, class... Rest>
struct LearnerAt<LearnerTypes<First, Rest...>, 0> {
  using type = First;
};
template <class First, class... Rest, std::size_t I>
struct LearnerAt<LearnerTypes<First, Rest...>, I> {
  using type = typename LearnerAt<LearnerTypes<Rest...>, I - 1>::type;
};

template <class List, std::size_t I, class F>
auto dispatch_learner(std::size_t index, F& f) {
  if constexpr (I + 1 == List::size) {
    return f(static_cast<typename LearnerAt<List, I>::type*>(nullptr));
  } else {
    if (index == I) return f(static_cast<typename LearnerAt<List, I>::type*>(nullptr));
    return dispatch_learner<List, I + 1>(index, f);
  }
}

}  // namespace detail

/// Calls f(static_cast<Learner*>(nullptr)) for the registered online
/// learner called `name` (UsageError for another name); every call of f
/// returns the same type.
template <class ExecSpace, class F>
auto with_online_learner(const std::string& name, F&& f) {
  return detail::dispatch_learner<RegisteredOnlineLearners<ExecSpace>, 0>(online_learner_index(name), f);
}

/// The same over the offline learners.
template <class ExecSpace, class F>
auto with_offline_learner(const std::string& name, F&& f) {
  return detail::dispatch_learner<RegisteredOfflineLearners<ExecSpace>, 0>(offline_learner_index(name), f);
}

/// The online learner `config.algo` names, for inference only: the run's
/// network in an env of `spaces`, calls of up to `max_rows` rows (its
/// weights come from a checkpoint: OnlineAgent::load).
template <class ExecSpace>
std::unique_ptr<OnlineAgent<ExecSpace>> make_online_agent(const ExecSpace& space, const TrainConfig& config,
                                                          const EnvSpaces& spaces, int max_rows) {
  return with_online_learner<ExecSpace>(config.algo, [&](auto* tag) -> std::unique_ptr<OnlineAgent<ExecSpace>> {
    using Learner = std::remove_pointer_t<decltype(tag)>;
    return std::make_unique<OnlineAgentOf<ExecSpace, Learner>>(space,
                                                               Learner::inference_config_for(config, spaces, max_rows));
  });
}

/// The offline learner `config.algo` names, for observations of `obs_dim`
/// features and `num_actions` actions, batches of config.batch_size and
/// inference calls of up to `inference_rows` rows.
template <class ExecSpace>
std::unique_ptr<OfflineAgent<ExecSpace>> make_offline_agent(const ExecSpace& space, const OfflineTrainConfig& config,
                                                            int obs_dim, int num_actions, int inference_rows) {
  return with_offline_learner<ExecSpace>(config.algo, [&](auto* tag) -> std::unique_ptr<OfflineAgent<ExecSpace>> {
    using Learner = std::remove_pointer_t<decltype(tag)>;
    return std::make_unique<OfflineAgentOf<ExecSpace, Learner>>(
        space, Learner::config_for(config, obs_dim, num_actions, inference_rows));
  });
}

}  // namespace foxrl
