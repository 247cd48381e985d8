//===- GeneratedOptimizerKernels.cpp - SGD, Adam and Adagrad updates ------===//
//
// Computed in double in the reference kernels' operation order, so the
// generated updates are bit for bit the reference's.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/KernelBuilder.h"

#include "mlir/Dialect/Math/IR/Math.h"

namespace trainc::conversion {

namespace {
/// Double-precision arithmetic inside an update's body.
struct DoubleMath {
  OpBuilder &b;
  Location loc;
  Type f64 = b.getF64Type();

  Value c(double value) { return constant(b, loc, f64, value); }
  Value wide(Value v) { return arith::ExtFOp::create(b, loc, f64, v); }
};
} // namespace

/// graph.sgd_update(param, grad, lr, step[, buffer]) -> (param'[, buffer']),
/// computed in double like the reference: bit-identical results.
LogicalResult buildSgd(KernelBuilder &kb) {
  bool hasBuffer = kb.launch.getInputs().size() == 5;
  int64_t count = kb.inputType(0).getNumElements();
  Space space(ArrayRef<int64_t>{count});
  unsigned tensor = space.add({0}), scalar = space.add({});
  SmallVector<Operand> inputs = {{kb.input(0, {count}), tensor},
                                 {kb.input(1, {count}), tensor},
                                 {kb.input(2, {}), scalar},
                                 {kb.input(3, {}), scalar}};
  SmallVector<Operand> outputs = {{kb.output(0, {count}), tensor}};
  if (hasBuffer) {
    inputs.push_back({kb.input(4, {count}), tensor});
    outputs.push_back({kb.output(1, {count}), tensor});
  }
  double momentum = kb.real("momentum", 0.0);
  double dampening = kb.real("dampening", 0.0);
  double weightDecay = kb.real("weight_decay", 0.0);
  bool nesterov = kb.flag("nesterov");
  kb.nest(
      space, inputs, outputs, space.reduction,
      [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        DoubleMath d{b, loc};
        Type element = x[0].getType();
        Value param = d.wide(x[0]);
        Value grad = arith::AddFOp::create(
            b, loc, d.wide(x[1]),
            arith::MulFOp::create(b, loc, d.c(weightDecay), param));
        Value rate = d.wide(x[2]);
        Value direction = grad;
        SmallVector<Value> results;
        if (hasBuffer) {
          // The first step takes the whole gradient (torch's buffer
          // initialization).
          Value first = arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::eq, x[3],
              arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(0)));
          Value share = arith::SelectOp::create(b, loc, first, d.c(1.0),
                                                d.c(1.0 - dampening));
          Value buffer = arith::AddFOp::create(
              b, loc,
              arith::MulFOp::create(b, loc, d.c(momentum), d.wide(x[4])),
              arith::MulFOp::create(b, loc, share, grad));
          direction =
              nesterov
                  ? arith::AddFOp::create(
                        b, loc, grad,
                        arith::MulFOp::create(b, loc, d.c(momentum), buffer))
                        .getResult()
                  : buffer;
          results.push_back(arith::TruncFOp::create(b, loc, element, buffer));
        }
        Value updated = arith::SubFOp::create(
            b, loc, param, arith::MulFOp::create(b, loc, rate, direction));
        results.insert(results.begin(),
                       arith::TruncFOp::create(b, loc, element, updated));
        return results;
      });
  return success();
}

/// graph.adam_update(param, grad, m, v, lr, step) -> (param', m', v'), in
/// double with the reference's operation order: bit-identical results.
/// The bias corrections depend only on the step; LLVM hoists them.
LogicalResult buildAdam(KernelBuilder &kb) {
  int64_t count = kb.inputType(0).getNumElements();
  Space space(ArrayRef<int64_t>{count});
  unsigned tensor = space.add({0}), scalar = space.add({});
  SmallVector<Operand> inputs;
  for (unsigned i = 0; i < 4; ++i)
    inputs.push_back({kb.input(i, {count}), tensor});
  inputs.push_back({kb.input(4, {}), scalar});
  inputs.push_back({kb.input(5, {}), scalar});
  SmallVector<Operand> outputs;
  for (unsigned i = 0; i < 3; ++i)
    outputs.push_back({kb.output(i, {count}), tensor});
  double beta1 = kb.real("beta1", 0.9), beta2 = kb.real("beta2", 0.999);
  double epsilon = kb.real("epsilon", 1e-8);
  double weightDecay = kb.real("weight_decay", 0.0);
  bool decoupled = kb.flag("decoupled"), onnx = kb.flag("onnx_convention");
  kb.nest(
      space, inputs, outputs, space.reduction,
      [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        DoubleMath d{b, loc};
        Type f64 = d.f64;
        Type element = x[0].getType();
        auto mul = [&](Value l, Value r) -> Value {
          return arith::MulFOp::create(b, loc, l, r);
        };
        auto add = [&](Value l, Value r) -> Value {
          return arith::AddFOp::create(b, loc, l, r);
        };
        auto sub = [&](Value l, Value r) -> Value {
          return arith::SubFOp::create(b, loc, l, r);
        };
        auto div = [&](Value l, Value r) -> Value {
          return arith::DivFOp::create(b, loc, l, r);
        };
        auto pow = [&](double base, Value exponent) -> Value {
          return math::PowFOp::create(b, loc, d.c(base), exponent);
        };
        Value lr = d.wide(x[4]);
        Value t = arith::SIToFPOp::create(b, loc, f64, x[5]);
        Value p = d.wide(x[0]);
        Value g = decoupled ? d.wide(x[1])
                            : add(d.wide(x[1]), mul(d.c(weightDecay), p));
        if (decoupled)
          p = mul(p, sub(d.c(1.0), mul(lr, d.c(weightDecay))));
        Value m = add(mul(d.c(beta1), d.wide(x[2])), mul(d.c(1.0 - beta1), g));
        Value v = add(mul(d.c(beta2), d.wide(x[3])),
                      mul(mul(d.c(1.0 - beta2), g), g));
        Value root = math::SqrtOp::create(b, loc, v);
        if (onnx) {
          Value corrected =
              div(mul(lr, math::SqrtOp::create(b, loc,
                                               sub(d.c(1.0), pow(beta2, t)))),
                  sub(d.c(1.0), pow(beta1, t)));
          Value positive = arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::sgt, x[5],
              arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(0)));
          Value rate = arith::SelectOp::create(b, loc, positive, corrected, lr);
          p = sub(p, div(mul(rate, m), add(root, d.c(epsilon))));
        } else {
          Value k = add(t, d.c(1.0));
          Value rate = div(lr, sub(d.c(1.0), pow(beta1, k)));
          Value correction =
              math::SqrtOp::create(b, loc, sub(d.c(1.0), pow(beta2, k)));
          p = sub(p,
                  div(mul(rate, m), add(div(root, correction), d.c(epsilon))));
        }
        return {arith::TruncFOp::create(b, loc, element, p),
                arith::TruncFOp::create(b, loc, element, m),
                arith::TruncFOp::create(b, loc, element, v)};
      });
  return success();
}

/// graph.adagrad_update(param, grad, sum, lr, step) -> (param', sum'), in
/// double with the reference's operation order: bit-identical results.
LogicalResult buildAdagrad(KernelBuilder &kb) {
  int64_t count = kb.inputType(0).getNumElements();
  Space space(ArrayRef<int64_t>{count});
  unsigned tensor = space.add({0}), scalar = space.add({});
  SmallVector<Operand> inputs;
  for (unsigned i = 0; i < 3; ++i)
    inputs.push_back({kb.input(i, {count}), tensor});
  inputs.push_back({kb.input(3, {}), scalar});
  inputs.push_back({kb.input(4, {}), scalar});
  SmallVector<Operand> outputs = {{kb.output(0, {count}), tensor},
                                  {kb.output(1, {count}), tensor}};
  double lrDecay = kb.real("lr_decay", 0.0);
  double epsilon = kb.real("epsilon", 1e-10);
  double weightDecay = kb.real("weight_decay", 0.0);
  kb.nest(
      space, inputs, outputs, space.reduction,
      [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        DoubleMath d{b, loc};
        Type element = x[0].getType();
        // rate = lr / (1 + step * lr_decay), the same for every element.
        Value step = arith::SIToFPOp::create(b, loc, d.f64, x[4]);
        Value rate = arith::DivFOp::create(
            b, loc, d.wide(x[3]),
            arith::AddFOp::create(
                b, loc, d.c(1.0),
                arith::MulFOp::create(b, loc, step, d.c(lrDecay))));
        Value p = d.wide(x[0]);
        Value g = arith::AddFOp::create(
            b, loc, d.wide(x[1]), arith::MulFOp::create(b, loc, d.c(weightDecay), p));
        Value sum = arith::AddFOp::create(b, loc, d.wide(x[2]),
                                          arith::MulFOp::create(b, loc, g, g));
        Value denominator = arith::AddFOp::create(
            b, loc, math::SqrtOp::create(b, loc, sum), d.c(epsilon));
        Value updated = arith::SubFOp::create(
            b, loc, p,
            arith::DivFOp::create(b, loc,
                                  arith::MulFOp::create(b, loc, rate, g),
                                  denominator));
        return {arith::TruncFOp::create(b, loc, element, updated),
                arith::TruncFOp::create(b, loc, element, sum)};
      });
  return success();
}

} // namespace trainc::conversion
