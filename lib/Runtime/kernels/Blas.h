//===- Blas.h - GEMM helpers of the openblas backend ----------*- C++ -*-===//
//
// Threads: OpenBLAS is kept at one thread and its idle workers are stopped
// (Debian's default build has its own pthread pool, which would fight
// libgomp's; see blas::prepare), and the kernels run
// independent GEMMs in an OpenMP loop. How work is cut into GEMM calls
// depends only on the shapes, never on the thread count, so every call
// sees the same operands on any number of threads and the results are
// bit-identical.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_LIB_RUNTIME_KERNELS_BLAS_H
#define TRAINC_LIB_RUNTIME_KERNELS_BLAS_H

#include "lib/Runtime/kernels/KernelSupport.h"

namespace trainc::rt::blas {

/// cblas_sgemm / cblas_dgemm, row-major.
void call(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
          float beta, float *c, int64_t ldc);
void call(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          double alpha, const double *a, int64_t lda, const double *b,
          int64_t ldb, double beta, double *c, int64_t ldc);

/// Checks that the sizes fit BLAS's int and makes OpenBLAS single-threaded
/// (a process-wide setting, checked on every launch); call before any gemm,
/// outside parallel regions.
bool prepare(const Launch &launch, std::initializer_list<int64_t> sizes,
             std::string &error);

/// C [m, n] = alpha op(A) op(B) + beta C on the calling thread; any size.
template <typename T>
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, T alpha,
          const T *a, int64_t lda, const T *b, int64_t ldb, T beta, T *c,
          int64_t ldc) {
  if (m == 0 || n == 0)
    return;
  if (k == 0) { // BLAS rejects the leading dimensions of empty operands
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
    return;
  }
  call(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/// gemm() cut into column (or row) blocks that depend only on the shape,
/// run on several threads.
template <typename T>
void parallelGemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                  T alpha, const T *a, int64_t lda, const T *b, int64_t ldb,
                  T beta, T *c, int64_t ldc) {
  bool splitColumns = n >= m;
  int64_t dim = splitColumns ? n : m;
  int64_t blocks = m * n * k < (1 << 21)
                       ? 1
                       : std::max<int64_t>(1, std::min<int64_t>(8, dim / 64));
#pragma omp parallel for schedule(static) if (blocks > 1)
  for (int64_t block = 0; block < blocks; ++block) {
    int64_t begin = dim * block / blocks, end = dim * (block + 1) / blocks;
    if (splitColumns)
      gemm(transA, transB, m, end - begin, k, alpha, a, lda,
           transB ? b + begin * ldb : b + begin, ldb, beta, c + begin, ldc);
    else
      gemm(transA, transB, end - begin, n, k, alpha,
           transA ? a + begin : a + begin * lda, lda, b, ldb, beta,
           c + begin * ldc, ldc);
  }
}

} // namespace trainc::rt::blas

#endif // TRAINC_LIB_RUNTIME_KERNELS_BLAS_H
