// foxrl info: what this build is and can train (train/about.hpp).
#include "cli/commands.hpp"
#include "train/about.hpp"

#include <iostream>
#include <memory>

namespace foxrl::cli {

Command add_info_command(CLI::App& app) {
  auto full = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand(
      "info", "Print the version, Kokkos configuration, devices, registered envs and algorithms, and kernel paths");
  cmd->add_flag("--kokkos", *full, "Also print Kokkos' full configuration (print_configuration)");
  return [cmd, full]() {
    if (!cmd->parsed()) return -1;
    std::cout << about_this_build(*full);
    return 0;
  };
}

}  // namespace foxrl::cli
