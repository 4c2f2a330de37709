// The kernel paths of core/kernel_paths.hpp: each on unless
// FOXRL_KERNEL_PATHS_OFF names it (or says "all"), an unknown name refused
// naming the variable and the value, and the components built under each
// setting taking it up.
#include "agents/dqn/dqn_learner.hpp"
#include "core/execution_context.hpp"
#include "core/kernel_paths.hpp"
#include "nn/dense_ops.hpp"
#include "support/scoped_environment.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <string>

namespace {
constexpr const char* kOff = "FOXRL_KERNEL_PATHS_OFF";
}  // namespace

TEST_CASE("every kernel path is on unless FOXRL_KERNEL_PATHS_OFF names it", "[kernel_paths]") {
  using foxrl::test::ScopedEnvironment;
  const auto& paths = foxrl::kernel_paths();
  REQUIRE(paths.size() >= 10);
  {
    ScopedEnvironment unset(kOff, nullptr);
    for (const auto& p : paths) CHECK(foxrl::kernel_path_on(p.path));
  }
  for (const auto& p : paths) {
    INFO(p.name);
    CHECK(paths[static_cast<std::size_t>(p.path)].name == std::string(p.name));  // in enum order
    ScopedEnvironment one(kOff, (std::string(" ") + p.name + " ,").c_str());
    for (const auto& q : paths) CHECK(foxrl::kernel_path_on(q.path) == (q.path != p.path));
  }
  {
    ScopedEnvironment two(kOff, "paired_forward,paired_heads");
    CHECK_FALSE(foxrl::kernel_path_on(foxrl::KernelPath::paired_forward));
    CHECK_FALSE(foxrl::kernel_path_on(foxrl::KernelPath::paired_heads));
    CHECK(foxrl::kernel_path_on(foxrl::KernelPath::fused_cuda));
  }
  {
    ScopedEnvironment all(kOff, "all");
    for (const auto& p : paths) CHECK_FALSE(foxrl::kernel_path_on(p.path));
    CHECK_THAT(foxrl::kernel_paths_report(), Catch::Contains("paired_forward") && Catch::Contains("off"));
  }
  {
    ScopedEnvironment empty(kOff, "");
    for (const auto& p : paths) CHECK(foxrl::kernel_path_on(p.path));
  }
  ScopedEnvironment bad(kOff, "paired_forward,pared_heads");
  CHECK_THROWS_AS(foxrl::kernel_path_on(foxrl::KernelPath::fused_cuda), foxrl::UsageError);
  CHECK_THROWS_WITH(foxrl::kernel_path_on(foxrl::KernelPath::fused_cuda),
                    Catch::Contains("FOXRL_KERNEL_PATHS_OFF: 'pared_heads' is not a kernel path (all, cuda_graphs"));
}

TEMPLATE_TEST_CASE("DenseOps takes the epilogue and stacked-rows paths when built", "[kernel_paths][dense]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using foxrl::test::ScopedEnvironment;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  // Fused epilogues exist only where EpilogueGemm does (the blas backend on
  // CUDA); stacked rows only on GPUs (a host BLAS may sum a row in another
  // order at another row count).
  const bool available = foxrl::EpilogueGemm<Exec>::available;
  const bool device = !Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Exec::memory_space>::accessible;
  for (const char* off : {static_cast<const char*>(nullptr), "gemm_epilogues", "stacked_rows"}) {
    const std::string shown = off == nullptr ? "none" : off;
    INFO("off: " << shown);
    ScopedEnvironment set(kOff, off);
    foxrl::DenseOps<Exec> blas(space, foxrl::DenseBackend::blas);
    CHECK(blas.fused_epilogues() == (available && shown != "gemm_epilogues"));
    CHECK_FALSE(blas.epilogue_masks());
    CHECK(blas.stacked_rows() == (device && shown != "stacked_rows"));
    foxrl::DenseOps<Exec> portable(space, foxrl::DenseBackend::portable);
    CHECK_FALSE(portable.fused_epilogues());
    CHECK(portable.stacked_rows() == (device && shown != "stacked_rows"));
  }
}

TEST_CASE("DqnLearnerConfig takes 256, 512 or 1024 fused threads and refuses anything else by name", "[kernel_paths]") {
  foxrl::DqnLearnerConfig c;
  c.obs_dim = 4;
  c.num_actions = 2;
  c.hidden = {8};
  CHECK(c.fused_threads == 1024);  // the documented default
  for (const int threads : {256, 512, 1024}) {
    c.fused_threads = threads;
    CHECK_NOTHROW(c.validate());
  }
  for (const int bad : {0, 128, 384, 2048}) {
    c.fused_threads = bad;
    CHECK_THROWS_WITH(c.validate(),
                      Catch::Contains("fused_threads must be 256, 512 or 1024, got " + std::to_string(bad)));
  }
}
