//===- CublasKernels.cpp - the kernel table of the CUDA runtime -----------===//
//
// libtrainc_rt_cuda.a's kernel table: backend "cublas" of graph.matmul and
// graph.gemm, here, and backend "cudnn" of the convolutions
// (CudnnKernels.cpp); every other launch of a --target cuda library is a
// generated GPU kernel. cuBLAS is opened with dlopen (libcublas.so.13, or
// $TRAINC_LIBCUBLAS) when a session prepares its first product, one handle
// per device, on the device's stream, with a workspace of its own so that
// a step can be captured as a CUDA graph. fp32 throughout: the default
// math mode (no TF32), as the CPU target computes.
//
// cuBLAS is column-major: the row-major C[m, n] = op(A) op(B) is the
// column-major C^T[n, m] = op(B)^T op(A)^T, i.e. cublasSgemm with the
// operands swapped and the same leading dimensions as row-major BLAS.
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/CudaDevice.h"
#include "lib/Runtime/kernels/KernelSupport.h"

#include "lib/Runtime/DynamicLibrary.h"

namespace trainc::rt {

namespace {

constexpr int kNoTranspose = 0, kTranspose = 1;
constexpr size_t kWorkspaceBytes = size_t(32) << 20;

/// cuBLAS on one device.
struct Cublas final : CudaLibrary {
  DynamicLibrary library;
  void *handle = nullptr;
  CudaDevice *device = nullptr;
  DeviceBuffer workspace, ones; ///< ones: 1.0f, for broadcasting a bias
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

  /// `count` ones on the device (grown when a launch is prepared).
  bool reserveOnes(int64_t count, std::string &error) {
    if (static_cast<int64_t>(ones.size() / sizeof(float)) >= count)
      return true;
    std::vector<float> host(count, 1.0f);
    uint64_t address = device->allocate(count * sizeof(float), error);
    if (!address)
      return false;
    ones = DeviceBuffer(device, address, count * sizeof(float));
    return device->upload(address, host.data(), count * sizeof(float), error);
  }

  /// Row-major out[m, n] = alpha op(a) op(b) + beta out.
  bool gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
            float alpha, const float *a, const float *b, float beta, float *out,
            std::string &error) {
    return check(sgemm(handle, transB ? kTranspose : kNoTranspose,
                       transA ? kTranspose : kNoTranspose, n, m, k, &alpha, b,
                       transB ? k : n, a, transA ? m : k, &beta, out, n),
                 "cublasSgemm", error);
  }
};

class CublasProduct final : public PreparedKernel {
public:
  CublasProduct(Cublas &blas, Launch launch)
      : blas(blas), launch(std::move(launch)) {}

  /// Checks the launch's geometry and sizes the ones it needs.
  bool prepare(std::string &error) {
    for (const OperandInfo &operand : launch.inputs)
      if (operand.dtype != DType::F32)
        return fail(launch, error, "cuBLAS products take f32 operands only");
    if (launch.op == "graph.gemm") {
      if (!makeGemmShape(launch, gemmShape, error))
        return false;
      return limits({gemmShape.m, gemmShape.n, gemmShape.k}, error) &&
             (!gemmShape.hasC ||
              blas.reserveOnes(std::max(gemmShape.m, gemmShape.n), error));
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
    auto *out = static_cast<float *>(outputs[0]);
    auto *a = static_cast<const float *>(inputs[0]);
    auto *b = static_cast<const float *>(inputs[1]);
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
      return blas.gemm(false, transB, mm.batch * m, n, k, 1, a, b, 0, out,
                       error);
    if ((lhsDense || lhsShared) && (rhsDense || rhsShared)) {
      float one = 1, zero = 0;
      return blas.check(blas.sgemmStridedBatched(
                            blas.handle, transB ? kTranspose : kNoTranspose,
                            transA ? kTranspose : kNoTranspose, n, m, k, &one,
                            b, transB ? k : n, rhsShared ? 0 : k * n, a,
                            transA ? m : k, lhsShared ? 0 : m * k, &zero, out,
                            n, m * n, mm.batch),
                        "cublasSgemmStridedBatched", error);
    }
    for (int64_t p = 0; p < mm.batch; ++p)
      if (!blas.gemm(transA, transB, m, n, k, 1, a + mm.lhsIndex[p] * m * k,
                     b + mm.rhsIndex[p] * k * n, 0, out + p * m * n, error))
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
  /// copied.
  bool runGemm(const float *a, const float *b, void *const *inputs, float *out,
               std::string &error) {
    const GemmShape &g = gemmShape;
    float beta = 0;
    if (g.hasC) {
      auto *c = static_cast<const float *>(inputs[2]);
      const auto *ones = reinterpret_cast<const float *>(blas.ones.address());
      bool row = g.cStrides[0] == 0, column = g.cStrides[1] == 0;
      bool ok =
          row && !column
              ? blas.gemm(false, false, g.m, g.n, 1, 1, ones, c, 0, out, error)
          : column && !row
              ? blas.gemm(false, false, g.m, g.n, 1, 1, c, ones, 0, out, error)
          : !row && !column
              ? blas.check(blas.scopy(blas.handle, g.m * g.n, c, 1, out, 1),
                           "cublasScopy", error)
              : fail(launch, error, "a scalar c is not broadcast on cuBLAS");
      if (!ok)
        return false;
      beta = static_cast<float>(g.beta);
    }
    return blas.gemm(g.transA, g.transB, g.m, g.n, g.k,
                     static_cast<float>(g.alpha), a, b, beta, out, error);
  }

  Cublas &blas;
  Launch launch;
  GemmShape gemmShape;
  MatmulShape matmulShape;
  bool transA = false, transB = false;
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

void registerBuiltinKernels() {
  registerPreparedKernel("graph.matmul", "cublas", prepareCublas);
  registerPreparedKernel("graph.gemm", "cublas", prepareCublas);
  registerCudnnKernels();
}

} // namespace trainc::rt
