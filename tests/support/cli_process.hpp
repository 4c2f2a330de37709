#pragma once
// Runs the foxrl tool (FOXRL_CLI_PATH) as a user would, for tests of exit
// codes and messages: the command's stdout and stderr go to files in the
// test's own temporary directory, so tests run side by side share nothing.

#include "support/env_test_util.hpp"

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

namespace foxrl::test {

struct CliResult {
  int exit_code = -1;  ///< the tool's exit status; -1 if it did not exit (a signal)
  std::string out, err;
};

/// Runs `prefix "<foxrl>" args` in a shell (`args` quoted by the caller;
/// `prefix` e.g. a `setpriv ...` wrapper), its outputs captured in `dir`.
inline CliResult run_foxrl(const TempDir& dir, const std::string& args, const std::string& prefix = "") {
#ifdef FOXRL_CLI_PATH
  const std::string out = dir.file("cli.out"), err = dir.file("cli.err");
  const std::string command =
      prefix + " \"" + FOXRL_CLI_PATH + "\" " + args + " > \"" + out + "\" 2> \"" + err + "\" < /dev/null";
  const int status = std::system(command.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  const auto slurp = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
#else
  (void)dir;
  (void)args;
  (void)prefix;
  return {};
#endif
}

}  // namespace foxrl::test
