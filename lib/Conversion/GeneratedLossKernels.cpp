//===- GeneratedLossKernels.cpp - losses and their gradients --------------===//
//
// The losses of the reference kernels (lib/Runtime/kernels/LossKernels.cpp,
// PyTorch's semantics): softmax_cross_entropy and nll_loss against class
// labels with their gradients, and the pointwise mse, l1 and
// bce_with_logits losses (whose gradients are elementwise graph ops).
//
// A class loss reads scores [N, C, d...] and i64 (or i32) labels [N, d...]; its
// space is the scores' with unit dimensions dropped and d... merged. The
// label's score x[n, label[n], d] is a gather, which no indexing map can
// express: it is the sum over the class dimension of
// select(loop.index == label, x, 0), C times the work of a gather, little
// next to the softmax around it. Row sums accumulate in f32 in the
// schedule's order, the loss's sum over the batch in f64 (the reference
// kernels in double throughout). A reduced loss is one scalar,
// so its nest is never split across threads and the result does not
// depend on the thread count.
//
// The reference kernels reject a label that is neither ignore_index nor a
// class in [0, C). Generated code cannot fail while it runs, so the kernel
// also finds the first such label (in element order) and reports it
// through loop.check: the step then fails with the reference's message.
// A bad label selects no class, so it is never used as an address.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/KernelBuilder.h"

#include "mlir/Dialect/Math/IR/Math.h"

namespace trainc::conversion {
namespace {

//===----------------------------------------------------------------------===//
// What every loss shares
//===----------------------------------------------------------------------===//

enum class Reduction { Mean, Sum, None };

struct LossOptions {
  Reduction reduction = Reduction::Mean;
  double smoothing = 0.0;
  std::optional<int64_t> ignoreIndex;
};

FailureOr<LossOptions> lossOptions(KernelBuilder &kb) {
  LossOptions options;
  auto reduction = kb.launch.getOptions().getAs<StringAttr>("reduction");
  StringRef text = reduction ? reduction.getValue() : "mean";
  if (text == "sum")
    options.reduction = Reduction::Sum;
  else if (text == "none")
    options.reduction = Reduction::None;
  else if (text != "mean")
    return kb.launch.emitError("unknown reduction '") << text << "'";
  options.smoothing = kb.real("label_smoothing", 0.0);
  if (auto ignore = kb.launch.getOptions().getAs<IntegerAttr>("ignore_index"))
    options.ignoreIndex = ignore.getInt();
  return options;
}

/// One point per loss element, not collapsed (its buffers keep the shape
/// other nests of the kernel see): operand `elementId` indexes every
/// element (per-element losses, labels), `scalarId` none (the reduced loss).
struct ElementSpace {
  Space space;
  unsigned elementId, scalarId;
  SmallVector<bool> parallel, reduce;

  explicit ElementSpace(ArrayRef<int64_t> shape)
      : space(shape), parallel(shape.size(), false),
        reduce(shape.size(), true) {
    elementId = space.addAllBut([](unsigned) { return false; });
    scalarId = space.add({});
  }
  int64_t count() const {
    int64_t count = 1;
    for (int64_t extent : space.domain)
      count *= extent;
    return count;
  }
};

using ElementFn = llvm::function_ref<Value(OpBuilder &, Location, ValueRange)>;

/// A new scratch scalar holding what the loss is divided by: for "mean",
/// the number of labels that are not ignore_index (counted by a nest when
/// there is one; f32 counts exactly up to 2^24) or of elements, else 1.
Operand lossDivisor(KernelBuilder &kb, const ElementSpace &es, Type element,
                    std::optional<Operand> labels, const LossOptions &options) {
  Operand divisor{kb.scratch({}, element), es.scalarId};
  bool mean = options.reduction == Reduction::Mean;
  bool counted = mean && options.ignoreIndex && labels;
  kb.fill(es.space, divisor, !mean ? 1.0 : counted ? 0.0 : double(es.count()));
  if (!counted)
    return divisor;
  kb.nest(es.space, *labels, divisor, es.reduce,
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value ignored = arith::CmpIOp::create(
                b, loc, arith::CmpIPredicate::eq, x[0],
                arith::ConstantIntOp::create(b, loc, *options.ignoreIndex, 64));
            Value one = arith::SelectOp::create(b, loc, ignored,
                                                constant(b, loc, element, 0.0),
                                                constant(b, loc, element, 1.0));
            return {arith::AddFOp::create(b, loc, x[1], one)};
          });
  return divisor;
}

/// Output 0 from the per-element loss `value` of `inputs` (operands of
/// `es`): one loss per element for "none", else their sum, divided by
/// `divisor` for "mean". The sum accumulates in f64 (a batch of per-pixel
/// losses sums N*d values, and an f32 sum of that many in one order
/// carries far more rounding than PyTorch's cascade sum), and is rounded
/// to the loss's type once, after the division.
void storeLoss(KernelBuilder &kb, const ElementSpace &es,
               ArrayRef<Operand> inputs, Reduction reduction,
               std::optional<Operand> divisor, ElementFn value) {
  if (reduction == Reduction::None) {
    Operand output{kb.output(0, es.space.shape(es.elementId)), es.elementId};
    kb.nest(
        es.space, inputs, output, es.parallel,
        [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
          return {value(b, loc, x.drop_back())};
        });
    return;
  }
  Value output = kb.output(0, {});
  Type element = cast<MemRefType>(output.getType()).getElementType();
  Type f64 = kb.builder.getF64Type();
  auto convert = [](OpBuilder &b, Location loc, Type to, Value v) -> Value {
    if (v.getType() == to)
      return v;
    if (v.getType().getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
      return arith::ExtFOp::create(b, loc, to, v);
    return arith::TruncFOp::create(b, loc, to, v);
  };
  Operand sum{kb.scratch({}, f64), es.scalarId};
  kb.fill(es.space, sum, 0.0);
  kb.nest(es.space, inputs, sum, es.reduce,
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value loss = value(b, loc, x.drop_back());
            return {arith::AddFOp::create(b, loc, x.back(),
                                          convert(b, loc, f64, loss))};
          });
  Space scalar(ArrayRef<int64_t>{});
  unsigned id = scalar.add({});
  SmallVector<Operand> totals = {{sum.buffer, id}};
  if (reduction == Reduction::Mean)
    totals.push_back({divisor->buffer, id});
  kb.nest(scalar, totals, Operand{output, id}, {},
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value total = x[0];
            if (x.size() > 2)
              total = arith::DivFOp::create(b, loc, total,
                                            convert(b, loc, f64, x[1]));
            return {convert(b, loc, element, total)};
          });
}

//===----------------------------------------------------------------------===//
// Class-index losses
//===----------------------------------------------------------------------===//

/// Scores [N, C, d...]: the class dimension is a reduction; labels and
/// per-element statistics index all other dimensions (`elementId`), scalars
/// none (`scalarId`).
struct ClassSpace {
  Space space;
  unsigned scoresId, elementId, scalarId;
  int64_t classes;
  /// Where the classes are; none when C == 1 (the class is always 0).
  std::optional<unsigned> classDim;
  SmallVector<bool> parallel;

  explicit ClassSpace(ArrayRef<int64_t> shape)
      : space(shape), classes(shape[1]) {
    space.reduction[1] = true;
    scoresId = space.addAllBut([](unsigned) { return false; });
    elementId = space.addAllBut([](unsigned dim) { return dim == 1; });
    scalarId = space.add({});
    space.dropUnitDims();
    // The labels use every dimension but the classes, which therefore
    // merge with no other.
    space.collapse();
    classDim = space.find(1);
    parallel.assign(space.domain.size(), false);
  }
  SmallVector<int64_t> elementShape() const { return space.shape(elementId); }
};

/// Whether the class of the current point is `label`.
Value isLabel(OpBuilder &b, Location loc, const ClassSpace &cs, Value label) {
  Value index = cs.classDim
                    ? loop::IndexOp::create(b, loc, *cs.classDim).getResult()
                    : arith::ConstantIndexOp::create(b, loc, 0).getResult();
  Value classIndex =
      arith::IndexCastOp::create(b, loc, b.getI64Type(), index).getResult();
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, classIndex,
                               label);
}

/// `value`, or 0 for an element whose label is ignore_index.
Value maskIgnored(OpBuilder &b, Location loc, const LossOptions &options,
                  Value label, Value value) {
  if (!options.ignoreIndex)
    return value;
  Value ignored = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::eq, label,
      arith::ConstantIntOp::create(b, loc, *options.ignoreIndex, 64));
  return arith::SelectOp::create(b, loc, ignored,
                                 constant(b, loc, value.getType(), 0.0), value);
}

/// The loop.check of the labels: the first label in element order that is
/// neither ignore_index nor in [0, C), or 0 (always a class) if none is.
void checkLabels(KernelBuilder &kb, const ClassSpace &cs, Value labels,
                 const LossOptions &options) {
  checkFirstInvalid(
      kb, labels,
      "label {} is not a class index in [0, " + std::to_string(cs.classes) +
          ")",
      [&](OpBuilder &b, Location loc, Value label) -> Value {
        // Unsigned, so that negative labels are out of range too.
        Value bad = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::uge, label,
            arith::ConstantIntOp::create(b, loc, cs.classes, 64));
        if (!options.ignoreIndex)
          return bad;
        return arith::AndIOp::create(
            b, loc, bad,
            arith::CmpIOp::create(
                b, loc, arith::CmpIPredicate::ne, label,
                arith::ConstantIntOp::create(b, loc, *options.ignoreIndex,
                                             64)));
      });
}

/// Per element, in new scratch buffers: the label's score minus `shift`
/// (the row maximum, if any), and with `total` the sum over the classes of
/// the scores minus `shift` (label smoothing's uniform target).
SmallVector<Operand> labelScores(KernelBuilder &kb, const ClassSpace &cs,
                                 Operand scores, Operand labels,
                                 std::optional<Operand> shift, bool total) {
  Type element = cast<MemRefType>(scores.buffer.getType()).getElementType();
  SmallVector<Operand> sums;
  for (int i = 0, e = total ? 2 : 1; i < e; ++i) {
    sums.push_back({kb.scratch(cs.elementShape(), element), cs.elementId});
    kb.fill(cs.space, sums.back(), 0.0);
  }
  SmallVector<Operand> inputs = {scores, labels};
  if (shift)
    inputs.push_back(*shift);
  kb.nest(cs.space, inputs, sums, cs.space.reduction,
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value score =
                shift ? arith::SubFOp::create(b, loc, x[0], x[2]) : x[0];
            ValueRange accumulators = x.take_back(sums.size());
            Value zero = constant(b, loc, element, 0.0);
            SmallVector<Value> results = {arith::AddFOp::create(
                b, loc, accumulators[0],
                arith::SelectOp::create(b, loc, isLabel(b, loc, cs, x[1]),
                                        score, zero))};
            if (total)
              results.push_back(
                  arith::AddFOp::create(b, loc, accumulators[1], score));
            return results;
          });
  return sums;
}

/// A class loss launch: its options, space, scores and labels. Both
/// directions begin with the labels' check.
struct ClassLoss {
  KernelBuilder &kb;
  LossOptions options;
  ClassSpace cs;
  Type element;
  Operand scores, labels;

  /// The loss whose scores are input `scoresIndex` and labels the next
  /// input, its labels checked; nullopt after an error.
  static std::optional<ClassLoss> start(KernelBuilder &kb,
                                        unsigned scoresIndex);
  LogicalResult forward(bool softmax);
  LogicalResult backward(bool softmax);
};

std::optional<ClassLoss> ClassLoss::start(KernelBuilder &kb,
                                          unsigned scoresIndex) {
  FailureOr<LossOptions> options = lossOptions(kb);
  if (failed(options))
    return std::nullopt;
  MemRefType scores = kb.inputType(scoresIndex);
  MemRefType labels = kb.inputType(scoresIndex + 1);
  ArrayRef<int64_t> shape = scores.getShape();
  SmallVector<int64_t> expected;
  if (shape.size() >= 2) {
    expected.push_back(shape[0]);
    llvm::append_range(expected, shape.drop_front(2));
  }
  Type labelType = labels.getElementType();
  if (shape.size() < 2 || shape[1] < 1 ||
      labels.getShape() != ArrayRef<int64_t>(expected) ||
      !(labelType.isInteger(64) || labelType.isInteger(32))) {
    kb.launch.emitError("a class loss needs scores [N, C, d...] with C >= 1 "
                        "and i64 or i32 labels [N, d...]");
    return std::nullopt;
  }
  ClassSpace cs(shape);
  ClassLoss loss{
      kb,
      *options,
      cs,
      scores.getElementType(),
      {kb.input(scoresIndex, cs.space.shape(cs.scoresId)), cs.scoresId},
      {kb.input(scoresIndex + 1, cs.elementShape()), cs.elementId}};
  // i32 labels are read through an i64 copy.
  if (labelType.isInteger(32)) {
    ElementSpace es(cs.elementShape());
    Value wide = kb.scratch(cs.elementShape(), kb.builder.getI64Type());
    SmallVector<bool> parallel(es.space.domain.size(), false);
    kb.nest(es.space, {{loss.labels.buffer, es.elementId}},
            {{wide, es.elementId}}, parallel,
            [](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
              return {arith::ExtSIOp::create(b, loc, b.getI64Type(), x[0])};
            });
    loss.labels.buffer = wide;
  }
  checkLabels(kb, cs, loss.labels.buffer, loss.options);
  return loss;
}

/// Per-element statistics (softmax's max and sum, the label's score), then
/// the loss per element or reduced.
LogicalResult ClassLoss::forward(bool softmax) {
  // Per-element buffers, read in element space after the labels.
  SmallVector<Operand> perElement;
  double smoothing = softmax ? options.smoothing : 0.0;
  if (softmax) {
    auto [max, sum] = softmaxStatistics(kb, cs.space, scores, cs.elementId);
    perElement.push_back(sum);
    llvm::append_range(
        perElement, labelScores(kb, cs, scores, labels, max, smoothing != 0.0));
  } else {
    perElement = labelScores(kb, cs, scores, labels, std::nullopt, false);
  }

  ElementSpace es(cs.elementShape());
  SmallVector<Operand> inputs = {{labels.buffer, es.elementId}};
  for (Operand operand : perElement)
    inputs.push_back({operand.buffer, es.elementId});
  std::optional<Operand> divisor;
  if (options.reduction == Reduction::Mean)
    divisor = lossDivisor(kb, es, element, inputs[0], options);
  double classes = double(cs.classes);
  storeLoss(
      kb, es, inputs, options.reduction, divisor,
      [&](OpBuilder &b, Location loc, ValueRange x) -> Value {
        auto c = [&](double value) { return constant(b, loc, element, value); };
        if (!softmax) // -log_probs[label]
          return maskIgnored(b, loc, options, x[0],
                             arith::NegFOp::create(b, loc, x[1]));
        // PyTorch: (1 - s) * nll + s * mean over classes of -log p,
        // with -log p = log(sum) - (x - max).
        Value logSum = math::LogOp::create(b, loc, x[1]);
        Value loss = arith::SubFOp::create(b, loc, logSum, x[2]);
        if (smoothing != 0.0) {
          Value uniform = arith::SubFOp::create(
              b, loc, logSum, arith::DivFOp::create(b, loc, x[3], c(classes)));
          loss = arith::AddFOp::create(
              b, loc, arith::MulFOp::create(b, loc, c(1.0 - smoothing), loss),
              arith::MulFOp::create(b, loc, c(smoothing), uniform));
        }
        return maskIgnored(b, loc, options, x[0], loss);
      });
  return success();
}

/// Softmax's statistics and the divisor, then one elementwise nest:
/// weight * (softmax - smoothed one-hot) for the cross entropy, -weight at
/// the label for nll, 0 where the label is ignored.
LogicalResult ClassLoss::backward(bool softmax) {
  Operand gradLoss = options.reduction == Reduction::None
                         ? Operand{kb.input(0, cs.elementShape()), cs.elementId}
                         : Operand{kb.input(0, {}), cs.scalarId};
  Operand gradScores{kb.output(0, cs.space.shape(cs.scoresId)), cs.scoresId};
  ElementSpace es(cs.elementShape());
  Operand divisor = lossDivisor(kb, es, element,
                                Operand{labels.buffer, es.elementId}, options);

  SmallVector<Operand> inputs = {
      labels, gradLoss, {divisor.buffer, cs.scalarId}};
  if (softmax) {
    auto [max, sum] = softmaxStatistics(kb, cs.space, scores, cs.elementId);
    inputs.append({scores, max, sum});
  }
  // The smoothed target, rounded once from double as the reference does.
  double smoothing = softmax ? options.smoothing : 0.0;
  double offLabel = smoothing / double(cs.classes);
  double onLabel = 1.0 - smoothing + offLabel;
  kb.nest(cs.space, inputs, gradScores, cs.parallel,
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            auto c = [&](double value) {
              return constant(b, loc, element, value);
            };
            Value weight = arith::DivFOp::create(b, loc, x[1], x[2]);
            Value hit = isLabel(b, loc, cs, x[0]);
            Value gradient;
            if (softmax) {
              Value probability = arith::DivFOp::create(
                  b, loc,
                  math::ExpOp::create(
                      b, loc, arith::SubFOp::create(b, loc, x[3], x[4])),
                  x[5]);
              Value target =
                  arith::SelectOp::create(b, loc, hit, c(onLabel), c(offLabel));
              gradient = arith::MulFOp::create(
                  b, loc, weight,
                  arith::SubFOp::create(b, loc, probability, target));
            } else {
              gradient = arith::SelectOp::create(
                  b, loc, hit, arith::NegFOp::create(b, loc, weight), c(0.0));
            }
            return {maskIgnored(b, loc, options, x[0], gradient)};
          });
  return success();
}

} // namespace

LogicalResult buildClassLoss(KernelBuilder &kb, bool softmax) {
  std::optional<ClassLoss> loss = ClassLoss::start(kb, 0);
  return loss ? loss->forward(softmax) : failure();
}

LogicalResult buildClassLossBackward(KernelBuilder &kb, bool softmax) {
  std::optional<ClassLoss> loss = ClassLoss::start(kb, 1);
  return loss ? loss->backward(softmax) : failure();
}

//===----------------------------------------------------------------------===//
// Pointwise losses
//===----------------------------------------------------------------------===//

LogicalResult buildPointwiseLoss(KernelBuilder &kb, PointwiseLoss kind) {
  FailureOr<LossOptions> options = lossOptions(kb);
  if (failed(options))
    return failure();
  MemRefType type = kb.inputType(0);
  if (kb.inputType(1).getShape() != type.getShape())
    return kb.launch.emitError("prediction and target shapes differ");
  // Every buffer walks the elements in order: one dimension.
  ElementSpace es(ArrayRef<int64_t>{type.getNumElements()});
  SmallVector<Operand> inputs = {
      {kb.input(0, {type.getNumElements()}), es.elementId},
      {kb.input(1, {type.getNumElements()}), es.elementId}};
  std::optional<Operand> divisor;
  if (options->reduction == Reduction::Mean)
    divisor =
        lossDivisor(kb, es, type.getElementType(), std::nullopt, *options);
  storeLoss(
      kb, es, inputs, options->reduction, divisor,
      [&](OpBuilder &b, Location loc, ValueRange x) -> Value {
        Value difference = arith::SubFOp::create(b, loc, x[0], x[1]);
        switch (kind) {
        case PointwiseLoss::Mse:
          return arith::MulFOp::create(b, loc, difference, difference);
        case PointwiseLoss::L1:
          return math::AbsFOp::create(b, loc, difference);
        case PointwiseLoss::BceWithLogits: {
          // PyTorch's stable form: max(x, 0) - x t + log(1 + e^-|x|),
          // with max as a comparison so that NaN stays NaN.
          Value zero = constant(b, loc, type.getElementType(), 0.0);
          Value positive = arith::SelectOp::create(
              b, loc,
              arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x[0],
                                    zero),
              zero, x[0]);
          Value softplus = math::Log1pOp::create(
              b, loc,
              math::ExpOp::create(
                  b, loc,
                  arith::NegFOp::create(b, loc,
                                        math::AbsFOp::create(b, loc, x[0]))));
          return arith::AddFOp::create(
              b, loc,
              arith::SubFOp::create(b, loc, positive,
                                    arith::MulFOp::create(b, loc, x[0], x[1])),
              softplus);
        }
        }
        llvm_unreachable("unknown pointwise loss");
      });
  return success();
}

} // namespace trainc::conversion
