// foxrl infer: Q-values and greedy action of a trained market policy for
// each bar of a CSV (or only the latest), as CSV or JSON: what a trading
// system calls.
#include "cli/commands.hpp"
#include "core/execution_context.hpp"
#include "evaluate/policy.hpp"
#include "market/market_data.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <memory>

namespace foxrl::cli {
namespace {

struct InferArgs {
  std::string run_dir;
  std::string data;
  int position = 0;
  bool latest = false;
  std::string format = "csv";
  bool skip_bad_rows = false;
  bool allow_implausible_bars = false;
};

int run_infer(const InferArgs& args) {
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
    std::cout << (args.latest && out.size() == 1 ? out[0].dump(2) : out.dump(2)) << "\n";
  } else {
    std::printf("bar,timestamp");
    for (int a = 0; a < actions; ++a) std::printf(",q_%s", position_action_name(set, a));
    std::printf(",action,position\n");
    for (std::size_t i = 0; i < d.bar.size(); ++i) {
      std::printf("%d,%s", d.bar[i], format_timestamp(d.timestamp[i]).c_str());
      for (int a = 0; a < actions; ++a) std::printf(",%.9g", d.q[i][a]);
      std::printf(",%s,%d\n", position_action_name(set, d.action[i]), d.action[i] + position_set_min(set));
    }
  }
  return 0;
}

}  // namespace

Command add_infer_command(CLI::App& app) {
  auto args = std::make_shared<InferArgs>();
  auto* cmd = app.add_subcommand(
      "infer", "Q-values and greedy action of a trained market policy after each bar of a CSV (or the latest)");
  cmd->add_option("--run", args->run_dir, "Run directory of `foxrl train` (checkpoint.safetensors + checkpoint.json)")
      ->required();
  cmd->add_option("--data", args->data, "OHLCV CSV: timestamp,open,high,low,close,volume")->required();
  cmd->add_option("--position", args->position, "Position currently held: -1, 0 or 1 (a long-only run: 0 or 1)")
      ->check(CLI::Range(-1, 1))
      ->capture_default_str();
  cmd->add_flag("--latest", args->latest, "Only the decision after the last bar");
  cmd->add_option("--format", args->format, "Output format")
      ->check(CLI::IsMember({"csv", "json"}))
      ->capture_default_str();
  cmd->add_flag("--skip-bad-rows", args->skip_bad_rows, "Skip and count invalid CSV rows instead of failing");
  cmd->add_flag("--allow-implausible-bars", args->allow_implausible_bars,
                "Accept bars that move more than 10x within a bar or from the last close");
  return [cmd, args]() { return cmd->parsed() ? run_infer(*args) : -1; };
}

}  // namespace foxrl::cli
