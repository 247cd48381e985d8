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
// Over planes so small that every output position o reads every input
// position i through a tap inside the kernel (3x3 windows with padding 1
// over 2x2 planes: ResNet-18's third stage on 32x32 images), the
// convolution is a product with its weight's matrix W = conv_matrix(w),
// [M * O..., C * D...], W[(m, o), (c, i)] = w[m, c, i - o * s + p]:
//
//   conv(x, w, b)               = gemm(x', W, b', trans_b)   -> [N, M, O...]
//   conv_backward_input(dy, w)  = matmul(dy', W)             -> [N, C, D...]
//   conv_backward_weight(dy, x) = conv_matrix_backward(gemm(dy', x', trans_a))
//
// with x' [N, C * D...], dy' [N, M * O...] and b' the bias at each output
// position. The products do the convolution's multiply-adds and no more;
// W is built once for the forward and the input gradient (CSE), and is at
// most kMatrixGrowth times the weight.
//
//===----------------------------------------------------------------------===//
#include "dialects/graph/Transforms/Passes.h"

#include "dialects/graph/ShapeInference.h"

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

/// The window of a convolution in matrix form (group 1, dilation 1, f32
/// and a static weight; every output position reads every input position
/// through a tap inside the kernel; a matrix at most kMatrixGrowth times
/// the weight; a static batch of at least kMatrixRows):
/// graph.conv_matrix's attributes.
struct MatrixForm {
  SmallVector<int64_t> input, output, strides, pads;
};
constexpr int64_t kMatrixGrowth = 2;
/// The matrix and its gradient move about 5 x kMatrixGrowth times the
/// weight's bytes that the convolution does not; the products repay that
/// where each matrix entry meets enough rows of the batch.
constexpr int64_t kMatrixRows = 32;

std::optional<MatrixForm>
matrixForm(ArrayRef<int64_t> input, ArrayRef<int64_t> weight,
           ArrayRef<int64_t> output, ArrayRef<int64_t> strides,
           ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations, int64_t group,
           Type element) {
  size_t rank = input.size();
  if (rank < 3 || weight.size() != rank || output.size() != rank ||
      group != 1 || ShapedType::isDynamic(weight[0]) ||
      ShapedType::isDynamic(input[0]) || input[0] < kMatrixRows ||
      weight[1] != input[1] || !element.isF32() ||
      pads.size() != 2 * (rank - 2) || dilations.size() != rank - 2 ||
      strides.size() != rank - 2)
    return std::nullopt;
  MatrixForm form;
  int64_t pairs = 1, taps = 1;
  for (size_t d = 2; d < rank; ++d) {
    int64_t pad = pads[d - 2];
    if ((weight[d] > 1 && dilations[d - 2] != 1) ||
        !readsWholePlane(input[d], output[d], weight[d], strides[d - 2], pad))
      return std::nullopt;
    form.input.push_back(input[d]);
    form.output.push_back(output[d]);
    form.strides.push_back(strides[d - 2]);
    form.pads.push_back(pad);
    pairs *= input[d] * output[d];
    taps *= weight[d];
  }
  if (pairs > kMatrixGrowth * taps)
    return std::nullopt;
  return form;
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

/// The weight's matrix [M * O..., C * D...].
Value convMatrix(OpBuilder &b, Location loc, Value weight,
                 const MatrixForm &form) {
  return ConvMatrixOp::create(b, loc, weight, form.input, form.output,
                              form.strides, form.pads);
}

/// The matrix form of `op`, if it has one: the convolution is x as
/// [N, C * D...] times the transposed conv_matrix of its weight, its input
/// gradient dy as [N, M * O...] times the matrix, and its weight gradient
/// conv_matrix_backward of dy' x (trans_a).
Value matrixProduct(OpBuilder &b, Location loc, Operation *op) {
  if (auto conv = dyn_cast<ConvOp>(op)) {
    ArrayRef<int64_t> output = shapeOf(conv.getOutput());
    auto form =
        matrixForm(shapeOf(conv.getInput()), shapeOf(conv.getWeight()), output,
                   conv.getStrides(), conv.getPads(), conv.getDilations(),
                   conv.getGroup(), getElementTypeOrSelf(conv.getWeight()));
    if (!form)
      return {};
    Value bias = conv.getBias();
    if (bias) {
      // Each output channel's bias at each of its output positions.
      int64_t channels = output[1];
      int64_t positions = ShapedType::getNumElements(output.drop_front(2));
      bias = ExpandOp::create(
          b, loc,
          ReshapeOp::create(b, loc, bias, ArrayRef<int64_t>{channels, 1}),
          ArrayRef<int64_t>{channels, positions});
      bias = ReshapeOp::create(b, loc, bias,
                               ArrayRef<int64_t>{channels * positions});
    }
    Value flat = gemm(b, loc, flatten(b, loc, conv.getInput(), true),
                      convMatrix(b, loc, conv.getWeight(), *form), bias,
                      /*transA=*/false, /*transB=*/true);
    return unflatten(b, loc, flat, output, /*leadingIsBatch=*/true);
  }
  if (auto grad = dyn_cast<ConvBackwardInputOp>(op)) {
    auto form = matrixForm(grad.getInputShape(), shapeOf(grad.getWeight()),
                           shapeOf(grad.getGradOutput()), grad.getStrides(),
                           grad.getPads(), grad.getDilations(), grad.getGroup(),
                           getElementTypeOrSelf(grad.getWeight()));
    if (!form)
      return {};
    Value flat =
        MatMulOp::create(b, loc, flatten(b, loc, grad.getGradOutput(), true),
                         convMatrix(b, loc, grad.getWeight(), *form));
    return unflatten(b, loc, flat, grad.getInputShape(),
                     /*leadingIsBatch=*/true);
  }
  if (auto grad = dyn_cast<ConvBackwardWeightOp>(op)) {
    auto form = matrixForm(shapeOf(grad.getInput()), grad.getWeightShape(),
                           shapeOf(grad.getGradOutput()), grad.getStrides(),
                           grad.getPads(), grad.getDilations(), grad.getGroup(),
                           getElementTypeOrSelf(grad.getInput()));
    if (!form)
      return {};
    Value matrix = gemm(b, loc, flatten(b, loc, grad.getGradOutput(), true),
                        flatten(b, loc, grad.getInput(), true), Value(),
                        /*transA=*/true, /*transB=*/false);
    return ConvMatrixBackwardOp::create(b, loc, matrix, grad.getWeightShape(),
                                        form->input, form->output,
                                        form->strides, form->pads);
  }
  return {};
}

/// The product form of `op`, if its kernel covers its whole input plane.
Value planeProduct(OpBuilder &b, Location loc, Operation *op) {
  if (auto conv = dyn_cast<ConvOp>(op)) {
    ArrayRef<int64_t> output = shapeOf(conv.getOutput());
    if (!isProduct(shapeOf(conv.getInput()), shapeOf(conv.getWeight()), output,
                   conv.getPads(), conv.getDilations(), conv.getGroup()))
      return {};
    Value flat = gemm(b, loc, flatten(b, loc, conv.getInput(), true),
                      flatten(b, loc, conv.getWeight(), false), conv.getBias(),
                      /*transA=*/false, /*transB=*/true);
    return unflatten(b, loc, flat, output, /*leadingIsBatch=*/true);
  }
  if (auto grad = dyn_cast<ConvBackwardInputOp>(op)) {
    if (!isProduct(grad.getInputShape(), shapeOf(grad.getWeight()),
                   shapeOf(grad.getGradOutput()), grad.getPads(),
                   grad.getDilations(), grad.getGroup()))
      return {};
    Value flat =
        MatMulOp::create(b, loc, flatten(b, loc, grad.getGradOutput(), true),
                         flatten(b, loc, grad.getWeight(), false));
    return unflatten(b, loc, flat, grad.getInputShape(),
                     /*leadingIsBatch=*/true);
  }
  if (auto grad = dyn_cast<ConvBackwardWeightOp>(op)) {
    if (!isProduct(shapeOf(grad.getInput()), grad.getWeightShape(),
                   shapeOf(grad.getGradOutput()), grad.getPads(),
                   grad.getDilations(), grad.getGroup()))
      return {};
    Value flat = gemm(b, loc, flatten(b, loc, grad.getGradOutput(), true),
                      flatten(b, loc, grad.getInput(), true), Value(),
                      /*transA=*/true, /*transB=*/false);
    return unflatten(b, loc, flat, grad.getWeightShape(),
                     /*leadingIsBatch=*/false);
  }
  return {};
}

/// Rewrites one op if it is a product, with its weight as it is or as a
/// matrix; whether it did.
bool rewrite(Operation *op) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  Value product = planeProduct(b, loc, op);
  if (!product)
    product = matrixProduct(b, loc, op);
  if (!product)
    return false;
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
