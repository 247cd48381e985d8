//===- GeneratedNormKernels.cpp - layer norm and its gradient -------------===//
//
// Row statistics (mean, inverse standard deviation) go to scratch buffers;
// the passes over the data read them. Accumulation is in f32 in the
// schedule's order (the reference kernels accumulate in double).
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/KernelBuilder.h"

#include "mlir/Dialect/Math/IR/Math.h"

namespace trainc::conversion {
namespace {

/// The iteration space of a layer norm over dims [axis, rank) of `shape`:
/// reductions over the normalized dims; per-row statistics index the rest.
struct LayerNormSpace {
  Space space;
  unsigned tensorId, normalizedId, rowId;
  int64_t count = 1; ///< elements per row
  SmallVector<bool> noReduction, overRows;

  LayerNormSpace(ArrayRef<int64_t> shape, int64_t axis) : space(shape) {
    for (int64_t dim = axis; dim < static_cast<int64_t>(shape.size()); ++dim) {
      space.reduction[dim] = true;
      count *= shape[dim];
    }
    tensorId = space.addAllBut([](unsigned) { return false; });
    normalizedId =
        space.addAllBut([&](unsigned dim) { return !space.reduction[dim]; });
    rowId = space.addAllBut([&](unsigned dim) { return space.reduction[dim]; });
    space.dropUnitDims();
    space.collapse();
    noReduction.assign(space.domain.size(), false);
    for (bool normalized : space.reduction)
      overRows.push_back(!normalized);
  }
};

/// The space of a layer norm launch whose data is input operand `input`;
/// nullopt (after an error) if its axis or epsilon is missing.
std::optional<LayerNormSpace> layerNormSpace(KernelBuilder &kb, unsigned input,
                                             double &epsilon) {
  auto axis = kb.launch.getOptions().getAs<IntegerAttr>("axis");
  auto epsilonAttr = kb.launch.getOptions().getAs<FloatAttr>("epsilon");
  MemRefType type = kb.inputType(input);
  if (!axis || !epsilonAttr || axis.getInt() < 0 ||
      axis.getInt() >= type.getRank()) {
    kb.launch.emitError("a layer norm needs an axis of its input and an "
                        "epsilon");
    return std::nullopt;
  }
  epsilon = epsilonAttr.getValueAsDouble();
  return LayerNormSpace(type.getShape(), axis.getInt());
}

/// Row means and inverse standard deviations of `input` into two new
/// scratch buffers.
std::pair<Operand, Operand> layerNormStatistics(KernelBuilder &kb,
                                                const LayerNormSpace &ln,
                                                Operand input, double epsilon) {
  const Space &space = ln.space;
  Type element = cast<MemRefType>(input.buffer.getType()).getElementType();
  Operand mean{kb.scratch(space.shape(ln.rowId), element), ln.rowId};
  Operand inverseStd{kb.scratch(space.shape(ln.rowId), element), ln.rowId};
  auto c = [&](OpBuilder &b, Location loc, double value) {
    return constant(b, loc, element, value);
  };
  auto perRow = [&](Operand stat, auto body) {
    Space own(space.shape(ln.rowId));
    unsigned id = own.addAllBut([](unsigned) { return false; });
    kb.nest(own, {}, {{stat.buffer, id}}, own.reduction, body);
  };
  kb.fill(space, mean, 0.0);
  kb.nest(space, input, mean, space.reduction,
          [](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            return {arith::AddFOp::create(b, loc, x[1], x[0])};
          });
  perRow(mean,
         [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
           return {arith::DivFOp::create(b, loc, x[0],
                                         c(b, loc, double(ln.count)))};
         });
  kb.fill(space, inverseStd, 0.0);
  kb.nest(space, {input, mean}, inverseStd, space.reduction,
          [](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value centered = arith::SubFOp::create(b, loc, x[0], x[1]);
            Value square = arith::MulFOp::create(b, loc, centered, centered);
            return {arith::AddFOp::create(b, loc, x[2], square)};
          });
  perRow(inverseStd,
         [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
           Value variance =
               arith::DivFOp::create(b, loc, x[0], c(b, loc, double(ln.count)));
           Value shifted =
               arith::AddFOp::create(b, loc, variance, c(b, loc, epsilon));
           return {arith::DivFOp::create(
               b, loc, c(b, loc, 1.0), math::SqrtOp::create(b, loc, shifted))};
         });
  return {mean, inverseStd};
}

/// (x - mean) * inverseStd from the elements of x, mean, inverseStd.
Value normalize(OpBuilder &b, Location loc, Value x, Value mean,
                Value inverseStd) {
  return arith::MulFOp::create(b, loc, arith::SubFOp::create(b, loc, x, mean),
                               inverseStd);
}

} // namespace

/// graph.layer_norm: the statistics, then one normalizing pass.
LogicalResult buildLayerNorm(KernelBuilder &kb) {
  double epsilon;
  std::optional<LayerNormSpace> ln = layerNormSpace(kb, 0, epsilon);
  if (!ln)
    return failure();
  const Space &space = ln->space;
  Operand input{kb.input(0, space.shape(ln->tensorId)), ln->tensorId};
  Operand scale{kb.input(1, space.shape(ln->normalizedId)), ln->normalizedId};
  bool hasBias = kb.launch.getInputs().size() == 3;
  SmallVector<Operand> inputs = {input};
  auto [mean, inverseStd] = layerNormStatistics(kb, *ln, input, epsilon);
  inputs.append({mean, inverseStd, scale});
  if (hasBias)
    inputs.push_back(
        {kb.input(2, space.shape(ln->normalizedId)), ln->normalizedId});
  Operand output{kb.output(0, space.shape(ln->tensorId)), ln->tensorId};
  kb.nest(space, inputs, output, ln->noReduction,
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value y = arith::MulFOp::create(
                b, loc, normalize(b, loc, x[0], x[1], x[2]), x[3]);
            if (hasBias)
              y = arith::AddFOp::create(b, loc, y, x[4]);
            return {y};
          });
  return success();
}

/// graph.layer_norm_backward(dy, x, scale) -> (dx, dscale, dbias): the
/// statistics again, the row sums of dy*scale and of dy*scale*normalized,
/// the input gradient, then the column sums over rows for scale and bias.
LogicalResult buildLayerNormBackward(KernelBuilder &kb) {
  double epsilon;
  std::optional<LayerNormSpace> ln = layerNormSpace(kb, 1, epsilon);
  if (!ln)
    return failure();
  const Space &space = ln->space;
  Type element = kb.inputType(1).getElementType();
  Operand dy{kb.input(0, space.shape(ln->tensorId)), ln->tensorId};
  Operand input{kb.input(1, space.shape(ln->tensorId)), ln->tensorId};
  Operand scale{kb.input(2, space.shape(ln->normalizedId)), ln->normalizedId};
  Operand dx{kb.output(0, space.shape(ln->tensorId)), ln->tensorId};
  Operand dscale{kb.output(1, space.shape(ln->normalizedId)), ln->normalizedId};
  Operand dbias{kb.output(2, space.shape(ln->normalizedId)), ln->normalizedId};
  auto [mean, inverseStd] = layerNormStatistics(kb, *ln, input, epsilon);
  Operand sumGrad{kb.scratch(space.shape(ln->rowId), element), ln->rowId};
  Operand sumGradNormalized{kb.scratch(space.shape(ln->rowId), element),
                            ln->rowId};
  double count = double(ln->count);

  kb.fill(space, sumGrad, 0.0);
  kb.fill(space, sumGradNormalized, 0.0);
  kb.nest(space, {dy, input, scale, mean, inverseStd},
          {sumGrad, sumGradNormalized}, space.reduction,
          [](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value g = arith::MulFOp::create(b, loc, x[0], x[2]);
            Value n = normalize(b, loc, x[1], x[3], x[4]);
            return {arith::AddFOp::create(b, loc, x[5], g),
                    arith::AddFOp::create(b, loc, x[6],
                                          arith::MulFOp::create(b, loc, g, n))};
          });
  kb.nest(space,
          {dy, input, scale, mean, inverseStd, sumGrad, sumGradNormalized}, dx,
          ln->noReduction,
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value g = arith::MulFOp::create(b, loc, x[0], x[2]);
            Value n = normalize(b, loc, x[1], x[3], x[4]);
            Value size = constant(b, loc, g.getType(), count);
            Value inner = arith::SubFOp::create(
                b, loc,
                arith::SubFOp::create(
                    b, loc, arith::MulFOp::create(b, loc, size, g), x[5]),
                arith::MulFOp::create(b, loc, n, x[6]));
            Value factor = arith::DivFOp::create(b, loc, x[4], size);
            return {arith::MulFOp::create(b, loc, factor, inner)};
          });
  kb.fill(space, dscale, 0.0);
  kb.fill(space, dbias, 0.0);
  kb.nest(space, {dy, input, mean, inverseStd}, {dscale, dbias}, ln->overRows,
          [](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value n = normalize(b, loc, x[1], x[2], x[3]);
            return {arith::AddFOp::create(
                        b, loc, x[4], arith::MulFOp::create(b, loc, x[0], n)),
                    arith::AddFOp::create(b, loc, x[5], x[0])};
          });
  return success();
}

} // namespace trainc::conversion
