#pragma once
// allclose: element-wise comparison of a result with a reference,
// |actual - expected| <= atol + rtol * |expected| (NaN never matches), for
// std::vectors and host Views of rank 1 or 2 (copy device Views with
// to_host first). The result converts to bool and prints, so Catch shows
// which entries differ:
//   CHECK(foxrl::test::allclose(to_host(space, y), y_ref, 1e-5, 1e-6));
//   -> "3 of 512 entries differ (rtol 1e-05, atol 1e-06), largest |diff| 0.02:
//       (4, 7): 0.51 vs 0.49 ..."

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstddef>
#include <ostream>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace foxrl::test {

/// What allclose found: true when every entry is close; `message` names
/// the first mismatches with their indices (or the shape mismatch).
struct CloseResult {
  bool ok = true;
  std::string message;
  explicit operator bool() const { return ok; }
};

inline std::ostream& operator<<(std::ostream& os, const CloseResult& r) { return os << r.message; }

namespace detail {

/// Flat, row-major access to a vector or a host View of rank 1 or 2.
template <class T, class Enable = void>
struct Flat;

template <class T, class Alloc>
struct Flat<std::vector<T, Alloc>> {
  const std::vector<T, Alloc>& v;
  std::vector<std::size_t> shape() const { return {v.size()}; }
  std::size_t size() const { return v.size(); }
  double at(std::size_t k) const { return static_cast<double>(v[k]); }
};

template <class V>
struct Flat<V, std::enable_if_t<Kokkos::is_view<V>::value>> {
  static_assert(static_cast<int>(V::rank) == 1 || static_cast<int>(V::rank) == 2,
                "allclose compares Views of rank 1 or 2");
  static_assert(Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename V::memory_space>::accessible,
                "allclose reads host Views: copy device Views with to_host first");
  const V& v;
  std::vector<std::size_t> shape() const {
    if constexpr (static_cast<int>(V::rank) == 1)
      return {v.extent(0)};
    else
      return {v.extent(0), v.extent(1)};
  }
  std::size_t size() const { return v.size(); }
  double at(std::size_t k) const {
    if constexpr (static_cast<int>(V::rank) == 1)
      return static_cast<double>(v(k));
    else
      return static_cast<double>(v(k / v.extent(1), k % v.extent(1)));
  }
};

inline std::string shape_text(const std::vector<std::size_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// Index of flat entry k in `shape`: "7" or "(2, 3)".
inline std::string index_text(const std::vector<std::size_t>& shape, std::size_t k) {
  if (shape.size() == 2) return "(" + std::to_string(k / shape[1]) + ", " + std::to_string(k % shape[1]) + ")";
  return std::to_string(k);
}

}  // namespace detail

/// Compares `actual` with `expected` entry by entry: entry k matches when
/// |a - e| <= atol + rtol * |e|. Shapes must agree (a View of rank 2 may be
/// compared with a flat vector of its size, read row by row). The message
/// lists the first `show` mismatches as "index: actual vs expected".
template <class Actual, class Expected>
CloseResult allclose(const Actual& actual, const Expected& expected, double rtol, double atol, int show = 5) {
  const detail::Flat<Actual> a{actual};
  const detail::Flat<Expected> e{expected};
  const auto shape = a.shape();
  CloseResult r;
  std::ostringstream msg;
  msg.precision(9);
  const bool flat_expected = e.shape().size() == 1;
  if (a.size() != e.size() || (!flat_expected && e.shape() != shape)) {
    r.ok = false;
    msg << "shape " << detail::shape_text(shape) << " vs expected " << detail::shape_text(e.shape());
    r.message = msg.str();
    return r;
  }
  std::size_t bad = 0;
  double worst = 0.0;
  std::ostringstream first;
  first.precision(9);
  for (std::size_t k = 0; k < a.size(); ++k) {
    const double x = a.at(k), y = e.at(k);
    const double diff = std::fabs(x - y);
    if (diff <= atol + rtol * std::fabs(y)) continue;  // false for NaN
    if (!(diff <= worst)) worst = diff;
    if (bad < static_cast<std::size_t>(show)) {
      first << "\n  " << detail::index_text(shape, k) << ": " << x << " vs " << y;
    }
    ++bad;
  }
  if (bad == 0) {
    msg << "all " << a.size() << " entries close (rtol " << rtol << ", atol " << atol << ")";
  } else {
    r.ok = false;
    msg << bad << " of " << a.size() << " entries differ (rtol " << rtol << ", atol " << atol << "), largest |diff| "
        << worst << "; first (actual vs expected):" << first.str();
    if (bad > static_cast<std::size_t>(show)) msg << "\n  ...";
  }
  r.message = msg.str();
  return r;
}

}  // namespace foxrl::test
