#include "market/market_env.hpp"

#include "core/strings.hpp"

#include <algorithm>
#include <cmath>

namespace foxrl {

FeatureSet parse_feature_set(const std::string& name) {
  if (name == "returns") return FeatureSet::returns;
  if (name == "ohlcv") return FeatureSet::ohlcv;
  throw UsageError("unknown feature set " + quote_excerpt(name) + " (known: returns, ohlcv)");
}

std::string feature_set_name(FeatureSet set) { return set == FeatureSet::returns ? "returns" : "ohlcv"; }

}  // namespace foxrl
