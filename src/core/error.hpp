#pragma once
// foxrl::Error: the one exception type host code throws. Messages name the
// file, field, row or value that is wrong so a user can fix the input.

#include <stdexcept>
#include <string>

namespace foxrl {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

/// Thrown for bad user input (config, command line, data files); the
/// command-line tool maps it to exit code 2.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& what) : Error(what) {}
};

}  // namespace foxrl
