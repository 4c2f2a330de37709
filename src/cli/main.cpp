// foxrl command-line tool. Exit codes: 0 ok, 2 usage/config error, 1 runtime
// failure (the reason is printed).
#include "error.hpp"
#include "execution_context.hpp"

#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>

#include <cstdio>
#include <exception>
#include <iostream>

int main(int argc, char** argv) {
  CLI::App app{"foxrl: GPU-resident deep Q-learning on Kokkos"};
  app.set_version_flag("--version", std::string("foxrl ") + FOXRL_VERSION);
  app.require_subcommand(1);

  auto* info = app.add_subcommand("info", "Print the Kokkos configuration foxrl runs on");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }

  try {
    Kokkos::ScopeGuard kokkos;
    if (info->parsed()) {
      foxrl::ExecutionContext<> context;
      std::cout << "foxrl " << FOXRL_VERSION << " on " << context.backend_name() << " (Kokkos "
                << KOKKOS_VERSION / 10000 << "." << KOKKOS_VERSION / 100 % 100 << "."
                << KOKKOS_VERSION % 100 << ")\n";
    }
  } catch (const foxrl::UsageError& e) {
    std::cerr << "foxrl: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "foxrl: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
