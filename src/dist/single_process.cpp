#include "core/error.hpp"
#include "dist/communicator.hpp"
#include "kernels/core/counter_rng.hpp"

#include <cstdlib>

namespace foxrl::dist {
namespace {

/// One rank: every collective is the identity.
class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  std::string transport() const override { return "single process"; }
  void sum(float*, std::size_t) override {}
  void sum(double*, std::size_t) override {}
  void max(double*, std::size_t) override {}
  void broadcast(std::uint64_t*, std::size_t, int root) override { check_root(root); }
  void broadcast(std::string&, int root) override { check_root(root); }
  std::vector<std::uint64_t> all_gather(std::uint64_t value) override { return {value}; }
  void barrier() override {}
  [[noreturn]] void abort(int exit_code) override { std::_Exit(exit_code); }

 private:
  static void check_root(int root) {
    if (root != 0)
      throw LogicError("foxrl::dist::SingleProcess::broadcast: root " + std::to_string(root) + " of 1 rank");
  }
};

}  // namespace

std::shared_ptr<Communicator> single_process() { return std::make_shared<SingleProcess>(); }

int device_for_local_rank(int local_rank, int devices) {
  if (devices < 1) throw UsageError("no GPU visible to this rank (CUDA_VISIBLE_DEVICES, or the job's GPU request)");
  if (local_rank < 0) throw LogicError("foxrl::dist::device_for_local_rank: local rank " + std::to_string(local_rank));
  return local_rank % devices;
}

std::uint64_t rank_seed(std::uint64_t seed, int rank) {
  if (rank == 0) return seed;
  // A tag far from the small tags components derive their streams with.
  return kernels::derive_seed(seed, 0x72616e6b00000000ULL + static_cast<std::uint64_t>(rank));
}

}  // namespace foxrl::dist
