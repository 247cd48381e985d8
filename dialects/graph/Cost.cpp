//===- Cost.cpp - what one evaluation of a graph op costs -----------------===//
//
// CostOpInterface's defaults and the ops with flops of their own
// (CostInterface.td): products, convolutions, pooling, data movement.
//
//===----------------------------------------------------------------------===//
#include "dialects/graph/GraphOps.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

namespace trainc::graph {

static double elementsOf(Type type) {
  return static_cast<double>(cast<ShapedType>(type).getNumElements());
}

double largestElementCount(TypeRange operands, TypeRange results) {
  double largest = 0;
  for (TypeRange types : {operands, results})
    for (Type type : types)
      largest = std::max(largest, elementsOf(type));
  return largest;
}

double totalBytes(TypeRange operands, TypeRange results) {
  double bytes = 0;
  for (TypeRange types : {operands, results})
    for (Type type : types) {
      auto shaped = cast<ShapedType>(type);
      unsigned bits = shaped.getElementType().getIntOrFloatBitWidth();
      bytes += elementsOf(type) * std::max(1u, bits / 8);
    }
  return bytes;
}

std::optional<Cost> estimateCost(OperationName name, TypeRange operands,
                                 TypeRange results, DictionaryAttr attributes) {
  std::optional<RegisteredOperationName> registered = name.getRegisteredInfo();
  auto *cost =
      registered ? registered->getInterface<CostOpInterface>() : nullptr;
  if (!cost)
    return std::nullopt;
  return Cost{cost->estimateFlops(operands, results, attributes),
              cost->estimateBytes(operands, results)};
}

//===----------------------------------------------------------------------===//
// Products and convolutions: one multiply-add per (output, reduced) pair
//===----------------------------------------------------------------------===//

double MatMulOp::estimateFlops(TypeRange operands, TypeRange results,
                               DictionaryAttr) {
  ArrayRef<int64_t> lhs = cast<ShapedType>(operands[0]).getShape();
  return 2.0 * elementsOf(results[0]) * (lhs.empty() ? 1 : lhs.back());
}

double GemmOp::estimateFlops(TypeRange operands, TypeRange results,
                             DictionaryAttr attributes) {
  ArrayRef<int64_t> a = cast<ShapedType>(operands[0]).getShape();
  auto transposed =
      attributes ? attributes.getAs<BoolAttr>("trans_a") : nullptr;
  int64_t reduced = a.empty() ? 1 : a.back();
  if (transposed && transposed.getValue() && a.size() == 2)
    reduced = a[0];
  return 2.0 * elementsOf(results[0]) * reduced;
}

/// A convolution and its two gradients do the same multiply-adds: one per
/// (output-gradient element, weight element of its output channel).
static double convolutionFlops(Type activation, Type weight) {
  int64_t outputChannels = cast<ShapedType>(weight).getDimSize(0);
  return 2.0 * elementsOf(activation) * elementsOf(weight) /
         std::max<int64_t>(outputChannels, 1);
}

double ConvOp::estimateFlops(TypeRange operands, TypeRange results,
                             DictionaryAttr) {
  return convolutionFlops(results[0], operands[1]);
}

double ConvBackwardInputOp::estimateFlops(TypeRange operands, TypeRange,
                                          DictionaryAttr) {
  return convolutionFlops(operands[0], operands[1]);
}

double ConvBackwardWeightOp::estimateFlops(TypeRange operands,
                                           TypeRange results, DictionaryAttr) {
  return convolutionFlops(operands[0], results[0]);
}

//===----------------------------------------------------------------------===//
// Pooling: each window tap once per output position
//===----------------------------------------------------------------------===//

static double windowFlops(Type positions, DictionaryAttr attributes) {
  auto window = attributes ? attributes.getAs<DenseI64ArrayAttr>("kernel_shape")
                           : nullptr;
  double taps = 1;
  if (window)
    for (int64_t extent : window.asArrayRef())
      taps *= extent;
  return elementsOf(positions) * taps;
}

double MaxPoolOp::estimateFlops(TypeRange, TypeRange results,
                                DictionaryAttr attributes) {
  return windowFlops(results[0], attributes);
}

double AvgPoolOp::estimateFlops(TypeRange, TypeRange results,
                                DictionaryAttr attributes) {
  return windowFlops(results[0], attributes);
}

double MaxPoolBackwardOp::estimateFlops(TypeRange operands, TypeRange,
                                        DictionaryAttr attributes) {
  return windowFlops(operands[0], attributes);
}

double AvgPoolBackwardOp::estimateFlops(TypeRange operands, TypeRange,
                                        DictionaryAttr attributes) {
  return windowFlops(operands[0], attributes);
}

//===----------------------------------------------------------------------===//
// Data movement: no arithmetic
//===----------------------------------------------------------------------===//

#define TRAINC_MOVES_DATA(Op)                                                  \
  double Op::estimateFlops(TypeRange, TypeRange, DictionaryAttr) { return 0; }
TRAINC_MOVES_DATA(ReshapeOp)
TRAINC_MOVES_DATA(IdentityOp)
TRAINC_MOVES_DATA(TransposeOp)
TRAINC_MOVES_DATA(ExpandOp)
TRAINC_MOVES_DATA(ConcatOp)
TRAINC_MOVES_DATA(SliceOp)
TRAINC_MOVES_DATA(ConvMatrixOp)
TRAINC_MOVES_DATA(GatherOp)
TRAINC_MOVES_DATA(GatherElementsOp)
#undef TRAINC_MOVES_DATA

} // namespace trainc::graph
