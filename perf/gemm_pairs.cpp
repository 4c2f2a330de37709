// foxrl_gemm_pairs: the update's independent products of one layer, in two
// calls (what the pipeline runs) or in one (what it could run), timed warm
// on this GPU. It answers, before the learner is changed, how much one call
// for the online network's [s; s'] rows and the target network's s' rows
// (perf/NOTES.md, "What would remove the rest", item 12) and one call for a
// layer's dW and dX would save per iteration, and whether each keeps the
// two-call results' bits.
//
// Per config (hidden width H, batch B = 1024):
//   forward of the last hidden layer (a plain product; its bias and ReLU
//   ride in the head kernel): online [2B, H] <- [2B, H] and target [B, H]
//   <- [B, H]
//     two        cublasSgemm twice (the pipeline today)
//     batch3     cublasSgemmBatched over three B-row products (pointer
//                arrays: the online weights twice, the target's once)
//     grouped    cublasSgemmGroupedBatched, one group per network
//     strided    cublasSgemmStridedBatched over two 2B-row products whose
//                strides are the distances between the two networks'
//                buffers (the target also runs the s rows)
//   first layer with the bias + ReLU epilogue (cuBLASLt), online 2B rows
//   and target B rows of obs_dim inputs
//     two        two cuBLASLt calls (the pipeline today)
//     strided    one cuBLASLt call, batch 2 of 2B rows, the bias at a
//                batch stride
//   backward of the hidden layer: dW [H, H] = dZ^T X and dX [B, H] = dZ W
//     two        cublasSgemm twice (the pipeline today)
//     grouped    cublasSgemmGroupedBatched, one group per product
//
//   foxrl_gemm_pairs [--repeats 5] [--calls 200]
//
// Prints one JSON line per variant (us per pair, and whether its outputs
// equal the two-call outputs bit for bit and are the same when run twice).
// Only built in CUDA builds (perf/CMakeLists.txt).

#include "gemm_probe.hpp"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

using foxrl::perf::check;
using foxrl::perf::Libraries;
using foxrl::perf::Timer;

namespace {

/// A device buffer of floats, filled with uniform values in [-1, 1].
struct Buffer {
  float* p = nullptr;
  std::size_t n = 0;
  Buffer(std::size_t count, std::mt19937& rng) : n(count) {
    check(cudaMalloc(&p, n * sizeof(float)), "cudaMalloc");
    std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
    std::vector<float> host(n);
    for (float& v : host) v = uni(rng);
    check(cudaMemcpy(p, host.data(), n * sizeof(float), cudaMemcpyHostToDevice), "fill");
  }
  ~Buffer() { cudaFree(p); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  std::vector<float> read() const {
    std::vector<float> host(n);
    check(cudaMemcpy(host.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost), "read");
    return host;
  }
};

/// A device array of device pointers (the batched calls' operand lists).
struct PointerArray {
  float** p = nullptr;
  explicit PointerArray(const std::vector<float*>& host) {
    check(cudaMalloc(reinterpret_cast<void**>(&p), host.size() * sizeof(float*)), "cudaMalloc");
    check(cudaMemcpy(p, host.data(), host.size() * sizeof(float*), cudaMemcpyHostToDevice), "pointers");
  }
  ~PointerArray() { cudaFree(p); }
  PointerArray(const PointerArray&) = delete;
  PointerArray& operator=(const PointerArray&) = delete;
};

/// The outputs of one variant, to compare with the two-call variant's.
using Outputs = std::vector<std::vector<float>>;

struct Probe {
  const char* config;
  Timer& timer;
  int calls, repeats;
  cudaStream_t stream;

  /// Times `run`, runs it twice more on cleared outputs and reports its
  /// time, its determinism and whether it equals `reference` (empty: it is
  /// the reference, returned) over the first `compared[i]` floats of output
  /// i (empty: all of them).
  Outputs report(const char* what, const char* variant, const std::function<void()>& run,
                 const std::vector<Buffer*>& outs, const Outputs& reference,
                 const std::vector<std::size_t>& compared = {}) {
    const double us = timer.median_us(run, calls, repeats);
    const auto snapshot = [&] {
      for (Buffer* b : outs) check(cudaMemsetAsync(b->p, 0, b->n * sizeof(float), stream), "clear");
      run();
      check(cudaStreamSynchronize(stream), "sync");
      Outputs o;
      for (Buffer* b : outs) o.push_back(b->read());
      return o;
    };
    const Outputs first = snapshot(), second = snapshot();
    const bool twice = first == second;
    bool same = true;
    for (std::size_t i = 0; i < reference.size(); ++i) {
      const std::size_t count = compared.empty() ? first[i].size() : compared[i];
      same = same && std::memcmp(first[i].data(), reference[i].data(), count * sizeof(float)) == 0;
    }
    std::printf(
        "{\"bench\":\"gemm_pairs\",\"config\":\"%s\",\"products\":\"%s\",\"variant\":\"%s\",\"us\":%.3f,"
        "\"same_bits_twice\":%s,\"same_bits_as_two\":%s}\n",
        config, what, variant, us, twice ? "true" : "false",
        reference.empty() ? "null"
        : same            ? "true"
                          : "false");
    std::fflush(stdout);
    return first;
  }
};

/// The last hidden layer's forward for both networks (see the file comment).
void hidden_forward(Probe& probe, cublasHandle_t blas, int H, int B, std::mt19937& rng) {
  const float one = 1.0f, zero = 0.0f;
  // Online first, target second, each network's operands in one buffer per
  // role; the target's input and output hold 2B rows for the strided form.
  Buffer w_on(std::size_t(H) * H, rng), x_on(std::size_t(2) * B * H, rng), y_on(std::size_t(2) * B * H, rng);
  Buffer w_tg(std::size_t(H) * H, rng), x_tg(std::size_t(2) * B * H, rng), y_tg(std::size_t(2) * B * H, rng);
  // Row-major Y[rows, H] = X[rows, H] W[H, H]^T is column-major
  // Y^T = op_T(W) X^T: m = H, n = rows, k = H.
  const auto product = [&](const float* w, const float* x, float* y, int rows) {
    check(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, H, rows, H, &one, w, H, x, H, &zero, y, H), "sgemm");
  };
  const std::vector<Buffer*> outs = {&y_on, &y_tg};
  const Outputs reference = probe.report("hidden forward", "two",
                                         [&] {
                                           product(w_on.p, x_on.p, y_on.p, 2 * B);
                                           product(w_tg.p, x_tg.p, y_tg.p, B);
                                         },
                                         outs, {});

  const std::size_t half = std::size_t(B) * H;
  PointerArray a3({w_on.p, w_on.p, w_tg.p}), b3({x_on.p, x_on.p + half, x_tg.p}), c3({y_on.p, y_on.p + half, y_tg.p});
  probe.report(
      "hidden forward", "batch3",
      [&] {
        check(cublasSgemmBatched(blas, CUBLAS_OP_T, CUBLAS_OP_N, H, B, H, &one, a3.p, H, b3.p, H, &zero, c3.p, H, 3),
              "sgemm batched");
      },
      outs, reference);

  PointerArray a2({w_on.p, w_tg.p}), b2({x_on.p, x_tg.p}), c2({y_on.p, y_tg.p});
  const cublasOperation_t ta[2] = {CUBLAS_OP_T, CUBLAS_OP_T}, tb[2] = {CUBLAS_OP_N, CUBLAS_OP_N};
  const int m[2] = {H, H}, n[2] = {2 * B, B}, k[2] = {H, H}, ld[2] = {H, H}, sizes[2] = {1, 1};
  const float alphas[2] = {1.0f, 1.0f}, betas[2] = {0.0f, 0.0f};
  probe.report(
      "hidden forward", "grouped",
      [&] {
        check(cublasSgemmGroupedBatched(blas, ta, tb, m, n, k, alphas, a2.p, ld, b2.p, ld, betas, c2.p, ld, 2, sizes),
              "sgemm grouped");
      },
      outs, reference);

  // Strides as the distance between the two networks' buffers; the target
  // runs 2B rows, of which the first B (its s' rows in a layout where it
  // runs [s'; s]) are compared.
  const long long sa = w_tg.p - w_on.p, sb = x_tg.p - x_on.p, sc = y_tg.p - y_on.p;
  std::printf("# strides (floats): weights %lld, inputs %lld, outputs %lld\n", sa, sb, sc);
  probe.report("hidden forward", "strided",
               [&] {
                 check(cublasSgemmStridedBatched(blas, CUBLAS_OP_T, CUBLAS_OP_N, H, 2 * B, H, &one, w_on.p, H, sa,
                                                 x_on.p, H, sb, &zero, y_on.p, H, sc, 2),
                       "sgemm strided batched");
               },
               outs, reference, {y_on.n, half});
}

/// The first layer with cuBLASLt's bias + ReLU epilogue, both networks.
void first_layer(Probe& probe, cublasLtHandle_t lt, void* workspace, std::size_t workspace_bytes, int obs, int H, int B,
                 std::mt19937& rng) {
  const float one = 1.0f, zero = 0.0f;
  Buffer w_on(std::size_t(H) * obs, rng), b_on(std::size_t(H), rng), x_on(std::size_t(2) * B * obs, rng),
      y_on(std::size_t(2) * B * H, rng);
  Buffer w_tg(std::size_t(H) * obs, rng), b_tg(std::size_t(H), rng), x_tg(std::size_t(2) * B * obs, rng),
      y_tg(std::size_t(2) * B * H, rng);
  cudaStream_t stream = probe.stream;
  struct Plan {
    cublasLtMatmulDesc_t desc{};
    cublasLtMatrixLayout_t a{}, b{}, d{};
    cublasLtMatmulAlgo_t algo{};
  };
  // Column-major Y^T[H, rows] = op_T(W [obs, H]) X^T [obs, rows].
  const auto make = [&](int rows, int batch, long long sa, long long sb, long long sd, long long s_bias,
                        const float* bias) {
    Plan p;
    const cublasOperation_t t = CUBLAS_OP_T, nt = CUBLAS_OP_N;
    check(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc");
    check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t)), "ta");
    check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &nt, sizeof(nt)), "tb");
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_RELU_BIAS;
    check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)), "epilogue");
    check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)), "bias");
    if (batch > 1)
      check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &s_bias, sizeof(s_bias)),
            "bias batch stride");
    check(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_32F, obs, H, obs), "layout a");
    check(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_32F, obs, rows, obs), "layout b");
    check(cublasLtMatrixLayoutCreate(&p.d, CUDA_R_32F, H, rows, H), "layout d");
    if (batch > 1) {
      const std::pair<cublasLtMatrixLayout_t, long long> strided[3] = {{p.a, sa}, {p.b, sb}, {p.d, sd}};
      for (const auto& [layout, stride] : strided) {
        check(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch)),
              "batch count");
        check(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                               sizeof(stride)),
              "batch stride");
      }
    }
    cublasLtMatmulPreference_t pref;
    check(cublasLtMatmulPreferenceCreate(&pref), "pref");
    const std::uint64_t ws = workspace_bytes;
    check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
          "pref ws");
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    check(cublasLtMatmulAlgoGetHeuristic(lt, p.desc, p.a, p.b, p.d, p.d, pref, 1, &result, &found), "heuristic");
    if (found == 0) {
      std::fprintf(stderr, "foxrl_gemm_pairs: no cuBLASLt algorithm for the first layer\n");
      std::exit(1);
    }
    p.algo = result.algo;
    cublasLtMatmulPreferenceDestroy(pref);
    return p;
  };
  const auto run = [&](const Plan& p, const float* w, const float* x, float* y) {
    check(cublasLtMatmul(lt, p.desc, &one, w, p.a, x, p.b, &zero, y, p.d, y, p.d, &p.algo, workspace, workspace_bytes,
                         stream),
          "lt matmul");
  };
  const Plan online = make(2 * B, 1, 0, 0, 0, 0, b_on.p), target = make(B, 1, 0, 0, 0, 0, b_tg.p);
  const std::vector<Buffer*> outs = {&y_on, &y_tg};
  const Outputs reference = probe.report("first layer (bias + ReLU)", "two",
                                         [&] {
                                           run(online, w_on.p, x_on.p, y_on.p);
                                           run(target, w_tg.p, x_tg.p, y_tg.p);
                                         },
                                         outs, {});
  const Plan both = make(2 * B, 2, w_tg.p - w_on.p, x_tg.p - x_on.p, y_tg.p - y_on.p, b_tg.p - b_on.p, b_on.p);
  probe.report("first layer (bias + ReLU)", "strided", [&] { run(both, w_on.p, x_on.p, y_on.p); }, outs, reference,
               {y_on.n, std::size_t(B) * H});
  // The target network first: every stride negative.
  const Plan reversed = make(2 * B, 2, w_on.p - w_tg.p, x_on.p - x_tg.p, y_on.p - y_tg.p, b_on.p - b_tg.p, b_tg.p);
  probe.report("first layer (bias + ReLU)", "strided, target first", [&] { run(reversed, w_tg.p, x_tg.p, y_tg.p); },
               outs, reference, {y_on.n, std::size_t(B) * H});
  // Both networks on the online network's [s; s'] rows (input stride 0).
  const Plan target_2b = make(2 * B, 1, 0, 0, 0, 0, b_tg.p);
  const Outputs shared_reference = probe.report("first layer (bias + ReLU)", "two, shared input",
                                                [&] {
                                                  run(online, w_on.p, x_on.p, y_on.p);
                                                  run(target_2b, w_tg.p, x_on.p, y_tg.p);
                                                },
                                                outs, {});
  const Plan shared = make(2 * B, 2, w_tg.p - w_on.p, 0, y_tg.p - y_on.p, b_tg.p - b_on.p, b_on.p);
  probe.report(
      "first layer (bias + ReLU)", "strided, shared input", [&] { run(shared, w_on.p, x_on.p, y_on.p); }, outs,
      shared_reference);
  for (const Plan* p : {&online, &target, &both, &reversed, &target_2b, &shared}) {
    cublasLtMatrixLayoutDestroy(p->a);
    cublasLtMatrixLayoutDestroy(p->b);
    cublasLtMatrixLayoutDestroy(p->d);
    cublasLtMatmulDescDestroy(p->desc);
  }
}

/// The hidden layer's two backward products from one dZ.
void hidden_backward(Probe& probe, cublasHandle_t blas, int H, int B, std::mt19937& rng) {
  const float one = 1.0f, zero = 0.0f;
  Buffer w(std::size_t(H) * H, rng), x(std::size_t(B) * H, rng), dz(std::size_t(B) * H, rng);
  Buffer dw(std::size_t(H) * H, rng), dx(std::size_t(B) * H, rng);
  // dW^T[H, H] = X^T (dZ^T)^T: m = H, n = H, k = B;
  // dX^T[H, B] = W^T dZ^T: m = H, n = B, k = H.
  const std::vector<Buffer*> outs = {&dw, &dx};
  const Outputs reference = probe.report(
      "hidden backward (dW, dX)", "two",
      [&] {
        check(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, H, H, B, &one, x.p, H, dz.p, H, &zero, dw.p, H), "dW");
        check(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, H, B, H, &one, w.p, H, dz.p, H, &zero, dx.p, H), "dX");
      },
      outs, {});
  PointerArray a({x.p, w.p}), b({dz.p, dz.p}), c({dw.p, dx.p});
  const cublasOperation_t ta[2] = {CUBLAS_OP_N, CUBLAS_OP_N}, tb[2] = {CUBLAS_OP_T, CUBLAS_OP_N};
  const int m[2] = {H, H}, n[2] = {H, B}, k[2] = {B, H}, ld[2] = {H, H}, sizes[2] = {1, 1};
  const float alphas[2] = {1.0f, 1.0f}, betas[2] = {0.0f, 0.0f};
  probe.report(
      "hidden backward (dW, dX)", "grouped",
      [&] {
        check(cublasSgemmGroupedBatched(blas, ta, tb, m, n, k, alphas, a.p, ld, b.p, ld, betas, c.p, ld, 2, sizes),
              "sgemm grouped");
      },
      outs, reference);
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 5, calls = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (a == "--repeats" && v > 0)
      repeats = v;
    else if (a == "--calls" && v > 0)
      calls = v;
    else {
      std::fprintf(stderr, "usage: foxrl_gemm_pairs [--repeats N] [--calls N]\n");
      return 2;
    }
  }
  Libraries libs;
  cudaStream_t stream = libs.stream;
  cublasHandle_t blas = libs.blas;
  cublasLtHandle_t lt = libs.lt;
  void* workspace = libs.workspace;
  const std::size_t workspace_bytes = Libraries::workspace_bytes;
  std::printf("# %s, %d SMs; fp32, median of %d replays of a CUDA graph of %d pairs\n", libs.prop.name,
              libs.prop.multiProcessorCount, repeats, calls);

  std::mt19937 rng(1);
  Timer timer(stream);
  struct Config {
    const char* name;
    int obs, hidden;
  };
  for (const Config& c : {Config{"cartpole-throughput", 4, 256}, Config{"market-throughput", 65, 512}}) {
    Probe probe{c.name, timer, calls, repeats, stream};
    hidden_forward(probe, blas, c.hidden, 1024, rng);
    first_layer(probe, lt, workspace, workspace_bytes, c.obs, c.hidden, 1024, rng);
    hidden_backward(probe, blas, c.hidden, 1024, rng);
  }
  return 0;
}
