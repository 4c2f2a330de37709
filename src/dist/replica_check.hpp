#pragma once
// ReplicaCheck: data-parallel training keeps one copy of the weights per
// rank, identical bit for bit as long as every rank applies the same
// gradients. verify() compares a checksum of the copies across ranks and
// stops the run, naming the ranks that differ, before a silent divergence
// (a rank that skipped an all-reduce, a nondeterministic kernel, a bad
// node) spoils a checkpoint. Run once per epoch: it fences the instance and
// reads the buffers on the host.

#include "core/compat.hpp"
#include "core/error.hpp"
#include "core/host_mirror.hpp"
#include "dist/communicator.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace foxrl {

/// FNV-1a (64 bit) over the bytes of `n` floats, continuing `hash`.
inline std::uint64_t fnv1a_floats(const float* data, std::size_t n, std::uint64_t hash = 0xcbf29ce484222325ULL) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n * sizeof(float); ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

/// Cross-rank comparison of flat float buffers; see the file comment.
template <class ExecSpace>
class ReplicaCheck {
 public:
  using vector = Kokkos::View<float*, typename ExecSpace::memory_space>;

  /// Checks `buffers` (e.g. online and target weights, Adam moments); host
  /// copies are made here, once.
  ReplicaCheck(std::shared_ptr<dist::Communicator> comm, std::vector<std::pair<std::string, vector>> buffers)
      : comm_(std::move(comm)), buffers_(std::move(buffers)) {
    for (const auto& b : buffers_) hosts_.push_back(host_mirror(b.second));
  }

  /// The checksum of this rank's buffers (fences `space`).
  std::uint64_t checksum(const ExecSpace& space) {
    for (std::size_t i = 0; i < buffers_.size(); ++i) Kokkos::deep_copy(space, hosts_[i], buffers_[i].second);
    compat::fence(space, "foxrl::ReplicaCheck::checksum");
    std::uint64_t hash = 0xcbf29ce484222325ULL;
    for (const auto& h : hosts_) hash = fnv1a_floats(h.data(), h.extent(0), hash);
    return hash;
  }

  /// Every rank calls it at the same point; throws foxrl::Error on every
  /// rank if any rank's checksum differs from rank 0's, naming those ranks
  /// and `when` (e.g. "after epoch 3").
  void verify(const ExecSpace& space, const std::string& when) {
    const auto all = comm_->all_gather(checksum(space));
    std::vector<int> differ;
    for (std::size_t r = 1; r < all.size(); ++r) {
      if (all[r] != all[0]) differ.push_back(static_cast<int>(r));
    }
    if (differ.empty()) return;
    std::ostringstream text;
    text << "the weights of the ranks diverged " << when << ": rank" << (differ.size() > 1 ? "s " : " ");
    for (std::size_t i = 0; i < differ.size(); ++i) text << (i ? ", " : "") << differ[i];
    text << " of " << all.size() << (differ.size() > 1 ? " differ" : " differs") << " from rank 0 (checksum of ";
    for (std::size_t i = 0; i < buffers_.size(); ++i) text << (i ? ", " : "") << buffers_[i].first;
    text << ": rank 0 " << std::hex << all[0];
    for (const int r : differ) text << ", rank " << std::dec << r << " " << std::hex << all[r];
    text << std::dec << "); the run stops rather than checkpoint diverged weights";
    throw Error(text.str());
  }

 private:
  std::shared_ptr<dist::Communicator> comm_;
  std::vector<std::pair<std::string, vector>> buffers_;
  std::vector<typename vector::HostMirror> hosts_;
};

}  // namespace foxrl
