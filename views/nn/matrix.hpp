#pragma once
// Row-major (LayoutRight) unmanaged matrix and vector views the dense
// kernels take: callers own the memory (a flat parameter buffer, an
// activation scratch, a batch). The layout matches PyTorch's tensors.

#include "core/error.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>

namespace foxrl {

/// A read-only row-major matrix.
template <class MemorySpace>
using ConstMatrix =
    Kokkos::View<const float**, Kokkos::LayoutRight, MemorySpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
/// A writable row-major matrix (also a layer's weight [out, in] inside a
/// flat parameter buffer).
template <class MemorySpace>
using MutableMatrix = Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
/// A read-only vector.
template <class MemorySpace>
using ConstVector =
    Kokkos::View<const float*, Kokkos::LayoutRight, MemorySpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
/// A writable vector (also a layer's bias inside a flat parameter buffer).
template <class MemorySpace>
using MutableVector = Kokkos::View<float*, Kokkos::LayoutRight, MemorySpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

/// Rows [begin, end) of a row-major matrix, as an unmanaged view.
template <class View>
MutableMatrix<typename View::memory_space> matrix_rows(const View& m, int begin, int end) {
  return MutableMatrix<typename View::memory_space>(m.data() + std::size_t(begin) * m.extent(1),
                                                    std::size_t(end - begin), m.extent(1));
}

namespace detail {

/// "[r, c]" for shape messages.
inline std::string dims(std::size_t r, std::size_t c) {
  return "[" + std::to_string(r) + ", " + std::to_string(c) + "]";
}

/// Throws LogicError "<what>: shape mismatch: <shapes>" unless `ok`: shapes
/// inside the library are the program's business, not the user's.
inline void check_shapes(bool ok, const std::string& what, const std::string& shapes) {
  if (!ok) throw LogicError(what + ": shape mismatch: " + shapes);
}

}  // namespace detail
}  // namespace foxrl
