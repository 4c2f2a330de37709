#pragma once
// Host side of parameter checkpoints: one parameter set (a flat buffer laid
// out by NetworkLayout) as safetensors tensors under a name prefix, named
// like PyTorch's state_dict ("<prefix>.trunk.0.weight" [out, in],
// "<prefix>.trunk.0.bias", ..., "<prefix>.head.weight", "<prefix>.head.bias"),
// so one file can hold several networks and their optimizer states. The
// reader checks every tensor it hands out (present, dtype, shape, values
// finite, and >= 0 where asked) and, at the end, that the file holds
// nothing else; errors are foxrl::UsageError (a damaged or foreign file is
// bad input) naming the file, the tensor and the offending element.

#include "io/safetensors.hpp"
#include "views/nn/network_layout.hpp"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace foxrl {

/// Appends the tensors of one parameter set (`flat`: layout.total floats,
/// alignment gaps ignored) under `prefix`, layer by layer, weight before bias.
void append_parameter_tensors(safetensors::File& file, const std::string& prefix, const NetworkLayout& layout,
                              const std::vector<float>& flat);

/// Reads a safetensors file and hands out its tensors with checks; see the
/// file comment.
class TensorReader {
 public:
  /// Reads and validates the container. `architecture` appears in messages
  /// about missing or misshapen tensors (e.g. layout.describe()).
  TensorReader(const std::string& path, std::string architecture);

  /// What parameters() requires of every value.
  enum class Values {
    finite,              ///< weights, biases, first moments
    finite_nonnegative,  ///< second moments (Adam's v)
  };
  /// The parameter set under `prefix` as a flat buffer of layout.total
  /// floats (gaps zero); every value finite (and >= 0 with
  /// Values::finite_nonnegative), so no NaN reaches a kernel.
  std::vector<float> parameters(const std::string& prefix, const NetworkLayout& layout, Values values = Values::finite);
  /// An I64 scalar counter (>= 0).
  std::int64_t counter(const std::string& name);
  /// Throws if the file holds a tensor nobody took.
  void finish() const;

  const safetensors::File& file() const { return file_; }
  const std::string& path() const { return path_; }

 private:
  [[noreturn]] void fail(const std::string& tensor, const std::string& what) const;

  std::string path_, architecture_;
  safetensors::File file_;
  std::set<std::string> taken_;
};

}  // namespace foxrl
