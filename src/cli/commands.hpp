#pragma once
// The subcommands of the foxrl tool. Each registers its options on the app
// and returns a callable that runs it after parsing (Kokkos initialised).

#include <CLI/CLI.hpp>

#include <functional>

namespace foxrl::cli {

using Command = std::function<int()>;

/// `foxrl train`: the main job.
Command add_train_command(CLI::App& app);
/// `foxrl eval`: greedy policy of a run on a data split, against baselines.
Command add_eval_command(CLI::App& app);
/// `foxrl infer`: Q-values and greedy actions of a run's policy on a CSV.
Command add_infer_command(CLI::App& app);
/// `foxrl collect`: a dataset of transitions for offline training.
Command add_collect_command(CLI::App& app);
/// `foxrl dataset info`: sizes, returns and actions of a collected dataset.
Command add_dataset_command(CLI::App& app);
/// `foxrl train-offline`: IQL, CQL or BC on a collected dataset.
Command add_train_offline_command(CLI::App& app);
/// `foxrl rollout`: replay an action file in one env, every step to CSV.
Command add_rollout_command(CLI::App& app);
/// `foxrl info`: version, Kokkos configuration, backends and devices.
Command add_info_command(CLI::App& app);

}  // namespace foxrl::cli
