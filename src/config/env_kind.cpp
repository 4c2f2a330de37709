#include "config/env_kind.hpp"

#include "core/error.hpp"
#include "core/strings.hpp"

namespace foxrl {

EnvKind parse_env_kind(const std::string& name) {
  if (name == "cartpole") return EnvKind::cartpole;
  if (name == "market") return EnvKind::market;
  throw UsageError("unknown env " + quote_excerpt(name) + " (known: cartpole, market)");
}

const char* env_kind_name(EnvKind kind) {
  switch (kind) {
    case EnvKind::cartpole:
      return "cartpole";
    case EnvKind::market:
      return "market";
  }
  return "unknown";
}

}  // namespace foxrl
