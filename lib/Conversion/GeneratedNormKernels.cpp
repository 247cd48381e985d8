//===- GeneratedNormKernels.cpp - layer norm, batch norm, their gradients -===//
//
// Statistics (mean, sum of squared deviations) go to scratch buffers indexed
// like the statistic: a layer norm's rows, a batch norm's channels. The
// passes over the data read them. Accumulation is in the schedule's order,
// in f32 for layer norm and for batch norm's gradient sums, in f64 for
// batch norm's forward statistics (as PyTorch's CPU kernels and the
// reference kernels, which accumulate in double).
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/KernelBuilder.h"

#include "mlir/Dialect/Math/IR/Math.h"

namespace trainc::conversion {
namespace {

bool none(unsigned) { return false; }

/// The iteration space of a normalization: statistics are indexed by the
/// dims that are not reduced (a layer norm's rows, a batch norm's channels).
struct NormSpace {
  Space space;
  unsigned tensorId, statisticId;
  int64_t count = 1; ///< elements per statistic
  SmallVector<bool> noReduction;

  NormSpace(ArrayRef<int64_t> shape, llvm::function_ref<bool(unsigned)> reduced)
      : space(shape) {
    for (unsigned dim = 0; dim < shape.size(); ++dim) {
      if (!reduced(dim))
        continue;
      space.reduction[dim] = true;
      count *= shape[dim];
    }
    tensorId = space.addAllBut(none);
    statisticId =
        space.addAllBut([&](unsigned dim) { return space.reduction[dim]; });
  }

  /// Drops unit dims and merges contiguous ones; called once every operand
  /// is added.
  void simplify() {
    space.dropUnitDims();
    space.collapse();
    noReduction.assign(space.domain.size(), false);
  }

  SmallVector<int64_t> shape(unsigned id) const { return space.shape(id); }
  SmallVector<int64_t> statisticShape() const { return shape(statisticId); }
};

Type elementOf(Operand operand) {
  return cast<MemRefType>(operand.buffer.getType()).getElementType();
}

/// Zeroes `sums` (unless `zeroed`: an earlier nest did), then adds
/// term(elements of `inputs`) (one value per sum) into them over the
/// `reduction` dims of `space`; returns the summing nest.
loop::NestOp accumulate(KernelBuilder &kb, const Space &space,
                        ArrayRef<Operand> inputs, ArrayRef<Operand> sums,
                        ArrayRef<bool> reduction, Body term,
                        bool zeroed = false) {
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

/// The sums of term(elements of `inputs`) over the reduced dims, into the
/// statistic-indexed `sums` (zeroed first unless `zeroed`).
void sumPerStatistic(KernelBuilder &kb, const NormSpace &ns,
                     ArrayRef<Operand> inputs, ArrayRef<Operand> sums,
                     Body term, bool zeroed = false) {
  accumulate(kb, ns.space, inputs, sums, ns.space.reduction, term, zeroed);
}

/// A nest over the statistics' own shape; every buffer is indexed like a
/// statistic.
void perStatistic(KernelBuilder &kb, const NormSpace &ns,
                  ArrayRef<Value> inputs, ArrayRef<Value> outputs, Body body) {
  Space own(ns.statisticShape());
  unsigned id = own.addAllBut(none);
  auto operands = [&](ArrayRef<Value> buffers) {
    return llvm::map_to_vector(buffers, [&](Value buffer) {
      return Operand{buffer, id};
    });
  };
  kb.nest(own, operands(inputs), operands(outputs), own.reduction, body);
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

/// The raw moments of `input` per statistic: the sum of its elements and
/// the sum of squared deviations from their mean (two passes, as the
/// reference: no cancellation), in two new scratch buffers of the input's
/// compute type, or of f64 with `wide` (as PyTorch's CPU batch norm: a
/// channel's statistic sums N*H*W values, and f32 sums of that many carry
/// several times its rounding noise). One nest zeroes both sums and
/// `alsoZero` (sums the caller accumulates later); the callers turn the
/// moments into statistics in a nest of their own (meanOf, squaresOf).
struct Moments {
  Operand sum, squares;
  double count;
};
Moments sumMoments(KernelBuilder &kb, const NormSpace &ns, Operand input,
                   bool wide, ArrayRef<Operand> alsoZero = {}) {
  Type element = kb.computeType(elementOf(input));
  Type sumType = wide ? kb.builder.getF64Type() : element;
  Moments moments{{kb.scratch(ns.statisticShape(), sumType), ns.statisticId},
                  {kb.scratch(ns.statisticShape(), sumType), ns.statisticId},
                  double(ns.count)};
  SmallVector<Operand> zeroed = {moments.sum, moments.squares};
  llvm::append_range(zeroed, alsoZero);
  zeroPerStatistic(kb, ns, zeroed);
  auto widened = [sumType](OpBuilder &b, Location loc, Value x) {
    return x.getType() == sumType
               ? x
               : Value(arith::ExtFOp::create(b, loc, sumType, x));
  };
  sumPerStatistic(
      kb, ns, input, moments.sum,
      [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        return {widened(b, loc, x[0])};
      },
      /*zeroed=*/true);
  sumPerStatistic(
      kb, ns, {input, moments.sum}, moments.squares,
      [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        Value mean = arith::DivFOp::create(
            b, loc, x[1], constant(b, loc, sumType, moments.count));
        Value centered =
            arith::SubFOp::create(b, loc, widened(b, loc, x[0]), mean);
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
  return mean.getType() == element
             ? mean
             : Value(arith::TruncFOp::create(b, loc, element, mean));
}

/// The sum of squared deviations, rounded to `element`.
Value squaresOf(OpBuilder &b, Location loc, Value squares, Type element) {
  return squares.getType() == element
             ? squares
             : Value(arith::TruncFOp::create(b, loc, element, squares));
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

/// The means and inverse standard deviations (of `mean`'s type) from the
/// moments `sum` and `squares` of `count` elements per statistic.
void statisticsOf(KernelBuilder &kb, const NormSpace &ns, Value sum,
                  Value squares, double count, double epsilon, Value mean,
                  Value inverseStd) {
  Type element = cast<MemRefType>(mean.getType()).getElementType();
  perStatistic(
      kb, ns, {sum, squares}, {mean, inverseStd},
      [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        Value squared = squaresOf(b, loc, x[1], element);
        return {
            meanOf(b, loc, x[0], count, element),
            inverseStdOf(b, loc, varianceOf(b, loc, squared, count), epsilon)};
      });
}

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
  statisticsOf(kb, ns, moments.sum.buffer, moments.squares.buffer,
               moments.count, epsilon, mean.buffer, inverseStd.buffer);
  return {mean, inverseStd};
}

/// (x - mean) * inverseStd from the elements of x, mean, inverseStd.
Value normalize(OpBuilder &b, Location loc, Value x, Value mean,
                Value inverseStd) {
  return arith::MulFOp::create(b, loc, arith::SubFOp::create(b, loc, x, mean),
                               inverseStd);
}

/// The gradient of a normalization's input given g, the gradient of the
/// normalized value, and the sums over the statistic's elements of g and of
/// g * normalized (the statistics depend on every element):
/// inverseStd / count * (count * g - sum(g) - normalized * sum(g *
/// normalized)). The division by count is a multiplication: one per element is
/// costly.
Value normalizationGradient(OpBuilder &b, Location loc, Value g,
                            Value normalized, Value sumG, Value sumGNormalized,
                            Value inverseStd, double count) {
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

/// The batch mean, the output's factor and the running statistics per
/// channel, `outputs` (mean, factor, new running mean and variance), from
/// `inputs` (the f64 moments' sum and squares, scale, running mean and
/// variance): ONNX's momentum convention; the running variance takes the
/// unbiased batch variance, squares / (count - 1), as the reference does.
void trainingStatistics(KernelBuilder &kb, const NormSpace &bn,
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
        Value squares = squaresOf(b, loc, x[1], element);
        Value inverseStd =
            inverseStdOf(b, loc, varianceOf(b, loc, squares, count), epsilon);
        Value unbiased = arith::DivFOp::create(b, loc, squares, c(count - 1.0));
        return {batchMean, arith::MulFOp::create(b, loc, x[2], inverseStd),
                update(x[3], batchMean), update(x[4], unbiased)};
      });
}

/// A batch norm whose planes (the spatial dims, collapsed) hold more than
/// one element and fewer than a vector: the 2x2 planes of ResNet-18 at 32
/// px and of MobileNet at 64 px. Over [N, C, P] with P innermost every
/// pass ran vectors of P live lanes of 16 and, summing over N outside,
/// loaded and stored a channel's f64 sums at every row of P: 4 GB/s on
/// 32x256x2x2, 15-25 GB/s on larger planes (Zen 4). Here the passes run
/// over [N, C * P], whole vectors along C * P: a channel's sum is the sum
/// over N per (channel, position), then over the channel's P positions;
/// the per-channel values the passes read are first expanded to [C * P].
struct PlaneSpace {
  /// Below this many elements, the passes over [N, C * P] run on one
  /// thread: each moves a few hundred KB at most, and forking and joining
  /// cost more. Two batch norms over 32x256x2x2 on a Zen 4 with 2
  /// threads: forward 0.020-0.026 ms per step serial against 0.088
  /// forked, gradient 0.040-0.050 against 0.130 (`trainc compile
  /// --profile`; raising the threshold of every nest instead,
  /// loop::kParallelPoints, slowed the MLP by 7 %).
  static constexpr int64_t kSerialElements = 1 << 17;

  int64_t n, c, p;
  Space rows;                       ///< [N, C * P]
  unsigned tensor, position;        ///< operands [N, C * P] and [C * P] of rows
  Space channels;                   ///< [C, P]
  unsigned perPosition, perChannel; ///< operands [C, P] and [C] of channels

  PlaneSpace(int64_t n, int64_t c, int64_t p)
      : n(n), c(c), p(p), rows(ArrayRef<int64_t>{n, c * p}),
        tensor(rows.add({0, 1})), position(rows.add({1})),
        channels(ArrayRef<int64_t>{c, p}), perPosition(channels.add({0, 1})),
        perChannel(channels.add({0})) {}
};

/// `nest` (over ps.rows) on one thread when the tensor is small.
void serialIfSmall(const PlaneSpace &ps, loop::NestOp nest) {
  if (ps.n * ps.c * ps.p >= PlaneSpace::kSerialElements)
    return;
  nest.setScheduleAttr(loop::ScheduleAttr::get(
      nest.getContext(), -1, nest.getSchedule().getTile(),
      nest.getSchedule().getVectorize()));
}

/// The plane space of batch norm space `bn` ([N, C, P] once simplified),
/// if its planes are that small.
std::optional<PlaneSpace> smallPlanes(KernelBuilder &kb, const NormSpace &bn) {
  ArrayRef<int64_t> domain = bn.space.domain;
  if (domain.size() != 3 || !bn.space.reduction[0] || bn.space.reduction[1] ||
      !bn.space.reduction[2] || domain[2] < 2 || domain[2] >= kb.vectorLanes)
    return std::nullopt;
  return PlaneSpace(domain[0], domain[1], domain[2]);
}

/// A [C * P] scratch buffer of `element`, and its [C, P] view.
std::pair<Value, Value> positionScratch(KernelBuilder &kb, const PlaneSpace &ps,
                                        Type element) {
  Value flat = kb.scratch({ps.c * ps.p}, element);
  return {flat, kb.scratchView(flat, {ps.c, ps.p})};
}

/// The sums over the batch and the planes of term(elements of `inputs`,
/// operands of ps.rows) into the [C] buffers `sums`: over N per (channel,
/// position) into scratch of the sums' types, then over each channel's
/// positions.
void sumOverPlanes(KernelBuilder &kb, const PlaneSpace &ps,
                   ArrayRef<Operand> inputs, ArrayRef<Value> sums, Body term) {
  SmallVector<Operand> partials, grids, totals;
  for (Value sum : sums) {
    auto [flat, grid] = positionScratch(
        kb, ps, cast<MemRefType>(sum.getType()).getElementType());
    partials.push_back({flat, ps.position});
    grids.push_back({grid, ps.perPosition});
    totals.push_back({sum, ps.perChannel});
  }
  serialIfSmall(ps,
                accumulate(kb, ps.rows, inputs, partials, {true, false}, term));
  accumulate(kb, ps.channels, grids, totals, {false, true},
             [](OpBuilder &, Location, ValueRange x) -> SmallVector<Value> {
               return SmallVector<Value>(x);
             });
}

/// body(the [C] `values` of each channel), at each of its positions: new
/// [C * P] buffers of `types`.
SmallVector<Value> expandToPositions(KernelBuilder &kb, const PlaneSpace &ps,
                                     ArrayRef<Value> values,
                                     ArrayRef<Type> types, Body body) {
  SmallVector<Operand> inputs, outputs;
  SmallVector<Value> flats;
  for (Value value : values)
    inputs.push_back({value, ps.perChannel});
  for (Type type : types) {
    auto [flat, grid] = positionScratch(kb, ps, type);
    flats.push_back(flat);
    outputs.push_back({grid, ps.perPosition});
  }
  kb.nest(ps.channels, inputs, outputs, {false, false},
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            return body(b, loc, x.take_front(values.size()));
          });
  return flats;
}

/// The same values, expanded.
SmallVector<Value> expandToPositions(KernelBuilder &kb, const PlaneSpace &ps,
                                     ArrayRef<Value> values) {
  SmallVector<Type> types = llvm::map_to_vector(values, [](Value value) {
    return cast<MemRefType>(value.getType()).getElementType();
  });
  return expandToPositions(
      kb, ps, values, types,
      [](OpBuilder &, Location, ValueRange x) -> SmallVector<Value> {
        return SmallVector<Value>(x);
      });
}

/// The batch's f64 sum and sum of squared deviations per channel of
/// `input` (an operand of ps.rows), as sumMoments over small planes.
std::pair<Value, Value> planeMoments(KernelBuilder &kb, const PlaneSpace &ps,
                                     Operand input, double count) {
  Type f64 = kb.builder.getF64Type();
  auto widened = [f64](OpBuilder &b, Location loc, Value x) {
    return x.getType() == f64 ? x
                              : Value(arith::ExtFOp::create(b, loc, f64, x));
  };
  Value sum = kb.scratch({ps.c}, f64), squares = kb.scratch({ps.c}, f64);
  sumOverPlanes(
      kb, ps, input, sum,
      [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        return {widened(b, loc, x[0])};
      });
  Value mean = expandToPositions(
      kb, ps, sum, f64,
      [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        return {
            arith::DivFOp::create(b, loc, x[0], constant(b, loc, f64, count))};
      })[0];
  sumOverPlanes(
      kb, ps, {input, {mean, ps.position}}, squares,
      [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        Value centered =
            arith::SubFOp::create(b, loc, widened(b, loc, x[0]), x[1]);
        return {arith::MulFOp::create(b, loc, centered, centered)};
      });
  return {sum, squares};
}

/// batch_norm_training over small planes: buildBatchNormTraining's
/// statistics and per-channel values, its passes over [N, C * P].
void trainingOverPlanes(KernelBuilder &kb, const NormSpace &bn,
                        const PlaneSpace &ps, double epsilon, double momentum) {
  SmallVector<int64_t> tensor = {ps.n, ps.c * ps.p}, channels = {ps.c};
  Operand input{kb.input(0, tensor), ps.tensor};
  Operand output{kb.output(0, tensor), ps.tensor};
  Value scale = kb.input(1, channels), bias = kb.input(2, channels);
  Value running = kb.input(3, channels), runningVar = kb.input(4, channels);
  Value newMean = kb.output(1, channels), newVar = kb.output(2, channels);
  double count = double(bn.count);
  auto [sum, squares] = planeMoments(kb, ps, input, count);
  Type element = kb.computeType(elementOf(input));
  Value mean = kb.scratch(channels, element);
  Value factor = kb.scratch(channels, element);
  trainingStatistics(kb, bn, {sum, squares, scale, running, runningVar},
                     {mean, factor, newMean, newVar}, count, epsilon, momentum);
  SmallVector<Value> expanded = expandToPositions(kb, ps, {mean, factor, bias});
  loop::NestOp pass = kb.nest(
      ps.rows,
      {input,
       {expanded[0], ps.position},
       {expanded[1], ps.position},
       {expanded[2], ps.position}},
      output, {false, false},
      [](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        Value centered = arith::SubFOp::create(b, loc, x[0], x[1]);
        return {arith::AddFOp::create(
            b, loc, arith::MulFOp::create(b, loc, centered, x[2]), x[3])};
      });
  serialIfSmall(ps, pass);
}

/// batch_norm_training_backward over small planes, as
/// buildBatchNormTrainingBackward with its passes over [N, C * P].
void backwardOverPlanes(KernelBuilder &kb, const NormSpace &bn,
                        const PlaneSpace &ps, double epsilon) {
  SmallVector<int64_t> tensor = {ps.n, ps.c * ps.p}, channels = {ps.c};
  Operand dy{kb.input(0, tensor), ps.tensor};
  Operand input{kb.input(1, tensor), ps.tensor};
  Value scale = kb.input(2, channels);
  Operand dx{kb.output(0, tensor), ps.tensor};
  Value dscale = kb.output(1, channels), dbias = kb.output(2, channels);
  double count = double(bn.count);
  auto [sum, squares] = planeMoments(kb, ps, input, count);
  Type element = kb.computeType(elementOf(input));
  Value mean = kb.scratch(channels, element);
  Value inverseStd = kb.scratch(channels, element);
  statisticsOf(kb, bn, sum, squares, count, epsilon, mean, inverseStd);
  SmallVector<Value> statistics = expandToPositions(kb, ps, {mean, inverseStd});
  Operand meanAt{statistics[0], ps.position};
  Operand inverseStdAt{statistics[1], ps.position};
  sumOverPlanes(
      kb, ps, {dy, input, meanAt, inverseStdAt}, {dbias, dscale},
      [](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        Value n = normalize(b, loc, x[1], x[2], x[3]);
        return {x[0], arith::MulFOp::create(b, loc, x[0], n)};
      });
  SmallVector<Value> sums = expandToPositions(kb, ps, {scale, dbias, dscale});
  loop::NestOp pass = kb.nest(
      ps.rows,
      {dy,
       input,
       {sums[0], ps.position},
       meanAt,
       inverseStdAt,
       {sums[1], ps.position},
       {sums[2], ps.position}},
      dx, {false, false},
      [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        Value n = normalize(b, loc, x[1], x[3], x[4]);
        return {arith::MulFOp::create(
            b, loc, x[2],
            normalizationGradient(b, loc, x[0], n, x[5], x[6], x[4], count))};
      });
  serialIfSmall(ps, pass);
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
  if (std::optional<PlaneSpace> planes = smallPlanes(kb, *bn)) {
    trainingOverPlanes(kb, *bn, *planes, epsilon, *momentum);
    return success();
  }
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
  if (std::optional<PlaneSpace> planes = smallPlanes(kb, *bn)) {
    backwardOverPlanes(kb, *bn, *planes, epsilon);
    return success();
  }
  SmallVector<int64_t> tensor = bn->shape(bn->tensorId);
  SmallVector<int64_t> channels = bn->statisticShape();
  unsigned channel = bn->statisticId;
  Operand dy{kb.input(0, tensor), bn->tensorId};
  Operand input{kb.input(1, tensor), bn->tensorId};
  Operand scale{kb.input(2, channels), channel};
  Operand dx{kb.output(0, tensor), bn->tensorId};
  Operand dscale{kb.output(1, channels), channel};
  Operand dbias{kb.output(2, channels), channel};
  // The forward pass's statistics (f64 sums, see sumMoments); the nest
  // that zeroes their sums zeroes dbias and dscale too.
  auto [mean, inverseStd] = meanAndInverseStd(
      kb, *bn, input, epsilon, /*wide=*/true, /*alsoZero=*/{dbias, dscale});
  double count = double(bn->count);

  sumPerStatistic(
      kb, *bn, {dy, input, mean, inverseStd}, {dbias, dscale},
      [](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        Value n = normalize(b, loc, x[1], x[2], x[3]);
        return {x[0], arith::MulFOp::create(b, loc, x[0], n)};
      },
      /*zeroed=*/true);
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

} // namespace trainc::conversion
