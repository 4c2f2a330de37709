#pragma once
// Output directories the user names (out_dir, --out): created when missing
// and checked for writing before any work starts, so that a file in the
// directory's place, a missing permission or a read-only file system is a
// usage error naming the option, not a failure after an hour of training.

#include <string>

namespace foxrl {

/// Creates `dir` (and its parents) if missing and checks that files can be
/// created in it. Throws UsageError "<what> '<dir>': ..." (e.g. what =
/// "out_dir", "--out") naming the reason otherwise.
void prepare_output_directory(const std::string& dir, const std::string& what);

/// prepare_output_directory for the directory of the output file `path`
/// (nothing to do for a file in the working directory); UsageError if
/// `path` itself is a directory.
void prepare_output_file_directory(const std::string& path, const std::string& what);

}  // namespace foxrl
