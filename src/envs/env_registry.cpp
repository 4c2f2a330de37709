#include "envs/env_registry.hpp"

#include "core/strings.hpp"

namespace foxrl {
namespace {

template <class... Envs>
std::vector<EnvInfo> infos_of(EnvTypes<Envs...>) {
  return {EnvInfo{Envs::name, Envs::summary, Envs::evaluation, &Envs::spaces}...};
}

}  // namespace

const std::vector<EnvInfo>& registered_envs() {
  // The static members do not depend on the execution space.
  static const std::vector<EnvInfo> envs = infos_of(RegisteredEnvs<Kokkos::DefaultHostExecutionSpace>{});
  return envs;
}

std::string registered_env_names() {
  std::string names;
  for (const auto& e : registered_envs()) names += (names.empty() ? "" : ", ") + e.name;
  return names;
}

std::size_t env_index(const std::string& name) {
  const auto& envs = registered_envs();
  for (std::size_t i = 0; i < envs.size(); ++i)
    if (envs[i].name == name) return i;
  throw UsageError("env " + quote_excerpt(name) + ": not a registered env (" + registered_env_names() + ")");
}

const EnvInfo& env_info(const std::string& name) { return registered_envs()[env_index(name)]; }

EnvSpaces env_spaces(const TrainConfig& config) { return env_info(config.env).spaces(config); }

EnvSplit parse_env_split(const std::string& name, const std::string& option) {
  if (name == "train") return EnvSplit::train;
  if (name == "validation") return EnvSplit::validation;
  if (name == "test") return EnvSplit::test;
  if (name == "whole") return EnvSplit::whole;
  throw UsageError(option + " " + quote_excerpt(name) + ": expected train, validation or test");
}

}  // namespace foxrl
