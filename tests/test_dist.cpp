// The data-parallel layer without MPI: the one-rank communicator, rank
// seeds, the gradient reducer's mean and slots (against float64), the
// replica check's verdict and message, and the rank count in a checkpoint
// manifest. The multi-process behaviour runs under mpirun (tests/mpi/).
#include "core/error.hpp"
#include "core/execution_context.hpp"
#include "dist/communicator.hpp"
#include "dist/gradient_reducer.hpp"
#include "dist/replica_check.hpp"
#include "support/device_copy.hpp"
#include "support/test_spaces.hpp"
#include "train/run_manifest.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using foxrl::dist::Communicator;

/// Rank 0 of `size` ranks whose other ranks hold `other` (sums add it
/// once per other rank) and report `gathered` checksums.
class FakeRanks final : public Communicator {
 public:
  FakeRanks(int size, std::vector<float> other) : size_(size), other_(std::move(other)) {}
  int rank() const override { return 0; }
  int size() const override { return size_; }
  int local_rank() const override { return 0; }
  std::string transport() const override { return "fake"; }
  void sum(float* data, std::size_t n) override {
    REQUIRE(offset_ + n <= other_.size());
    for (std::size_t i = 0; i < n; ++i) data[i] += float(size_ - 1) * other_[offset_ + i];
    offset_ += n;
  }
  void sum(double*, std::size_t) override {}
  void max(double*, std::size_t) override {}
  void broadcast(std::uint64_t*, std::size_t, int) override {}
  void broadcast(std::string&, int) override {}
  std::vector<std::uint64_t> all_gather(std::uint64_t value) override {
    std::vector<std::uint64_t> all(static_cast<std::size_t>(size_), value);
    for (const int r : flipped) all[static_cast<std::size_t>(r)] ^= 1;
    return all;
  }
  void barrier() override {}
  [[noreturn]] void abort(int) override { throw std::logic_error("abort"); }
  std::vector<int> flipped;  ///< ranks whose checksum differs

 private:
  int size_;
  std::vector<float> other_;
  std::size_t offset_ = 0;
};

}  // namespace

TEST_CASE("the one-rank communicator returns every input as it was", "[dist]") {
  const auto one = foxrl::dist::single_process();
  CHECK(one->rank() == 0);
  CHECK(one->size() == 1);
  CHECK(one->local_rank() == 0);
  std::vector<float> f = {1.5f, -2.0f};
  std::vector<double> d = {3.25, 1e300};
  one->sum(f.data(), f.size());
  one->sum(d.data(), d.size());
  one->max(d.data(), d.size());
  CHECK(f == std::vector<float>{1.5f, -2.0f});
  CHECK(d == std::vector<double>{3.25, 1e300});
  std::string text = "run-id";
  one->broadcast(text, 0);
  CHECK(text == "run-id");
  CHECK(one->all_gather(42) == std::vector<std::uint64_t>{42});
  CHECK_THROWS_AS(one->broadcast(text, 1), foxrl::LogicError);
  // A process that never created world() is not distributed: nothing to abort.
  CHECK(foxrl::dist::rank_label().empty());
  foxrl::dist::abort_if_distributed(1);
}

TEST_CASE("rank seeds: rank 0 keeps the run's seed, every other rank gets its own stream", "[dist]") {
  for (const std::uint64_t seed : {std::uint64_t(0), std::uint64_t(1), std::uint64_t(12345)}) {
    CHECK(foxrl::dist::rank_seed(seed, 0) == seed);
    std::set<std::uint64_t> seen = {seed};
    for (int rank = 1; rank < 256; ++rank) seen.insert(foxrl::dist::rank_seed(seed, rank));
    CHECK(seen.size() == 256);
  }
  // Rank 1 of seed 0 is not rank 0 of seed 1 (no overlap between runs of
  // neighbouring seeds).
  CHECK(foxrl::dist::rank_seed(0, 1) != 1);
}

TEMPLATE_TEST_CASE("the gradient reducer forms the mean over ranks of the gradients and the loss slots only", "[dist]",
                   FOXRL_TEST_SPACES) {
  using Space = TestType;
  foxrl::ExecutionContext<Space> context(0);
  const auto& space = context.space();
  std::vector<float> grads, metrics = {0.75f, -3.5f, 1.25f, 9.0f, 81.0f, 0.0f};
  for (int i = 0; i < 1000; ++i) grads.push_back(std::sin(0.37f * float(i)) * std::pow(2.0f, float(i % 17 - 8)));
  std::vector<float> other;  // what each other rank holds: gradients, then the metric slots summed
  for (std::size_t i = 0; i < grads.size(); ++i) other.push_back(std::cos(0.11f * float(i)) * 3.0f);
  for (int i = 0; i < 3; ++i) other.push_back(0.5f - float(i));

  for (const int ranks : {1, 2, 4}) {
    auto comm = std::make_shared<FakeRanks>(ranks, other);
    const auto g = foxrl::test::to_device<Space>(space, grads);
    const auto m = foxrl::test::to_device<Space>(space, metrics);
    foxrl::HostGradientReducer<Space> reducer(comm, g, m, 3);
    reducer.mean(space, g, m);
    const auto g_after = foxrl::test::to_host(space, g);
    const auto m_after = foxrl::test::to_host(space, m);
    // float64 reference: (x + (N - 1) y) / N; the reducer sums in float and
    // multiplies by 1/N once, so a few ulps (2^-21 relative) bound it.
    const auto mean = [&](float x, float y) { return (double(x) + double(ranks - 1) * double(y)) / double(ranks); };
    for (std::size_t i = 0; i < grads.size(); ++i) {
      const double ref = mean(grads[i], other[i]);
      INFO("ranks " << ranks << ", gradient " << i);
      CHECK(std::abs(double(g_after(i)) - ref) <=
            1e-6 * (std::abs(double(grads[i])) + (ranks - 1) * std::abs(other[i])));
      if (ranks == 1) CHECK(std::memcmp(&g_after(i), &grads[i], sizeof(float)) == 0);  // one rank: the same bits
    }
    for (std::size_t j = 0; j < metrics.size(); ++j) {
      INFO("ranks " << ranks << ", metric slot " << j);
      if (j < 3) {
        const double ref = mean(metrics[j], other[grads.size() + j]);
        CHECK(std::abs(double(m_after(j)) - ref) <= 1e-6 * (std::abs(ref) + 1.0));
      } else {
        CHECK(m_after(j) == metrics[j]);  // slots apply_gradients writes are left alone
      }
    }
  }
  const auto g = foxrl::test::to_device<Space>(space, grads);
  const auto m = foxrl::test::to_device<Space>(space, metrics);
  CHECK_THROWS_AS(foxrl::HostGradientReducer<Space>(foxrl::dist::single_process(), g, m, 7), foxrl::LogicError);
}

TEMPLATE_TEST_CASE("the replica check passes identical ranks and names the ones that differ", "[dist]",
                   FOXRL_TEST_SPACES) {
  using Space = TestType;
  foxrl::ExecutionContext<Space> context(0);
  const auto& space = context.space();
  const auto online = foxrl::test::to_device<Space>(space, std::vector<float>{1.0f, 2.0f, -0.0f});
  const auto target = foxrl::test::to_device<Space>(space, std::vector<float>{4.0f});
  auto comm = std::make_shared<FakeRanks>(4, std::vector<float>{});
  foxrl::ReplicaCheck<Space> check(comm, {{"online", online}, {"target", target}});
  CHECK_NOTHROW(check.verify(space, "after epoch 1"));
  // -0.0 and 0.0 are equal numbers but other bits: the check is bitwise.
  const auto positive = foxrl::test::to_device<Space>(space, std::vector<float>{1.0f, 2.0f, 0.0f});
  foxrl::ReplicaCheck<Space> other(comm, {{"online", positive}, {"target", target}});
  CHECK(other.checksum(space) != check.checksum(space));

  comm->flipped = {2};
  CHECK_THROWS_WITH(check.verify(space, "after epoch 3"),
                    Catch::Contains("diverged after epoch 3: rank 2 of 4 differs from rank 0 (checksum of online, "
                                    "target: rank 0 "));
  comm->flipped = {1, 3};
  CHECK_THROWS_WITH(check.verify(space, "after epoch 4"), Catch::Contains("ranks 1, 3 of 4 differ from rank 0"));
  CHECK_THROWS_AS(check.verify(space, "after epoch 4"), foxrl::Error);
}

TEST_CASE("a checkpoint manifest records the rank count of a data-parallel run, and resume checks it", "[dist]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("foxrl_dist_manifest_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  foxrl::RunManifest m;
  m.identity = {"dist-test", foxrl::RunIdentity::config_hash_of(m.config), 0};

  m.write(dir.string());  // one rank: the manifest as before, no "ranks"
  {
    std::ifstream in(dir / "checkpoint.json");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(text.find("\"ranks\"") == std::string::npos);
  }
  CHECK(foxrl::RunManifest::read(dir.string()).ranks == 1);
  CHECK_NOTHROW(foxrl::RunManifest::read(dir.string()).check_ranks(1, "here"));

  m.ranks = 3;
  m.write(dir.string());
  const foxrl::RunManifest back = foxrl::RunManifest::read(dir.string());
  CHECK(back.ranks == 3);
  CHECK_NOTHROW(back.check_ranks(3, "here"));
  CHECK_THROWS_WITH(back.check_ranks(2, "the run in 'x'"),
                    Catch::Contains("the run in 'x': the checkpoint was written by a run of 3 ranks, this run has 2") &&
                        Catch::Contains("mpirun -np 3"));
  CHECK_THROWS_AS(back.check_ranks(1, "here"), foxrl::UsageError);
  fs::remove_all(dir);
}
