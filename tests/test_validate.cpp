// The shared configuration checks: what they accept, and that their
// messages name the owner, the field and the value.
#include "core/validate.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>

TEST_CASE("configuration checks name owner, field and value", "[validate]") {
  using foxrl::UsageError;
  CHECK_NOTHROW(foxrl::require_positive("Owner", "n", 1));
  CHECK_THROWS_AS(foxrl::require_positive("Owner", "n", 0), UsageError);
  CHECK_THROWS_WITH(foxrl::require_positive("foxrl::Owner", "lr", -0.5f),
                    Catch::Equals("foxrl::Owner: lr = -0.5: must be > 0"));
  CHECK_THROWS_WITH(foxrl::require_at_least("Owner", "eps", 1e-9, 1e-8),
                    Catch::Equals("Owner: eps = 1e-09: must be >= 1e-08"));
  CHECK_NOTHROW(foxrl::require_at_least("Owner", "k", std::int64_t(3), std::int64_t(3)));
  CHECK_THROWS_WITH(foxrl::require_at_most("Owner", "k", 4, 3), Catch::Equals("Owner: k = 4: must be <= 3"));
  CHECK_NOTHROW(foxrl::require_in_range("Owner", "beta", 0.0f, 0.0f, 1.0f, foxrl::UpperBound::exclusive));
  CHECK_THROWS_WITH(foxrl::require_in_range("Owner", "beta", 1.0f, 0.0f, 1.0f, foxrl::UpperBound::exclusive),
                    Catch::Equals("Owner: beta = 1: must be in [0, 1)"));
  CHECK_NOTHROW(foxrl::require_in_range("Owner", "tau", 1.0f, 0.0f, 1.0f));
  CHECK_THROWS_WITH(foxrl::require_in_range("Owner", "batch", 70000, 1, 65536),
                    Catch::Equals("Owner: batch = 70000: must be in [1, 65536]"));
  CHECK_THROWS_WITH(foxrl::require(false, "Owner", "capacity", 3, "must hold one insert"),
                    Catch::Equals("Owner: capacity = 3: must hold one insert"));
  // NaN fails every check.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_AS(foxrl::require_positive("Owner", "x", nan), UsageError);
  CHECK_THROWS_AS(foxrl::require_at_least("Owner", "x", nan, 0.0), UsageError);
  CHECK_THROWS_AS(foxrl::require_at_most("Owner", "x", nan, 0.0), UsageError);
  CHECK_THROWS_AS(foxrl::require_in_range("Owner", "x", nan, 0.0, 1.0), UsageError);
}
