//===- GradientBuilder.cpp - math on graph values, for gradients ----------===//
#include "dialects/graph/GradientBuilder.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

namespace trainc::graph {

Value GradientBuilder::scalar(double value, Value like) {
  auto type = RankedTensorType::get({}, getElementTypeOrSelf(like.getType()));
  Attribute element =
      llvm::isa<FloatType>(type.getElementType())
          ? Attribute(b.getFloatAttr(type.getElementType(), value))
          : Attribute(b.getIntegerAttr(type.getElementType(),
                                       static_cast<int64_t>(value)));
  return ConstantOp::create(b, loc, DenseElementsAttr::get(type, element));
}

Value GradientBuilder::zeros(Type type) {
  auto tensorType = llvm::cast<RankedTensorType>(type);
  Attribute element =
      llvm::isa<FloatType>(tensorType.getElementType())
          ? Attribute(b.getFloatAttr(tensorType.getElementType(), 0.0))
          : Attribute(b.getIntegerAttr(tensorType.getElementType(), 0));
  return ConstantOp::create(b, loc, DenseElementsAttr::get(tensorType, element));
}

Value GradientBuilder::add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
Value GradientBuilder::sub(Value x, Value y) { return SubOp::create(b, loc, x, y); }
Value GradientBuilder::mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
Value GradientBuilder::div(Value x, Value y) { return DivOp::create(b, loc, x, y); }
Value GradientBuilder::pow(Value x, Value y) { return PowOp::create(b, loc, x, y); }
Value GradientBuilder::neg(Value x) { return NegOp::create(b, loc, x); }
Value GradientBuilder::exp(Value x) { return ExpOp::create(b, loc, x); }
Value GradientBuilder::log(Value x) { return LogOp::create(b, loc, x); }
Value GradientBuilder::sqrt(Value x) { return SqrtOp::create(b, loc, x); }
Value GradientBuilder::tanh(Value x) { return TanhOp::create(b, loc, x); }
Value GradientBuilder::erf(Value x) { return ErfOp::create(b, loc, x); }
Value GradientBuilder::sin(Value x) { return SinOp::create(b, loc, x); }
Value GradientBuilder::cos(Value x) { return CosOp::create(b, loc, x); }
Value GradientBuilder::sigmoid(Value x) { return SigmoidOp::create(b, loc, x); }
Value GradientBuilder::greater(Value x, Value y) {
  return GreaterOp::create(b, loc, x, y);
}
Value GradientBuilder::less(Value x, Value y) {
  return LessOp::create(b, loc, x, y);
}
Value GradientBuilder::greaterEqual(Value x, Value y) {
  return GreaterEqualOp::create(b, loc, x, y);
}
Value GradientBuilder::lessEqual(Value x, Value y) {
  return LessEqualOp::create(b, loc, x, y);
}
Value GradientBuilder::equal(Value x, Value y) {
  return EqualOp::create(b, loc, x, y);
}
Value GradientBuilder::where(Value condition, Value x, Value y) {
  return WhereOp::create(b, loc, condition, x, y);
}
Value GradientBuilder::cast(Value x, Type elementType) {
  if (getElementTypeOrSelf(x.getType()) == elementType)
    return x;
  return CastOp::create(b, loc, x, elementType);
}

Value GradientBuilder::reshape(Value x, ArrayRef<int64_t> shape) {
  if (llvm::cast<RankedTensorType>(x.getType()).getShape() == shape)
    return x;
  return ReshapeOp::create(b, loc, x, shape);
}

Value GradientBuilder::transpose(Value x, ArrayRef<int64_t> perm) {
  return TransposeOp::create(b, loc, x, perm);
}

Value GradientBuilder::transposeLastTwo(Value x) {
  int64_t rank = llvm::cast<RankedTensorType>(x.getType()).getRank();
  SmallVector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i)
    perm.push_back(i);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return transpose(x, perm);
}

Value GradientBuilder::expand(Value x, ArrayRef<int64_t> shape) {
  if (llvm::cast<RankedTensorType>(x.getType()).getShape() == shape)
    return x;
  return ExpandOp::create(b, loc, x, shape);
}

Value GradientBuilder::reduceSum(Value x, ArrayRef<int64_t> axes,
                                 bool keepdims) {
  if (axes.empty())
    return x;
  return ReduceSumOp::create(b, loc, x, axes, keepdims);
}

Value GradientBuilder::sumAll(Value x) {
  auto axes = llvm::to_vector(llvm::seq<int64_t>(
      0, llvm::cast<RankedTensorType>(x.getType()).getRank()));
  return reduceSum(x, axes, /*keepdims=*/false);
}

Value GradientBuilder::matmul(Value x, Value y) {
  return MatMulOp::create(b, loc, x, y);
}

Value GradientBuilder::gemm(Value x, Value y, bool transA, bool transB) {
  return GemmOp::create(b, loc, x, y, Value(), llvm::APFloat(1.0),
                        llvm::APFloat(1.0), transA, transB);
}

Value GradientBuilder::reduceTo(Value gradient, Type type) {
  auto gradientType = llvm::cast<RankedTensorType>(gradient.getType());
  auto targetType = llvm::cast<RankedTensorType>(type);
  if (gradientType == targetType)
    return gradient;
  int64_t extra = gradientType.getRank() - targetType.getRank();
  SmallVector<int64_t> axes;
  for (int64_t i = 0; i < gradientType.getRank(); ++i) {
    bool leading = i < extra;
    if (leading || (targetType.getDimSize(i - extra) == 1 &&
                    gradientType.getDimSize(i) != 1))
      axes.push_back(i);
  }
  Value reduced = reduceSum(gradient, axes, /*keepdims=*/true);
  return reshape(reduced, targetType.getShape());
}

} // namespace trainc::graph
