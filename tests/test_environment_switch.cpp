// The environment switches of core/environment_switch.hpp: the CUDA fast
// paths are on unless their variable is "0", and the gemm epilogues' ReLU
// bitmasks only with FOXRL_CUDA_GEMM_EPILOGUES=masks. A DenseOps built
// under each setting takes it up.
#include "core/environment_switch.hpp"
#include "core/execution_context.hpp"
#include "core/stream_graph.hpp"
#include "nn/dense_ops.hpp"
#include "support/scoped_environment.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

TEST_CASE("the CUDA fast-path switches are on unless set to 0", "[switch]") {
  using foxrl::test::ScopedEnvironment;
  const std::vector<std::pair<const char*, bool (*)()>> switches = {
      {"FOXRL_CUDA_GRAPHS", &foxrl::cuda_graphs_allowed_by_environment},
      {"FOXRL_CUDA_ITERATION_GRAPH", &foxrl::iteration_graph_allowed_by_environment},
      {"FOXRL_CUDA_FUSED", &foxrl::cuda_fused_allowed_by_environment},
      {"FOXRL_CUDA_GEMM_EPILOGUES", &foxrl::gemm_epilogues_allowed_by_environment},
      {"FOXRL_CUDA_FUSED_ENV_STEP", &foxrl::fused_env_step_allowed_by_environment},
      {"FOXRL_ENV_STEP_IN_HEAD", &foxrl::env_step_in_head_allowed_by_environment},
      {"FOXRL_CUDA_STACKED_ROWS", &foxrl::stacked_rows_allowed_by_environment},
      {"FOXRL_CUDA_NARROW_INPUT", &foxrl::narrow_input_allowed_by_environment},
      {"FOXRL_FLAT_UNIFORM_UPDATE", &foxrl::flat_uniform_update_allowed_by_environment},
      {"FOXRL_INSERT_IN_RECORD", &foxrl::insert_in_record_allowed_by_environment},
      {"FOXRL_NORMALIZE_IN_SAMPLE", &foxrl::normalize_in_sample_allowed_by_environment},
      {"FOXRL_BOUNDARY_PER_SLOT", &foxrl::boundary_per_slot_allowed_by_environment},
      {"FOXRL_PAIRED_FORWARD", &foxrl::paired_forward_allowed_by_environment},
      {"FOXRL_PAIRED_HEADS", &foxrl::paired_heads_allowed_by_environment},
      {"FOXRL_ONE_STEP_ALIASED", &foxrl::one_step_aliasing_allowed_by_environment}};
  for (const auto& [name, allowed] : switches) {
    INFO(name);
    {
      ScopedEnvironment unset(name, nullptr);
      CHECK(allowed());
    }
    for (const char* on : {"1", "yes", "masks", ""}) {
      ScopedEnvironment set(name, on);
      CHECK(allowed());
    }
    ScopedEnvironment off(name, "0");
    CHECK_FALSE(allowed());
  }
}

TEST_CASE("the paths that measured slower are off unless set to 1", "[switch]") {
  using foxrl::test::ScopedEnvironment;
  const std::vector<std::pair<const char*, bool (*)()>> switches = {
      {"FOXRL_CUDA_NARROW_FORWARD", &foxrl::narrow_forward_requested_by_environment},
      {"FOXRL_RECORD_ACROSS_TEAMS", &foxrl::record_across_teams_requested_by_environment},
      {"FOXRL_LOSS_IN_TARGET_HEAD", &foxrl::loss_in_target_head_requested_by_environment}};
  for (const auto& [name, allowed] : switches) {
    INFO(name);
    {
      ScopedEnvironment unset(name, nullptr);
      CHECK_FALSE(allowed());
    }
    for (const char* value : {"0", "yes", "", "10"}) {
      INFO("value '" << value << "'");
      ScopedEnvironment set(name, value);
      CHECK_FALSE(allowed());
    }
    ScopedEnvironment on(name, "1");
    CHECK(allowed());
  }
}

TEST_CASE("the clock's ride-along is forced by 1 or 0 and left to the trainer otherwise", "[switch]") {
  using foxrl::test::ScopedEnvironment;
  const char* name = "FOXRL_CLOCK_IN_PRIORITY_UPDATE";
  {
    ScopedEnvironment unset(name, nullptr);
    CHECK_FALSE(foxrl::clock_in_priority_update_from_environment().has_value());
  }
  for (const char* value : {"yes", "", "10", "on"}) {
    INFO("value '" << value << "'");
    ScopedEnvironment set(name, value);
    CHECK_FALSE(foxrl::clock_in_priority_update_from_environment().has_value());
  }
  {
    ScopedEnvironment on(name, "1");
    CHECK(foxrl::clock_in_priority_update_from_environment() == std::optional<bool>(true));
  }
  ScopedEnvironment off(name, "0");
  CHECK(foxrl::clock_in_priority_update_from_environment() == std::optional<bool>(false));
}

TEST_CASE("the gemm epilogues keep ReLU bitmasks only when asked for", "[switch]") {
  using foxrl::test::ScopedEnvironment;
  const std::string name = "FOXRL_CUDA_GEMM_EPILOGUES";
  {
    ScopedEnvironment unset(name.c_str(), nullptr);
    CHECK_FALSE(foxrl::gemm_epilogue_masks_requested_by_environment());
  }
  for (const char* value : {"1", "0", "mask", "MASKS"}) {
    ScopedEnvironment set(name.c_str(), value);
    CHECK_FALSE(foxrl::gemm_epilogue_masks_requested_by_environment());
  }
  ScopedEnvironment masks(name.c_str(), "masks");
  CHECK(foxrl::gemm_epilogue_masks_requested_by_environment());
}

TEMPLATE_TEST_CASE("DenseOps takes the epilogue switches from the environment when built", "[switch][dense]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using foxrl::test::ScopedEnvironment;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  // Fused epilogues exist only where EpilogueGemm does (the blas backend on
  // CUDA); elsewhere both queries say no whatever the environment says.
  const bool available = foxrl::EpilogueGemm<Exec>::available;
  for (const char* value : {static_cast<const char*>(nullptr), "1", "0", "masks"}) {
    const std::string shown = value == nullptr ? "unset" : value;
    INFO("FOXRL_CUDA_GEMM_EPILOGUES " << shown);
    ScopedEnvironment set("FOXRL_CUDA_GEMM_EPILOGUES", value);
    const bool on = shown != "0";
    foxrl::DenseOps<Exec> blas(space, foxrl::DenseBackend::blas);
    CHECK(blas.fused_epilogues() == (available && on));
    CHECK(blas.epilogue_masks() == (available && shown == "masks"));
    blas.set_epilogue_masks(true);
    CHECK(blas.epilogue_masks() == (available && on));
    foxrl::DenseOps<Exec> portable(space, foxrl::DenseBackend::portable);
    CHECK_FALSE(portable.fused_epilogues());
    CHECK_FALSE(portable.epilogue_masks());
  }
}

TEMPLATE_TEST_CASE("DenseOps takes the stacked-rows switch from the environment when built", "[switch][dense]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using foxrl::test::ScopedEnvironment;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  for (const char* value : {static_cast<const char*>(nullptr), "1", "0"}) {
    const std::string shown = value == nullptr ? "unset" : value;
    INFO("FOXRL_CUDA_STACKED_ROWS " << shown);
    ScopedEnvironment set("FOXRL_CUDA_STACKED_ROWS", value);
    // On GPUs only: a host BLAS may sum a row in another order at another
    // row count (DenseOps::stacked_rows).
    const bool device = !Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Exec::memory_space>::accessible;
    for (const auto backend : {foxrl::DenseBackend::portable, foxrl::DenseBackend::blas}) {
      foxrl::DenseOps<Exec> ops(space, backend);
      CHECK(ops.stacked_rows() == (device && shown != "0"));
    }
  }
}

TEST_CASE("FOXRL_CUDA_FUSED_THREADS gives 256, 512 or 1024 and refuses anything else by name", "[switch]") {
  using foxrl::test::ScopedEnvironment;
  const char* name = "FOXRL_CUDA_FUSED_THREADS";
  {
    ScopedEnvironment unset(name, nullptr);
    CHECK(foxrl::fused_small_threads_from_environment() == 1024);  // the documented default
  }
  for (const int threads : {256, 512, 1024}) {
    const std::string value = std::to_string(threads);
    ScopedEnvironment set(name, value.c_str());
    CHECK(foxrl::fused_small_threads_from_environment() == threads);
  }
  for (const char* bad : {"", "0", "128", "384", "2048", "512 ", "1k"}) {
    INFO("value '" << bad << "'");
    ScopedEnvironment set(name, bad);
    CHECK_THROWS_AS(foxrl::fused_small_threads_from_environment(), foxrl::UsageError);
    CHECK_THROWS_WITH(foxrl::fused_small_threads_from_environment(),
                      Catch::Contains("FOXRL_CUDA_FUSED_THREADS must be 256, 512 or 1024") &&
                          Catch::Contains(std::string("got '") + bad + "'"));
  }
}
