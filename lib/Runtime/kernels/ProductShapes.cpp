//===- ProductShapes.cpp - the geometry of matmul and gemm launches -------===//
//
// Shared by every backend of the products (OpenBLAS, oneDNN, the reference
// kernels, cuBLAS): declared in KernelSupport.h.
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/kernels/KernelSupport.h"

namespace trainc::rt {

/// Whether matmul operand `index` is stored with its last two dims swapped
/// (`lhs_perm` / `rhs_perm`, set by --trainc-fold-transposes: BLAS reads
/// such an operand transposed); `shape` becomes the operand's logical
/// shape. Other permutations are an error.
bool transposedOperand(const Launch &launch, unsigned index, const char *option,
                       Shape &shape, bool &transposed, std::string &error) {
  shape = launch.inputs[index].shape;
  transposed = false;
  std::vector<int64_t> perm = launch.ints(option);
  if (perm.empty())
    return true;
  size_t rank = shape.size();
  bool swapsLastTwo = perm.size() == rank && rank >= 2 &&
                      perm[rank - 2] == int64_t(rank - 1) &&
                      perm[rank - 1] == int64_t(rank - 2);
  for (size_t d = 0; swapsLastTwo && d + 2 < rank; ++d)
    swapsLastTwo = perm[d] == int64_t(d);
  if (!swapsLastTwo)
    return fail(launch, error,
                std::string(option) +
                    " must swap the last two dims (and keep the others)");
  std::swap(shape[rank - 2], shape[rank - 1]);
  transposed = true;
  return true;
}

bool makeMatmulShape(const Launch &launch, MatmulShape &matmul,
                     std::string &error) {
  if (!checkArity(launch, 2, 2, 1, 1, error))
    return false;
  const OperandInfo &lhs = launch.inputs[0], &rhs = launch.inputs[1];
  if (lhs.dtype != rhs.dtype)
    return fail(launch, error, "operands have different element types");
  if (lhs.shape.empty() || rhs.shape.empty())
    return fail(launch, error, "matmul operands must not be scalars");
  // numpy: a 1-D lhs is a row [1, K], a 1-D rhs a column [K, 1]; the
  // promoted dims are dropped from the result.
  Shape a = lhs.shape, b = rhs.shape;
  bool lhsVector = a.size() == 1, rhsVector = b.size() == 1;
  if (lhsVector)
    a.insert(a.begin(), 1);
  if (rhsVector)
    b.push_back(1);
  matmul.m = a[a.size() - 2];
  matmul.k = a.back();
  matmul.n = b.back();
  if (b[b.size() - 2] != matmul.k)
    return fail(launch, error,
                "contraction sizes differ: " + formatShape(lhs.shape) + " x " +
                    formatShape(rhs.shape));
  Shape lhsBatch(a.begin(), a.end() - 2), rhsBatch(b.begin(), b.end() - 2);
  auto batch = broadcastShapes(lhsBatch, rhsBatch);
  if (!batch)
    return fail(launch, error, "batch dims do not broadcast");
  matmul.outputShape = *batch;
  if (!lhsVector)
    matmul.outputShape.push_back(matmul.m);
  if (!rhsVector)
    matmul.outputShape.push_back(matmul.n);
  if (!checkOutput(launch, 0, lhs.dtype, matmul.outputShape, error))
    return false;
  matmul.batch = product(*batch);
  Shape lhsStrides = broadcastStrides(*batch, lhsBatch);
  Shape rhsStrides = broadcastStrides(*batch, rhsBatch);
  matmul.lhsIndex.assign(matmul.batch, 0);
  matmul.rhsIndex.assign(matmul.batch, 0);
  for (int64_t p = 0; p < matmul.batch; ++p)
    for (int64_t d = static_cast<int64_t>(batch->size()) - 1, rest = p; d >= 0;
         --d) {
      int64_t index = rest % (*batch)[d];
      rest /= (*batch)[d];
      matmul.lhsIndex[p] += index * lhsStrides[d];
      matmul.rhsIndex[p] += index * rhsStrides[d];
    }
  return true;
}

bool makeGemmShape(const Launch &launch, GemmShape &gemm, std::string &error) {
  if (!checkArity(launch, 2, 3, 1, 1, error))
    return false;
  Attributes attributes(launch);
  gemm.alpha = attributes.real("alpha", 1.0);
  gemm.beta = attributes.real("beta", 1.0);
  gemm.transA = attributes.flag("trans_a", false);
  gemm.transB = attributes.flag("trans_b", false);
  if (!attributes.ok(error))
    return false;
  const OperandInfo &a = launch.inputs[0], &b = launch.inputs[1];
  if (a.shape.size() != 2 || b.shape.size() != 2)
    return fail(launch, error, "gemm operands must be 2-D");
  for (const OperandInfo &operand : launch.inputs)
    if (operand.dtype != a.dtype)
      return fail(launch, error, "operands have different element types");
  gemm.m = a.shape[gemm.transA ? 1 : 0];
  gemm.k = a.shape[gemm.transA ? 0 : 1];
  gemm.n = b.shape[gemm.transB ? 0 : 1];
  if (b.shape[gemm.transB ? 1 : 0] != gemm.k)
    return fail(launch, error,
                "contraction sizes differ: " + formatShape(a.shape) + " x " +
                    formatShape(b.shape));
  Shape shape = {gemm.m, gemm.n};
  gemm.hasC = launch.inputs.size() == 3;
  if (gemm.hasC) {
    const Shape &c = launch.inputs[2].shape;
    auto combined = broadcastShapes(c, shape);
    if (!combined || *combined != shape)
      return fail(launch, error,
                  "c " + formatShape(c) + " does not broadcast to " +
                      formatShape(shape));
    gemm.cStrides = broadcastStrides(shape, c);
  }
  return checkOutput(launch, 0, a.dtype, shape, error);
}

} // namespace trainc::rt
