//===- GeneratedPlaneNormKernels.cpp - batch norm over small planes -------===//
//
// Batch norm and its gradient over planes (the spatial dims, collapsed) of
// more than one element and fewer than a vector, with their passes over
// [N, C * P] instead of [N, C, P] (PlaneSpace below); the statistics and
// gradient formulas are GeneratedNormKernels.cpp's (NormNests.h).
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/NormNests.h"

namespace trainc::conversion {
using namespace norm;

namespace {

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

/// The batch's raw f64 moments per channel of `input` (an operand of
/// ps.rows), as sumMoments over small planes: the sum of the elements and
/// of their squares, in one pass.
std::pair<Value, Value> planeMoments(KernelBuilder &kb, const PlaneSpace &ps,
                                     Operand input) {
  Type f64 = kb.builder.getF64Type();
  Value sum = kb.scratch({ps.c}, f64), squares = kb.scratch({ps.c}, f64);
  sumOverPlanes(kb, ps, input, {sum, squares}, rawMomentTerms);
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
  auto [sum, squares] = planeMoments(kb, ps, input);
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
  auto [sum, squares] = planeMoments(kb, ps, input);
  Type element = kb.computeType(elementOf(input));
  Value mean = kb.scratch(channels, element);
  Value inverseStd = kb.scratch(channels, element);
  statisticsOf(kb, bn, sum, squares, Squares::Raw, count, epsilon, mean,
               inverseStd);
  SmallVector<Value> statistics = expandToPositions(kb, ps, {mean, inverseStd});
  Operand meanAt{statistics[0], ps.position};
  Operand inverseStdAt{statistics[1], ps.position};
  Type f64 = kb.builder.getF64Type();
  SmallVector<Value> gradientSums = {kb.scratch(channels, f64),
                                     kb.scratch(channels, f64)};
  sumOverPlanes(kb, ps, {dy, input, meanAt, inverseStdAt}, gradientSums,
                batchNormGradientTerms);
  storeBatchNormGradientSums(kb, bn, gradientSums, dbias, dscale);
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

bool norm::batchNormTrainingOverPlanes(KernelBuilder &kb, const NormSpace &bn,
                                       double epsilon, double momentum) {
  std::optional<PlaneSpace> planes = smallPlanes(kb, bn);
  if (!planes)
    return false;
  trainingOverPlanes(kb, bn, *planes, epsilon, momentum);
  return true;
}

bool norm::batchNormBackwardOverPlanes(KernelBuilder &kb, const NormSpace &bn,
                                       double epsilon) {
  std::optional<PlaneSpace> planes = smallPlanes(kb, bn);
  if (!planes)
    return false;
  backwardOverPlanes(kb, bn, *planes, epsilon);
  return true;
}

} // namespace trainc::conversion
