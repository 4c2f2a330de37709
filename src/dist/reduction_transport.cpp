#include "dist/reduction_transport.hpp"

#include "core/error.hpp"
#include "core/strings.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <vector>

namespace foxrl {

ReductionTransport reduction_transport_from_environment() {
  const char* value = std::getenv("FOXRL_ALL_REDUCE");
  const std::string v = value == nullptr ? "" : value;
  if (v.empty() || v == "auto") return ReductionTransport::automatic;
  if (v == "mpi") return ReductionTransport::host;
  if (v == "nccl") return ReductionTransport::nccl;
  throw UsageError("FOXRL_ALL_REDUCE=" + quote_excerpt(v) + ": expected auto, mpi or nccl");
}

namespace dist {

bool ranks_share_a_device(Communicator& comm, int device) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  // Host name hash and device in one word: equal words are one GPU (a hash
  // collision between two hosts could only make a run choose MPI).
  const std::uint64_t word =
      (static_cast<std::uint64_t>(std::hash<std::string>{}(host)) << 16) ^ static_cast<std::uint64_t>(device);
  std::vector<std::uint64_t> all = comm.all_gather(word);
  std::sort(all.begin(), all.end());
  return std::adjacent_find(all.begin(), all.end()) != all.end();
}

}  // namespace dist
}  // namespace foxrl
