#pragma once
// The phase boundaries a probe of the fused small-network update records
// per block (DqnLearner::set_fused_update_probe, perf/bench_pipeline.cpp
// --fused-phases): the SM clock (clock64) at each boundary, and the GPU's
// global timer (ns) at the kernel's start and end. The kernel is
// kernels/cuda/fused_small_update.cuh.

#include <Kokkos_Core.hpp>

namespace foxrl {

enum FusedUpdateStamp : int {
  fused_update_stamp_start,     ///< kernel entry
  fused_update_stamp_staged,    ///< both networks and the rows in shared memory
  fused_update_stamp_forward,   ///< online and target forward done
  fused_update_stamp_loss,      ///< per-row loss, dL/d head, the block's sums
  fused_update_stamp_backward,  ///< the block's partial gradient written
  fused_update_stamp_barrier,   ///< past the first grid barrier
  fused_update_stamp_summed,    ///< partials added, the block's norm partials written
  fused_update_stamp_end,       ///< decision, second barrier and the optimizer step done
  fused_update_stamp_start_ns,  ///< global timer at entry
  fused_update_stamp_end_ns,    ///< global timer at the end
  fused_update_stamp_count
};

/// The probe's stamps [updates, blocks, fused_update_stamp_count]. Row-major
/// on every backend: the kernel writes them through the raw pointer, and
/// the default layout of a GPU View is column-major.
template <class MemorySpace>
using FusedUpdateStamps = Kokkos::View<unsigned long long***, Kokkos::LayoutRight, MemorySpace>;

}  // namespace foxrl
