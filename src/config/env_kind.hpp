#pragma once
// EnvKind: which environment a run steps. The config spells it as a string
// ("cartpole", "market"); it is parsed once, where the config is read, and
// everything past the parser switches on the enum.

#include <string>

namespace foxrl {

enum class EnvKind { cartpole, market };

/// "cartpole" or "market"; UsageError naming the value otherwise.
EnvKind parse_env_kind(const std::string& name);
/// The config spelling of `kind`.
const char* env_kind_name(EnvKind kind);

}  // namespace foxrl
