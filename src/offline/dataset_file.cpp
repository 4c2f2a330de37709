#include "offline/dataset_file.hpp"

#include "core/error.hpp"
#include "core/strings.hpp"
#include "core/validate.hpp"
#include "io/state_archive.hpp"

#include <cmath>
#include <set>
#include <utility>

namespace foxrl {
namespace {

const char* const normalizer_names[] = {"normalizer.count", "normalizer.mean", "normalizer.m2"};

class DatasetChecker {
 public:
  DatasetChecker(const std::string& path, const safetensors::File& file) : path_(path), file_(file) {}

  [[noreturn]] void fail(const std::string& tensor, const std::string& what) const {
    throw UsageError("dataset '" + path_ + "': tensor '" + tensor + "': " + what);
  }

  /// Tensor `name` with `dtype` and `rank`; its shape is checked by the caller.
  const safetensors::Tensor& expect(const std::string& name, const std::string& dtype, std::size_t rank) const {
    const auto* t = file_.find(name);
    if (t == nullptr) fail(name, "missing (a dataset of `foxrl collect` has it)");
    if (t->dtype != dtype) fail(name, "dtype " + t->dtype + ", expected " + dtype);
    if (t->shape.size() != rank)
      fail(name, "shape " + shape_string(t->shape) + ", expected rank " + std::to_string(rank) +
                     (rank == 2 ? " ([transitions, features])" : " ([transitions])"));
    return *t;
  }

  /// Fails on the first element of `name` for which `ok(value)` is false.
  template <class T, class Ok>
  void require_each(const safetensors::Tensor& t, Ok ok, const std::string& requirement) const {
    const TensorValues<T> v(t);
    const std::int64_t n = v.size();
    for (std::int64_t i = 0; i < n; ++i) {
      const T x = v[i];
      if (!ok(x)) fail(t.name, "element " + v.index(i) + " is " + format_value(x) + ": " + requirement);
    }
  }

 private:
  const std::string& path_;
  const safetensors::File& file_;
};

}  // namespace

const safetensors::Tensor& DatasetFile::tensor(const std::string& name) const {
  const auto* t = file.find(name);
  if (t == nullptr) throw LogicError("foxrl::DatasetFile::tensor: no tensor '" + name + "'");
  return *t;
}

DatasetFile read_dataset_file(const std::string& path) {
  std::string sha256;
  safetensors::File file = safetensors::read(path, &sha256);
  DatasetFile out = validate_dataset(path, std::move(file));
  out.sha256 = std::move(sha256);
  return out;
}

DatasetFile validate_dataset(const std::string& path, safetensors::File file) {
  DatasetFile out;
  out.path = path;
  // The metadata first: a file that is no dataset at all (a checkpoint, say)
  // is named as such rather than by its first missing tensor.
  out.metadata = parse_dataset_metadata(path, file.metadata);
  const DatasetMetadata& m = out.metadata;
  const DatasetChecker check(path, file);

  // Containers: dtype, rank, features, then one row count for all.
  const auto& obs = check.expect("observations", "F32", 2);
  const auto& next = check.expect("next_observations", "F32", 2);
  const auto& actions = check.expect("actions", "I32", 1);
  const auto& rewards = check.expect("rewards", "F32", 1);
  const auto& terminated = check.expect("terminated", "U8", 1);
  const auto& truncated = check.expect("truncated", "U8", 1);
  for (const auto* t : {&obs, &next}) {
    if (t->shape[1] != m.obs_dim)
      check.fail(t->name, "shape " + shape_string(t->shape) + ": " + std::to_string(t->shape[1]) +
                              " features, metadata 'obs_dim' says " + std::to_string(m.obs_dim));
  }
  const std::int64_t rows = obs.shape[0];
  for (const auto* t : {&next, &actions, &rewards, &terminated, &truncated}) {
    if (t->shape[0] != rows)
      check.fail(t->name, std::to_string(t->shape[0]) + " rows, tensor 'observations' has " + std::to_string(rows));
  }
  if (rows == 0) check.fail("observations", "0 rows: the dataset holds no transitions");
  if (rows != m.transitions)
    check.fail("observations",
               std::to_string(rows) + " rows, metadata 'transitions' says " + std::to_string(m.transitions));

  // Nothing else in the file but the normaliser of a network policy.
  std::set<std::string> known(dataset_tensor_names().begin(), dataset_tensor_names().end());
  known.insert(std::begin(normalizer_names), std::end(normalizer_names));
  for (const auto& t : file.tensors) {
    if (known.count(t.name) == 0) check.fail(t.name, "unexpected tensor (not part of the dataset format)");
  }

  // Values: what a kernel would index with or learn from.
  const auto finite = [](float x) { return std::isfinite(x); };
  check.require_each<float>(obs, finite, "observations must be finite");
  check.require_each<float>(next, finite, "observations must be finite");
  check.require_each<float>(rewards, finite, "rewards must be finite");
  const auto bounded = [](float x) { return std::fabs(x) <= kMaxDatasetMagnitude; };
  const std::string bound = "must be within +-" + format_value(kMaxDatasetMagnitude);
  check.require_each<float>(obs, bounded, "observations " + bound);
  check.require_each<float>(next, bounded, "observations " + bound);
  check.require_each<float>(rewards, bounded, "rewards " + bound);
  const std::int32_t num_actions = m.num_actions;
  check.require_each<std::int32_t>(
      actions, [num_actions](std::int32_t a) { return a >= 0 && a < num_actions; },
      "must be in [0, " + std::to_string(num_actions) + ") (metadata 'num_actions')");
  const auto flag = [](std::uint8_t x) { return x <= 1; };
  check.require_each<std::uint8_t>(terminated, flag, "must be 0 or 1");
  check.require_each<std::uint8_t>(truncated, flag, "must be 0 or 1");

  // The normaliser: all three statistics or none, one entry per feature.
  int present = 0;
  for (const char* name : normalizer_names) present += file.find(name) != nullptr ? 1 : 0;
  if (present > 0) {
    NormalizerState n;
    std::vector<double>* dest[] = {&n.count, &n.mean, &n.m2};
    for (int s = 0; s < 3; ++s) {
      const auto& t = check.expect(normalizer_names[s], "F64", 1);
      if (t.shape[0] != m.obs_dim)
        check.fail(t.name, "shape " + shape_string(t.shape) + ", expected [" + std::to_string(m.obs_dim) +
                               "] (one entry per feature)");
      if (s == 1) {
        check.require_each<double>(
            t, [](double x) { return std::isfinite(x); }, "must be finite");
      } else {
        check.require_each<double>(
            t, [](double x) { return std::isfinite(x) && x >= 0; }, "must be finite and >= 0");
      }
      const TensorValues<double> v(t);
      dest[s]->resize(static_cast<std::size_t>(m.obs_dim));
      for (int d = 0; d < m.obs_dim; ++d) (*dest[s])[static_cast<std::size_t>(d)] = v[d];
    }
    out.normalizer = std::move(n);
  }

  out.rows = rows;
  out.obs_dim = m.obs_dim;
  out.file = std::move(file);
  return out;
}

}  // namespace foxrl
