//===- CublasKernels.cpp - the kernel table of the CUDA runtime -----------===//
//
// libtrainc_rt_cuda.a's kernel table: backend "cublas" of graph.matmul and
// graph.gemm, here, and backend "cudnn" of the convolutions
// (CudnnKernels.cpp); every other launch of a --target cuda library is a
// generated GPU kernel. cuBLAS is opened with dlopen (libcublas.so.13, or
// $TRAINC_LIBCUBLAS) when a session prepares its first product, one handle
// per device, on the device's stream, with a workspace of its own so that
// a step can be captured as a CUDA graph. f32 products are cublasSgemm in
// the default math mode (no TF32, as the CPU target computes); bf16 ones
// (--amp bf16) are cublasGemmEx on bf16 operands with f32 accumulation
// (CUBLAS_COMPUTE_32F: tensor cores), the result rounded to bf16 once.
//
// cuBLAS is column-major: the row-major C[m, n] = op(A) op(B) is the
// column-major C^T[n, m] = op(B)^T op(A)^T, i.e. cublasSgemm with the
// operands swapped and the same leading dimensions as row-major BLAS.
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/CudaDevice.h"
#include "lib/Runtime/kernels/CudaKernels.h"
#include "lib/Runtime/kernels/KernelSupport.h"

#include "lib/Runtime/DynamicLibrary.h"

namespace trainc::rt {

namespace {

constexpr int kNoTranspose = 0, kTranspose = 1;
constexpr size_t kWorkspaceBytes = size_t(32) << 20;
// library_types.h's cudaDataType and cublas_api.h's enums.
constexpr int kRealBf16 = 14;    // CUDA_R_16BF
constexpr int kCompute32F = 68;  // CUBLAS_COMPUTE_32F
constexpr int kGemmDefault = -1; // CUBLAS_GEMM_DEFAULT
constexpr uint16_t kBf16One = 0x3f80;

/// cuBLAS on one device.
struct Cublas final : CudaLibrary {
  DynamicLibrary library;
  void *handle = nullptr;
  CudaDevice *device = nullptr;
  /// 1.0 in f32 and in bf16, for broadcasting a bias.
  DeviceBuffer workspace, ones, bf16Ones;
  int (*create)(void **);
  int (*destroy)(void *);
  int (*setStream)(void *, void *);
  int (*setWorkspace)(void *, void *, size_t);
  int (*sgemm)(void *, int, int, int, int, int, const float *, const float *,
               int, const float *, int, const float *, float *, int);
  int (*sgemmStridedBatched)(void *, int, int, int, int, int, const float *,
                             const float *, int, long long, const float *, int,
                             long long, const float *, float *, int, long long,
                             int);
  int (*scopy)(void *, int, const float *, int, float *, int);
  int (*gemmEx)(void *, int, int, int, int, int, const void *, const void *,
                int, int, const void *, int, int, const void *, void *, int,
                int, int, int);
  int (*gemmStridedBatchedEx)(void *, int, int, int, int, int, const void *,
                              const void *, int, int, long long, const void *,
                              int, int, long long, const void *, void *, int,
                              int, long long, int, int, int);

  ~Cublas() override {
    if (handle)
      destroy(handle);
  }

  bool check(int status, const char *what, std::string &error) {
    if (status == 0)
      return true;
    error =
        std::string(what) + " failed: cuBLAS status " + std::to_string(status);
    return false;
  }

  bool open(CudaDevice &on, std::string &error) {
    device = &on;
    if (!library.open("TRAINC_LIBCUBLAS", "libcublas.so.13", error)) {
      error = "cannot load cuBLAS (" + error +
              "): --target cuda libraries run their matrix products on "
              "cuBLAS 13 (CUDA 13's libcublas.so.13 on the library path)";
      return false;
    }
    auto bind = [&](auto &function, const char *symbol) {
      library.bind(function, symbol);
    };
    bind(create, "cublasCreate_v2");
    bind(destroy, "cublasDestroy_v2");
    bind(setStream, "cublasSetStream_v2");
    bind(setWorkspace, "cublasSetWorkspace_v2");
    bind(sgemm, "cublasSgemm_v2");
    bind(sgemmStridedBatched, "cublasSgemmStridedBatched");
    bind(scopy, "cublasScopy_v2");
    bind(gemmEx, "cublasGemmEx");
    bind(gemmStridedBatchedEx, "cublasGemmStridedBatchedEx");
    if (!library.missing.empty()) {
      error = "cuBLAS (" + library.path + ") has no " + library.missing;
      return false;
    }
    if (!check(create(&handle), "cublasCreate", error) ||
        !check(setStream(handle, on.launchStream()), "cublasSetStream", error))
      return false;
    uint64_t address = on.allocate(kWorkspaceBytes, error);
    if (!address)
      return false;
    workspace = DeviceBuffer(&on, address, kWorkspaceBytes);
    return check(setWorkspace(handle, reinterpret_cast<void *>(address),
                              kWorkspaceBytes),
                 "cublasSetWorkspace", error);
  }

  /// `count` ones of f32 or bf16 on the device (grown when a launch is
  /// prepared, before any step is captured).
  bool reserveOnes(int64_t count, bool bf16, std::string &error) {
    DeviceBuffer &buffer = bf16 ? bf16Ones : ones;
    size_t bytes = count * (bf16 ? sizeof(uint16_t) : sizeof(float));
    if (buffer.size() >= bytes)
      return true;
    std::vector<float> f32(bf16 ? 0 : count, 1.0f);
    std::vector<uint16_t> low(bf16 ? count : 0, kBf16One);
    uint64_t address = device->allocate(bytes, error);
    if (!address)
      return false;
    buffer = DeviceBuffer(device, address, bytes);
    return device->upload(address,
                          bf16 ? static_cast<const void *>(low.data())
                               : static_cast<const void *>(f32.data()),
                          bytes, error);
  }

  const void *onesOf(bool bf16) const {
    return reinterpret_cast<const void *>((bf16 ? bf16Ones : ones).address());
  }

  /// Row-major out[m, n] = alpha op(a) op(b) + beta out, all f32 or all
  /// bf16 (accumulated in f32).
  bool gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
            float alpha, const void *a, const void *b, float beta, void *out,
            bool bf16, std::string &error) {
    return gemmBatched(transA, transB, m, n, k, alpha, a, 0, b, 0, beta, out, 0,
                       1, bf16, error);
  }

  /// `batch` row-major products out_p[m, n] = alpha op(a_p) op(b_p) +
  /// beta out_p, the operands `strideA`, `strideB`, `strideOut` elements
  /// apart (stride 0: one operand shared). One product is a plain GEMM.
  bool gemmBatched(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                   float alpha, const void *a, int64_t strideA, const void *b,
                   int64_t strideB, float beta, void *out, int64_t strideOut,
                   int64_t batch, bool bf16, std::string &error) {
    int opA = transA ? kTranspose : kNoTranspose,
        opB = transB ? kTranspose : kNoTranspose;
    int lda = transA ? m : k, ldb = transB ? k : n;
    auto *fa = static_cast<const float *>(a);
    auto *fb = static_cast<const float *>(b);
    auto *fout = static_cast<float *>(out);
    if (batch == 1)
      return bf16 ? check(gemmEx(handle, opB, opA, n, m, k, &alpha, b,
                                 kRealBf16, ldb, a, kRealBf16, lda, &beta, out,
                                 kRealBf16, n, kCompute32F, kGemmDefault),
                          "cublasGemmEx", error)
                  : check(sgemm(handle, opB, opA, n, m, k, &alpha, fb, ldb, fa,
                                lda, &beta, fout, n),
                          "cublasSgemm", error);
    return bf16 ? check(gemmStridedBatchedEx(handle, opB, opA, n, m, k, &alpha,
                                             b, kRealBf16, ldb, strideB, a,
                                             kRealBf16, lda, strideA, &beta,
                                             out, kRealBf16, n, strideOut,
                                             batch, kCompute32F, kGemmDefault),
                        "cublasGemmStridedBatchedEx", error)
                : check(sgemmStridedBatched(handle, opB, opA, n, m, k, &alpha,
                                            fb, ldb, strideB, fa, lda, strideA,
                                            &beta, fout, n, strideOut, batch),
                        "cublasSgemmStridedBatched", error);
  }
};

/// A device pointer `elements` elements of `bf16` or f32 past `base`.
const void *offset(const void *base, int64_t elements, bool bf16) {
  return static_cast<const char *>(base) +
         elements * (bf16 ? sizeof(uint16_t) : sizeof(float));
}
void *offset(void *base, int64_t elements, bool bf16) {
  return static_cast<char *>(base) +
         elements * (bf16 ? sizeof(uint16_t) : sizeof(float));
}

class CublasProduct final : public PreparedKernel {
public:
  CublasProduct(Cublas &blas, Launch launch)
      : blas(blas), launch(std::move(launch)) {}

  /// Checks the launch's geometry and sizes the ones it needs.
  bool prepare(std::string &error) {
    if (!uniformF32OrBf16(launch, "cuBLAS products", bf16, error))
      return false;
    if (launch.op == "graph.gemm") {
      if (!makeGemmShape(launch, gemmShape, error))
        return false;
      return limits({gemmShape.m, gemmShape.n, gemmShape.k}, error) &&
             (!gemmShape.hasC ||
              blas.reserveOnes(std::max(gemmShape.m, gemmShape.n), bf16,
                               error));
    }
    Launch logical = launch;
    if (!transposedOperand(launch, 0, "lhs_perm", logical.inputs[0].shape,
                           transA, error) ||
        !transposedOperand(launch, 1, "rhs_perm", logical.inputs[1].shape,
                           transB, error) ||
        !makeMatmulShape(logical, matmulShape, error))
      return false;
    return limits({matmulShape.m * matmulShape.batch, matmulShape.n,
                   matmulShape.k, matmulShape.batch},
                  error);
  }

  size_t scratchBytes() const override { return 0; }

  bool run(void *const *inputs, void *const *outputs, void *,
           std::string &error) override {
    void *out = outputs[0];
    const void *a = inputs[0], *b = inputs[1];
    if (launch.op == "graph.gemm")
      return runGemm(a, b, inputs, out, error);
    const MatmulShape &mm = matmulShape;
    int64_t m = mm.m, n = mm.n, k = mm.k;
    // One shared rhs and a dense, untransposed lhs: one [batch * m, k]
    // product.
    bool fold = !transA, lhsDense = true, lhsShared = true, rhsDense = true,
         rhsShared = true;
    for (int64_t p = 0; p < mm.batch; ++p) {
      fold &= mm.rhsIndex[p] == 0 && mm.lhsIndex[p] == p;
      lhsDense &= mm.lhsIndex[p] == p;
      lhsShared &= mm.lhsIndex[p] == 0;
      rhsDense &= mm.rhsIndex[p] == p;
      rhsShared &= mm.rhsIndex[p] == 0;
    }
    if (fold)
      return blas.gemm(false, transB, mm.batch * m, n, k, 1, a, b, 0, out, bf16,
                       error);
    if ((lhsDense || lhsShared) && (rhsDense || rhsShared))
      return blas.gemmBatched(transA, transB, m, n, k, 1, a,
                              lhsShared ? 0 : m * k, b, rhsShared ? 0 : k * n,
                              0, out, m * n, mm.batch, bf16, error);
    for (int64_t p = 0; p < mm.batch; ++p)
      if (!blas.gemm(transA, transB, m, n, k, 1,
                     offset(a, mm.lhsIndex[p] * m * k, bf16),
                     offset(b, mm.rhsIndex[p] * k * n, bf16), 0,
                     offset(out, p * m * n, bf16), bf16, error))
        return false;
    return true;
  }

private:
  /// cuBLAS takes int sizes.
  bool limits(std::initializer_list<int64_t> sizes, std::string &error) {
    for (int64_t size : sizes)
      if (size > INT32_MAX)
        return fail(launch, error, "a matrix dimension exceeds cuBLAS's int");
    return true;
  }

  /// out = beta * c (broadcast) + alpha * op(a) op(b): c is written first,
  /// a row or a column as a rank-1 product with ones, a whole matrix
  /// copied (f32 only: the dispatch gives cuBLAS no other).
  bool runGemm(const void *a, const void *b, void *const *inputs, void *out,
               std::string &error) {
    const GemmShape &g = gemmShape;
    float beta = 0;
    if (g.hasC) {
      const void *c = inputs[2], *ones = blas.onesOf(bf16);
      bool row = g.cStrides[0] == 0, column = g.cStrides[1] == 0;
      bool ok = row && !column   ? blas.gemm(false, false, g.m, g.n, 1, 1, ones,
                                             c, 0, out, bf16, error)
                : column && !row ? blas.gemm(false, false, g.m, g.n, 1, 1, c,
                                             ones, 0, out, bf16, error)
                : !row && !column && !bf16
                    ? blas.check(blas.scopy(blas.handle, g.m * g.n,
                                            static_cast<const float *>(c), 1,
                                            static_cast<float *>(out), 1),
                                 "cublasScopy", error)
                    : fail(launch, error,
                           "cuBLAS broadcasts a row, a column or (f32) a whole "
                           "matrix c only");
      if (!ok)
        return false;
      beta = static_cast<float>(g.beta);
    }
    return blas.gemm(g.transA, g.transB, g.m, g.n, g.k,
                     static_cast<float>(g.alpha), a, b, beta, out, bf16, error);
  }

  Cublas &blas;
  Launch launch;
  GemmShape gemmShape;
  MatmulShape matmulShape;
  bool transA = false, transB = false;
  bool bf16 = false; ///< every operand bf16 (else f32)
};

std::unique_ptr<PreparedKernel>
prepareCublas(const Launch &launch, LibraryContext &, std::string &error) {
  auto *blas =
      deviceLibrary<Cublas>(activeCudaDevice(), "cublas", "cuBLAS", error);
  if (!blas)
    return nullptr;
  auto kernel = std::make_unique<CublasProduct>(*blas, launch);
  if (!kernel->prepare(error))
    return nullptr;
  return kernel;
}

} // namespace

bool uniformF32OrBf16(const Launch &launch, const char *kernels, bool &bf16,
                      std::string &error) {
  bf16 = launch.inputs[0].dtype == DType::BF16;
  for (const auto *operands : {&launch.inputs, &launch.outputs})
    for (const OperandInfo &operand : *operands)
      if (operand.dtype != (bf16 ? DType::BF16 : DType::F32))
        return fail(launch, error,
                    std::string(kernels) +
                        " take all-f32 or all-bf16 operands");
  return true;
}

bool prepareChannelBias(CudaDevice *device, int64_t positions, bool bf16,
                        std::string &error) {
  auto *blas = deviceLibrary<Cublas>(device, "cublas", "cuBLAS", error);
  return blas && blas->reserveOnes(positions, bf16, error);
}

bool addChannelBias(CudaDevice *device, const void *bias, void *out,
                    int64_t batch, int64_t channels, int64_t positions,
                    bool bf16, std::string &error) {
  auto *blas = deviceLibrary<Cublas>(device, "cublas", "cuBLAS", error);
  // out_n[C, P] = bias[C, 1] ones[1, P] + out_n, per image n.
  return blas && blas->gemmBatched(false, false, channels, positions, 1, 1,
                                   bias, 0, blas->onesOf(bf16), 0, 1, out,
                                   channels * positions, batch, bf16, error);
}

void registerBuiltinKernels() {
  registerPreparedKernel("graph.matmul", "cublas", prepareCublas);
  registerPreparedKernel("graph.gemm", "cublas", prepareCublas);
  registerCudnnKernels();
}

} // namespace trainc::rt
