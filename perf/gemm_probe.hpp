#pragma once
// What the gemm probes (gemm_survey.cpp, gemm_pairs.cpp) share: fail-fast
// CUDA and cuBLAS checks, the pipeline's row-major products in cuBLAS'
// column-major terms, and a timer of calls replayed in a CUDA graph. Plain
// CUDA, no Kokkos; CUDA builds only.

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace foxrl::perf {

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "foxrl gemm probe: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}
inline void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "foxrl gemm probe: %s: cuBLAS status %d\n", what, static_cast<int>(s));
    std::exit(1);
  }
}

/// One row-major product of the pipeline, in the library's terms:
/// forward   Y[rows, out] = X[rows, in] W[out, in]^T (+ bias, ReLU)
/// dx        dX[rows, in] = dY[rows, out] W[out, in]
/// dw        dW[out, in]  = dY[rows, out]^T X[rows, in]
struct Shape {
  const char* config;
  const char* what;
  char kind;  // 'f' forward, 'x' dx, 'w' dw
  int rows, in, out;
  bool relu_bias;  // forward with cuBLASLt's RELU_BIAS epilogue (else plain)
};

/// Column-major D[m, n] = op(A) op(B) as cuBLAS sees the row-major product.
struct ColMajor {
  cublasOperation_t ta, tb;
  int m, n, k;
  int lda, ldb, ldd;
};

inline ColMajor col_major(const Shape& s) {
  switch (s.kind) {
    case 'f':  // Y^T[out, rows] = W(op T of [in, out]) X^T([in, rows])
      return {CUBLAS_OP_T, CUBLAS_OP_N, s.out, s.rows, s.in, s.in, s.in, s.out};
    case 'x':  // dX^T[in, rows] = W^T([in, out]) dY^T([out, rows])
      return {CUBLAS_OP_N, CUBLAS_OP_N, s.in, s.rows, s.out, s.in, s.out, s.in};
    default:  // dW^T[in, out] = X^T([in, rows]) (dY^T)^T (op T of [out, rows])
      return {CUBLAS_OP_N, CUBLAS_OP_T, s.in, s.out, s.rows, s.in, s.out, s.in};
  }
}

struct Timer {
  cudaStream_t stream;
  cudaEvent_t a, b;
  explicit Timer(cudaStream_t s) : stream(s) {
    check(cudaEventCreate(&a), "event");
    check(cudaEventCreate(&b), "event");
  }
  /// `calls` launches of `call` captured once as a CUDA graph and the
  /// graph replayed `repeats` times: per-call GPU time without the host's
  /// launch cost (back-to-back host launches of a small product measure
  /// the launch, about 7 us, not the product).
  template <class F>
  double median_us(const F& call, int calls, int repeats) {
    for (int i = 0; i < 5; ++i) call();
    cudaGraph_t graph;
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin capture");
    for (int i = 0; i < calls; ++i) call();
    check(cudaStreamEndCapture(stream, &graph), "end capture");
    cudaGraphExec_t exec;
    check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
    check(cudaGraphLaunch(exec, stream), "warm graph");
    std::vector<double> t;
    for (int r = 0; r < repeats; ++r) {
      check(cudaEventRecord(a, stream), "record");
      check(cudaGraphLaunch(exec, stream), "graph");
      check(cudaEventRecord(b, stream), "record");
      check(cudaEventSynchronize(b), "sync");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, a, b), "elapsed");
      t.push_back(1000.0 * ms / calls);
    }
    check(cudaGraphExecDestroy(exec), "destroy exec");
    check(cudaGraphDestroy(graph), "destroy graph");
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  }
};

/// The probes' stream, cuBLAS and cuBLASLt handles (fp32 math, one 32 MB
/// workspace shared by both, as the library's dense layers share theirs)
/// and the device's properties.
struct Libraries {
  static constexpr std::size_t workspace_bytes = 32u << 20;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  cublasLtHandle_t lt = nullptr;
  void* workspace = nullptr;
  cudaDeviceProp prop{};

  Libraries() {
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
    check(cublasCreate(&blas), "cublasCreate");
    check(cublasSetStream(blas, stream), "cublasSetStream");
    check(cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH), "math mode");
    check(cublasLtCreate(&lt), "cublasLtCreate");
    check(cudaMalloc(&workspace, workspace_bytes), "workspace");
    check(cublasSetWorkspace(blas, workspace, workspace_bytes), "cublasSetWorkspace");
    check(cudaGetDeviceProperties(&prop, 0), "properties");
  }
  ~Libraries() {
    cublasLtDestroy(lt);
    cublasDestroy(blas);
    cudaFree(workspace);
    cudaStreamDestroy(stream);
  }
  Libraries(const Libraries&) = delete;
  Libraries& operator=(const Libraries&) = delete;
};

}  // namespace foxrl::perf
