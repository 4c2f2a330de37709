#pragma once
// foxrl::Error: the base of every exception host code throws. Messages name
// the file, field, row or value that is wrong so a user can fix the input.
// Three kinds, so that a caller (and the command-line tool's exit code) can
// tell whose mistake it was: UsageError for the user's input, LogicError for
// a program that calls the library wrongly, plain Error for failures at run
// time (I/O, device).

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

/// Thrown for a file written by a newer foxrl (a format version above the
/// ones this build reads): bad input like any UsageError (exit 2), but not
/// a damaged file, so a resume refuses it as it is rather than setting its
/// generation aside and retraining from an older one.
class NewerFormatError : public UsageError {
 public:
  /// "<file>: <field> <found> is newer than this foxrl reads (<reads>): ..."
  NewerFormatError(const std::string& file, const std::string& field, const std::string& found,
                   const std::string& reads)
      : UsageError(file + ": " + field + " " + found + " is newer than this foxrl reads (" + reads +
                   "): the file was written by a newer foxrl; use that version (nothing was changed)") {}
};

/// Thrown when the library is called wrongly by the program that uses it
/// (wrong call order, shapes that do not fit inside the library): a bug in
/// the calling code, not the user's input; the tool maps it to exit code 1.
class LogicError : public Error {
 public:
  explicit LogicError(const std::string& what) : Error(what) {}
};

}  // namespace foxrl
