// foxrl_mpi_checks: the data-parallel checks that need several processes,
// run by CTest under `mpirun -np 2` (tests/mpi/CMakeLists.txt). One mode
// per run:
//   learner       2 ranks, each updating on its half of a batch with the
//                 gradients' mean over ranks, against one learner updating
//                 on the whole batch (every rank computes that reference
//                 itself); then the ranks' buffers compared bit for bit.
//   replica-check rank 1's weights perturbed: ReplicaCheck must stop every
//                 rank with a message naming rank 1.
//   fail-throw    rank 1 throws before its all-reduce of update 3 while rank
//                 0 waits in it: every rank must end, with an error.
//   fail-kill     rank 1 is killed (SIGKILL) at the same point.
//   offline-learner  the learner check for IQL, CQL and BC: each network's
//                 gradients and guarded loss averaged through the learners'
//                 gradient hook, as OfflineTrainer does.
// Exit 0 when the checks hold; the failure modes end with the abort's code.
#include "agents/dqn/dqn_learner.hpp"
#include "agents/learner_registry.hpp"
#include "core/compat.hpp"
#include "core/error.hpp"
#include "core/execution_context.hpp"
#include "dist/communicator.hpp"
#include "dist/gradient_reducer.hpp"
#include "dist/replica_check.hpp"
#include "views/agents/dqn/learner_metrics.hpp"
#include "views/agents/offline/offline_metrics.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using Space = Kokkos::DefaultExecutionSpace;
using Mem = Space::memory_space;
using foxrl::Batch;
using foxrl::DqnLearner;

constexpr int obs_dim = 5, num_actions = 3, half = 32, updates = 6;

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void require(bool ok, const std::string& what) {
  if (!ok) throw Failure(what);
}

/// Host rows of a batch, the same on every rank (fixed seed, std::mt19937_64).
struct Rows {
  std::vector<float> s, s2, r, d, w;
  std::vector<std::int32_t> a;
};

Rows make_rows(int n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> x(-1.0f, 1.0f), w(0.3f, 1.0f);
  std::uniform_int_distribution<int> act(0, num_actions - 1);
  Rows rows;
  for (int i = 0; i < n * obs_dim; ++i) rows.s.push_back(x(gen));
  for (int i = 0; i < n * obs_dim; ++i) rows.s2.push_back(x(gen));
  for (int i = 0; i < n; ++i) {
    rows.a.push_back(act(gen));
    rows.r.push_back(2.0f * x(gen));
    rows.d.push_back(i % 7 == 0 ? 0.0f : 0.97f);  // some terminal rows
    rows.w.push_back(w(gen));
  }
  return rows;
}

template <class V, class T>
void fill(const Space& space, const V& view, const T* data) {
  auto host = Kokkos::create_mirror_view(view);
  std::memcpy(host.data(), data, view.size() * sizeof(T));
  Kokkos::deep_copy(space, view, host);
}

/// Rows [begin, end) of `rows` as a device Batch.
Batch<Mem> batch_of(const Space& space, const Rows& rows, int begin, int end) {
  const int n = end - begin;
  Batch<Mem> b;
  b.states = Batch<Mem>::matrix("foxrl::mpi_checks::s", n, obs_dim);
  b.next_states = Batch<Mem>::matrix("foxrl::mpi_checks::s2", n, obs_dim);
  b.actions = Kokkos::View<std::int32_t*, Mem>("foxrl::mpi_checks::a", n);
  b.rewards = Batch<Mem>::vector("foxrl::mpi_checks::r", n);
  b.discounts = Batch<Mem>::vector("foxrl::mpi_checks::d", n);
  b.is_weights = Batch<Mem>::vector("foxrl::mpi_checks::w", n);
  b.indices = Kokkos::View<std::int64_t*, Mem>("foxrl::mpi_checks::idx", n);
  fill(space, b.states, rows.s.data() + begin * obs_dim);
  fill(space, b.next_states, rows.s2.data() + begin * obs_dim);
  fill(space, b.actions, rows.a.data() + begin);
  fill(space, b.rewards, rows.r.data() + begin);
  fill(space, b.discounts, rows.d.data() + begin);
  fill(space, b.is_weights, rows.w.data() + begin);
  return b;
}

std::vector<float> host_copy(const Space& space, const Kokkos::View<float*, Mem>& v) {
  auto h = Kokkos::create_mirror_view(v);
  Kokkos::deep_copy(space, h, v);
  foxrl::compat::fence(space, "foxrl::mpi_checks::host_copy");
  return std::vector<float>(h.data(), h.data() + h.extent(0));
}

foxrl::DqnLearnerConfig learner_config(int max_batch) {
  foxrl::DqnLearnerConfig c;
  c.obs_dim = obs_dim;
  c.hidden = {24, 16};
  c.num_actions = num_actions;
  c.max_batch = max_batch;
  c.lr = 1e-3f;
  // eps large next to the rounding differences of the gradients: Adam's
  // step lr * m / (sqrt(v) + eps) then moves by at most lr / eps times a
  // gradient's difference (with eps 1e-8 an element whose gradient is a
  // cancellation near 0 could flip the sign of a whole lr-sized step).
  c.eps = 1e-3f;
  c.max_grad_norm = 1.0f;  // clipping on: its norm is the mean gradient's
  c.target_update_every = 2;
  c.seed = 11;
  return c;
}

/// max |x - ref| / (atol + rtol |ref|) over the elements; <= 1 passes.
double worst_ratio(const std::vector<float>& x, const std::vector<float>& ref, double rtol, double atol) {
  double worst = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double diff = std::abs(double(x[i]) - double(ref[i]));
    worst = std::max(worst, diff / (atol + rtol * std::abs(double(ref[i]))));
  }
  return worst;
}

double max_abs(const std::vector<float>& x) {
  double m = 0.0;
  for (const float v : x) m = std::max(m, double(std::abs(v)));
  return m;
}

/// Rank 0's floats on every rank, compared bit for bit with this rank's.
void require_same_bits(foxrl::dist::Communicator& comm, const std::vector<float>& x, const std::string& what) {
  std::vector<std::uint64_t> words((x.size() * sizeof(float) + 7) / 8, 0);
  std::memcpy(words.data(), x.data(), x.size() * sizeof(float));
  std::vector<std::uint64_t> root = words;
  comm.broadcast(root.data(), root.size(), 0);
  const bool same = root == words;
  std::vector<double> flag = {same ? 0.0 : 1.0};
  comm.sum(flag.data(), 1);
  require(flag[0] == 0.0, what + ": " + std::to_string(int(flag[0])) + " rank(s) differ from rank 0 bit for bit");
}

void check_learner(foxrl::dist::Communicator& comm, const std::string& fail) {
  require(comm.size() == 2, "run with 2 ranks (mpirun -np 2), got " + std::to_string(comm.size()));
  foxrl::ExecutionContext<Space> context(0);
  const auto& space = context.space();
  DqnLearner<Space> shard(space, learner_config(half));
  DqnLearner<Space> whole(space, learner_config(2 * half));  // the one-rank reference
  auto comm_ptr = foxrl::dist::world();
  foxrl::HostGradientReducer<Space> reducer(comm_ptr, shard.gradients(), shard.metrics(),
                                            foxrl::LearnerMetrics::grad_norm);
  // Tolerances. A gradient element is a mean over 64 rows; the ranks form it
  // as the mean of two 32-row means, the reference in one 64-row sum (other
  // gemm blocking too): the same terms, summed in another order. float32
  // rounding of such sums stays below ~64 eps (eps = 6e-8) of the largest
  // term, so 1e-5 of the buffer's largest gradient (and 1e-5 relative)
  // bounds it with margin. Weights and moments: each Adam step moves by at
  // most lr/eps = 1 times a gradient difference (see learner_config), over
  // `updates` steps; the loss and Q means compare at 1e-5 relative.
  const double grad_rtol = 1e-5, grad_atol_scale = 1e-5, state_rtol = 1e-5;
  double worst_grad = 0.0, worst_state = 0.0, worst_metric = 0.0;
  double grad_scale = 0.0;
  for (int u = 0; u < updates; ++u) {
    Rows rows = make_rows(2 * half, 1000 + u);
    const bool plant_nan = u == 3;  // one rank's row broken: both ranks must reject
    if (plant_nan) rows.r[half + 5] = std::numeric_limits<float>::quiet_NaN();
    const auto mine = batch_of(space, rows, comm.rank() * half, (comm.rank() + 1) * half);
    const auto all = batch_of(space, rows, 0, 2 * half);
    if (u == 2 && comm.rank() == 1 && fail == "fail-throw")
      throw foxrl::Error("rank 1 fails on purpose before its all-reduce of update 3");
    if (u == 2 && comm.rank() == 1 && fail == "fail-kill") {
      std::cerr << "foxrl_mpi_checks: rank 1 kills itself before its all-reduce of update 3" << std::endl;
      std::raise(SIGKILL);
    }
    const auto g = shard.compute_gradients(space, mine);
    reducer.mean(space, g.grads, g.metrics);
    const auto reduced = host_copy(space, g.grads);
    shard.apply_gradients(space);
    const auto ref = whole.compute_gradients(space, all);
    const auto ref_grads = host_copy(space, ref.grads);
    whole.apply_gradients(space);
    const auto m = host_copy(space, shard.metrics()), m_ref = host_copy(space, whole.metrics());
    require(m[foxrl::LearnerMetrics::rejected] == m_ref[foxrl::LearnerMetrics::rejected],
            "update " + std::to_string(u + 1) + ": the guard's verdict differs from the one-rank reference");
    require((m[foxrl::LearnerMetrics::rejected] == 1.0f) == plant_nan,
            "update " + std::to_string(u + 1) +
                (plant_nan ? ": a NaN reward on rank 1 was not rejected" : ": a healthy update was rejected"));
    if (plant_nan) continue;
    grad_scale = max_abs(ref_grads);
    worst_grad = std::max(worst_grad, worst_ratio(reduced, ref_grads, grad_rtol, grad_atol_scale * grad_scale));
    for (const int slot : {foxrl::LearnerMetrics::loss, foxrl::LearnerMetrics::mean_q,
                           foxrl::LearnerMetrics::mean_abs_td, foxrl::LearnerMetrics::grad_norm}) {
      worst_metric = std::max(worst_metric, worst_ratio({m[slot]}, {m_ref[slot]}, 1e-5, 1e-7));
    }
  }
  const auto w = shard.weights(), w_ref = whole.weights();
  const std::vector<std::pair<const char*, std::pair<Kokkos::View<float*, Mem>, Kokkos::View<float*, Mem>>>> states = {
      {"online", {w.online, w_ref.online}},
      {"target", {w.target, w_ref.target}},
      {"adam_m", {w.adam_m, w_ref.adam_m}},
      {"adam_v", {w.adam_v, w_ref.adam_v}}};
  for (const auto& [name, pair] : states) {
    const auto x = host_copy(space, pair.first), ref = host_copy(space, pair.second);
    // atol: `updates` steps of at most one gradient tolerance each.
    const double atol = updates * grad_atol_scale * std::max(grad_scale, max_abs(ref) * 1e-2);
    worst_state = std::max(worst_state, worst_ratio(x, ref, state_rtol, atol));
    require_same_bits(comm, x, std::string("after ") + std::to_string(updates) + " updates, " + name);
  }
  std::ostringstream report;
  report << "rank " << comm.rank() << ": worst error / tolerance: gradients " << worst_grad << ", metrics "
         << worst_metric << ", weights and moments " << worst_state;
  std::cout << report.str() << std::endl;
  require(worst_grad <= 1.0, "gradients differ from the one-rank reference: " + report.str());
  require(worst_metric <= 1.0, "metrics differ from the one-rank reference: " + report.str());
  require(worst_state <= 1.0, "weights differ from the one-rank reference: " + report.str());
  std::cout << "rank " << comm.rank() << ": learner checks passed (" << updates << " updates, 2 x " << half
            << " rows = one " << 2 * half << "-row batch; buffers identical bit for bit)" << std::endl;
}

foxrl::OfflineTrainConfig offline_config(const std::string& algo, int batch) {
  foxrl::OfflineTrainConfig c;
  c.algo = algo;
  c.hidden = {24, 16};
  c.batch_size = batch;
  c.lr = 1e-3;
  c.adam_eps = 1e-3;      // as learner_config: Adam's step moves by at most lr/eps times a gradient's difference
  c.max_grad_norm = 1.0;  // clipping on: its norm is the mean gradient's
  c.cql_target_update_every = 2;
  c.seed = 11;
  return c;
}

void check_offline_learner(foxrl::dist::Communicator& comm, const std::string& algo) {
  require(comm.size() == 2, "run with 2 ranks (mpirun -np 2), got " + std::to_string(comm.size()));
  foxrl::ExecutionContext<Space> context(0);
  const auto& space = context.space();
  auto shard = foxrl::make_offline_agent(space, offline_config(algo, half), obs_dim, num_actions, 16);
  auto whole = foxrl::make_offline_agent(space, offline_config(algo, 2 * half), obs_dim, num_actions, 16);
  // The trainer's hook: one reducer per network, made at its first step.
  std::vector<std::unique_ptr<foxrl::GradientReducer<Space>>> reducers;
  int calls = 0;
  shard->set_gradient_hook(
      [&](const Space& s, int k, const foxrl::FlatParams<Mem>& grads, const Kokkos::View<float*, Mem>& loss) {
        ++calls;
        if (reducers.size() <= std::size_t(k)) reducers.resize(std::size_t(k) + 1);
        if (!reducers[k]) reducers[k] = foxrl::make_gradient_reducer<Space>(foxrl::dist::world(), grads, loss, 1);
        reducers[k]->mean(s, grads, loss);
      });
  for (int u = 0; u < updates; ++u) {
    const Rows rows = make_rows(2 * half, 2000 + u);
    shard->update(space, batch_of(space, rows, comm.rank() * half, (comm.rank() + 1) * half));
    whole->update(space, batch_of(space, rows, 0, 2 * half));
  }
  const int networks = calls / updates;
  require(
      calls == networks * updates && networks == (algo == "iql" ? 4 : 1),
      algo + ": the gradient hook ran " + std::to_string(calls) + " times in " + std::to_string(updates) + " updates");
  // Every guarded loss is the mean of the two halves' losses, so the guards
  // decide as the one-rank reference's (none rejects a healthy update).
  const auto m = host_copy(space, shard->metrics()), m_ref = host_copy(space, whole->metrics());
  // (The other slots, e.g. CQL's penalty and TD parts, stay each rank's own.)
  using foxrl::OfflineMetrics;
  const std::vector<int> guarded = algo == "iql"
                                       ? std::vector<int>{OfflineMetrics::value_loss, OfflineMetrics::q1_loss,
                                                          OfflineMetrics::q2_loss, OfflineMetrics::policy_loss}
                                   : algo == "cql" ? std::vector<int>{OfflineMetrics::cql_loss}
                                                   : std::vector<int>{OfflineMetrics::bc_loss};
  double worst_metric = 0.0;
  for (const int slot : guarded)
    worst_metric = std::max(worst_metric, worst_ratio({m[slot]}, {m_ref[slot]}, 1e-5, 1e-7));
  // Weights, targets and moments: `updates` steps of at most one gradient
  // tolerance each (see check_learner), against the reference's largest
  // value; bit for bit across the ranks.
  double worst_state = 0.0;
  const auto mine = shard->state_buffers(), ref = whole->state_buffers();
  require(mine.size() == ref.size(), algo + ": state buffers differ in number");
  for (std::size_t i = 0; i < mine.size(); ++i) {
    const auto x = host_copy(space, mine[i].second), r = host_copy(space, ref[i].second);
    const double atol = updates * 1e-5 * std::max(max_abs(r), 1e-3);
    worst_state = std::max(worst_state, worst_ratio(x, r, 1e-5, atol));
    require_same_bits(comm, x, algo + " after " + std::to_string(updates) + " updates, " + mine[i].first);
  }
  std::ostringstream report;
  report << "rank " << comm.rank() << ": " << algo << ": worst error / tolerance: guarded losses " << worst_metric
         << ", weights, targets and moments " << worst_state;
  std::cout << report.str() << std::endl;
  require(worst_metric <= 1.0, "losses differ from the one-rank reference: " + report.str());
  require(worst_state <= 1.0, "state differs from the one-rank reference: " + report.str());
  std::cout << "rank " << comm.rank() << ": " << algo << " offline learner checks passed (" << networks << " networks, "
            << updates << " updates, 2 x " << half << " rows = one " << 2 * half
            << "-row batch; buffers identical bit for bit)" << std::endl;
}

void check_replica_check(foxrl::dist::Communicator& comm) {
  foxrl::ExecutionContext<Space> context(0);
  const auto& space = context.space();
  DqnLearner<Space> learner(space, learner_config(half));
  const auto w = learner.weights();
  foxrl::ReplicaCheck<Space> check(foxrl::dist::world(), {{"online", w.online}, {"target", w.target}});
  check.verify(space, "at the start");  // identical: passes
  if (comm.rank() == 1) {
    auto h = Kokkos::create_mirror_view(w.online);
    Kokkos::deep_copy(space, h, w.online);
    foxrl::compat::fence(space, "foxrl::mpi_checks::perturb");
    h(7) = std::nextafter(h(7), 1.0f);  // one bit
    Kokkos::deep_copy(space, w.online, h);
  }
  try {
    check.verify(space, "after epoch 1");
  } catch (const foxrl::Error& e) {
    const std::string what = e.what();
    std::cout << "rank " << comm.rank() << ": " << what << std::endl;
    require(what.find("diverged after epoch 1: rank 1 of 2 differs from rank 0") != std::string::npos,
            "unexpected message: " + what);
    return;
  }
  throw Failure("a one-bit difference on rank 1 was not detected");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  Kokkos::ScopeGuard kokkos(argc, argv);
  try {
    auto comm = foxrl::dist::world();
    if (mode == "learner" || mode == "fail-throw" || mode == "fail-kill") {
      check_learner(*comm, mode);
    } else if (mode == "replica-check") {
      check_replica_check(*comm);
    } else if (mode == "offline-learner") {
      for (const char* algo : {"iql", "cql", "bc"}) check_offline_learner(*comm, algo);
    } else {
      std::cerr << "usage: foxrl_mpi_checks learner|offline-learner|replica-check|fail-throw|fail-kill\n";
      return 2;
    }
  } catch (const std::exception& e) {
    std::cerr << "foxrl_mpi_checks: rank " << foxrl::dist::world()->rank() << ": " << e.what() << std::endl;
    foxrl::dist::abort_if_distributed(1);
    return 1;
  }
  return 0;
}
