//===- LossScaling.cpp - dynamic loss scaling in @train_step --------------===//
//
// f16 gradients underflow: most of a network's gradient values are below
// f16's smallest normal (6e-5). Dynamic loss scaling (Micikevicius et al.,
// "Mixed Precision Training", 2018; torch.cuda.amp.GradScaler) multiplies
// the loss by a scale S before the reverse sweep, so the gradients come
// out S times larger, and divides them by S in f32 before the optimizer.
// When S is too large some gradient overflows to inf: that step changes no
// parameter and no optimizer state, and S halves. After a number of finite
// steps in a row (the growth interval, 2000), S doubles.
//
// In trainc the scaler is part of the compiled step: @gradients seeds its
// reverse sweep with S (Autodiff.cpp), and @train_step unscales, checks
// every gradient with one fused reduction, applies the updates only when
// all are finite (a select between the new and the old value, so an
// update is never half done) and updates S. S, the count of finite steps
// and the count of skipped steps are optimizer state: they are saved in
// checkpoints and the runtime reports them (trainc_get_loss_scale).
//
//===----------------------------------------------------------------------===//
#include "dialects/graph/Transforms/Autodiff.h"

using namespace mlir;

namespace trainc::graph {

LossScaler addLossScalerArguments(OpBuilder &b, const TrainingOptions &options,
                                  SmallVectorImpl<Type> &types,
                                  SmallVectorImpl<Attribute> &attrs) {
  auto f32 = RankedTensorType::get({}, b.getF32Type());
  auto i64 = RankedTensorType::get({}, b.getI64Type());
  LossScaler scaler;
  auto add = [&](StringRef name, RankedTensorType type,
                 std::optional<Attribute> initial) {
    types.push_back(type);
    SmallVector<NamedAttribute> entries(
        describeValue(b, name, kRoleOptimizerState, std::nullopt).getValue());
    if (initial)
      entries.push_back(b.getNamedAttr(kInitialValueAttrName, *initial));
    attrs.push_back(b.getDictionaryAttr(entries));
    return static_cast<unsigned>(types.size() - 1);
  };
  scaler.scaleIndex =
      add("amp.loss_scale", f32,
          DenseElementsAttr::get(
              f32, b.getF32FloatAttr(options.initialLossScale).getValue()));
  scaler.goodStepsIndex = add("amp.good_steps", i64, std::nullopt);
  scaler.skippedStepsIndex = add("amp.skipped_steps", i64, std::nullopt);
  return scaler;
}

Value unscaleGradients(GradientBuilder &math, Value scale,
                       SmallVectorImpl<Value> &gradients) {
  OpBuilder &b = math.builder();
  Location loc = math.location();
  // x * 0 is 0 for a finite x and NaN for inf and NaN: one sum over all
  // gradients is NaN exactly when one of them is not finite.
  Value total;
  for (Value g : gradients) {
    if (!g)
      continue;
    Value zeros = math.cast(math.sumAll(math.mul(g, math.scalar(0.0, g))),
                            b.getF32Type());
    total = total ? math.add(total, zeros) : zeros;
  }
  Value finite =
      total ? NotOp::create(b, loc, IsNaNOp::create(b, loc, total)).getResult()
            : math.equal(scale, scale);
  Value inverse = math.div(math.scalar(1.0, scale), scale);
  for (Value &g : gradients)
    if (g)
      g = math.mul(g, math.cast(inverse, getElementTypeOrSelf(g.getType())));
  return finite;
}

SmallVector<Value> updateLossScaler(GradientBuilder &math,
                                    const TrainingOptions &options,
                                    Value finite, Value scale, Value goodSteps,
                                    Value skippedSteps) {
  Value zero = math.scalar(0, goodSteps);
  Value one = math.scalar(1, goodSteps);
  // Finite steps in a row, this one included; at the growth interval the
  // scale doubles and the count starts again.
  Value good = math.where(finite, math.add(goodSteps, one), zero);
  Value grow = math.greaterEqual(
      good, math.scalar(static_cast<double>(options.lossScaleGrowthInterval),
                        goodSteps));
  Value grown =
      math.where(grow, math.mul(scale, math.scalar(2.0, scale)), scale);
  Value newScale =
      math.where(finite, grown, math.mul(scale, math.scalar(0.5, scale)));
  Value newGood = math.where(grow, zero, good);
  Value newSkipped = math.add(skippedSteps, math.where(finite, zero, one));
  return {newScale, newGood, newSkipped};
}

} // namespace trainc::graph
