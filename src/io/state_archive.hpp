#pragma once
// StateWriter / StateReader: device Views to and from the tensors of a
// safetensors file, for state that must survive a restart bit for bit
// (the trainer state beside a checkpoint). Both sides are driven by the
// same enumeration (`visit(archive, ...)` calling `archive.tensor(name,
// view, rows)`), so what is saved and what is loaded cannot drift apart.
//
// Writing queues every device-to-host copy on the instance, fences once, and
// writes the file atomically. Reading validates every tensor (present,
// dtype, shape, nothing extra) before the first copy, so a bad file changes
// nothing; errors are foxrl::UsageError (a damaged or foreign file is bad
// input) naming the file and the tensor. The components check the values
// too (indices and counters in range, statistics finite) on the host bytes
// the reader already holds, before apply(): a kernel never sees them
// otherwise, and a large replay buffer is not copied twice.

#include "core/compat.hpp"
#include "core/error.hpp"
#include "core/validate.hpp"
#include "io/safetensors.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace foxrl {
namespace detail {

template <class T>
constexpr const char* safetensors_dtype() {
  using U = std::remove_const_t<T>;
  if constexpr (std::is_same_v<U, float>)
    return "F32";
  else if constexpr (std::is_same_v<U, double>)
    return "F64";
  else if constexpr (std::is_same_v<U, std::int32_t>)
    return "I32";
  else if constexpr (std::is_same_v<U, std::int64_t>)
    return "I64";
  else if constexpr (std::is_same_v<U, std::uint64_t>)
    return "U64";
  else if constexpr (std::is_same_v<U, std::uint8_t>)
    return "U8";
  else
    static_assert(sizeof(T) == 0, "no safetensors dtype for this value type");
}

/// The first `rows` rows of `view` (all of a rank-0 View), contiguous for
/// the LayoutRight and rank-1 Views stored here.
template <class View>
auto leading_rows(const View& view, std::int64_t rows) {
  constexpr int rank = static_cast<int>(View::rank);
  const auto r = std::make_pair(std::size_t(0), static_cast<std::size_t>(rows));
  if constexpr (rank == 0)
    return view;
  else if constexpr (rank == 1)
    return Kokkos::subview(view, r);
  else if constexpr (rank == 2)
    return Kokkos::subview(view, r, Kokkos::ALL);
  else
    return Kokkos::subview(view, r, Kokkos::ALL, Kokkos::ALL);
}

template <class View>
std::vector<std::int64_t> shape_of(const View& view) {
  std::vector<std::int64_t> shape;
  shape.reserve(View::rank);
  for (int d = 0; d < static_cast<int>(View::rank); ++d) shape.push_back(static_cast<std::int64_t>(view.extent(d)));
  return shape;
}

/// An unmanaged host View with `view`'s type and extents over `bytes`.
template <class View>
auto host_alias(const View& view, void* bytes) {
  using HostView = Kokkos::View<typename View::non_const_data_type, typename View::array_layout, Kokkos::HostSpace,
                                Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  return HostView(static_cast<typename View::non_const_value_type*>(bytes), view.layout());
}

}  // namespace detail

/// The elements of one tensor's host bytes, read one at a time (the bytes
/// of a tensor carry no alignment guarantee for T).
template <class T>
class TensorValues {
 public:
  explicit TensorValues(const safetensors::Tensor& t) : t_(&t) {}
  std::int64_t size() const { return static_cast<std::int64_t>(t_->data.size() / sizeof(T)); }
  T operator[](std::int64_t i) const {
    T v;
    std::memcpy(&v, t_->data.data() + static_cast<std::size_t>(i) * sizeof(T), sizeof(T));
    return v;
  }
  /// Element `i` as a multi-index ("[3, 1]"; "" for a scalar).
  std::string index(std::int64_t i) const {
    const auto& shape = t_->shape;
    if (shape.empty()) return "";
    std::vector<std::int64_t> at(shape.size());
    for (std::size_t d = shape.size(); d-- > 0;) {
      at[d] = shape[d] > 0 ? i % shape[d] : 0;
      i = shape[d] > 0 ? i / shape[d] : 0;
    }
    std::string s = "[";
    for (std::size_t d = 0; d < at.size(); ++d) s += (d ? ", " : "") + std::to_string(at[d]);
    return s + "]";
  }

 private:
  const safetensors::Tensor* t_;
};

/// Collects device Views as tensors and writes them as one safetensors file.
template <class ExecSpace>
class StateWriter {
 public:
  static constexpr bool saving = true;

  /// Queues a copy of the first `rows` rows of `view` (-1: all) under `name`.
  template <class View>
  void tensor(const ExecSpace& space, const std::string& name, const View& view, std::int64_t rows = -1) {
    const auto part = detail::leading_rows(view, rows < 0 ? static_cast<std::int64_t>(view.extent(0)) : rows);
    safetensors::Tensor t;
    t.name = name;
    t.dtype = detail::safetensors_dtype<typename View::value_type>();
    t.shape = detail::shape_of(part);
    t.data.resize(part.span() * sizeof(typename View::value_type));
    // The vector's buffer keeps its address when the Tensor is moved below.
    if (!t.data.empty()) Kokkos::deep_copy(space, detail::host_alias(part, t.data.data()), part);
    file_.tensors.push_back(std::move(t));
  }

  /// A host counter as an I64 scalar.
  void scalar(const std::string& name, std::int64_t& value) {
    file_.tensors.push_back(safetensors::make_i64_scalar(name, value));
  }

  /// Host float64 values (e.g. normalizer statistics) as an F64 vector.
  void host_vector(const std::string& name, std::vector<double>& values) {
    safetensors::Tensor t;
    t.name = name;
    t.dtype = "F64";
    t.shape = {static_cast<std::int64_t>(values.size())};
    t.data.resize(values.size() * sizeof(double));
    if (!values.empty()) std::memcpy(t.data.data(), values.data(), t.data.size());
    file_.tensors.push_back(std::move(t));
  }

  std::map<std::string, std::string>& metadata() { return file_.metadata; }

  /// Waits for the queued copies and writes `path` atomically.
  void write(const ExecSpace& space, const std::string& path) {
    compat::fence(space, "foxrl::StateWriter::write");
    safetensors::write(path, file_);
  }

 private:
  safetensors::File file_;
};

/// Reads a file written by StateWriter back into the same Views.
template <class ExecSpace>
class StateReader {
 public:
  static constexpr bool saving = false;

  /// Reads and validates the container (foxrl::Error naming `path`).
  explicit StateReader(const std::string& path) : path_(path), file_(safetensors::read(path)) {}

  /// Checks tensor `name` against the first `rows` rows of `view` (-1: all)
  /// and queues the copy for apply().
  template <class View>
  void tensor(const ExecSpace&, const std::string& name, const View& view, std::int64_t rows = -1) {
    if (rows > static_cast<std::int64_t>(view.extent(0)))
      fail(name, std::to_string(rows) + " rows expected, the buffer holds " + std::to_string(view.extent(0)));
    const auto part = detail::leading_rows(view, rows < 0 ? static_cast<std::int64_t>(view.extent(0)) : rows);
    const auto& t = expect(name, detail::safetensors_dtype<typename View::value_type>(), detail::shape_of(part));
    copies_.push_back([part, &t](const ExecSpace& space) {
      if (!t.data.empty()) {
        Kokkos::deep_copy(space, part, detail::host_alias(part, const_cast<unsigned char*>(t.data.data())));
      }
    });
  }

  /// Reads an I64 scalar into `value` (at once: host state).
  void scalar(const std::string& name, std::int64_t& value) {
    const auto& t = expect(name, "I64", {});
    std::memcpy(&value, t.data.data(), sizeof(value));
  }

  /// Reads an F64 vector of `values.size()` entries into `values`.
  void host_vector(const std::string& name, std::vector<double>& values) {
    const auto& t = expect(name, "F64", {static_cast<std::int64_t>(values.size())});
    if (!values.empty()) std::memcpy(values.data(), t.data.data(), t.data.size());
  }

  const std::map<std::string, std::string>& metadata() const { return file_.metadata; }
  const std::string& path() const { return path_; }

  /// The host values of tensor `name`, already requested through tensor()
  /// with value type T, for checks before apply().
  template <class T>
  TensorValues<T> values(const std::string& name) const {
    const auto* t = file_.find(name);
    if (t == nullptr || seen_.count(name) == 0 || t->dtype != detail::safetensors_dtype<T>())
      throw LogicError("foxrl::StateReader::values: tensor '" + name + "' was not requested as " +
                       detail::safetensors_dtype<T>());
    return TensorValues<T>(*t);
  }

  /// Fails naming the first of the first `count` elements (-1: all) of
  /// tensor `name` for which `ok(value)` is false:
  /// "tensor 'replay.next_ref': element [17] is 9000: must be ...".
  template <class T, class Ok>
  void require_each(const std::string& name, std::int64_t count, Ok ok, const std::string& requirement) const {
    const auto v = values<T>(name);
    const std::int64_t n = count < 0 ? v.size() : std::min(count, v.size());
    for (std::int64_t i = 0; i < n; ++i) {
      const T x = v[i];
      if (!ok(x)) fail_value(name, v.index(i), x, requirement);
    }
  }

  /// Fails on tensor `name` holding `value` at `index` ("" for a scalar).
  template <class T>
  [[noreturn]] void fail_value(const std::string& name, const std::string& index, const T& value,
                               const std::string& requirement) const {
    fail(name, (index.empty() ? "" : "element " + index + " ") + "is " + format_value(value) + ": " + requirement);
  }

  /// Fails on a tensor nobody asked for (call after the last request).
  void check_no_extra() const {
    for (const auto& t : file_.tensors)
      if (seen_.count(t.name) == 0) fail(t.name, "unexpected tensor");
  }

  /// check_no_extra(), then every queued copy, then a fence (the host bytes
  /// live in this reader).
  void apply(const ExecSpace& space) {
    check_no_extra();
    for (const auto& copy : copies_) copy(space);
    compat::fence(space, "foxrl::StateReader::apply");
  }

  [[noreturn]] void fail(const std::string& tensor, const std::string& what) const {
    throw UsageError("trainer state '" + path_ + "': tensor '" + tensor + "': " + what);  // a damaged or foreign file
  }

 private:
  const safetensors::Tensor& expect(const std::string& name, const std::string& dtype,
                                    const std::vector<std::int64_t>& shape) {
    const auto* t = file_.find(name);
    if (t == nullptr) fail(name, "missing");
    if (t->dtype != dtype) fail(name, "dtype " + t->dtype + ", expected " + dtype);
    if (t->shape != shape) fail(name, "shape " + shape_string(t->shape) + ", expected " + shape_string(shape));
    seen_.insert(name);
    return *t;
  }

  static std::string shape_string(const std::vector<std::int64_t>& shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
  }

  std::string path_;
  safetensors::File file_;
  std::set<std::string> seen_;
  std::vector<std::function<void(const ExecSpace&)>> copies_;
};

}  // namespace foxrl
