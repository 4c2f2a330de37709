#pragma once
// DatasetFile: a `foxrl collect` dataset read into host memory and
// validated whole, before any of it reaches a device: the container and its
// checksums (safetensors::read), the metadata (DatasetMetadata), every
// tensor's presence, dtype and shape, the row counts, and the values
// (actions in [0, num_actions), observations and rewards finite, flags 0 or
// 1, the normaliser statistics of a market policy finite). Every defect is
// a UsageError naming the file and the tensor or metadata key.

#include "io/safetensors.hpp"
#include "market/signal_adapter.hpp"
#include "offline/dataset_metadata.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace foxrl {

/// A validated dataset in host memory.
struct DatasetFile {
  std::string path;
  DatasetMetadata metadata;
  std::int64_t rows = 0;  ///< T, >= 1
  int obs_dim = 0;        ///< D
  /// The tensors of the file (observations [T, D] F32, next_observations
  /// [T, D] F32, actions [T] I32, rewards [T] F32, terminated [T] U8,
  /// truncated [T] U8, and the normalizer.* tensors when present).
  safetensors::File file;
  /// The per-feature normaliser statistics a network policy saw its inputs
  /// through (market datasets collected with --run; float64), in the form
  /// SignalAdapter::import_state takes.
  std::optional<NormalizerState> normalizer;
  /// SHA-256 of the file's bytes (read_dataset_file; "" for a file
  /// validated from memory): the dataset's identity in offline runs.
  std::string sha256;

  /// The tensor called `name` (one of the above); LogicError if absent.
  const safetensors::Tensor& tensor(const std::string& name) const;
};

/// The names of the six transition tensors, in the order collect writes them.
inline const std::vector<std::string>& dataset_tensor_names() {
  static const std::vector<std::string> names = {"observations",      "actions",    "rewards",
                                                 "next_observations", "terminated", "truncated"};
  return names;
}

/// The largest |value| of an observation or reward a dataset may hold. The
/// envs' observations are bounded positions, angles and log returns, their
/// rewards of order 1; a value near float's limit (3e38) is finite but
/// overflows the squares of every loss and gradient, so that each update
/// would be rejected and a run would learn nothing: it is refused here.
inline constexpr float kMaxDatasetMagnitude = 1e6f;

/// Reads and validates the dataset `path`; UsageError naming the file and
/// the field on any defect.
DatasetFile read_dataset_file(const std::string& path);

/// The same checks on a file already in memory (read_dataset_file's second
/// half); `path` names it in messages.
DatasetFile validate_dataset(const std::string& path, safetensors::File file);

}  // namespace foxrl
