// The NCCL communicator (built only with FOXRL_HAS_NCCL); see
// nccl_all_reduce.hpp.
#include "dist/nccl_all_reduce.hpp"

#include "core/error.hpp"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

namespace foxrl::dist {
namespace {

void check(ncclResult_t result, const char* what) {
  if (result != ncclSuccess)
    throw Error(std::string("NCCL: ") + what + " failed: " + ncclGetErrorString(result) +
                " (set NCCL_DEBUG=WARN for NCCL's own account)");
}

}  // namespace

struct NcclAllReduce::State {
  ncclComm_t comm = nullptr;
  int ranks = 1;
  int device = 0;
};

NcclAllReduce::NcclAllReduce(std::unique_ptr<State> state) : state_(std::move(state)) {}

NcclAllReduce::~NcclAllReduce() {
  // At exit only: the run's stream is idle by then (its context fenced it).
  if (state_ && state_->comm) ncclCommDestroy(state_->comm);
}

std::shared_ptr<NcclAllReduce> NcclAllReduce::for_ranks(const std::shared_ptr<Communicator>& comm) {
  if (!comm) throw LogicError("foxrl::dist::NcclAllReduce::for_ranks: no communicator");
  static std::mutex mutex;
  static std::weak_ptr<NcclAllReduce> made;
  const std::lock_guard<std::mutex> lock(mutex);
  if (auto existing = made.lock()) {
    if (existing->ranks() != comm->size())
      throw LogicError("foxrl::dist::NcclAllReduce::for_ranks: the process's NCCL communicator has " +
                       std::to_string(existing->ranks()) + " ranks, asked for " + std::to_string(comm->size()));
    return existing;
  }
  // Rank 0's unique id reaches every rank through the host communicator:
  // 128 bytes as 16 words.
  ncclUniqueId id{};
  static_assert(sizeof(ncclUniqueId) % sizeof(std::uint64_t) == 0, "ncclUniqueId is whole words");
  std::vector<std::uint64_t> words(sizeof(ncclUniqueId) / sizeof(std::uint64_t), 0);
  if (comm->rank() == 0) {
    check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    std::memcpy(words.data(), &id, sizeof(id));
  }
  comm->broadcast(words.data(), words.size(), 0);
  std::memcpy(&id, words.data(), sizeof(id));

  auto state = std::make_unique<State>();
  state->ranks = comm->size();
  if (cudaGetDevice(&state->device) != cudaSuccess) throw Error("NCCL: no current CUDA device");
  check(ncclCommInitRank(&state->comm, comm->size(), id, comm->rank()), "ncclCommInitRank");
  std::shared_ptr<NcclAllReduce> result(new NcclAllReduce(std::move(state)));
  made = result;
  return result;
}

void NcclAllReduce::mean(void* cuda_stream, float* a, std::size_t na, float* b, std::size_t nb) {
  const auto stream = static_cast<cudaStream_t>(cuda_stream);
  // One group: NCCL fuses the two into one launch.
  check(ncclGroupStart(), "ncclGroupStart");
  check(ncclAllReduce(a, a, na, ncclFloat, ncclAvg, state_->comm, stream), "ncclAllReduce (gradients)");
  if (nb > 0) check(ncclAllReduce(b, b, nb, ncclFloat, ncclAvg, state_->comm, stream), "ncclAllReduce (metrics)");
  check(ncclGroupEnd(), "ncclGroupEnd");
}

int NcclAllReduce::ranks() const { return state_->ranks; }

std::string NcclAllReduce::describe() const {
  int version = 0;
  ncclGetVersion(&version);
  // NCCL >= 2.9 encodes major * 10000 + minor * 100 + patch.
  return "NCCL " + std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
         std::to_string(version % 100) + ", " + std::to_string(state_->ranks) + " rank" +
         (state_->ranks == 1 ? "" : "s") + " on CUDA device " + std::to_string(state_->device);
}

}  // namespace foxrl::dist
