#pragma once
// Inference of a trained market policy (`foxrl infer`): the Q-values and the
// greedy action after each bar of a CSV (or only the latest), as CSV or
// JSON: what a trading system calls.

#include <string>

namespace foxrl {

struct InferOptions {
  std::string run_dir;         ///< a run directory of `foxrl train` (its newest checkpoint) or one generation
  std::string data;            ///< OHLCV CSV: timestamp,open,high,low,close,volume
  int position = 0;            ///< the position held now: -1, 0 or 1 (long-only: 0 or 1)
  bool latest = false;         ///< only the decision after the last bar
  std::string format = "csv";  ///< "csv" or "json"
  bool skip_bad_rows = false;
  bool allow_implausible_bars = false;
};

/// The decisions as text in options.format: one row per decision bar, a Q
/// column per action (q_short, q_flat, q_long; long-only q_flat, q_long),
/// the greedy action and the position it means. Runs on
/// Kokkos::DefaultExecutionSpace, in a context of its own.
std::string infer(const InferOptions& options);

}  // namespace foxrl
