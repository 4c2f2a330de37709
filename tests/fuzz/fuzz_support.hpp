#pragma once
// What every fuzzer shares: a scratch directory for the input as a file
// (the loaders read paths; /dev/shm keeps it off the disk), the rule for
// exceptions, and Kokkos started once per process.
//
// The rule: a loader may reject any input with foxrl::Error or UsageError
// (that is its job); a LogicError (the library's own bug) or any other
// exception escaping (std::out_of_range, a JSON library error, bad_alloc)
// is a finding, as is any sanitizer report or crash.

#include "core/error.hpp"

#include <Kokkos_Core.hpp>

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace foxrl::fuzz {

/// A directory of this process for input files: under $FOXRL_FUZZ_SCRATCH
/// when set, else /dev/shm where it exists, else the system temp directory.
/// Created once; removed at exit.
inline const std::string& scratch_dir() {
  // Never destroyed: the exit handler that removes the directory runs after
  // the destructors of statics made later.
  static const std::string* const dir = [] {
    namespace fs = std::filesystem;
    std::error_code ec;
    // FOXRL_FUZZ_SCRATCH (ci/run-fuzzers.sh sets it) keeps the directories of
    // crashed runs, which skip the exit handler, where the caller cleans up.
    const char* chosen = std::getenv("FOXRL_FUZZ_SCRATCH");
    const fs::path root = chosen != nullptr && *chosen != '\0' ? fs::path(chosen)
                          : fs::is_directory("/dev/shm", ec)   ? fs::path("/dev/shm")
                                                               : fs::temp_directory_path();
    const fs::path d = root / ("foxrl_fuzz_" + std::to_string(::getpid()));
    fs::create_directories(d);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(scratch_dir(), ignored);
    });
    return new std::string(d.string());
  }();
  return *dir;
}

/// Writes `size` bytes to `path` (replacing it).
inline void write_file(const std::string& path, const std::uint8_t* data, std::size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) {
    std::fprintf(stderr, "fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
}

/// Runs `load`; a foxrl::Error or UsageError is an accepted rejection, a
/// LogicError aborts (libFuzzer then saves the input), anything else
/// propagates (libFuzzer reports an uncaught exception).
template <class F>
void expect_clean_rejection(F&& load) {
  try {
    load();
  } catch (const foxrl::LogicError& e) {
    std::fprintf(stderr, "fuzz: LogicError from a bad input: %s\n", e.what());
    std::abort();
  } catch (const foxrl::Error&) {}
}

/// Starts Kokkos once (never finalized: the fuzzers' components live until
/// the process ends).
inline void init_kokkos() {
  if (!Kokkos::is_initialized()) Kokkos::initialize();
}

}  // namespace foxrl::fuzz
