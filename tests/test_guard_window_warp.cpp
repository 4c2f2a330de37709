// The training guard's loss window pushed by one warp
// (kernels/cuda/guard_window_warp.cuh) against GuardDecision::push_loss,
// its one-thread twin, run on the host: after every push the whole guard
// state must be the same bit for bit (compared as bytes, so -0.0 and 0.0
// differ). The sequences fill the window from empty and then wrap it many
// times, with repeated values, zeros of both signs, values equal to the
// one the full window evicts next, ascending and descending runs and
// random values. CUDA builds only (the warp version exists only there).
#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_CUDA

#include "core/execution_context.hpp"
#include "kernels/cuda/guard_window_warp.cuh"
#include "kernels/nn/guard_kernels.hpp"
#include "support/device_copy.hpp"
#include "views/nn/guard_state.hpp"

#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr int slots = foxrl::GuardState::count;

/// Pushes xs[0..count) one after another into `state` with one warp,
/// copying the state after each push to after[i * slots ...].
__global__ void push_all(double* state, const double* xs, int count, double* after) {
  for (int i = 0; i < count; ++i) {
    const int n = static_cast<int>(state[foxrl::GuardState::losses]);
    __syncwarp();
    foxrl::kernels::cuda::warp_push_loss(state, xs[i], n);
    __syncwarp();
    for (int k = static_cast<int>(threadIdx.x); k < slots; k += 32) after[std::size_t(i) * slots + k] = state[k];
    __syncwarp();
  }
}

/// The sequences (see the file comment).
std::vector<std::vector<double>> sequences() {
  std::vector<std::vector<double>> all;
  std::mt19937 rng(3);
  const double few[] = {0.0, -0.0, 1.0, 2.0, 0.5, 3.0, 1e-30, 7.25};
  for (int s = 0; s < 4; ++s) {  // few distinct values: many ties and evictions of a tied value
    std::vector<double> xs;
    for (int i = 0; i < 300; ++i) xs.push_back(few[rng() % (s < 2 ? 3 : 8)]);
    all.push_back(xs);
  }
  std::uniform_real_distribution<double> u(0.0, 10.0);
  std::vector<double> random, ascending, descending, constant, sawtooth;
  for (int i = 0; i < 300; ++i) {
    random.push_back(u(rng));
    ascending.push_back(0.01 * i);
    descending.push_back(100.0 - 0.01 * i);
    constant.push_back(0.25);
    sawtooth.push_back(double(i % 37));
  }
  for (auto* xs : {&random, &ascending, &descending, &constant, &sawtooth}) all.push_back(*xs);
  return all;
}

}  // namespace

TEST_CASE("the guard's loss window pushed by a warp equals push_loss bit for bit", "[guard][cuda]") {
  foxrl::ExecutionContext<Kokkos::Cuda> context;
  const auto& space = context.space();
  int index = 0;
  for (const auto& xs : sequences()) {
    INFO("sequence " << index++);
    const int count = static_cast<int>(xs.size());
    foxrl::kernels::GuardDecision<Kokkos::HostSpace> reference;
    reference.state = Kokkos::View<double*, Kokkos::HostSpace>("foxrl::test::guard_state", slots);
    Kokkos::View<double*, Kokkos::CudaSpace> state(Kokkos::view_alloc(space, "foxrl::test::guard_state"), slots);
    Kokkos::View<double*, Kokkos::CudaSpace> after(Kokkos::view_alloc(space, "foxrl::test::after"),
                                                   std::size_t(count) * slots);
    const auto d_xs = foxrl::test::to_device(space, xs);
    push_all<<<1, 32, 0, space.cuda_stream()>>>(state.data(), d_xs.data(), count, after.data());
    REQUIRE(cudaGetLastError() == cudaSuccess);
    const auto got = foxrl::test::to_host(space, after);
    int mismatched = 0, full_pushes = 0;
    for (int i = 0; i < count; ++i) {
      const int n = static_cast<int>(reference.state(foxrl::GuardState::losses));
      full_pushes += n == foxrl::GuardState::window ? 1 : 0;
      reference.push_loss(xs[std::size_t(i)], n);
      if (std::memcmp(&got(std::size_t(i) * slots), reference.state.data(), slots * sizeof(double)) != 0) {
        if (mismatched++ == 0) FAIL_CHECK("first difference after push " << i);
      }
    }
    CHECK(mismatched == 0);
    CHECK(full_pushes > 200);  // the window wrapped: evictions were exercised
  }
}

#endif
