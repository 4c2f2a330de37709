#pragma once
// Merging datasets of `foxrl collect` into one (`foxrl dataset merge`), e.g.
// random and expert episodes into the mixed dataset offline RL is studied
// on. Every input is read and validated whole first; they must record the
// same env with the same observation size, actions and env count. Rows are
// concatenated in the order given. The row order stays known (row =
// iteration * num_envs + env): the iterations of each later part continue
// those of the part before, and the last row of each env in every part but
// the last is marked truncated (its episode was cut by the end of that
// recording; learning is unaffected, since only `terminated` stops the
// bootstrap), so episodes are never joined across parts. A part whose row
// count is not a whole number of iterations leaves the order unknown for
// everything after it, which is then recorded without the row_order key.

#include <cstdint>
#include <string>
#include <vector>

namespace foxrl {

/// Facts about a merge, for the command's report.
struct DatasetMergeSummary {
  std::int64_t transitions = 0;
  bool row_order_known = false;
};

/// Merges `inputs` (at least two) into `out_path` (written atomically).
/// UsageError naming the file and field for an invalid input or inputs
/// that do not describe the same env.
DatasetMergeSummary merge_datasets(const std::vector<std::string>& inputs, const std::string& out_path);

}  // namespace foxrl
