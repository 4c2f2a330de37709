// The MPI communicator (built only with FOXRL_ENABLE_MPI): MPI_COMM_WORLD,
// host buffers, MPI's default error handler (an error in MPI ends the job
// rather than returning to a rank whose peers wait for it).
#include "core/error.hpp"
#include "dist/communicator.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>

namespace foxrl::dist {
namespace {

/// MPI counts are int: larger buffers go in chunks.
constexpr std::size_t max_chunk = static_cast<std::size_t>(INT_MAX / 2);

class MpiWorld final : public Communicator {
 public:
  MpiWorld() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      // FUNNELED: only the thread that created the world calls MPI (Kokkos'
      // host threads never do).
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
      owns_init_ = true;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm node = MPI_COMM_NULL;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local_rank_);
    MPI_Comm_free(&node);
  }

  ~MpiWorld() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owns_init_ && !finalized) MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  std::string transport() const override { return "MPI"; }

  void sum(float* data, std::size_t n) override { reduce(data, n, MPI_FLOAT, MPI_SUM); }
  void sum(double* data, std::size_t n) override { reduce(data, n, MPI_DOUBLE, MPI_SUM); }
  void max(double* data, std::size_t n) override { reduce(data, n, MPI_DOUBLE, MPI_MAX); }

  void broadcast(std::uint64_t* data, std::size_t n, int root) override {
    check_root(root);
    for (std::size_t at = 0; at < n; at += max_chunk) {
      MPI_Bcast(data + at, static_cast<int>(std::min(max_chunk, n - at)), MPI_UINT64_T, root, MPI_COMM_WORLD);
    }
  }

  void broadcast(std::string& text, int root) override {
    check_root(root);
    std::uint64_t length = text.size();
    broadcast(&length, 1, root);
    text.resize(static_cast<std::size_t>(length));
    if (length > 0) MPI_Bcast(text.data(), static_cast<int>(length), MPI_CHAR, root, MPI_COMM_WORLD);
  }

  std::vector<std::uint64_t> all_gather(std::uint64_t value) override {
    std::vector<std::uint64_t> all(static_cast<std::size_t>(size_));
    MPI_Allgather(&value, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
    return all;
  }

  void barrier() override { MPI_Barrier(MPI_COMM_WORLD); }

  [[noreturn]] void abort(int exit_code) override {
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::_Exit(exit_code);  // MPI_Abort does not return; if it did, still never hang
  }

 private:
  template <class T>
  void reduce(T* data, std::size_t n, MPI_Datatype type, MPI_Op op) {
    for (std::size_t at = 0; at < n; at += max_chunk) {
      MPI_Allreduce(MPI_IN_PLACE, data + at, static_cast<int>(std::min(max_chunk, n - at)), type, op, MPI_COMM_WORLD);
    }
  }

  void check_root(int root) const {
    if (root < 0 || root >= size_)
      throw LogicError("foxrl::dist::MpiWorld::broadcast: root " + std::to_string(root) + " of " +
                       std::to_string(size_) + " ranks");
  }

  int rank_ = 0, size_ = 1, local_rank_ = 0;
  bool owns_init_ = false;
};

}  // namespace

namespace detail {
std::shared_ptr<Communicator> make_mpi_world() { return std::make_shared<MpiWorld>(); }
}  // namespace detail

}  // namespace foxrl::dist
