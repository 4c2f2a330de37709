#pragma once
// RunManifest: the small JSON file written next to a checkpoint
// (checkpoint.json beside checkpoint.safetensors). It holds what the weights
// alone do not: the training config (network shape, observation spec,
// market and split settings), the step counters and the frozen signal
// normalizer, so `foxrl eval`, `foxrl infer` and the Policy API rebuild the
// exact inference path.

#include "config/train_config.hpp"
#include "market/signal_adapter.hpp"

#include <cstdint>
#include <string>

namespace foxrl {

struct RunManifest {
  static constexpr int format_version = 1;
  TrainConfig config;
  std::int64_t epoch = 0;
  std::int64_t global_step = 0;
  std::int64_t updates = 0;
  bool has_normalizer = false;
  NormalizerState normalizer;

  /// Writes `dir`/checkpoint.json atomically.
  void write(const std::string& dir) const;
  /// Reads `dir`/checkpoint.json; UsageError naming the file and field on
  /// a missing or malformed manifest.
  static RunManifest read(const std::string& dir);
};

}  // namespace foxrl
