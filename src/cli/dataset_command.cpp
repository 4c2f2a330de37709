// foxrl dataset info FILE: what a dataset of `foxrl collect` holds, read and
// validated as offline training reads it: sizes, env and behaviour policy,
// flag counts, the returns of the behaviour episodes and the action
// histogram; --json prints the same as one JSON object.
#include "cli/commands.hpp"
#include "io/output_dir.hpp"
#include "market/position_set.hpp"
#include "offline/dataset_file.hpp"
#include "offline/dataset_merge.hpp"
#include "offline/dataset_statistics.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace foxrl::cli {
namespace {

struct DatasetArgs {
  std::string path;
  bool json = false;
};

/// Six significant digits: rewards of CartPole print as integers, market
/// log returns readably.
std::string number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", x);
  return text;
}

/// A recorded number (metadata text) in six significant digits, or the
/// text as recorded if it is no number.
std::string number_text(const std::string& text) {
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  return !text.empty() && end == text.c_str() + text.size() ? number(x) : text;
}

std::string percent(std::int64_t part, std::int64_t whole) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", whole > 0 ? 100.0 * double(part) / double(whole) : 0.0);
  return text;
}

/// The market env's actions by name (positions -1, 0, 1; long-only 0, 1).
std::string action_label(const DatasetFile& d, int a) {
  if (d.metadata.env != "market") return "";
  const PositionSet set = parse_position_set(d.metadata.config.positions);  // the config was validated
  return a >= 0 && a < position_set_actions(set) ? position_action_name(set, a) : "";
}

/// A metadata value as a JSON number when it is one, else as recorded.
nlohmann::ordered_json number_or_text(const std::string& text) {
  if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos && text.size() < 20)
    return std::stoull(text);
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  if (!text.empty() && end == text.c_str() + text.size() && std::isfinite(x)) return x;
  return text;
}

nlohmann::ordered_json summary_json(const SummaryStatistics& s) {
  return {{"count", s.count}, {"mean", s.mean}, {"std", s.std}, {"min", s.min}, {"max", s.max}};
}

void print_json(const DatasetFile& d, const DatasetStatistics& s) {
  const DatasetMetadata& m = d.metadata;
  nlohmann::ordered_json j;
  j["file"] = d.path;
  j["checksummed"] = d.file.checksummed;
  j["env"] = m.env;
  j["transitions"] = s.transitions;
  j["obs_dim"] = s.obs_dim;
  j["num_actions"] = s.num_actions;
  j["num_envs"] = s.num_envs;
  j["policy"] = m.policy;
  j["epsilon"] = number_or_text(m.epsilon);
  j["seed"] = number_or_text(m.seed);
  if (!m.split.empty()) j["split"] = m.split;
  j["normalizer"] = d.normalizer.has_value();
  j["terminated"] = s.terminated;
  j["truncated"] = s.truncated;
  nlohmann::ordered_json episodes;
  episodes["exact"] = s.episodes_exact;
  if (s.episodes_exact) {
    episodes["complete"] = s.returns.count;
    episodes["unfinished"] = s.unfinished;
    episodes["return"] = summary_json(s.returns);
    episodes["length"] = summary_json(s.lengths);
  } else {
    episodes["why"] = s.why;
  }
  j["episodes"] = episodes;
  j["action_counts"] = s.action_counts;
  std::cout << j.dump(2) << "\n";
}

void print_text(const DatasetFile& d, const DatasetStatistics& s) {
  const DatasetMetadata& m = d.metadata;
  std::cout << "dataset:           " << d.path << (d.file.checksummed ? " (checksums verified)" : " (no checksums)")
            << "\n";
  std::cout << "env:               " << m.env << (m.split.empty() ? "" : ", split " + m.split) << ", " << s.num_envs
            << " env" << (s.num_envs == 1 ? "" : "s") << " side by side\n";
  std::cout << "policy:            " << (m.policy.empty() ? "(not recorded)" : m.policy)
            << (m.policy == "epsilon-greedy" ? ", epsilon " + number_text(m.epsilon) : "")
            << (m.seed.empty() ? "" : ", seed " + m.seed) << (m.run.empty() ? "" : ", run " + m.run) << "\n";
  std::cout << "transitions:       " << s.transitions << "\n";
  std::cout << "observation dim:   " << s.obs_dim << (d.normalizer ? " (normaliser statistics included)" : "") << "\n";
  std::cout << "actions:           " << s.num_actions << "\n";
  std::cout << "terminated:        " << s.terminated << " (" << percent(s.terminated, s.transitions) << ")\n";
  std::cout << "truncated:         " << s.truncated << " (" << percent(s.truncated, s.transitions) << ")\n";
  if (s.episodes_exact) {
    std::cout << "episodes:          " << s.returns.count << " complete, " << s.unfinished
              << " unfinished at the end of the recording (not counted)\n";
    if (s.returns.count > 0) {
      std::cout << "episode return:    mean " << number(s.returns.mean) << ", std " << number(s.returns.std) << ", min "
                << number(s.returns.min) << ", max " << number(s.returns.max) << "\n";
      std::cout << "episode length:    mean " << number(s.lengths.mean) << ", std " << number(s.lengths.std) << ", min "
                << number(s.lengths.min) << ", max " << number(s.lengths.max) << "\n";
    }
  } else {
    std::cout << "episodes:          cannot be reconstructed exactly: " << s.why << "\n";
  }
  std::cout << "action histogram:\n";
  for (int a = 0; a < s.num_actions; ++a) {
    const std::int64_t n = s.action_counts[static_cast<std::size_t>(a)];
    const std::string label = action_label(d, a);
    const int bar = static_cast<int>(std::lround(40.0 * double(n) / double(s.transitions)));
    std::cout << "  " << a << (label.empty() ? "" : " " + label) << ": " << n << " (" << percent(n, s.transitions)
              << ") " << std::string(static_cast<std::size_t>(bar), '#') << "\n";
  }
}

int run_dataset_info(const DatasetArgs& args) {
  const DatasetFile dataset = read_dataset_file(args.path);
  const DatasetStatistics stats = dataset_statistics(dataset);
  if (args.json) {
    print_json(dataset, stats);
  } else {
    print_text(dataset, stats);
  }
  return 0;
}

int run_dataset_merge(const std::vector<std::string>& inputs, const std::string& out) {
  prepare_output_file_directory(out, "--out");
  const DatasetMergeSummary summary = merge_datasets(inputs, out);
  std::cout << "foxrl dataset merge: " << summary.transitions << " transitions of " << inputs.size()
            << " datasets written to " << out
            << (summary.row_order_known ? "" : " (row order unknown: episodes cannot be followed through the rows)")
            << "\n";
  return 0;
}

}  // namespace

Command add_dataset_command(CLI::App& app) {
  auto args = std::make_shared<DatasetArgs>();
  auto* cmd = app.add_subcommand("dataset", "Inspect or merge datasets of `foxrl collect`");
  cmd->require_subcommand(1);
  auto* info = cmd->add_subcommand(
      "info", "Validate a dataset and print its sizes, env, flag counts, behaviour episode returns and actions");
  info->add_option("file", args->path, "Dataset file (safetensors) written by `foxrl collect`")->required();
  info->add_flag("--json", args->json, "Print one JSON object instead of the table");
  auto merge_inputs = std::make_shared<std::vector<std::string>>();
  auto merge_out = std::make_shared<std::string>();
  auto* merge = cmd->add_subcommand(
      "merge", "Concatenate datasets of one env (e.g. random and expert episodes) into one dataset");
  merge->add_option("inputs", *merge_inputs, "Dataset files of `foxrl collect`, in order")->required()->expected(2, -1);
  merge->add_option("--out", *merge_out, "Output dataset file")->required();
  return [info, args, merge, merge_inputs, merge_out]() {
    if (info->parsed()) return run_dataset_info(*args);
    if (merge->parsed()) return run_dataset_merge(*merge_inputs, *merge_out);
    return -1;
  };
}

}  // namespace foxrl::cli
