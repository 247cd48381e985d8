//===- ConvsAsProducts.cpp - --trainc-convs-as-products -------------------===//
//
// A convolution whose kernel covers its whole unpadded input plane, so that
// the output plane is one position, is a matrix product: with K = C * D1 *
// ... * Dk and x, w flattened to [N, K] and [M, K],
//
//   conv(x, w, b)               = gemm(x', w', b, trans_b)   -> [N, M, 1...]
//   conv_backward_input(dy, w)  = matmul(dy', w')            -> [N, C, D...]
//   conv_backward_weight(dy, x) = gemm(dy', x', trans_a)     -> [M, C, D...]
//
// where dy' is dy as [N, M]. Every reshape is a view. Convolution
// libraries run these shapes far below their GEMM speed (oneDNN 2.6 on
// ResNet-18's last stage on 32x32 images, 2x2 -> 1x1 and 1x1 -> 1x1:
// 45-85 GFLOP/s), so the products take their place.
//
//===----------------------------------------------------------------------===//
#include "dialects/graph/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace trainc::graph {
#define GEN_PASS_DEF_CONVSASPRODUCTSPASS
#include "dialects/graph/Transforms/Passes.h.inc"
} // namespace trainc::graph

using namespace mlir;
using namespace trainc::graph;

namespace {

/// The shape of a ranked tensor whose dims past the first (the batch) are
/// static, or an empty ArrayRef.
ArrayRef<int64_t> shapeOf(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || type.getRank() < 3 ||
      llvm::any_of(type.getShape().drop_front(), ShapedType::isDynamic))
    return {};
  return type.getShape();
}

/// Whether a convolution of `input` ([N, C, D...]) by `weight`
/// ([M, C/group, K...]) into `output` ([N, M, O...]) reads each input
/// element once per output channel, through one tap: the kernel is the
/// input plane, unpadded, and the output plane one position.
bool isProduct(ArrayRef<int64_t> input, ArrayRef<int64_t> weight,
               ArrayRef<int64_t> output, ArrayRef<int64_t> pads,
               ArrayRef<int64_t> dilations, int64_t group) {
  size_t rank = input.size();
  if (rank < 3 || weight.size() != rank || output.size() != rank ||
      group != 1 || weight[1] != input[1] || pads.size() != 2 * (rank - 2) ||
      dilations.size() != rank - 2)
    return false;
  if (llvm::any_of(pads, [](int64_t pad) { return pad != 0; }))
    return false;
  for (size_t d = 2; d < rank; ++d)
    if (output[d] != 1 || weight[d] != input[d] ||
        (weight[d] > 1 && dilations[d - 2] != 1))
      return false;
  return true;
}

/// `x` of shape [R, rest...] as [R, product of rest]. A batch R stays
/// relative: the reshape's 0 copies it.
Value flatten(OpBuilder &b, Location loc, Value x, bool leadingIsBatch) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t inner = 1;
  for (int64_t size : type.getShape().drop_front())
    inner *= size;
  int64_t rows = leadingIsBatch ? 0 : type.getDimSize(0);
  return ReshapeOp::create(b, loc, x, ArrayRef<int64_t>{rows, inner});
}

/// A product's [R, ...] result in the convolution's shape `shape`; the
/// leading 0 keeps the batch relative where it is the batch.
Value unflatten(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> shape,
                bool leadingIsBatch) {
  SmallVector<int64_t> target(shape);
  if (leadingIsBatch)
    target[0] = 0;
  return ReshapeOp::create(b, loc, x, target);
}

Value gemm(OpBuilder &b, Location loc, Value lhs, Value rhs, Value bias,
           bool transA, bool transB) {
  return GemmOp::create(b, loc, lhs, rhs, bias, llvm::APFloat(1.0),
                        llvm::APFloat(1.0), transA, transB);
}

/// Erases the op defining `value` if nothing reads it, then the ops of its
/// operands that are left unread (the ops this pass built; the operands
/// of the convolution still have it as a reader).
void eraseIfUnused(Value value) {
  Operation *op = value.getDefiningOp();
  if (!op || !op->use_empty())
    return;
  SmallVector<Value> operands(op->getOperands());
  op->erase();
  for (Value operand : operands)
    eraseIfUnused(operand);
}

/// Rewrites one op if it is a product; whether it did.
bool rewrite(Operation *op) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  Value product;
  if (auto conv = dyn_cast<ConvOp>(op)) {
    ArrayRef<int64_t> output = shapeOf(conv.getOutput());
    if (!isProduct(shapeOf(conv.getInput()), shapeOf(conv.getWeight()), output,
                   conv.getPads(), conv.getDilations(), conv.getGroup()))
      return false;
    Value flat = gemm(b, loc, flatten(b, loc, conv.getInput(), true),
                      flatten(b, loc, conv.getWeight(), false), conv.getBias(),
                      /*transA=*/false, /*transB=*/true);
    product = unflatten(b, loc, flat, output, /*leadingIsBatch=*/true);
  } else if (auto grad = dyn_cast<ConvBackwardInputOp>(op)) {
    if (!isProduct(grad.getInputShape(), shapeOf(grad.getWeight()),
                   shapeOf(grad.getGradOutput()), grad.getPads(),
                   grad.getDilations(), grad.getGroup()))
      return false;
    Value flat =
        MatMulOp::create(b, loc, flatten(b, loc, grad.getGradOutput(), true),
                         flatten(b, loc, grad.getWeight(), false));
    product = unflatten(b, loc, flat, grad.getInputShape(),
                        /*leadingIsBatch=*/true);
  } else if (auto grad = dyn_cast<ConvBackwardWeightOp>(op)) {
    if (!isProduct(shapeOf(grad.getInput()), grad.getWeightShape(),
                   shapeOf(grad.getGradOutput()), grad.getPads(),
                   grad.getDilations(), grad.getGroup()))
      return false;
    Value flat = gemm(b, loc, flatten(b, loc, grad.getGradOutput(), true),
                      flatten(b, loc, grad.getInput(), true), Value(),
                      /*transA=*/true, /*transB=*/false);
    product = unflatten(b, loc, flat, grad.getWeightShape(),
                        /*leadingIsBatch=*/false);
  } else {
    return false;
  }
  if (product.getType() != op->getResult(0).getType()) {
    // The product's inferred type differs (a dynamic batch the
    // convolution's result names statically): leave the op alone.
    eraseIfUnused(product);
    return false;
  }
  op->getResult(0).replaceAllUsesWith(product);
  op->erase();
  return true;
}

struct ConvsAsProductsPass
    : trainc::graph::impl::ConvsAsProductsPassBase<ConvsAsProductsPass> {
  void runOnOperation() override {
    for (Operation *op : convolutionOps(getOperation()))
      rewrite(op);
  }
};

} // namespace
