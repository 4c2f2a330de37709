#pragma once
// Atomic file replacement: readers see the old file or the new one, never a
// partial write (checkpoints, manifests, reports).

#include <string>

namespace foxrl {

/// Writes `bytes` to `path` through a temporary file in the same directory,
/// fsyncs it, renames it over `path` and fsyncs the directory. Throws
/// foxrl::Error naming the path on failure; the old file is then untouched.
void write_file_atomically(const std::string& path, const std::string& bytes);

}  // namespace foxrl
