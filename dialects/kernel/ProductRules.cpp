//===- ProductRules.cpp - which backend runs a matrix product, by shape ===//
//
// The dispatch predicates that move a matrix product off oneDNN for the
// shapes where another library is faster, each with the measurement
// behind it. The rule table is backendRules() (BackendRegistry.cpp).
//
//===----------------------------------------------------------------------===//
#include "dialects/kernel/BackendPredicates.h"

using namespace mlir;

namespace trainc::kernel {

/// Whether `buffer` is written by a graph.transpose that swaps its last two
/// dims and keeps the others: --trainc-fold-transposes (rule 1) then lets
/// the product read the transpose's input in place, transposed.
static bool writtenSwapped(Value buffer) {
  for (Operation *user : buffer.getUsers()) {
    auto launch = dyn_cast<LaunchOp>(user);
    if (!launch || !llvm::is_contained(launch.getOutputs(), buffer))
      continue;
    if (launch.getKernel() != "graph.transpose" ||
        launch.getOutputs().size() != 1)
      return false;
    ArrayRef<int64_t> perm = integers(launch, "perm");
    size_t rank = perm.size();
    if (rank < 2 || perm[rank - 2] != int64_t(rank - 1) ||
        perm[rank - 1] != int64_t(rank - 2))
      return false;
    for (size_t d = 0; d + 2 < rank; ++d)
      if (perm[d] != int64_t(d))
        return false;
    return true;
  }
  return false;
}

/// Batched f32 products of small matrices whose lhs is read transposed
/// (attention's gradients: dV = P^T dO and dK = dS^T Q, per head), on
/// AVX-512 targets. There oneDNN 2.6 runs its brgemm kernels, which copy
/// each transposed lhs matrix into blocks before multiplying: 1.2-1.7x
/// slower than on the same matrices untransposed, while OpenBLAS's sgemm
/// reads a transposed lhs at its full speed (the openblas kernel runs one
/// single-threaded sgemm per matrix, the batch split across threads).
/// Measured on a Zen 4, 2 threads, ms per product (oneDNN / OpenBLAS):
/// 64 x [64x64]^T [64x32] 0.114 / 0.077 (the Transformer's heads), 64 x
/// [64x32]^T [64x64] 0.091 / 0.078, 32 x [49x49]^T [49x32] (a Swin window)
/// 0.029 / 0.023, 64 x [128x128]^T [128x32] 0.40 / 0.30, and 64 x
/// [64x64]^T [64x64] 0.185 / 0.149; larger matrices stay on oneDNN, which
/// is 4-9 % faster there (12 x [128x128]^T [128x64] 0.129 / 0.134, 8 x
/// [512x512]^T [512x32] 0.76 / 0.80). On AVX2 oneDNN runs gemm:jit, which
/// reads a transposed lhs at full speed and beats OpenBLAS at every one of
/// these shapes (0.71-0.85x its time, `DNNL_MAX_CPU_ISA=AVX2
/// OPENBLAS_CORETYPE=Zen`). docs/RUNTIME.md, Dispatch.
bool smallTransposedLhsProducts(LaunchOp launch, std::string &whyNot) {
  if (!allFloat32(launch, whyNot))
    return false;
  if (targetVectorLanes(launch) < 16) {
    whyNot = "the target has no AVX-512 (oneDNN runs gemm:jit there)";
    return false;
  }
  if (launch.getInputs().size() != 2) {
    whyNot = "it has a bias";
    return false;
  }
  ArrayRef<int64_t> lhs = shapeOf(launch.getInputs()[0]);
  ArrayRef<int64_t> out = shapeOf(launch.getOutputs()[0]);
  if (lhs.size() < 3 || out.size() < 3 ||
      !writtenSwapped(launch.getInputs()[0])) {
    whyNot = "its lhs is not a batch of matrices read transposed";
    return false;
  }
  int64_t batch = 1;
  for (size_t d = 0; d + 2 < out.size(); ++d)
    batch *= out[d];
  // The lhs as the product reads it is [.., m, k].
  int64_t m = lhs[lhs.size() - 2], k = lhs[lhs.size() - 1], n = out.back();
  bool small = m * k <= 64 * 64 ? n <= 64 : m * k <= 128 * 128 && n <= 32;
  if (batch < 4 || !small) {
    whyNot = "its matrices are too large or too few";
    return false;
  }
  return true;
}

} // namespace trainc::kernel
