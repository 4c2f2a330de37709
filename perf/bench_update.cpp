// One DqnLearner::update at batch 1024 on the 65-512-512-dueling(3) network
// (the market-throughput config), for both dense backends: median
// microseconds of one fenced update ("dqn_update": launch latency and every
// kernel gap included), the time per update of N updates queued back to
// back with one fence at the end ("dqn_update_pipelined": what a training
// loop that never waits sees), and kernel launches per update.
//
//   foxrl_bench_update [--quick] [--repeats N] [--dense portable|blas|both] [--export-checkpoint DIR]
//                      [--gradient-mean]
//
// --quick: a small network and batch so the host run takes well under a
// second. --export-checkpoint DIR: after the measurements, writes
// DIR/model.safetensors (the learner after its updates), DIR/inputs.bin
// (float32 [n, obs_dim], row-major, little-endian) and DIR/q_foxrl.bin
// (float32 [n, num_actions], foxrl's Q-values of those inputs) for
// docs/load_checkpoint_in_pytorch.py. --gradient-mean: then, on the blas
// backend, the pipelined update split in two with the data-parallel
// gradient mean between the halves, on one rank, per transport ("split":
// an empty hook, the split's own cost; "host": MPI's path through host
// buffers; "nccl" where built in): the all-reduce's cost per update is a
// transport's time minus the split's.

#include "agents/dqn/dqn_learner.hpp"
#include "core/execution_context.hpp"
#include "core/kokkos_tools_audit.hpp"
#include "dist/communicator.hpp"
#include "dist/gradient_reducer.hpp"
#include "views/agents/dqn/learner_metrics.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;

struct Options {
  bool quick = false;
  int repeats = 50;
  std::string export_dir;
  std::string dense = "both";  ///< portable, blas or both
  bool gradient_mean = false;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick")
      o.quick = true;
    else if (a == "--repeats" && i + 1 < argc)
      o.repeats = std::max(1, std::atoi(argv[++i]));
    else if (a == "--gradient-mean")
      o.gradient_mean = true;
    else if (a == "--export-checkpoint" && i + 1 < argc)
      o.export_dir = argv[++i];
    else if (a == "--dense" && i + 1 < argc &&
             (std::string(argv[i + 1]) == "portable" || std::string(argv[i + 1]) == "blas" ||
              std::string(argv[i + 1]) == "both"))
      o.dense = argv[++i];
    else {
      std::cerr
          << "usage: " << argv[0]
          << " [--quick] [--repeats N] [--dense portable|blas|both] [--export-checkpoint DIR] [--gradient-mean]\n";
      std::exit(2);
    }
  }
  if (o.quick) o.repeats = std::min(o.repeats, 5);
  return o;
}

Kokkos::View<float**, Kokkos::LayoutRight, Mem> random_matrix(const Exec& space, int rows, int cols, std::mt19937& rng,
                                                              const std::string& label) {
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> d(Kokkos::view_alloc(space, label), rows, cols);
  auto h = Kokkos::create_mirror_view(d);
  std::normal_distribution<float> n(0.0f, 0.01f);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) h(i, j) = n(rng);
  Kokkos::deep_copy(space, d, h);
  foxrl::compat::fence(space, "foxrl::bench::random_matrix");
  return d;
}

template <class T, class Fill>
Kokkos::View<T*, Mem> vector_of(const Exec& space, int n, const std::string& label, Fill fill) {
  Kokkos::View<T*, Mem> d(Kokkos::view_alloc(space, label), n);
  auto h = Kokkos::create_mirror_view(d);
  for (int i = 0; i < n; ++i) h(i) = fill(i);
  Kokkos::deep_copy(space, d, h);
  foxrl::compat::fence(space, "foxrl::bench::vector_of");
  return d;
}

void write_raw(const std::string& path, const float* data, std::size_t n) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(n * sizeof(float)));
  if (!out) throw foxrl::Error("foxrl_bench_update: cannot write '" + path + "'");
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  Kokkos::ScopeGuard guard(argc, argv);
  {
    foxrl::ExecutionContext<Exec> context(1);
    const auto& space = context.space();
    const int batch_size = opt.quick ? 64 : 1024;
    foxrl::DqnLearnerConfig cfg;
    cfg.obs_dim = 65;
    cfg.hidden = opt.quick ? std::vector<int>{64, 64} : std::vector<int>{512, 512};
    cfg.num_actions = 3;
    cfg.max_batch = batch_size;
    cfg.target_update_every = 500;
    cfg.seed = 1;

    std::mt19937 rng(7);
    foxrl::Batch<Mem> batch;
    batch.states = random_matrix(space, batch_size, cfg.obs_dim, rng, "foxrl::bench::states");
    batch.next_states = random_matrix(space, batch_size, cfg.obs_dim, rng, "foxrl::bench::next_states");
    batch.actions = vector_of<std::int32_t>(space, batch_size, "foxrl::bench::actions",
                                            [](int i) { return static_cast<std::int32_t>(i % 3); });
    batch.rewards = vector_of<float>(space, batch_size, "foxrl::bench::rewards",
                                     [](int i) { return 0.001f * static_cast<float>(i % 7 - 3); });
    batch.discounts = vector_of<float>(space, batch_size, "foxrl::bench::discounts", [](int) { return 0.99f; });
    batch.is_weights = vector_of<float>(space, batch_size, "foxrl::bench::is_weights", [](int) { return 1.0f; });
    batch.indices =
        vector_of<std::int64_t>(space, batch_size, "foxrl::bench::indices", [](int i) { return std::int64_t(i); });

    for (const auto backend : {foxrl::DenseBackend::portable, foxrl::DenseBackend::blas}) {
      if (opt.dense != "both" && opt.dense != foxrl::to_string(backend)) continue;
      cfg.dense_backend = backend;
      foxrl::DqnLearner<Exec> learner(space, cfg);
      for (int i = 0; i < 3; ++i) learner.update(space, batch);  // warm-up
      context.fence("bench::warm");
      std::size_t launches = 0;
      {
        foxrl::KokkosToolsAudit audit;
        learner.update(space, batch);
        context.fence("bench::count");
        launches = audit.record().launches.size();
      }
      // Kokkos Tools sees Kokkos launches only: the blas backend's gemm
      // calls (cuBLAS on CUDA, Kokkos Kernels elsewhere) come on top: per
      // trunk layer online forward (two for the first: s and s'), target
      // forward, dW, and dX for every trunk layer but the first; the head
      // runs in foxrl kernels (but dW of a head without trunk).
      const int trunk = learner.layout().num_layers - 1;
      const int gemm_calls = trunk == 0 ? 1 : 4 * trunk;
      std::vector<double> us;
      for (int r = 0; r < opt.repeats; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        learner.update(space, batch);
        context.fence("bench::update");
        us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      }
      std::sort(us.begin(), us.end());
      std::printf(
          "{\"bench\":\"dqn_update\",\"config\":\"%s batch %d dense %s\",\"median_us\":%.2f,\"repeats\":%d,"
          "\"backend\":\"%s\",\"launches_per_update\":%zu,\"gemm_calls_per_update\":%d}\n",
          learner.layout().describe().c_str(), batch_size, foxrl::to_string(backend), us[us.size() / 2], opt.repeats,
          Exec::name(), launches, backend == foxrl::DenseBackend::blas ? gemm_calls : 0);

      // Pipelined: `pipeline` updates queued, one fence; median over rounds.
      const int pipeline = opt.quick ? 4 : 20;
      const int rounds = std::max(1, opt.repeats / 5);
      std::vector<double> per_update;
      for (int r = 0; r < rounds; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < pipeline; ++i) learner.update(space, batch);
        context.fence("bench::pipelined");
        per_update.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
                             pipeline);
      }
      std::sort(per_update.begin(), per_update.end());
      std::printf(
          "{\"bench\":\"dqn_update_pipelined\",\"config\":\"%s batch %d dense %s, %d updates per fence\","
          "\"median_us\":%.2f,\"repeats\":%d,\"backend\":\"%s\"}\n",
          learner.layout().describe().c_str(), batch_size, foxrl::to_string(backend), pipeline,
          per_update[per_update.size() / 2], rounds, Exec::name());
      std::fflush(stdout);

      if (opt.gradient_mean && backend == foxrl::DenseBackend::blas) {
        const auto one_rank = foxrl::dist::single_process();
        for (const std::string transport : {"split", "host", "nccl"}) {
          if (transport == "nccl" && !foxrl::nccl_reduction_available<Exec>()) continue;
          std::shared_ptr<foxrl::GradientReducer<Exec>> reducer;
          if (transport != "split")
            reducer = foxrl::make_gradient_reducer<Exec>(
                one_rank, learner.gradients(), learner.metrics(), foxrl::LearnerMetrics::grad_norm,
                transport == "host" ? foxrl::ReductionTransport::host : foxrl::ReductionTransport::nccl);
          learner.set_gradient_hook(
              [reducer](const Exec& s, const foxrl::FlatParams<Mem>& g, const Kokkos::View<float*, Mem>& m) {
                if (reducer) reducer->mean(s, g, m);
              });
          for (int i = 0; i < 3; ++i) learner.update(space, batch);  // warm-up (NCCL's first launch)
          context.fence("bench::gradient_mean_warm");
          std::vector<double> split_us;
          for (int r = 0; r < rounds; ++r) {
            const auto t0 = std::chrono::steady_clock::now();
            for (int i = 0; i < pipeline; ++i) learner.update(space, batch);
            context.fence("bench::gradient_mean");
            split_us.push_back(
                std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / pipeline);
          }
          std::sort(split_us.begin(), split_us.end());
          std::printf(
              "{\"bench\":\"dqn_update_gradient_mean\",\"config\":\"%s batch %d, %d updates per fence, one rank\","
              "\"transport\":\"%s\",\"detail\":\"%s\",\"gradient_bytes\":%zu,\"median_us\":%.2f,\"repeats\":%d,"
              "\"backend\":\"%s\"}\n",
              learner.layout().describe().c_str(), batch_size, pipeline, transport.c_str(),
              reducer ? reducer->transport().c_str() : "no reduction", learner.gradients().extent(0) * sizeof(float),
              split_us[split_us.size() / 2], rounds, Exec::name());
          std::fflush(stdout);
          learner.set_gradient_hook({});
        }
      }

      if (!opt.export_dir.empty() && backend == foxrl::DenseBackend::portable) {
        const int n = 16;
        auto inputs = random_matrix(space, n, cfg.obs_dim, rng, "foxrl::bench::export_inputs");
        Kokkos::View<float**, Kokkos::LayoutRight, Mem> q(Kokkos::view_alloc(space, "foxrl::bench::export_q"), n,
                                                          cfg.num_actions);
        learner.q_values(space, foxrl::ConstMatrix<Mem>(inputs), foxrl::MutableMatrix<Mem>(q));
        auto hi = Kokkos::create_mirror_view(inputs);
        auto hq = Kokkos::create_mirror_view(q);
        Kokkos::deep_copy(space, hi, inputs);
        Kokkos::deep_copy(space, hq, q);
        context.fence("bench::export");
        learner.save(space, opt.export_dir + "/model.safetensors");
        write_raw(opt.export_dir + "/inputs.bin", hi.data(), hi.size());
        write_raw(opt.export_dir + "/q_foxrl.bin", hq.data(), hq.size());
        std::fprintf(stderr, "wrote %s/{model.safetensors,inputs.bin,q_foxrl.bin}\n", opt.export_dir.c_str());
      }
    }
  }
  return 0;
}
