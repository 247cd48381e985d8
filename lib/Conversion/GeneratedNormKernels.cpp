//===- GeneratedNormKernels.cpp - layer norm, batch norm, their gradients -===//
//
// Statistics (the sums of the elements and of their squares) go to scratch
// buffers indexed like the statistic: a layer norm's rows, a batch norm's
// channels. The passes over the data read them. Accumulation is in the
// schedule's order, in f32 for layer norm (squared deviations from the
// mean, a second pass), in f64 for batch norm's statistics (raw squares,
// in the same pass as the sum) and its gradient's sums (as PyTorch's CPU
// kernels, which sum them in double across the batch, and the reference
// kernels, which accumulate in double).
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/NormNests.h"

#include "mlir/Dialect/Math/IR/Math.h"

namespace trainc::conversion {
using namespace norm;

//===----------------------------------------------------------------------===//
// The shared nests (NormNests.h) and their helpers
//===----------------------------------------------------------------------===//

Type norm::elementOf(Operand operand) {
  return cast<MemRefType>(operand.buffer.getType()).getElementType();
}

Value norm::widen(OpBuilder &b, Location loc, Value x, Type type) {
  return x.getType() == type ? x
                             : Value(arith::ExtFOp::create(b, loc, type, x));
}

Value norm::roundTo(OpBuilder &b, Location loc, Value x, Type type) {
  return x.getType() == type ? x
                             : Value(arith::TruncFOp::create(b, loc, type, x));
}

void norm::perStatistic(KernelBuilder &kb, const NormSpace &ns,
                        ArrayRef<Value> inputs, ArrayRef<Value> outputs,
                        Body body) {
  Space own(ns.statisticShape());
  unsigned id = own.addAllBut(none);
  auto operands = [&](ArrayRef<Value> buffers) {
    return llvm::map_to_vector(buffers, [&](Value buffer) {
      return Operand{buffer, id};
    });
  };
  kb.nest(own, operands(inputs), operands(outputs), own.reduction, body);
}

loop::NestOp norm::accumulate(KernelBuilder &kb, const Space &space,
                              ArrayRef<Operand> inputs, ArrayRef<Operand> sums,
                              ArrayRef<bool> reduction, Body term,
                              bool zeroed) {
  if (!zeroed)
    for (Operand sum : sums)
      kb.fill(space, sum, 0.0);
  return kb.nest(
      space, inputs, sums, reduction,
      [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        SmallVector<Value> terms = term(b, loc, x.take_front(inputs.size()));
        SmallVector<Value> results;
        for (auto [sum, value] : llvm::zip(x.drop_front(inputs.size()), terms))
          results.push_back(arith::AddFOp::create(b, loc, sum, value));
        return results;
      });
}

namespace {

/// The sums of term(elements of `inputs`) over the reduced dims, into the
/// statistic-indexed `sums` (zeroed first unless `zeroed`).
void sumPerStatistic(KernelBuilder &kb, const NormSpace &ns,
                     ArrayRef<Operand> inputs, ArrayRef<Operand> sums,
                     Body term, bool zeroed = false) {
  accumulate(kb, ns.space, inputs, sums, ns.space.reduction, term, zeroed);
}

/// Zeroes the statistic-indexed `sums` in one nest.
void zeroPerStatistic(KernelBuilder &kb, const NormSpace &ns,
                      ArrayRef<Operand> sums) {
  SmallVector<Value> buffers =
      llvm::map_to_vector(sums, [](Operand sum) { return sum.buffer; });
  perStatistic(
      kb, ns, {}, buffers,
      [&](OpBuilder &b, Location loc, ValueRange) -> SmallVector<Value> {
        return llvm::map_to_vector(sums, [&](Operand sum) {
          return constant(b, loc, elementOf(sum), 0.0);
        });
      });
}

/// The moments of `input` per statistic, the sum of its elements and a
/// sum of squares, in two new scratch buffers: of the input's compute type
/// and the squares centered (a second pass, around the mean of the
/// first: no cancellation in f32), or with `wide` f64 sums (as PyTorch's
/// CPU batch norm: a channel's statistic sums N*H*W values, and f32 sums
/// of that many carry several times its rounding noise) of the elements
/// and their raw squares in one pass (Squares::Raw). One nest zeroes both
/// sums and `alsoZero` (sums the caller accumulates later); the callers
/// turn the moments into statistics in a nest of their own (meanOf,
/// roundTo).
struct Moments {
  Operand sum, squares;
  double count;
  Squares kind;
};
Moments sumMoments(KernelBuilder &kb, const NormSpace &ns, Operand input,
                   bool wide, ArrayRef<Operand> alsoZero = {}) {
  Type element = kb.computeType(elementOf(input));
  Type sumType = wide ? kb.builder.getF64Type() : element;
  Moments moments{{kb.scratch(ns.statisticShape(), sumType), ns.statisticId},
                  {kb.scratch(ns.statisticShape(), sumType), ns.statisticId},
                  double(ns.count),
                  wide ? Squares::Raw : Squares::Centered};
  SmallVector<Operand> zeroed = {moments.sum, moments.squares};
  llvm::append_range(zeroed, alsoZero);
  zeroPerStatistic(kb, ns, zeroed);
  if (wide) {
    sumPerStatistic(kb, ns, input, {moments.sum, moments.squares},
                    rawMomentTerms, /*zeroed=*/true);
    return moments;
  }
  sumPerStatistic(
      kb, ns, input, moments.sum,
      [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        return {widen(b, loc, x[0], sumType)};
      },
      /*zeroed=*/true);
  sumPerStatistic(
      kb, ns, {input, moments.sum}, moments.squares,
      [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        Value mean = arith::DivFOp::create(
            b, loc, x[1], constant(b, loc, sumType, moments.count));
        Value centered =
            arith::SubFOp::create(b, loc, widen(b, loc, x[0], sumType), mean);
        return {arith::MulFOp::create(b, loc, centered, centered)};
      },
      /*zeroed=*/true);
  return moments;
}

/// sum / count, rounded to `element` (the mean of sumMoments).
Value meanOf(OpBuilder &b, Location loc, Value sum, double count,
             Type element) {
  Value mean = arith::DivFOp::create(b, loc, sum,
                                     constant(b, loc, sum.getType(), count));
  return roundTo(b, loc, mean, element);
}

/// squares / count: the biased variance.
Value varianceOf(OpBuilder &b, Location loc, Value squares, double count) {
  return arith::DivFOp::create(b, loc, squares,
                               constant(b, loc, squares.getType(), count));
}

/// 1 / sqrt(variance + epsilon).
Value inverseStdOf(OpBuilder &b, Location loc, Value variance, double epsilon) {
  Type type = variance.getType();
  Value shifted =
      arith::AddFOp::create(b, loc, variance, constant(b, loc, type, epsilon));
  return arith::DivFOp::create(b, loc, constant(b, loc, type, 1.0),
                               math::SqrtOp::create(b, loc, shifted));
}

} // namespace

SmallVector<Value> norm::rawMomentTerms(OpBuilder &b, Location loc,
                                        ValueRange x) {
  Value wide = widen(b, loc, x[0], b.getF64Type());
  return {wide, arith::MulFOp::create(b, loc, wide, wide)};
}

Value norm::squaredDeviations(OpBuilder &b, Location loc, Value sum,
                              Value squares, double count) {
  Type type = sum.getType();
  Value meanSquare =
      arith::DivFOp::create(b, loc, arith::MulFOp::create(b, loc, sum, sum),
                            constant(b, loc, type, count));
  return arith::MaximumFOp::create(
      b, loc, arith::SubFOp::create(b, loc, squares, meanSquare),
      constant(b, loc, type, 0.0));
}

void norm::statisticsOf(KernelBuilder &kb, const NormSpace &ns, Value sum,
                        Value squares, Squares kind, double count,
                        double epsilon, Value mean, Value inverseStd) {
  Type element = cast<MemRefType>(mean.getType()).getElementType();
  perStatistic(
      kb, ns, {sum, squares}, {mean, inverseStd},
      [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        Value deviations = kind == Squares::Raw
                               ? squaredDeviations(b, loc, x[0], x[1], count)
                               : x[1];
        Value squared = roundTo(b, loc, deviations, element);
        return {
            meanOf(b, loc, x[0], count, element),
            inverseStdOf(b, loc, varianceOf(b, loc, squared, count), epsilon)};
      });
}

void norm::trainingStatistics(KernelBuilder &kb, const NormSpace &bn,
                              ArrayRef<Value> inputs, ArrayRef<Value> outputs,
                              double count, double epsilon, double momentum) {
  Type element = cast<MemRefType>(outputs[0].getType()).getElementType();
  perStatistic(
      kb, bn, inputs, outputs,
      [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        auto c = [&](double value) { return constant(b, loc, element, value); };
        auto update = [&](Value running, Value batch) {
          return arith::AddFOp::create(
              b, loc, arith::MulFOp::create(b, loc, c(momentum), running),
              arith::MulFOp::create(b, loc, c(1.0 - momentum), batch));
        };
        Value batchMean = meanOf(b, loc, x[0], count, element);
        Value squares = roundTo(
            b, loc, squaredDeviations(b, loc, x[0], x[1], count), element);
        Value inverseStd =
            inverseStdOf(b, loc, varianceOf(b, loc, squares, count), epsilon);
        Value unbiased = arith::DivFOp::create(b, loc, squares, c(count - 1.0));
        return {batchMean, arith::MulFOp::create(b, loc, x[2], inverseStd),
                update(x[3], batchMean), update(x[4], unbiased)};
      });
}

Value norm::normalize(OpBuilder &b, Location loc, Value x, Value mean,
                      Value inverseStd) {
  return arith::MulFOp::create(b, loc, arith::SubFOp::create(b, loc, x, mean),
                               inverseStd);
}

// The division by count is a multiplication: one per element is costly.
Value norm::normalizationGradient(OpBuilder &b, Location loc, Value g,
                                  Value normalized, Value sumG,
                                  Value sumGNormalized, Value inverseStd,
                                  double count) {
  Type type = g.getType();
  Value scaled =
      arith::MulFOp::create(b, loc, constant(b, loc, type, count), g);
  Value inner = arith::SubFOp::create(
      b, loc, arith::SubFOp::create(b, loc, scaled, sumG),
      arith::MulFOp::create(b, loc, normalized, sumGNormalized));
  Value factor = arith::MulFOp::create(b, loc, inverseStd,
                                       constant(b, loc, type, 1.0 / count));
  return arith::MulFOp::create(b, loc, factor, inner);
}

namespace {

/// Means and inverse standard deviations of `input` per statistic, in two
/// new scratch buffers of its compute type (`wide` and `alsoZero` as
/// sumMoments).
std::pair<Operand, Operand> meanAndInverseStd(KernelBuilder &kb,
                                              const NormSpace &ns,
                                              Operand input, double epsilon,
                                              bool wide = false,
                                              ArrayRef<Operand> alsoZero = {}) {
  Type element = kb.computeType(elementOf(input));
  Moments moments = sumMoments(kb, ns, input, wide, alsoZero);
  Operand mean{kb.scratch(ns.statisticShape(), element), ns.statisticId};
  Operand inverseStd{kb.scratch(ns.statisticShape(), element), ns.statisticId};
  statisticsOf(kb, ns, moments.sum.buffer, moments.squares.buffer, moments.kind,
               moments.count, epsilon, mean.buffer, inverseStd.buffer);
  return {mean, inverseStd};
}

//===----------------------------------------------------------------------===//
// Layer norm
//===----------------------------------------------------------------------===//

/// A layer norm over dims [axis, rank): statistics per row; scale and bias
/// per normalized element.
struct LayerNormSpace : NormSpace {
  unsigned normalizedId;
  SmallVector<bool> overRows;

  LayerNormSpace(ArrayRef<int64_t> shape, int64_t axis)
      : NormSpace(shape, [&](unsigned dim) { return dim >= axis; }) {
    normalizedId =
        space.addAllBut([&](unsigned dim) { return !space.reduction[dim]; });
    simplify();
    for (bool normalized : space.reduction)
      overRows.push_back(!normalized);
  }
};

/// The space of a layer norm launch whose data is input operand `input`;
/// nullopt (after an error) if its axis or epsilon is missing.
std::optional<LayerNormSpace> layerNormSpace(KernelBuilder &kb, unsigned input,
                                             double &epsilon) {
  auto axis = kb.launch.getOptions().getAs<IntegerAttr>("axis");
  std::optional<double> epsilonOption = kb.optionalReal("epsilon");
  MemRefType type = kb.inputType(input);
  if (!axis || !epsilonOption || axis.getInt() < 0 ||
      axis.getInt() >= type.getRank()) {
    kb.launch.emitError("a layer norm needs an axis of its input and an "
                        "epsilon");
    return std::nullopt;
  }
  epsilon = *epsilonOption;
  return LayerNormSpace(type.getShape(), axis.getInt());
}

//===----------------------------------------------------------------------===//
// Batch norm
//===----------------------------------------------------------------------===//

/// The space of a batch norm launch whose data, [N, C, D...], is input
/// operand `input`: statistics per channel, over the batch and the spatial
/// dims; nullopt (after an error) if the data has no channel dim or the
/// epsilon is missing.
std::optional<NormSpace> batchNormSpace(KernelBuilder &kb, unsigned input,
                                        double &epsilon) {
  std::optional<double> epsilonOption = kb.optionalReal("epsilon");
  MemRefType type = kb.inputType(input);
  if (!epsilonOption || type.getRank() < 2) {
    kb.launch.emitError("a batch norm needs an [N, C, ...] input and an "
                        "epsilon");
    return std::nullopt;
  }
  epsilon = *epsilonOption;
  NormSpace bn(type.getShape(), [](unsigned dim) { return dim != 1; });
  bn.simplify();
  return bn;
}

/// The operands of batch_norm_training and batch_norm_inference, which
/// share a layout: (x, scale, bias, mean, var) -> (y, ...), mean and var
/// being the running statistics in training; and a scratch buffer for the
/// output's factor per channel.
struct BatchNormOperands {
  Operand input, output;
  Value scale, bias, mean, var, factor;

  BatchNormOperands(KernelBuilder &kb, const NormSpace &bn) {
    SmallVector<int64_t> tensor = bn.shape(bn.tensorId);
    SmallVector<int64_t> channels = bn.statisticShape();
    input = {kb.input(0, tensor), bn.tensorId};
    output = {kb.output(0, tensor), bn.tensorId};
    scale = kb.input(1, channels);
    bias = kb.input(2, channels);
    mean = kb.input(3, channels);
    var = kb.input(4, channels);
    factor = kb.scratch(channels, kb.computeType(elementOf(input)));
  }
};

/// output = (input - mean) * factor + bias, with `mean`, the factor and the
/// bias per channel.
void scaleAndShift(KernelBuilder &kb, const NormSpace &bn,
                   const BatchNormOperands &operands, Value mean) {
  unsigned channel = bn.statisticId;
  kb.nest(bn.space,
          {operands.input,
           {mean, channel},
           {operands.factor, channel},
           {operands.bias, channel}},
          operands.output, bn.noReduction,
          [](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value centered = arith::SubFOp::create(b, loc, x[0], x[1]);
            return {arith::AddFOp::create(
                b, loc, arith::MulFOp::create(b, loc, centered, x[2]), x[3])};
          });
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
  auto [mean, inverseStd] = meanAndInverseStd(kb, *ln, input, epsilon);
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
  Type element = kb.computeType(kb.inputType(1).getElementType());
  Operand dy{kb.input(0, space.shape(ln->tensorId)), ln->tensorId};
  Operand input{kb.input(1, space.shape(ln->tensorId)), ln->tensorId};
  Operand scale{kb.input(2, space.shape(ln->normalizedId)), ln->normalizedId};
  Operand dx{kb.output(0, space.shape(ln->tensorId)), ln->tensorId};
  Operand dscale{kb.output(1, space.shape(ln->normalizedId)), ln->normalizedId};
  Operand dbias{kb.output(2, space.shape(ln->normalizedId)), ln->normalizedId};
  Operand sumGrad{kb.scratch(ln->statisticShape(), element), ln->statisticId};
  Operand sumGradNormalized{kb.scratch(ln->statisticShape(), element),
                            ln->statisticId};
  auto [mean, inverseStd] =
      meanAndInverseStd(kb, *ln, input, epsilon, /*wide=*/false,
                        /*alsoZero=*/{sumGrad, sumGradNormalized});
  double count = double(ln->count);

  sumPerStatistic(
      kb, *ln, {dy, input, scale, mean, inverseStd},
      {sumGrad, sumGradNormalized},
      [](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        Value g = arith::MulFOp::create(b, loc, x[0], x[2]);
        Value n = normalize(b, loc, x[1], x[3], x[4]);
        return {g, arith::MulFOp::create(b, loc, g, n)};
      },
      /*zeroed=*/true);
  kb.nest(
      space, {dy, input, scale, mean, inverseStd, sumGrad, sumGradNormalized},
      dx, ln->noReduction,
      [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        Value g = arith::MulFOp::create(b, loc, x[0], x[2]);
        Value n = normalize(b, loc, x[1], x[3], x[4]);
        return {normalizationGradient(b, loc, g, n, x[5], x[6], x[4], count)};
      });
  accumulate(
      kb, space, {dy, input, mean, inverseStd}, {dscale, dbias}, ln->overRows,
      [](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        Value n = normalize(b, loc, x[1], x[2], x[3]);
        return {arith::MulFOp::create(b, loc, x[0], n), x[0]};
      });
  return success();
}

/// graph.batch_norm_training(x, scale, bias, running_mean, running_var) ->
/// (y, new_running_mean, new_running_var): the batch statistics; per
/// channel the output's factor and the running statistics; then one pass
/// over the data.
LogicalResult buildBatchNormTraining(KernelBuilder &kb) {
  double epsilon;
  std::optional<NormSpace> bn = batchNormSpace(kb, 0, epsilon);
  if (!bn)
    return failure();
  std::optional<double> momentum = kb.optionalReal("momentum");
  if (!momentum)
    return kb.launch.emitError("a batch norm in training needs a momentum");
  // The running variance's unbiased estimate divides by count - 1.
  if (bn->count <= 1)
    return kb.launch.emitError("batch statistics need more than one value "
                               "per channel");
  if (batchNormTrainingOverPlanes(kb, *bn, epsilon, *momentum))
    return success();
  BatchNormOperands operands(kb, *bn);
  Value newMean = kb.output(1, bn->statisticShape());
  Value newVar = kb.output(2, bn->statisticShape());
  Moments moments = sumMoments(kb, *bn, operands.input, /*wide=*/true);
  double count = moments.count;
  Type element = kb.computeType(elementOf(operands.input));
  Value mean = kb.scratch(bn->statisticShape(), element);
  trainingStatistics(kb, *bn,
                     {moments.sum.buffer, moments.squares.buffer,
                      operands.scale, operands.mean, operands.var},
                     {mean, operands.factor, newMean, newVar}, count, epsilon,
                     *momentum);
  scaleAndShift(kb, *bn, operands, mean);
  return success();
}

/// graph.batch_norm_inference(x, scale, bias, mean, var) -> y: per channel
/// scale / sqrt(var + epsilon), then one pass over the data.
LogicalResult buildBatchNormInference(KernelBuilder &kb) {
  double epsilon;
  std::optional<NormSpace> bn = batchNormSpace(kb, 0, epsilon);
  if (!bn)
    return failure();
  BatchNormOperands operands(kb, *bn);
  perStatistic(
      kb, *bn, {operands.scale, operands.var}, operands.factor,
      [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        return {arith::MulFOp::create(b, loc, x[0],
                                      inverseStdOf(b, loc, x[1], epsilon))};
      });
  scaleAndShift(kb, *bn, operands, operands.mean);
  return success();
}

/// graph.batch_norm_training_backward(dy, x, scale) -> (dx, dscale, dbias):
/// the batch statistics again; dbias = sum(dy) and dscale = sum(dy *
/// normalized) per channel, which are also the two sums the input gradient
/// needs; then the input gradient.
LogicalResult buildBatchNormTrainingBackward(KernelBuilder &kb) {
  double epsilon;
  std::optional<NormSpace> bn = batchNormSpace(kb, 1, epsilon);
  if (!bn)
    return failure();
  if (batchNormBackwardOverPlanes(kb, *bn, epsilon))
    return success();
  SmallVector<int64_t> tensor = bn->shape(bn->tensorId);
  SmallVector<int64_t> channels = bn->statisticShape();
  unsigned channel = bn->statisticId;
  Operand dy{kb.input(0, tensor), bn->tensorId};
  Operand input{kb.input(1, tensor), bn->tensorId};
  Operand scale{kb.input(2, channels), channel};
  Operand dx{kb.output(0, tensor), bn->tensorId};
  Operand dscale{kb.output(1, channels), channel};
  Operand dbias{kb.output(2, channels), channel};
  Type f64 = kb.builder.getF64Type();
  Operand sumDy{kb.scratch(channels, f64), channel};
  Operand sumDyNormalized{kb.scratch(channels, f64), channel};
  // The forward pass's statistics (f64 sums, see sumMoments); the nest
  // that zeroes their sums zeroes the gradient's too.
  auto [mean, inverseStd] =
      meanAndInverseStd(kb, *bn, input, epsilon, /*wide=*/true,
                        /*alsoZero=*/{sumDy, sumDyNormalized});
  double count = double(bn->count);

  sumPerStatistic(kb, *bn, {dy, input, mean, inverseStd},
                  {sumDy, sumDyNormalized}, batchNormGradientTerms,
                  /*zeroed=*/true);
  storeBatchNormGradientSums(kb, *bn, {sumDy.buffer, sumDyNormalized.buffer},
                             dbias.buffer, dscale.buffer);
  kb.nest(
      bn->space, {dy, input, scale, mean, inverseStd, dbias, dscale}, dx,
      bn->noReduction,
      [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        Value n = normalize(b, loc, x[1], x[3], x[4]);
        return {arith::MulFOp::create(
            b, loc, x[2],
            normalizationGradient(b, loc, x[0], n, x[5], x[6], x[4], count))};
      });
  return success();
}

SmallVector<Value> norm::batchNormGradientTerms(OpBuilder &b, Location loc,
                                                ValueRange x) {
  Type f64 = b.getF64Type();
  Value dy = widen(b, loc, x[0], f64);
  Value n = widen(b, loc, normalize(b, loc, x[1], x[2], x[3]), f64);
  return {dy, arith::MulFOp::create(b, loc, dy, n)};
}

void norm::storeBatchNormGradientSums(KernelBuilder &kb, const NormSpace &bn,
                                      ArrayRef<Value> sums, Value dbias,
                                      Value dscale) {
  Type element = cast<MemRefType>(dbias.getType()).getElementType();
  perStatistic(
      kb, bn, sums, {dbias, dscale},
      [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        return {roundTo(b, loc, x[0], element), roundTo(b, loc, x[1], element)};
      });
}

} // namespace trainc::conversion
