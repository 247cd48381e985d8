/* A fake cuBLAS for the CUDA target's host runtime tests (with
 * fake_libcuda.c): what the cuBLAS kernels of a --target cuda library ask
 * for, appended to $FAKE_CUDA_LOG, one line each:
 *   cublas create | cublas stream | cublas workspace BYTES
 *   cublas sgemm OPB OPA N M K LDB LDA LDC  (column-major, as called)
 *   cublas sgemm_batched OPB OPA N M K BATCH | cublas scopy N
 *   cublas gemm_ex OPB OPA N M K TYPE COMPUTE
 *   cublas gemm_batched_ex OPB OPA N M K BATCH TYPE COMPUTE
 *   (TYPE: the cudaDataType of every operand, which the kernels keep alike)
 * Nothing is computed. */
#include "fake_log.h"

#include <stdio.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

#define record(...) fake_log("cublas ", __VA_ARGS__)

static int theHandle;

EXPORT int cublasCreate_v2(void **handle) {
  record("create");
  *handle = &theHandle;
  return 0;
}
EXPORT int cublasDestroy_v2(void *handle) { return 0; }
EXPORT int cublasSetStream_v2(void *handle, void *stream) {
  record("stream");
  return 0;
}
EXPORT int cublasSetWorkspace_v2(void *handle, void *workspace, size_t bytes) {
  record("workspace %zu", bytes);
  return 0;
}
EXPORT int cublasSgemm_v2(void *handle, int opA, int opB, int m, int n, int k,
                          const float *alpha, const float *a, int lda,
                          const float *b, int ldb, const float *beta, float *c,
                          int ldc) {
  record("sgemm %d %d %d %d %d %d %d %d", opA, opB, m, n, k, lda, ldb, ldc);
  return 0;
}
EXPORT int cublasSgemmStridedBatched(void *handle, int opA, int opB, int m,
                                     int n, int k, const float *alpha,
                                     const float *a, int lda, long long strideA,
                                     const float *b, int ldb, long long strideB,
                                     const float *beta, float *c, int ldc,
                                     long long strideC, int batch) {
  record("sgemm_batched %d %d %d %d %d %d", opA, opB, m, n, k, batch);
  return 0;
}
EXPORT int cublasScopy_v2(void *handle, int n, const float *x, int incx,
                          float *y, int incy) {
  record("scopy %d", n);
  return 0;
}
EXPORT int cublasGemmEx(void *handle, int opA, int opB, int m, int n, int k,
                        const void *alpha, const void *a, int typeA, int lda,
                        const void *b, int typeB, int ldb, const void *beta,
                        void *c, int typeC, int ldc, int compute, int algo) {
  record("gemm_ex %d %d %d %d %d %d %d", opA, opB, m, n, k, typeA, compute);
  return typeA == typeB && typeB == typeC ? 0 : 7;
}
EXPORT int cublasGemmStridedBatchedEx(
    void *handle, int opA, int opB, int m, int n, int k, const void *alpha,
    const void *a, int typeA, int lda, long long strideA, const void *b,
    int typeB, int ldb, long long strideB, const void *beta, void *c, int typeC,
    int ldc, long long strideC, int batch, int compute, int algo) {
  record("gemm_batched_ex %d %d %d %d %d %d %d %d", opA, opB, m, n, k, batch,
         typeA, compute);
  return typeA == typeB && typeB == typeC ? 0 : 7;
}
