#pragma once
// Housekeeping of a study directory on resume, so that a study killed at
// any point and resumed ends as the uninterrupted one: what killed writers
// left behind is removed, and a seed's or fold's run directory keeps the
// generations its config keeps.

#include "train/checkpoint_store.hpp"
#include "train/run_directory.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace foxrl {

/// A seed's or fold's run directory on resume, under its RunDirectoryLock:
/// the stale temporaries of the directory, its checkpoint generations and
/// best models (staging and half-deleted ones).
void tidy_member_directory(const std::string& dir);

/// After a seed's or fold's run ended (or was found complete): the
/// directory keeps its newest `keep` generations, and the best models they
/// name, as the uninterrupted run's last checkpoint left it (a run killed
/// between publishing a generation and pruning the oldest keeps one more).
void prune_member_generations(const std::string& dir, std::int64_t keep);

/// Whether the run in `dir` stopped solved at `epoch`: its epoch record
/// (metrics.jsonl) met `target_return` (> 0) over at least 100 episodes.
bool solved_at(const std::string& dir, double target_return, std::int64_t epoch);

/// Whether every file of `files` (in `dir`) exists and none is older than
/// `generation`'s checkpoint.json: they were written after it (a run
/// stopped between its last checkpoint and its evaluation has none, or an
/// older evaluation's).
bool written_after(const std::string& dir, const std::vector<std::string>& files,
                   const CheckpointGeneration& generation);

}  // namespace foxrl
