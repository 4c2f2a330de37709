#pragma once
// Whether a training config may continue a saved run (`foxrl train
// --resume`): everything that shapes the run must be what it was. Only
// `epochs` may change (grow: a finished run can be extended), `out_dir`
// (a location, not a setting: a run directory may be moved) and
// `keep_checkpoints` (how many generations the directory keeps).

#include "config/train_config.hpp"

#include <string>

namespace foxrl {

/// Throws UsageError naming `where` (the saved manifest) and the first key
/// whose value differs, with both values.
void check_resume_compatible(const TrainConfig& saved, const TrainConfig& now, const std::string& where);

}  // namespace foxrl
