// foxrl command-line tool. Exit codes: 0 ok, 2 bad input (options, config,
// data or run files, unusable output directories), 1 runtime failure or
// internal error (the reason is printed, once, after "foxrl: ").
#include "cli/commands.hpp"
#include "cli/option_checks.hpp"
#include "core/error.hpp"
#include "core/execution_context.hpp"
#include "core/kernel_check.hpp"
#include "dist/communicator.hpp"

#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>
#ifdef KOKKOS_ENABLE_CUDA
#include <cuda_runtime_api.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>

namespace {

/// Prints an error once, with the tool's one "foxrl: " prefix (messages
/// thrown by the library carry none; one that does is not doubled).
void report(const std::exception& e, const char* kind = "") {
  std::string what = e.what();
  const std::string prefix = "foxrl: ";
  if (what.compare(0, prefix.size(), prefix) == 0) what.erase(0, prefix.size());
  // Messages quote user data in excerpts; this bounds any that does not
  // (a path of a megabyte), cut at a character boundary.
  constexpr std::size_t max_bytes = 4096;
  if (what.size() > max_bytes) {
    std::size_t cut = max_bytes;
    while (cut > 0 && (static_cast<unsigned char>(what[cut]) & 0xC0) == 0x80) --cut;
    what = what.substr(0, cut) + "... (message cut at " + std::to_string(cut) + " of " + std::to_string(what.size()) +
           " bytes)";
  }
  std::cerr << prefix << foxrl::dist::rank_label() << kind << what << "\n";
}

/// The exit code of a failure; a rank of a data-parallel run ends every
/// rank instead (the others would wait for it in their next all-reduce).
int failed(int rc) {
  std::cerr.flush();
  foxrl::dist::abort_if_distributed(rc);
  return rc;
}

#ifdef KOKKOS_ENABLE_CUDA
/// Kokkos' settings for this process: in a run of several ranks, the GPU
/// of this rank's place on its node (dist::device_for_local_rank), unless
/// KOKKOS_DEVICE_ID chooses one. Creates the world (MPI) before Kokkos, as
/// MPI launchers expect.
Kokkos::InitializationSettings kokkos_settings() {
  Kokkos::InitializationSettings settings;
  const auto world = foxrl::dist::world();
  if (world->size() > 1 && std::getenv("KOKKOS_DEVICE_ID") == nullptr) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
    settings.set_device_id(foxrl::dist::device_for_local_rank(world->local_rank(), devices));
  }
  return settings;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"foxrl: GPU-resident deep Q-learning on Kokkos"};
  app.set_version_flag("--version", std::string("foxrl ") + FOXRL_VERSION);
  app.require_subcommand(1);

  const auto info = foxrl::cli::add_info_command(app);
  const auto train = foxrl::cli::add_train_command(app);
  const auto evaluate = foxrl::cli::add_eval_command(app);
  const auto infer = foxrl::cli::add_infer_command(app);
  const auto collect = foxrl::cli::add_collect_command(app);
  const auto dataset = foxrl::cli::add_dataset_command(app);
  const auto train_offline = foxrl::cli::add_train_offline_command(app);

  const auto rollout = foxrl::cli::add_rollout_command(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }

  try {
#ifdef KOKKOS_ENABLE_CUDA
    Kokkos::ScopeGuard kokkos(kokkos_settings());
#else
    Kokkos::ScopeGuard kokkos;
#endif
    foxrl::KernelCheck::install_from_environment();  // FOXRL_CHECK_KERNELS=1: name a failing kernel
    for (const auto& command : {train, evaluate, infer, collect, dataset, train_offline, rollout, info}) {
      if (const int rc = command(); rc >= 0) return rc;
    }
  } catch (const foxrl::UsageError& e) {
    report(e);
    return failed(2);
  } catch (const foxrl::LogicError& e) {
    // A bug in foxrl itself, not the user's input.
    report(e, "internal error: ");
    return failed(1);
  } catch (const std::exception& e) {
    report(e);
    return failed(1);
  }
  return 0;
}
