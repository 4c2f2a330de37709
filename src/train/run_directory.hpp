#pragma once
// The files of a run directory, shared by `foxrl train` and `foxrl
// train-offline`: a fresh run refuses (or, asked to, clears) a directory
// that already holds a run; a resumed run cuts its append-only logs back to
// the lengths its checkpoint recorded.

#include "train/checkpoint_store.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace foxrl {

/// What a kind of run writes into its directory besides checkpoints/.
struct RunFiles {
  std::vector<std::string> names;  ///< every file a run writes
  int markers = 0;                 ///< the first `markers` names (and checkpoints/) mean "holds a run"
  std::string resume_command;      ///< how to continue such a run, e.g. "foxrl train --resume"
};

/// A fresh run must not append to another run's logs or replace its
/// checkpoints unnoticed: UsageError naming the file that marks a run
/// (and how to continue or replace it), or with `overwrite` the run's files
/// and checkpoint generations are removed (anything else stays).
void prepare_fresh_run_directory(const std::string& dir, bool overwrite, const RunFiles& files);

/// Whether `name` is a temporary of a writer that is gone: "<file>.tmp.<pid>"
/// (write_file_atomically, safetensors) or ".foxrl-write-test.<pid>"
/// (prepare_output_directory) of a pid that is not running (or is this
/// process, which has none open when it looks).
bool is_stale_temporary(const std::string& name);

/// Removes the stale temporaries (is_stale_temporary) among the regular
/// files of `dir`. Call it holding the directory's lock.
void remove_stale_temporaries_in(const std::string& dir);

/// Removes the generations of `store` beyond the newest `keep` (a run
/// killed between publishing a generation and pruning the oldest has one
/// more); returns whether it removed any.
bool prune_generations(const CheckpointStore& store, std::int64_t keep);

/// The size of `path` in bytes (0 if it does not exist).
std::int64_t file_bytes(const std::string& path);

/// Cuts `path` back to its first `bytes` bytes: what a run interrupted
/// after its last checkpoint appended is dropped, so the log reads as the
/// uninterrupted run's. A file already as short is left alone.
void cut_back_file(const std::string& path, std::int64_t bytes);

/// `what` on one line: Kokkos' allocation messages carry blank lines, runs
/// of spaces and a note about tracebacks.
std::string one_line_message(std::string what);

}  // namespace foxrl
