// foxrl eval: the evaluation of a saved run (evaluate/evaluate_run.hpp).
#include "cli/commands.hpp"
#include "evaluate/evaluate_run.hpp"

#include <iostream>
#include <memory>

namespace foxrl::cli {

Command add_eval_command(CLI::App& app) {
  auto args = std::make_shared<EvaluateOptions>();
  auto* cmd = app.add_subcommand(
      "eval", "Evaluate a run's greedy policy: market runs on a time split against baselines, CartPole in episodes");
  cmd->add_option("--run", args->run_dir, "Run directory of `foxrl train` or `foxrl train-offline`")->required();
  cmd->add_option("--data", args->data, "OHLCV CSV to evaluate on (default: the run's own data)");
  cmd->add_option("--split", args->split, "Time split")
      ->check(CLI::IsMember({"train", "validation", "test"}))
      ->capture_default_str();
  cmd->add_option("--weights", args->weights,
                  "Market runs of `foxrl train`: the newest checkpoint (last) or the best model, the epoch that "
                  "scored best on the validation split (best; files named evaluation_<split>_best_epoch-<N>...)")
      ->check(CLI::IsMember({"last", "best"}))
      ->capture_default_str();
  cmd->add_option("--out", args->out_dir,
                  "Where evaluation_<split>_epoch-<N>[_<data>].json and equity_....svg go (default: --run)");
  cmd->add_flag("--allow-implausible-bars", args->allow_implausible_bars,
                "Accept --data bars that move more than 10x within a bar or from the last close");
  cmd->add_option("--cost-bps", args->cost_bps,
                  "Market runs: also print a cost-sensitivity table, the policy's positions priced at each of these "
                  "costs (basis points per unit of position change, e.g. 0,5,10,20)")
      ->delimiter(',');
  cmd->add_option("--episodes", args->episodes,
                  "CartPole runs: greedy episodes to play, one per env (evaluation_episodes_epoch-<N>.json)")
      ->capture_default_str();
  return [cmd, args]() {
    if (!cmd->parsed()) return -1;
    std::cout << evaluate_run(*args).text;
    return 0;
  };
}

}  // namespace foxrl::cli
