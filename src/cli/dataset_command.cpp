// foxrl dataset info FILE and foxrl dataset merge: the report of a dataset
// (offline/dataset_report.hpp) and the concatenation of datasets of one env
// (offline/dataset_merge.hpp).
#include "cli/commands.hpp"
#include "io/output_dir.hpp"
#include "offline/dataset_merge.hpp"
#include "offline/dataset_report.hpp"

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

int run_dataset_info(const DatasetArgs& args) {
  std::cout << dataset_report(args.path, args.json);
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
