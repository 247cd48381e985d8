//===- GeneratedReductionKernels.cpp - reductions, argmax, softmax --------===//
//
// graph.reduce_sum, reduce_mean and reduce_max over their axes, global
// average pooling (a mean over each plane), argmax, and softmax and
// log_softmax with their row statistics in scratch buffers. Each is a nest
// whose reduction dimensions accumulate into the output (KernelBuilder.h).
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/KernelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"

#include <limits>

using namespace mlir;

namespace trainc::conversion {
namespace {

Value combine(Reduce kind, OpBuilder &b, Location loc, Value accumulator,
              Value x) {
  if (kind == Reduce::Max)
    return arith::MaximumFOp::create(b, loc, accumulator, x);
  return arith::AddFOp::create(b, loc, accumulator, x);
}

/// Reduces input 0 over `axes` into output 0 (whatever its unit dims).
LogicalResult buildReduceOver(KernelBuilder &kb, Reduce kind,
                              ArrayRef<int64_t> axes) {
  ArrayRef<int64_t> shape = kb.inputType(0).getShape();
  Space space(shape);
  int64_t count = 1;
  for (int64_t axis : axes) {
    space.reduction[axis] = true;
    count *= shape[axis];
  }
  unsigned inputId = space.addAllBut([](unsigned) { return false; });
  unsigned outputId =
      space.addAllBut([&](unsigned dim) { return space.reduction[dim]; });
  space.dropUnitDims();
  space.collapse();
  Operand input{kb.input(0, space.shape(inputId)), inputId};
  Operand output{kb.output(0, space.shape(outputId)), outputId};
  kb.fill(space, output,
          kind == Reduce::Max ? -std::numeric_limits<double>::infinity() : 0.0);
  kb.nest(space, input, output, space.reduction,
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            return {combine(kind, b, loc, x[1], x[0])};
          });
  if (kind == Reduce::Mean) {
    Space own(space.shape(outputId));
    unsigned id = own.addAllBut([](unsigned) { return false; });
    kb.nest(
        own, {}, {{output.buffer, id}}, own.reduction,
        [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
          Value n = constant(b, loc, x[0].getType(), double(count));
          return {arith::DivFOp::create(b, loc, x[0], n)};
        });
  }
  return success();
}

/// The maxima of `input` (operand of `space`) along its reduction
/// dimensions, in a new scratch buffer of operand `rowId`'s shape.
Operand rowMaxima(KernelBuilder &kb, const Space &space, Operand input,
                  unsigned rowId) {
  Type element = cast<MemRefType>(input.buffer.getType()).getElementType();
  Operand max{kb.scratch(space.shape(rowId), element), rowId};
  kb.fill(space, max, -std::numeric_limits<double>::infinity());
  kb.nest(space, input, max, space.reduction,
          [](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            return {arith::MaximumFOp::create(b, loc, x[1], x[0])};
          });
  return max;
}

} // namespace

LogicalResult buildReduce(KernelBuilder &kb, Reduce kind) {
  auto axes = kb.launch.getOptions().getAs<DenseI64ArrayAttr>("axes");
  if (!axes)
    return kb.launch.emitError("a reduction needs its axes");
  return buildReduceOver(kb, kind, axes.asArrayRef());
}

/// graph.global_avg_pool: [N, C, D...] -> [N, C, 1...], the mean of each
/// plane.
LogicalResult buildGlobalAvgPool(KernelBuilder &kb) {
  int64_t rank = kb.inputType(0).getRank();
  if (rank < 3)
    return kb.launch.emitError("global_avg_pool expects [N, C, D...]");
  SmallVector<int64_t> spatial;
  for (int64_t axis = 2; axis < rank; ++axis)
    spatial.push_back(axis);
  return buildReduceOver(kb, Reduce::Mean, spatial);
}

/// graph.argmax along `axis`, as the reference kernel
/// (ReductionKernels.cpp): the row maxima first (maximumf, so that a NaN
/// wins), then the first position holding the maximum as a min-reduction
/// of the positions (with select_last_index the last, a max-reduction); a
/// NaN maximum is held by the row's NaNs. A row of size 0 gives 0.
LogicalResult buildArgMax(KernelBuilder &kb) {
  auto axisAttr = kb.launch.getOptions().getAs<IntegerAttr>("axis");
  auto lastAttr = kb.launch.getOptions().getAs<BoolAttr>("select_last_index");
  ArrayRef<int64_t> shape = kb.inputType(0).getShape();
  if (!axisAttr || axisAttr.getInt() < 0 ||
      axisAttr.getInt() >= static_cast<int64_t>(shape.size()))
    return kb.launch.emitError("argmax needs an axis of its input");
  int64_t axis = axisAttr.getInt(), size = shape[axis];
  bool last = lastAttr && lastAttr.getValue();
  Space space(shape);
  space.reduction[axis] = true;
  unsigned inputId = space.addAllBut([](unsigned) { return false; });
  unsigned rowId = space.addAllBut([&](unsigned dim) { return dim == axis; });
  space.dropUnitDims();
  space.collapse();
  std::optional<unsigned> axisDim = space.find(axis);
  Operand input{kb.input(0, space.shape(inputId)), inputId};
  Operand output{kb.output(0, space.shape(rowId)), rowId};
  if (size == 0) {
    kb.fill(space, output, 0.0);
    return success();
  }
  Operand max = rowMaxima(kb, space, input, rowId);
  int64_t none = last ? -1 : size;
  kb.fill(space, output, double(none));
  kb.nest(space, {input, max}, output, space.reduction,
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            using P = arith::CmpFPredicate;
            Value equal = arith::CmpFOp::create(b, loc, P::OEQ, x[0], x[1]);
            Value bothNaN = arith::AndIOp::create(
                b, loc, arith::CmpFOp::create(b, loc, P::UNO, x[0], x[0]),
                arith::CmpFOp::create(b, loc, P::UNO, x[1], x[1]));
            Value holds = arith::OrIOp::create(b, loc, equal, bothNaN);
            Value position =
                axisDim ? loop::IndexOp::create(b, loc, *axisDim).getResult()
                        : arith::ConstantIndexOp::create(b, loc, 0).getResult();
            Value index =
                arith::IndexCastOp::create(b, loc, b.getI64Type(), position);
            Value candidate = arith::SelectOp::create(
                b, loc, holds, index,
                arith::ConstantIntOp::create(b, loc, none, 64));
            if (last)
              return {arith::MaxSIOp::create(b, loc, x[2], candidate)};
            return {arith::MinSIOp::create(b, loc, x[2], candidate)};
          });
  return success();
}

std::pair<Operand, Operand> softmaxStatistics(KernelBuilder &kb,
                                              const Space &space, Operand input,
                                              unsigned rowId) {
  Type element = cast<MemRefType>(input.buffer.getType()).getElementType();
  Operand max = rowMaxima(kb, space, input, rowId);
  Operand sum{kb.scratch(space.shape(rowId), element), rowId};
  kb.fill(space, sum, 0.0);
  kb.nest(space, {input, max}, sum, space.reduction,
          [](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value shifted = arith::SubFOp::create(b, loc, x[0], x[1]);
            Value exp = math::ExpOp::create(b, loc, shifted);
            return {arith::AddFOp::create(b, loc, x[2], exp)};
          });
  return {max, sum};
}

/// softmax / log_softmax along `axis`, with the row maxima and sums of
/// exponentials in scratch buffers.
LogicalResult buildSoftmax(KernelBuilder &kb, bool logarithm) {
  auto axisAttr = kb.launch.getOptions().getAs<IntegerAttr>("axis");
  ArrayRef<int64_t> shape = kb.inputType(0).getShape();
  if (!axisAttr || axisAttr.getInt() < 0 ||
      axisAttr.getInt() >= static_cast<int64_t>(shape.size()))
    return kb.launch.emitError("softmax needs an axis of its input");
  Space space(shape);
  space.reduction[axisAttr.getInt()] = true;
  unsigned inputId = space.addAllBut([](unsigned) { return false; });
  unsigned outputId = space.addAllBut([](unsigned) { return false; });
  unsigned rowId =
      space.addAllBut([&](unsigned dim) { return space.reduction[dim]; });
  space.dropUnitDims();
  space.collapse();
  Operand input{kb.input(0, space.shape(inputId)), inputId};
  Operand output{kb.output(0, space.shape(outputId)), outputId};
  SmallVector<bool> parallel(space.domain.size(), false);
  if (!logarithm) {
    // exp(x - max) once per element: into the output, summed from there,
    // then divided in place. The same values in the same order as
    // softmaxStatistics' sum, so the same bits, with half the exps.
    Operand max = rowMaxima(kb, space, input, rowId);
    kb.nest(space, {input, max}, output, parallel,
            [](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
              return {math::ExpOp::create(
                  b, loc, arith::SubFOp::create(b, loc, x[0], x[1]))};
            });
    Operand sum{
        kb.scratch(space.shape(rowId), kb.inputType(0).getElementType()),
        rowId};
    kb.fill(space, sum, 0.0);
    kb.nest(space, output, sum, space.reduction,
            [](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
              return {arith::AddFOp::create(b, loc, x[1], x[0])};
            });
    kb.nest(space, {output, sum}, output, parallel,
            [](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
              return {arith::DivFOp::create(b, loc, x[0], x[1])};
            });
    return success();
  }
  auto [max, sum] = softmaxStatistics(kb, space, input, rowId);
  kb.nest(space, {input, max, sum}, output, parallel,
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value shifted = arith::SubFOp::create(b, loc, x[0], x[1]);
            if (logarithm)
              return {arith::SubFOp::create(b, loc, shifted,
                                            math::LogOp::create(b, loc, x[2]))};
            return {arith::DivFOp::create(
                b, loc, math::ExpOp::create(b, loc, shifted), x[2])};
          });
  return success();
}

} // namespace trainc::conversion
