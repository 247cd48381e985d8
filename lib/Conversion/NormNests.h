//===- NormNests.h - what the normalization builders share ------*- C++ -*-===//
//
// The iteration space of a normalization and the nests that layer norm and
// batch norm (GeneratedNormKernels.cpp) and batch norm over small planes
// (GeneratedPlaneNormKernels.cpp) build their statistics and gradients
// from. Internal to lib/Conversion.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_LIB_CONVERSION_NORMNESTS_H
#define TRAINC_LIB_CONVERSION_NORMNESTS_H

#include "lib/Conversion/KernelBuilder.h"

namespace trainc::conversion::norm {

inline bool none(unsigned) { return false; }

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

/// The element type of `operand`'s buffer.
Type elementOf(Operand operand);

/// `x` extended to `type` (an f32 term of an f64 sum), or `x` if it has it.
Value widen(OpBuilder &b, Location loc, Value x, Type type);

/// `x` rounded to `type` (an f64 sum stored as f32), or `x` if it has it.
Value roundTo(OpBuilder &b, Location loc, Value x, Type type);

/// A nest over the statistics' own shape; every buffer is indexed like a
/// statistic.
void perStatistic(KernelBuilder &kb, const NormSpace &ns,
                  ArrayRef<Value> inputs, ArrayRef<Value> outputs, Body body);

/// Zeroes `sums` (unless `zeroed`: an earlier nest did), then adds
/// term(elements of `inputs`) (one value per sum) into them over the
/// `reduction` dims of `space`; returns the summing nest.
loop::NestOp accumulate(KernelBuilder &kb, const Space &space,
                        ArrayRef<Operand> inputs, ArrayRef<Operand> sums,
                        ArrayRef<bool> reduction, Body term,
                        bool zeroed = false);

/// How a statistic's `squares` were summed: as squared deviations from
/// the mean (a second pass over the data, after the mean's), or raw, the
/// squares of the values themselves in f64 in the same pass as their sum
/// (squaredDeviations then takes the mean's square out).
enum class Squares { Centered, Raw };

/// The sum of squared deviations from the mean of `count` values from
/// their raw f64 moments: max(0, squares - sum * sum / count). An f32
/// value's square is exact in f64, so the difference loses only what f64
/// sums lose: the variance is exact to f32's rounding unless a channel's
/// mean is some 10^4 of its standard deviations.
Value squaredDeviations(OpBuilder &b, Location loc, Value sum, Value squares,
                        double count);

/// The means and inverse standard deviations (of `mean`'s type) from the
/// moments `sum` and `squares` (summed as `kind`) of `count` elements per
/// statistic.
void statisticsOf(KernelBuilder &kb, const NormSpace &ns, Value sum,
                  Value squares, Squares kind, double count, double epsilon,
                  Value mean, Value inverseStd);

/// The batch mean, the output's factor and the running statistics per
/// channel, `outputs` (mean, factor, new running mean and variance), from
/// `inputs` (the raw f64 moments' sum and squares, scale, running mean and
/// variance): ONNX's momentum convention; the running variance takes the
/// unbiased batch variance, squares / (count - 1), as the reference does.
void trainingStatistics(KernelBuilder &kb, const NormSpace &bn,
                        ArrayRef<Value> inputs, ArrayRef<Value> outputs,
                        double count, double epsilon, double momentum);

/// (x - mean) * inverseStd from the elements of x, mean, inverseStd.
Value normalize(OpBuilder &b, Location loc, Value x, Value mean,
                Value inverseStd);

/// The gradient of a normalization's input given g, the gradient of the
/// normalized value, and the sums over the statistic's elements of g and of
/// g * normalized (the statistics depend on every element):
/// inverseStd / count * (count * g - sum(g) - normalized * sum(g *
/// normalized)).
Value normalizationGradient(OpBuilder &b, Location loc, Value g,
                            Value normalized, Value sumG, Value sumGNormalized,
                            Value inverseStd, double count);

/// The terms of raw f64 moments (sumMoments with f64 sums): the element
/// x[0] and its square, both in f64.
SmallVector<Value> rawMomentTerms(OpBuilder &b, Location loc, ValueRange x);

/// The terms of batch norm's gradient sums, sum(dy) and sum(dy *
/// normalized), from the elements of dy, x, mean and inverseStd, in f64:
/// a channel's sums run over N*H*W products, and PyTorch's CPU kernel sums
/// them in double across the batch (each plane in f32 vectors); f32 sums of
/// that many terms carry several times their rounding noise.
SmallVector<Value> batchNormGradientTerms(OpBuilder &b, Location loc,
                                          ValueRange x);

/// The f64 `sums` (from batchNormGradientTerms) rounded into the outputs
/// dbias and dscale, per channel.
void storeBatchNormGradientSums(KernelBuilder &kb, const NormSpace &bn,
                                ArrayRef<Value> sums, Value dbias,
                                Value dscale);

// GeneratedPlaneNormKernels.cpp: a batch norm over planes of more than one
// element and fewer than a vector, built over [N, C * P]; false (nothing
// built) for other planes.
bool batchNormTrainingOverPlanes(KernelBuilder &kb, const NormSpace &bn,
                                 double epsilon, double momentum);
bool batchNormBackwardOverPlanes(KernelBuilder &kb, const NormSpace &bn,
                                 double epsilon);

} // namespace trainc::conversion::norm

#endif
