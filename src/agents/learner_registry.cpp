#include "agents/learner_registry.hpp"

#include "core/strings.hpp"

namespace foxrl {
namespace {

template <class... Learners>
std::vector<LearnerInfo> infos_of(LearnerTypes<Learners...>) {
  return {LearnerInfo{Learners::name, Learners::summary}...};
}

std::string names_of(const std::vector<LearnerInfo>& learners) {
  std::string names;
  for (const auto& l : learners) names += (names.empty() ? "" : ", ") + l.name;
  return names;
}

std::size_t index_of(const std::vector<LearnerInfo>& learners, const std::string& name, const char* kind) {
  for (std::size_t i = 0; i < learners.size(); ++i)
    if (learners[i].name == name) return i;
  throw UsageError("algo " + quote_excerpt(name) + ": not a registered " + kind + " algorithm (" + names_of(learners) +
                   ")");
}

}  // namespace

// The static members do not depend on the execution space.
const std::vector<LearnerInfo>& online_learners() {
  static const std::vector<LearnerInfo> learners =
      infos_of(RegisteredOnlineLearners<Kokkos::DefaultHostExecutionSpace>{});
  return learners;
}

const std::vector<LearnerInfo>& offline_learners() {
  static const std::vector<LearnerInfo> learners =
      infos_of(RegisteredOfflineLearners<Kokkos::DefaultHostExecutionSpace>{});
  return learners;
}

std::string online_learner_names() { return names_of(online_learners()); }
std::string offline_learner_names() { return names_of(offline_learners()); }

std::size_t online_learner_index(const std::string& name) { return index_of(online_learners(), name, "online"); }
std::size_t offline_learner_index(const std::string& name) { return index_of(offline_learners(), name, "offline"); }

}  // namespace foxrl
