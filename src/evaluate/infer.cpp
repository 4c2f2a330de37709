#include "evaluate/infer.hpp"

#include "core/execution_context.hpp"
#include "evaluate/policy.hpp"
#include "market/market_data.hpp"
#include "market/position_set.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <sstream>

namespace foxrl {

std::string infer(const InferOptions& args) {
  std::ostringstream text;
  ExecutionContext<> context;
  const auto& space = context.space();
  Policy<> policy(space, args.run_dir);
  LoadOptions options;
  options.skip_bad_rows = args.skip_bad_rows;
  options.allow_implausible_bars = args.allow_implausible_bars;
  const MarketSeries series = load_market_csv(args.data, options);
  const auto d = policy.decide_market(space, series, args.position, args.latest);
  // One Q column per action: q_short, q_flat, q_long, or q_flat, q_long for
  // a long-only run (positions = long_only).
  const PositionSet set = policy.spec().market_env.positions;
  const int actions = position_set_actions(set);
  if (args.format == "json") {
    nlohmann::json out = nlohmann::json::array();
    for (std::size_t i = 0; i < d.bar.size(); ++i) {
      nlohmann::json row = {{"bar", d.bar[i]}, {"timestamp", format_timestamp(d.timestamp[i])}};
      for (int a = 0; a < actions; ++a) row[std::string("q_") + position_action_name(set, a)] = d.q[i][a];
      row["action"] = position_action_name(set, d.action[i]);
      row["position"] = d.action[i] + position_set_min(set);
      out.push_back(std::move(row));
    }
    text << (args.latest && out.size() == 1 ? out[0].dump(2) : out.dump(2)) << "\n";
  } else {
    char cell[64];
    text << "bar,timestamp";
    for (int a = 0; a < actions; ++a) text << ",q_" << position_action_name(set, a);
    text << ",action,position\n";
    for (std::size_t i = 0; i < d.bar.size(); ++i) {
      text << d.bar[i] << "," << format_timestamp(d.timestamp[i]);
      for (int a = 0; a < actions; ++a) {
        std::snprintf(cell, sizeof cell, ",%.9g", static_cast<double>(d.q[i][a]));
        text << cell;
      }
      text << "," << position_action_name(set, d.action[i]) << "," << d.action[i] + position_set_min(set) << "\n";
    }
  }
  return text.str();
}

}  // namespace foxrl
