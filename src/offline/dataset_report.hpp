#pragma once
// What a dataset of `foxrl collect` holds (`foxrl dataset info`), read and
// validated as offline training reads it: sizes, env and behaviour policy,
// flag counts, the returns of the behaviour episodes and the action
// histogram, as a table or one JSON object.

#include <string>

namespace foxrl {

/// The report of the dataset at `path` (UsageError naming the file, tensor
/// or metadata key when it does not validate).
std::string dataset_report(const std::string& path, bool json);

}  // namespace foxrl
