//===- GeneratedProductKernels.cpp - matmul and gemm as loop nests --------===//
//
// graph.matmul (numpy semantics: batch dims broadcast, a 1-D operand is
// promoted to a row or a column) and graph.gemm (alpha * op(a) op(b) +
// beta * c) as a zero fill and one reduction nest over (batch..., m, k, n):
// out[m, n:n+V] += a[m, k] * b[k, n:n+V] vectorizes along n with `a`
// broadcast. Where `b` is read transposed the order is (m, n, k) so that
// both operands are contiguous along the reduction. The sums are f32 in
// the order of k (the reference kernels sum in double), so results differ
// from the reference by rounding only. oneDNN and OpenBLAS outrank these:
// they are the fallback that runs wherever those libraries cannot.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/KernelBuilder.h"

using namespace mlir;

namespace trainc::conversion {

namespace {

/// The product nest: `out` (zero-filled here) accumulates a * b over the
/// reduction dim of `space`.
void accumulateProduct(KernelBuilder &kb, Space &space, unsigned lhsId,
                       unsigned rhsId, unsigned outputId) {
  space.dropUnitDims();
  space.collapse();
  Operand lhs{kb.input(0, space.shape(lhsId)), lhsId};
  Operand rhs{kb.input(1, space.shape(rhsId)), rhsId};
  Operand output{kb.output(0, space.shape(outputId)), outputId};
  kb.fill(space, output, 0.0);
  kb.nest(space, {lhs, rhs}, output, space.reduction,
          [](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value product = arith::MulFOp::create(b, loc, x[0], x[1]);
            return {arith::AddFOp::create(b, loc, x[2], product)};
          });
}

} // namespace

LogicalResult buildMatmul(KernelBuilder &kb) {
  SmallVector<int64_t> lhs(kb.inputType(0).getShape());
  SmallVector<int64_t> rhs(kb.inputType(1).getShape());
  if (lhs.empty() || rhs.empty())
    return kb.launch.emitError("matmul operands must not be scalars");
  // numpy: a 1-D lhs is a row [1, K], a 1-D rhs a column [K, 1].
  if (lhs.size() == 1)
    lhs.insert(lhs.begin(), 1);
  if (rhs.size() == 1)
    rhs.push_back(1);
  int64_t m = lhs[lhs.size() - 2], k = lhs.back(), n = rhs.back();
  if (rhs[rhs.size() - 2] != k)
    return kb.launch.emitError("matmul contraction sizes differ");
  // The batch dims of the output, broadcast from both operands' (aligned on
  // the right).
  size_t batchRank = std::max(lhs.size(), rhs.size()) - 2;
  SmallVector<int64_t> batch(batchRank, 1);
  auto batchOf = [&](ArrayRef<int64_t> shape, size_t axis) -> int64_t {
    size_t offset = batchRank - (shape.size() - 2);
    return axis < offset ? 1 : shape[axis - offset];
  };
  for (size_t axis = 0; axis < batchRank; ++axis) {
    int64_t a = batchOf(lhs, axis), b = batchOf(rhs, axis);
    if (a != b && a != 1 && b != 1)
      return kb.launch.emitError("matmul batch dims do not broadcast");
    batch[axis] = std::max(a, b);
  }
  // Domain: batch..., m, k, n.
  SmallVector<int64_t> extents(batch);
  extents.append({m, k, n});
  Space space(extents);
  unsigned mDim = batchRank, kDim = batchRank + 1, nDim = batchRank + 2;
  space.reduction[kDim] = true;
  auto operandDims = [&](ArrayRef<int64_t> shape,
                         std::initializer_list<unsigned> matrix) {
    SmallVector<unsigned> dims;
    for (size_t axis = 0; axis < batchRank; ++axis)
      if (batchOf(shape, axis) == batch[axis])
        dims.push_back(axis);
    dims.append(matrix);
    return dims;
  };
  unsigned lhsId = space.add(operandDims(lhs, {mDim, kDim}));
  unsigned rhsId = space.add(operandDims(rhs, {kDim, nDim}));
  SmallVector<unsigned> outputDims;
  for (unsigned axis = 0; axis < batchRank; ++axis)
    outputDims.push_back(axis);
  outputDims.append({mDim, nDim});
  unsigned outputId = space.add(outputDims);
  // Broadcast batch dims of extent 1 in an operand are not among its dims;
  // promoted 1-D operands have extent 1 along m or n: dropped with the
  // other unit dims.
  accumulateProduct(kb, space, lhsId, rhsId, outputId);
  return success();
}

LogicalResult buildGemm(KernelBuilder &kb) {
  ArrayRef<int64_t> a = kb.inputType(0).getShape();
  ArrayRef<int64_t> b = kb.inputType(1).getShape();
  if (a.size() != 2 || b.size() != 2)
    return kb.launch.emitError("gemm operands must be 2-D");
  bool transA = kb.flag("trans_a"), transB = kb.flag("trans_b");
  int64_t m = a[transA ? 1 : 0], k = a[transA ? 0 : 1];
  int64_t n = b[transB ? 0 : 1];
  if (b[transB ? 1 : 0] != k)
    return kb.launch.emitError("gemm contraction sizes differ");
  // (m, k, n), or (m, n, k) where b is [n, k]: see the file comment.
  bool reduceInner = transB;
  unsigned mDim = 0, kDim = reduceInner ? 2 : 1, nDim = reduceInner ? 1 : 2;
  SmallVector<int64_t> extents(3);
  extents[mDim] = m;
  extents[kDim] = k;
  extents[nDim] = n;
  Space space(extents);
  space.reduction[kDim] = true;
  unsigned lhsId = space.add(transA ? SmallVector<unsigned>{kDim, mDim}
                                    : SmallVector<unsigned>{mDim, kDim});
  unsigned rhsId = space.add(transB ? SmallVector<unsigned>{nDim, kDim}
                                    : SmallVector<unsigned>{kDim, nDim});
  unsigned outputId = space.add({mDim, nDim});
  accumulateProduct(kb, space, lhsId, rhsId, outputId);

  // out = alpha * out + beta * c, c broadcast to [m, n].
  double alpha = kb.real("alpha", 1.0), beta = kb.real("beta", 1.0);
  bool hasC = kb.launch.getInputs().size() == 3;
  if (alpha == 1.0 && !hasC)
    return success();
  Space epilogue(ArrayRef<int64_t>{m, n});
  SmallVector<Operand> inputs;
  unsigned cId = 0;
  if (hasC) {
    ArrayRef<int64_t> c = kb.inputType(2).getShape();
    if (c.size() > 2)
      return kb.launch.emitError("gemm's c must broadcast to [M, N]");
    SmallVector<unsigned> dims;
    for (auto [axis, extent] : llvm::enumerate(c)) {
      unsigned dim = axis + 2 - c.size();
      if (extent == epilogue.domain[dim])
        dims.push_back(dim);
      else if (extent != 1)
        return kb.launch.emitError("gemm's c must broadcast to [M, N]");
    }
    cId = epilogue.add(dims);
  }
  unsigned resultId = epilogue.add({0, 1});
  // Not collapsed: the output keeps the shape the product nest gave it (m
  // and n apart, unit dims dropped), since a kernel sees each buffer in one
  // shape.
  epilogue.dropUnitDims();
  if (hasC)
    inputs.push_back({kb.input(2, epilogue.shape(cId)), cId});
  Operand result{kb.output(0, epilogue.shape(resultId)), resultId};
  kb.nest(epilogue, inputs, result, epilogue.reduction,
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value out = x.back();
            Type type = out.getType();
            if (alpha != 1.0)
              out = arith::MulFOp::create(b, loc, constant(b, loc, type, alpha),
                                          out);
            if (hasC) {
              Value c = x[0];
              if (beta != 1.0)
                c = arith::MulFOp::create(b, loc, constant(b, loc, type, beta),
                                          c);
              out = arith::AddFOp::create(b, loc, out, c);
            }
            return {out};
          });
  return success();
}

} // namespace trainc::conversion
