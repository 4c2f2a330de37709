// foxrl infer: decisions of a trained market policy (evaluate/infer.hpp).
#include "cli/commands.hpp"
#include "evaluate/infer.hpp"

#include <iostream>
#include <memory>

namespace foxrl::cli {

Command add_infer_command(CLI::App& app) {
  auto args = std::make_shared<InferOptions>();
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
  return [cmd, args]() {
    if (!cmd->parsed()) return -1;
    std::cout << infer(*args);
    return 0;
  };
}

}  // namespace foxrl::cli
