#pragma once
// DenseBackend: which implementation runs a network's dense products (a
// runtime option of the learners; docs/design.md compares the two).

namespace foxrl {

/// Which implementation runs the dense products.
enum class DenseBackend {
  portable,  ///< foxrl's tiled Kokkos team kernel (fused epilogues)
  blas,      ///< RowMajorGemm (cuBLAS on CUDA, Kokkos Kernels elsewhere) + foxrl epilogue kernels
};

inline const char* to_string(DenseBackend b) { return b == DenseBackend::portable ? "portable" : "blas"; }

}  // namespace foxrl
