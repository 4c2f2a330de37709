// The learner contract, over every registered learner (agents/learner_registry.hpp),
// online and offline, on every backend: built from its run config through
// the registry, an update and greedy actions on the context's instance with
// no allocation or foreign launch, greedy actions in range and finite
// metrics, a checkpoint that restores the learned state bit for bit (and
// training on from it equals training on without it), and checkpoints
// refused with a UsageError naming the file and changing nothing: another
// architecture, another learner's, truncated, corrupted, relabelled,
// missing. Each learner's own tests (test_dqn_learner.cpp, test_iql_learner.cpp,
// ...) hold its algorithm against float64 references.
#include "agents/learner_registry.hpp"
#include "core/execution_context.hpp"
#include "core/kokkos_tools_audit.hpp"
#include "io/safetensors.hpp"
#include "support/device_copy.hpp"
#include "support/env_test_util.hpp"
#include "support/reference_dqn.hpp"
#include "support/reference_offline_learner.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace {

constexpr int kObs = 5, kActions = 3, kBatch = 16, kRows = 20;

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// One learner under test, whatever its kind: what the contract does with it.
template <class Exec>
struct Subject {
  using Mem = typename Exec::memory_space;
  std::function<void(const Exec&, const foxrl::Batch<Mem>&)> update;
  std::function<void(const Exec&, const foxrl::ConstMatrix<Mem>&, const Kokkos::View<std::int32_t*, Mem>&)> greedy;
  std::function<void(const Exec&, const std::string&)> save;
  std::function<std::map<std::string, std::string>(const Exec&, const std::string&)> load;
  /// The learned state (parameters, targets, optimizer moments) and the update count, on the host.
  std::function<std::vector<std::vector<float>>(const Exec&)> state;
  std::function<std::int64_t()> updates;
  std::function<std::vector<float>(const Exec&)> metrics;
  std::shared_ptr<void> owner;
};

template <class Exec, class V>
std::vector<float> host_floats(const Exec& space, const V& v) {
  const auto h = foxrl::test::to_host(space, v);
  return std::vector<float>(h.data(), h.data() + h.size());
}

/// An offline learner built as train-offline builds it.
template <class Exec>
Subject<Exec> offline_subject(const Exec& space, const std::string& algo, std::uint64_t seed,
                              const std::vector<std::int64_t>& hidden = {7, 3}) {
  foxrl::OfflineTrainConfig c;
  c.algo = algo;
  c.hidden = hidden;
  c.batch_size = kBatch;
  c.seed = seed;
  std::shared_ptr<foxrl::OfflineAgent<Exec>> agent = foxrl::make_offline_agent(space, c, kObs, kActions, kRows);
  Subject<Exec> s;
  s.update = [agent](const Exec& sp, const auto& b) { agent->update(sp, b); };
  s.greedy = [agent](const Exec& sp, const auto& st, const auto& a) { agent->greedy_actions(sp, st, a); };
  s.save = [agent](const Exec& sp, const std::string& p) { agent->save(sp, p, {{"run", "contract"}}); };
  s.load = [agent](const Exec& sp, const std::string& p) { return agent->load(sp, p); };
  s.state = [agent](const Exec& sp) {
    std::vector<std::vector<float>> out;
    for (const auto& [name, buffer] : agent->state_buffers()) out.push_back(host_floats(sp, buffer));
    return out;
  };
  s.updates = [agent] { return agent->updates(); };
  s.metrics = [agent](const Exec& sp) {
    const auto all = host_floats(sp, agent->metrics());
    std::vector<float> written;
    for (const auto& slot : agent->metric_slots()) written.push_back(all[static_cast<std::size_t>(slot.slot)]);
    return written;
  };
  s.owner = agent;
  return s;
}

/// An online learner built as train builds it, for an env of kObs features and kActions actions.
template <class Exec, class Learner>
Subject<Exec> online_subject(const Exec& space, std::uint64_t seed, const std::vector<std::int64_t>& hidden = {7, 3}) {
  foxrl::TrainConfig c;
  c.algo = Learner::name;
  c.hidden = hidden;
  c.batch_size = kBatch;
  c.num_envs = kRows;
  c.seed = seed;
  auto learner = std::make_shared<Learner>(space, Learner::config_for(c, foxrl::EnvSpaces{kObs, kActions, {}}));
  Subject<Exec> s;
  s.update = [learner](const Exec& sp, const auto& b) { learner->update(sp, b); };
  s.greedy = [learner](const Exec& sp, const auto& st, const auto& a) { learner->greedy_actions(sp, st, a); };
  s.save = [learner](const Exec& sp, const std::string& p) { learner->save(sp, p, {{"run", "contract"}}); };
  s.load = [learner](const Exec& sp, const std::string& p) { return learner->load(sp, p); };
  s.state = [learner](const Exec& sp) {
    const auto w = learner->weights();
    return std::vector<std::vector<float>>{host_floats(sp, w.online), host_floats(sp, w.target),
                                           host_floats(sp, w.adam_m), host_floats(sp, w.adam_v)};
  };
  s.updates = [learner] { return learner->updates(); };
  s.metrics = [learner](const Exec& sp) { return host_floats(sp, learner->metrics()); };
  s.owner = learner;
  return s;
}

/// The contract: `make(seed, hidden)` builds the learner; `others` save
/// checkpoints of the other registered learners of the same sizes.
template <class Exec, class Make>
void check_contract(const Exec& space, const std::string& name, const Make& make,
                    const std::vector<std::function<void(const std::string&)>>& others) {
  using Mem = typename Exec::memory_space;
  INFO("learner " << name << " on " << Exec::name());
  foxrl::test::TempDir dir;
  const auto batch = foxrl::test::to_device(space, foxrl::test::random_batch(kBatch, kObs, kActions, 1));
  auto states = foxrl::test::to_device(space, foxrl::test::random_batch(kRows, kObs, kActions, 2).states, kRows, kObs);
  Kokkos::View<std::int32_t*, Mem> actions("foxrl::test::actions", kRows);

  // One instance, no allocation, in range, finite.
  Subject<Exec> a = make(7, std::vector<std::int64_t>{7, 3});
  a.update(space, batch);  // warm-up: Kokkos sizes its scratch on first use
  a.greedy(space, foxrl::ConstMatrix<Mem>(states), actions);
  foxrl::compat::fence(space, "foxrl::test::warm");
  const auto record = foxrl::audit([&] {
    a.update(space, batch);
    a.greedy(space, foxrl::ConstMatrix<Mem>(states), actions);
    foxrl::compat::fence(space, "foxrl::test::done");
  });
  const auto id = foxrl::tools_device_id(space);
  for (const auto& alloc : record.allocations) UNSCOPED_INFO("allocated: " << alloc.label);
  CHECK(record.allocations.empty());
  CHECK(record.launches_off(id).empty());
  CHECK(record.fences_off(id).empty());
  CHECK(a.updates() == 2);
  const auto h_actions = foxrl::test::to_host(space, actions);
  for (int i = 0; i < kRows; ++i) CHECK((h_actions(i) >= 0 && h_actions(i) < kActions));
  for (const float m : a.metrics(space)) CHECK(std::isfinite(m));

  // A checkpoint restores the learned state; training on from it equals training on.
  const std::string path = dir.file("a.safetensors");
  a.save(space, path);
  Subject<Exec> b = make(8, std::vector<std::int64_t>{7, 3});
  REQUIRE(b.state(space) != a.state(space));
  const auto metadata = b.load(space, path);
  CHECK(metadata.at("run") == "contract");
  CHECK(b.state(space) == a.state(space));
  CHECK(b.updates() == a.updates());
  for (int i = 0; i < 2; ++i) {
    a.update(space, batch);
    b.update(space, batch);
  }
  CHECK(b.state(space) == a.state(space));

  // Refused files name themselves and change nothing.
  const auto before = b.state(space);
  const auto refused = [&](const std::string& file, const std::string& why) {
    INFO(why);
    try {
      b.load(space, file);
      FAIL("load accepted " << file);
    } catch (const foxrl::UsageError& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(file) != std::string::npos);
    }
    CHECK(b.state(space) == before);
  };
  {
    Subject<Exec> deeper = make(7, std::vector<std::int64_t>{7, 3, 3});
    deeper.save(space, dir.file("deeper.safetensors"));
    refused(dir.file("deeper.safetensors"), "another hidden layer");
  }
  const auto bytes = read_bytes(path);
  REQUIRE(bytes.size() > 64);
  write_bytes(dir.file("cut.safetensors"), std::vector<char>(bytes.begin(), bytes.end() - 9));
  refused(dir.file("cut.safetensors"), "truncated");
  auto flipped = bytes;
  flipped[flipped.size() - 5] ^= 0x10;  // inside the last tensor's data
  write_bytes(dir.file("flipped.safetensors"), flipped);
  refused(dir.file("flipped.safetensors"), "corrupted");
  auto file = foxrl::safetensors::read(path);
  file.metadata["format"] = "foxrl-another";
  foxrl::safetensors::write(dir.file("relabelled.safetensors"), file);
  refused(dir.file("relabelled.safetensors"), "another format");
  for (std::size_t k = 0; k < others.size(); ++k) {
    const std::string other = dir.file("other" + std::to_string(k) + ".safetensors");
    others[k](other);
    refused(other, "another learner's checkpoint");
  }
  refused(dir.file("missing.safetensors"), "a missing file");
}

}  // namespace

TEMPLATE_TEST_CASE("every registered learner keeps the learner contract", "[learner][contract]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  // Every registered learner saves a file of the same sizes for the others to refuse.
  std::vector<std::pair<std::string, std::function<void(const std::string&)>>> savers;
  for (const auto& info : foxrl::offline_learners()) {
    savers.emplace_back(info.name, [&space, name = info.name](const std::string& p) {
      offline_subject(space, name, 3).save(space, p);
    });
  }
  for (const auto& info : foxrl::online_learners()) {
    savers.emplace_back(info.name, [&space, name = info.name](const std::string& p) {
      foxrl::with_online_learner<Exec>(name, [&](auto* tag) {
        using Learner = std::remove_pointer_t<decltype(tag)>;
        online_subject<Exec, Learner>(space, 3).save(space, p);
        return 0;
      });
    });
  }
  const auto others_than = [&](const std::string& name) {
    std::vector<std::function<void(const std::string&)>> out;
    for (const auto& [n, save] : savers)
      if (n != name) out.push_back(save);
    return out;
  };
  REQUIRE(foxrl::offline_learners().size() >= 3);
  REQUIRE(!foxrl::online_learners().empty());
  for (const auto& info : foxrl::offline_learners()) {
    check_contract(
        space, info.name,
        [&](std::uint64_t seed, const std::vector<std::int64_t>& hidden) {
          return offline_subject(space, info.name, seed, hidden);
        },
        others_than(info.name));
  }
  for (const auto& info : foxrl::online_learners()) {
    foxrl::with_online_learner<Exec>(info.name, [&](auto* tag) {
      using Learner = std::remove_pointer_t<decltype(tag)>;
      check_contract(
          space, info.name,
          [&](std::uint64_t seed, const std::vector<std::int64_t>& hidden) {
            return online_subject<Exec, Learner>(space, seed, hidden);
          },
          others_than(info.name));
      return 0;
    });
  }
}

TEST_CASE("the learner registries name each learner once and refuse others", "[learner][contract]") {
  for (const auto* list : {&foxrl::online_learners(), &foxrl::offline_learners()}) {
    for (std::size_t i = 0; i < list->size(); ++i)
      for (std::size_t j = i + 1; j < list->size(); ++j) CHECK((*list)[i].name != (*list)[j].name);
  }
  CHECK(foxrl::online_learner_index("dqn") == 0);
  CHECK_THROWS_WITH(foxrl::online_learner_index("c51"),
                    Catch::Contains("algo 'c51': not a registered online algorithm (dqn"));
  CHECK_THROWS_WITH(foxrl::offline_learner_index("awac"),
                    Catch::Contains("algo 'awac': not a registered offline algorithm (iql, cql, bc)"));
  CHECK_THROWS_AS(foxrl::offline_learner_index("dqn"), foxrl::UsageError);
}
