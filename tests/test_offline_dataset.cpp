// Offline datasets on the device: a dataset written by `foxrl collect`
// (the library call the command makes) and a hand-built one load into
// device Views that hold exactly the file's values, with the metadata
// parsed; the load stays on the run's instance.
#include "core/execution_context.hpp"
#include "core/kokkos_tools_audit.hpp"
#include "evaluate/collect_dataset.hpp"
#include "io/safetensors.hpp"
#include "offline/offline_dataset.hpp"
#include "support/dataset_builder.hpp"
#include "support/device_copy.hpp"
#include "support/env_test_util.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace {

/// The bytes of a host View (contiguous: LayoutRight or rank 1).
template <class HostView>
std::vector<unsigned char> view_bytes(const HostView& v) {
  std::vector<unsigned char> out(v.span() * sizeof(typename HostView::value_type));
  if (!out.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

template <class T>
std::vector<unsigned char> vector_bytes(const std::vector<T>& v) {
  std::vector<unsigned char> out(v.size() * sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

}  // namespace

TEMPLATE_TEST_CASE("offline dataset: a collected CartPole dataset loads with every field intact", "[offline]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  foxrl::test::TempDir dir;
  foxrl::CollectOptions o;
  o.config.env = "cartpole";
  o.config.num_envs = 3;
  o.config.seed = 11;
  o.transitions = 301;  // a partial last iteration
  o.out_path = dir.file("cartpole.safetensors");
  foxrl::collect_dataset(space, o);

  // The reference: the file as the plain safetensors reader sees it.
  const auto raw = foxrl::safetensors::read(o.out_path);
  foxrl::OfflineDataset<Exec> dataset(space, o.out_path);
  CHECK(dataset.size() == 301);
  CHECK(dataset.obs_dim() == 4);
  CHECK(dataset.num_actions() == 2);
  CHECK(dataset.path() == o.out_path);
  CHECK(dataset.device_bytes() == 301u * 42u);
  CHECK_FALSE(dataset.normalizer().has_value());
  const auto& s = dataset.storage();
  const auto check = [&](const std::string& name, const std::vector<unsigned char>& loaded) {
    INFO("tensor " << name);
    const auto* t = raw.find(name);
    REQUIRE(t != nullptr);
    CHECK(loaded == t->data);
  };
  check("observations", view_bytes(foxrl::test::to_host(space, s.observations)));
  check("next_observations", view_bytes(foxrl::test::to_host(space, s.next_observations)));
  check("actions", view_bytes(foxrl::test::to_host(space, s.actions)));
  check("rewards", view_bytes(foxrl::test::to_host(space, s.rewards)));
  check("terminated", view_bytes(foxrl::test::to_host(space, s.terminated)));
  check("truncated", view_bytes(foxrl::test::to_host(space, s.truncated)));

  const auto& m = dataset.metadata();
  CHECK(m.env == "cartpole");
  CHECK(m.obs_dim == 4);
  CHECK(m.num_actions == 2);
  CHECK(m.num_envs == 3);
  CHECK(m.transitions == 301);
  CHECK(m.row_order_known);
  CHECK(m.policy == "random");
  CHECK(m.epsilon == "1");
  CHECK(m.seed == "11");
  CHECK(m.config.to_json() == o.config.to_json());
  CHECK(m.split.empty());
  CHECK(m.run.empty());
}

TEMPLATE_TEST_CASE("offline dataset: a hand-built dataset loads to the values written", "[offline]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  foxrl::test::TempDir dir;
  using foxrl::test::EpisodeSpec;
  const auto ref = foxrl::test::HostDataset::from_episodes({
      {EpisodeSpec{{1.5f, -2.0f}}, EpisodeSpec{{0.25f, 4.0f, 1.0f}, false, true}},
      {EpisodeSpec{{3.0f, 1.0f, 0.5f, -1.0f, 2.0f}, false, false}},
  });
  const std::string path = dir.file("hand.safetensors");
  ref.write(path);
  foxrl::OfflineDataset<Exec> dataset(space, path);
  REQUIRE(dataset.size() == 10);
  const auto& s = dataset.storage();
  CHECK(view_bytes(foxrl::test::to_host(space, s.observations)) == vector_bytes(ref.observations));
  CHECK(view_bytes(foxrl::test::to_host(space, s.next_observations)) == vector_bytes(ref.next_observations));
  CHECK(view_bytes(foxrl::test::to_host(space, s.actions)) == vector_bytes(ref.actions));
  CHECK(view_bytes(foxrl::test::to_host(space, s.rewards)) == vector_bytes(ref.rewards));
  CHECK(view_bytes(foxrl::test::to_host(space, s.terminated)) == vector_bytes(ref.terminated));
  CHECK(view_bytes(foxrl::test::to_host(space, s.truncated)) == vector_bytes(ref.truncated));
  // Spot values in the interleaved order (row t * 2 + env).
  const auto rewards = foxrl::test::to_host(space, s.rewards);
  CHECK(rewards(0) == 1.5f);
  CHECK(rewards(1) == 3.0f);
  CHECK(rewards(2) == -2.0f);
  const auto term = foxrl::test::to_host(space, s.terminated);
  const auto trunc = foxrl::test::to_host(space, s.truncated);
  CHECK(term(2) == 1);
  CHECK(trunc(8) == 1);
  CHECK(term(9) + trunc(9) == 0);
}

TEMPLATE_TEST_CASE("offline dataset: loading stays on the run's instance", "[offline][audit]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  foxrl::test::TempDir dir;
  const std::string path = dir.file("audit.safetensors");
  foxrl::test::HostDataset::from_episodes({{foxrl::test::EpisodeSpec{{1, 2, 3}}}}).write(path);
  const auto file = foxrl::read_dataset_file(path);  // host only
  std::optional<foxrl::OfflineDataset<Exec>> dataset;
  const auto record = foxrl::audit([&] { dataset.emplace(space, file); });
  const auto violations = record.violations(foxrl::tools_device_id(space));
  INFO("violations: " << violations.size() << (violations.empty() ? "" : ", first: " + violations.front()));
  CHECK(violations.empty());
}
