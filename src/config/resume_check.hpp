#pragma once
// Whether a config may continue a saved run (`foxrl train --resume`,
// `foxrl train-offline --resume`): everything that shapes the run must be
// what it was. Only `epochs` may change (grow: a finished run can be
// extended), `out_dir` (a location, not a setting: a run directory may be
// moved), `keep_checkpoints` (how many generations the directory keeps)
// and the keys a kind of run names besides (an offline run's `dataset`: a
// moved file, checked by its size and SHA-256).

#include "config/offline_train_config.hpp"
#include "config/train_config.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace foxrl {

/// Throws UsageError naming `where` (the saved manifest) and the first key
/// whose value differs, with both values. The configs as JSON objects;
/// `movable`: the keys besides epochs, out_dir and keep_checkpoints that
/// may change.
void check_resume_compatible(const std::string& saved_json, const std::string& now_json,
                             const std::vector<std::string>& movable, const std::string& where);

/// The same for `foxrl train`'s config.
void check_resume_compatible(const TrainConfig& saved, const TrainConfig& now, const std::string& where);
/// The same for `foxrl train-offline`'s config (the dataset may move).
void check_resume_compatible(const OfflineTrainConfig& saved, const OfflineTrainConfig& now, const std::string& where);

}  // namespace foxrl
