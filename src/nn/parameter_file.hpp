#pragma once
// Checkpoints of device parameter sets and optimizer states, several per
// file, each under its own name prefix (src/nn/parameter_io.hpp names the
// tensors): e.g. an IQL learner writes "v.", "q1.", "q2.", "policy." and
// their Adam states into one safetensors file. Writing queues the device
// copies on the instance, fences once and writes atomically; reading checks
// the whole file into host buffers (values included: weights and moments
// finite, second moments >= 0, counters >= 0) before commit() copies
// anything, so a bad file changes nothing. Not for the hot path.

#include "core/compat.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"
#include "io/safetensors.hpp"
#include "nn/adam_optimizer.hpp"
#include "nn/parameter_io.hpp"
#include "views/nn/parameter_set.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace foxrl {

/// Tensor names of one Adam state: its moments as parameter sets under
/// `m` and `v`, its step counter as the I64 scalar `step`.
struct AdamTensorNames {
  std::string m, v, step;
  /// "<prefix>.adam_m", "<prefix>.adam_v", "<prefix>.adam.step".
  static AdamTensorNames under(const std::string& prefix) {
    return {prefix + ".adam_m", prefix + ".adam_v", prefix + ".adam.step"};
  }
};

/// Collects parameter sets, optimizer states and counters for one file, in
/// the order they are added (the file's tensor order).
template <class ExecSpace>
class ParameterFileWriter {
 public:
  using memory_space = typename ExecSpace::memory_space;
  using host_flat = Kokkos::View<float*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using host_step = Kokkos::View<std::int64_t, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

  /// Queues a copy of `flat` (laid out by `layout`) as the set `prefix`.
  void add(const ExecSpace& space, const std::string& prefix, const NetworkLayout& layout,
           const FlatParams<memory_space>& flat) {
    auto& host = buffers_.emplace_back(layout.total, 0.0f);
    copy_out(space, flat, host);
    const std::vector<float>* data = &host;
    const NetworkLayout lay = layout;
    parts_.push_back([prefix, lay, data](safetensors::File& f) { append_parameter_tensors(f, prefix, lay, *data); });
  }
  void add(const ExecSpace& space, const std::string& prefix, const ParameterSet<memory_space>& set) {
    add(space, prefix, set.layout, set.flat);
  }
  /// Queues the moments and step counter of `adam` (moments laid out by `layout`).
  void add(const ExecSpace& space, const AdamTensorNames& names, const NetworkLayout& layout,
           const AdamOptimizer<ExecSpace>& adam) {
    add(space, names.m, layout, adam.m());
    add(space, names.v, layout, adam.v());
    auto& step = counters_.emplace_back(0);
    Kokkos::deep_copy(space, host_step(&step), adam.step());
    const std::int64_t* value = &step;
    const std::string name = names.step;
    parts_.push_back(
        [name, value](safetensors::File& f) { f.tensors.push_back(safetensors::make_i64_scalar(name, *value)); });
  }
  /// A host counter as an I64 scalar.
  void add_counter(const std::string& name, std::int64_t value) {
    parts_.push_back(
        [name, value](safetensors::File& f) { f.tensors.push_back(safetensors::make_i64_scalar(name, value)); });
  }
  /// The file's "__metadata__" strings.
  std::map<std::string, std::string>& metadata() { return metadata_; }

  /// Fences `space` (the queued copies) and writes `path` atomically.
  void write(const ExecSpace& space, const std::string& path) const {
    compat::fence(space, "foxrl::ParameterFileWriter::write");
    safetensors::File file;
    for (const auto& part : parts_) part(file);
    file.metadata = metadata_;
    safetensors::write(path, file);
  }

 private:
  static void copy_out(const ExecSpace& space, const FlatParams<memory_space>& from, std::vector<float>& to) {
    if (from.extent(0) != to.size())
      throw LogicError("foxrl::ParameterFileWriter: a flat buffer of " + std::to_string(from.extent(0)) +
                       " floats for a layout of " + std::to_string(to.size()));
    Kokkos::deep_copy(space, host_flat(to.data(), to.size()), from);
  }

  // deques: elements keep their addresses while more are added.
  std::deque<std::vector<float>> buffers_;
  std::deque<std::int64_t> counters_;
  std::vector<std::function<void(safetensors::File&)>> parts_;
  std::map<std::string, std::string> metadata_;
};

/// Reads parameter sets, optimizer states and counters from one file: each
/// take() checks its tensors into a host buffer; commit() checks that
/// nothing is left over and only then copies everything to the device.
template <class ExecSpace>
class ParameterFileReader {
 public:
  using memory_space = typename ExecSpace::memory_space;

  /// Reads and validates the container (`architecture`: for messages).
  ParameterFileReader(const std::string& path, const std::string& architecture) : reader_(path, architecture) {}

  /// Stages the set `prefix` (laid out by `layout`) for `to`.
  /// Every value must be finite (and >= 0 with Values::finite_nonnegative).
  void take(const std::string& prefix, const NetworkLayout& layout, const FlatParams<memory_space>& to,
            TensorReader::Values values = TensorReader::Values::finite) {
    if (to.extent(0) != layout.total)
      throw LogicError("foxrl::ParameterFileReader: a flat buffer of " + std::to_string(to.extent(0)) +
                       " floats for layout " + layout.describe());
    staged_.push_back({reader_.parameters(prefix, layout, values), to});
  }
  void take(const std::string& prefix, const ParameterSet<memory_space>& set) { take(prefix, set.layout, set.flat); }
  /// Stages the moments (finite; the second >= 0) and step counter (>= 0)
  /// of `adam`.
  void take(const AdamTensorNames& names, const NetworkLayout& layout, const AdamOptimizer<ExecSpace>& adam) {
    take(names.m, layout, adam.m());
    take(names.v, layout, adam.v(), TensorReader::Values::finite_nonnegative);
    steps_.push_back({reader_.counter(names.step), adam.step()});
  }
  /// A host counter (checked now).
  std::int64_t counter(const std::string& name) { return reader_.counter(name); }

  /// Checks that every tensor of the file was taken, then copies the staged
  /// buffers to the device; fences `space`.
  void commit(const ExecSpace& space) {
    reader_.finish();
    using host_flat = Kokkos::View<const float*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    using host_step = Kokkos::View<const std::int64_t, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    for (const auto& s : staged_) Kokkos::deep_copy(space, s.second, host_flat(s.first.data(), s.first.size()));
    for (const auto& s : steps_) Kokkos::deep_copy(space, s.second, host_step(&s.first));
    // The host buffers die with this object.
    compat::fence(space, "foxrl::ParameterFileReader::commit");
  }

  TensorReader& tensors() { return reader_; }

 private:
  TensorReader reader_;
  std::vector<std::pair<std::vector<float>, FlatParams<memory_space>>> staged_;
  std::deque<std::pair<std::int64_t, Kokkos::View<std::int64_t, memory_space>>> steps_;
};

/// Throws UsageError "checkpoint '<path>': metadata '<key>' is '...',
/// expected '<expected>'<why>" unless the file's metadata holds `expected`
/// under `key` (the messages of every checkpoint metadata check).
inline void check_checkpoint_entry(const std::string& path, const std::map<std::string, std::string>& metadata,
                                   const std::string& key, const std::string& expected, const std::string& why = "") {
  const auto it = metadata.find(key);
  if (it != metadata.end() && it->second == expected) return;
  throw UsageError("checkpoint '" + path + "': metadata '" + key + "' is " +
                   (it == metadata.end() ? std::string("missing") : quote_excerpt(it->second)) + ", expected '" +
                   expected + "'" + why);
}

/// Throws UsageError "checkpoint '<path>': metadata 'format' is '...',
/// expected '<expected>'" unless the file's metadata names `expected`
/// (a checkpoint of another learner is refused before any tensor is read).
inline void check_checkpoint_format(const std::string& path, const std::map<std::string, std::string>& metadata,
                                    const std::string& expected) {
  check_checkpoint_entry(path, metadata, "format", expected);
}

}  // namespace foxrl
