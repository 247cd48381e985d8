//===- GeneratedOptimizerKernels.cpp - SGD, Adam and Adagrad updates ------===//
//
// Each in the reference kernels' arithmetic, so the generated updates are
// bit for bit the reference's: SGD, Adam and Adagrad as torch.optim rounds
// them (in the parameter's type), ONNX's Adam in double.
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

/// Arithmetic in an update's compute type as PyTorch's optimizers round
/// it: the parameter's type, f32 for f16 and bf16.
struct ComputeMath {
  OpBuilder &b;
  Location loc;
  Type element;
  Type compute = element.isF64() ? element : b.getF32Type();

  Value c(double value) { return constant(b, loc, compute, value); }
  /// `v` (any float type) in the compute type.
  Value widen(Value v) {
    if (v.getType() == compute)
      return v;
    return cast<FloatType>(v.getType()).getWidth() <
                   cast<FloatType>(compute).getWidth()
               ? arith::ExtFOp::create(b, loc, compute, v).getResult()
               : arith::TruncFOp::create(b, loc, compute, v).getResult();
  }
  /// `v` back in the parameter's type.
  Value narrow(Value v) {
    return v.getType() == element
               ? v
               : arith::TruncFOp::create(b, loc, element, v).getResult();
  }
  /// a + alpha * x, rounded once: ATen's `add` with an alpha.
  Value add(Value a, Value alpha, Value x) {
    return multiplyAccumulate(b, loc, alpha, x, a);
  }
  Value mul(Value l, Value r) { return arith::MulFOp::create(b, loc, l, r); }
};

/// Elements of a windowed update's zero-padded gradient chunk (below):
/// 1 MiB of f32, half a Zen 4 core's L2 per thread; larger for parameters
/// of more than kMaxChunks such chunks, whose nests (two per chunk, each
/// an LLVM function) would make the compile grow with the parameter.
constexpr int64_t kChunkElements = 1 << 18;
constexpr int64_t kMaxChunks = 16;

/// An optimizer update whose inputs are the parameter-shaped tensors where
/// `tensor` says so and scalars elsewhere (learning rate, step), and whose
/// outputs are all parameter-shaped; `body` sees the inputs in the
/// launch's order, then the 0-d `scalars`. Input 1 is the gradient. One
/// vectorized nest over the flat buffers.
LogicalResult emitFlatUpdate(KernelBuilder &kb, ArrayRef<bool> tensor,
                             ArrayRef<Value> scalars, Body body) {
  int64_t count = kb.inputType(0).getNumElements();
  if (kb.inputType(1).getNumElements() != count)
    return kb.launch.emitError("the generated ")
           << kb.launch.getKernel()
           << " needs a gradient of the parameter's size, or "
              "`gradient_starts`";
  Space space(ArrayRef<int64_t>{count});
  unsigned all = space.add({0}), scalar = space.add({});
  SmallVector<Operand> inputs, outputs;
  for (auto [i, isTensor] : llvm::enumerate(tensor))
    inputs.push_back(isTensor ? Operand{kb.input(i, {count}), all}
                              : Operand{kb.input(i, {}), scalar});
  for (Value value : scalars)
    inputs.push_back(Operand{value, scalar});
  for (unsigned i = 0; i < kb.launch.getOutputs().size(); ++i)
    outputs.push_back({kb.output(i, {count}), all});
  kb.nest(space, inputs, outputs, space.reduction, body);
  return success();
}

/// The window taps `live` (flat taps of a row of `taps`) of rows [first,
/// first + chunk) of `param` (the updated parameter, flat) into the
/// launch's last output (`window_copy`), a nest over the rows: one input
/// and one output per window tap, so that no index sums the row with
/// another dimension and the rows may split between threads.
void copyWindow(KernelBuilder &kb, Value param, int64_t first, int64_t chunk,
                int64_t taps, ArrayRef<int64_t> live, bool parallel) {
  MLIRContext *context = kb.builder.getContext();
  unsigned last = kb.launch.getOutputs().size() - 1;
  int64_t windowTaps = live.size();
  Value copy = kb.output(last, {kb.outputType(last).getNumElements()});
  AffineExpr row = affineDim(context, 0) + first;
  SmallVector<Value> inputs(windowTaps, param), outputs(windowTaps, copy);
  SmallVector<AffineMap> maps;
  for (int64_t tap : live)
    maps.push_back(mapOf(context, 1, {row * taps + tap}));
  for (int64_t j = 0; j < windowTaps; ++j)
    maps.push_back(mapOf(context, 1, {row * windowTaps + j}));
  loop::NestOp nest =
      kb.nest({chunk}, {false}, inputs, outputs, maps,
              [&](OpBuilder &, Location, ValueRange x) -> SmallVector<Value> {
                return SmallVector<Value>(x.take_front(windowTaps));
              });
  // Split by rows when the update was (`parallel`; the copy alone has too
  // few points for the default schedule to fork): each thread copies the
  // rows it just updated, from its own core's cache. One thread of 2 read
  // half of them from the other core's: 0.1-0.25 ms more per 512x512x3x3
  // weight on a Zen 4.
  nest.setScheduleAttr(loop::ScheduleAttr::get(
      context, parallel ? 0 : -1, nest.getSchedule().getTile(),
      nest.getSchedule().getVectorize()));
}

/// The same update where the gradient is the window at `gradient_starts`
/// (--trainc-window-updates) of a gradient that is zero elsewhere: seen as
/// [rows, taps] (the parameter's leading dims the window covers whole,
/// and the rest), a few taps of every row. The flat nest runs in chunks
/// of rows, each reading the chunk's gradient from a scratch buffer that
/// a nest over [chunk rows, taps] fills just before (the window's taps of
/// each row, zero elsewhere), while it is still in the cache: memory
/// traffic as for a full gradient in memory, without the full gradient.
/// (The update itself over [rows, taps], selecting the gradient by tap,
/// ran 4x slower: rows of 9 taps fill 9 of 16 lanes. Strided nests over
/// the window's taps moved more memory.)
///
/// With `window_copy` (--trainc-keep-weight-copies) the last output is the
/// window of the updated parameter, the weight the next step's products
/// read: a third nest per chunk copies the chunk's window taps out of the
/// parameter just written, while it is in the cache.
LogicalResult emitWindowedUpdate(KernelBuilder &kb, ArrayRef<bool> tensor,
                                 ArrayRef<Value> scalars, Body body) {
  MLIRContext *context = kb.builder.getContext();
  ArrayRef<int64_t> full = kb.inputType(0).getShape();
  ArrayRef<int64_t> window = kb.inputType(1).getShape();
  ArrayRef<int64_t> starts = kb.integers("gradient_starts");
  int64_t count = kb.inputType(0).getNumElements();
  // --trainc-window-updates checked all this; hand-written IR may not.
  bool fits =
      starts.size() == full.size() && window.size() == full.size() && count > 0;
  for (size_t d = 0; fits && d < full.size(); ++d)
    fits = starts[d] >= 0 && window[d] >= 1 && starts[d] + window[d] <= full[d];
  if (!fits)
    return kb.launch.emitError("the generated ")
           << kb.launch.getKernel()
           << " needs `gradient_starts` (one per dim) that place its "
              "non-empty gradient inside the parameter";
  size_t rank = full.size(), split = 0;
  while (split < rank && window[split] == full[split] && starts[split] == 0)
    ++split;
  int64_t rows = 1, taps = 1, windowTaps = 1;
  for (size_t d = 0; d < rank; ++d) {
    (d < split ? rows : taps) *= full[d];
    if (d >= split)
      windowTaps *= window[d];
  }
  // The flat tap (of `taps`) of each window tap, in the window's order.
  SmallVector<int64_t> live = {0};
  for (size_t d = split; d < rank; ++d) {
    SmallVector<int64_t> next;
    for (int64_t tap : live)
      for (int64_t i = 0; i < window[d]; ++i)
        next.push_back(tap * full[d] + starts[d] + i);
    live = std::move(next);
  }
  bool windowCopy = kb.flag("window_copy");
  unsigned numOutputs = kb.launch.getOutputs().size() - windowCopy;
  if (windowCopy && (kb.outputType(numOutputs).getShape() != window ||
                     kb.outputType(numOutputs).getElementType() !=
                         kb.inputType(0).getElementType()))
    return kb.launch.emitError("the generated ")
           << kb.launch.getKernel()
           << " with `window_copy` needs a last output of the gradient's "
              "shape and the parameter's type";
  AffineExpr d0 = affineDim(context, 0);
  SmallVector<Value> inputs, outputs;
  for (auto [i, isTensor] : llvm::enumerate(tensor))
    inputs.push_back(i == 1     ? kb.input(1, {rows, windowTaps})
                     : isTensor ? kb.input(i, {count})
                                : kb.input(i, {}));
  for (unsigned i = 0; i < numOutputs; ++i)
    outputs.push_back(kb.output(i, {count}));
  int64_t chunkElements =
      std::max(kChunkElements, (count + kMaxChunks - 1) / kMaxChunks);
  int64_t chunkRows = std::clamp<int64_t>(chunkElements / taps, 1, rows);
  Type element = kb.inputType(1).getElementType();
  Value padded = kb.scratch({chunkRows * taps}, element);
  Value paddedRows = kb.scratchView(padded, {chunkRows, taps});
  for (int64_t first = 0; first < rows; first += chunkRows) {
    int64_t chunk = std::min(chunkRows, rows - first);
    // The chunk's gradient: each row's window taps, zero elsewhere.
    SmallVector<Value> columns(windowTaps, inputs[1]);
    SmallVector<AffineMap> maps;
    for (int64_t j = 0; j < windowTaps; ++j)
      maps.push_back(
          mapOf(context, 2, {d0 + first, getAffineConstantExpr(j, context)}));
    maps.push_back(mapOf(context, 2, {d0, affineDim(context, 1)}));
    kb.nest(
        {chunk, taps}, {false, false}, columns, {paddedRows}, maps,
        [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
          Value at = loop::IndexOp::create(b, loc, 1);
          Value grad = constant(b, loc, element, 0.0);
          for (int64_t j = windowTaps - 1; j >= 0; --j)
            grad = arith::SelectOp::create(
                b, loc,
                arith::CmpIOp::create(
                    b, loc, arith::CmpIPredicate::eq, at,
                    arith::ConstantIndexOp::create(b, loc, live[j])),
                x[j], grad);
          return {grad};
        });
    // The update of the chunk's elements, reading that gradient.
    AffineMap shifted = mapOf(context, 1, {d0 + first * taps});
    SmallVector<Value> operands(inputs);
    operands[1] = padded;
    maps.clear();
    for (auto [i, isTensor] : llvm::enumerate(tensor))
      maps.push_back(i == 1     ? mapOf(context, 1, {d0})
                     : isTensor ? shifted
                                : mapOf(context, 1, {}));
    operands.append(scalars.begin(), scalars.end());
    maps.append(scalars.size(), mapOf(context, 1, {}));
    maps.append(numOutputs, shifted);
    loop::NestOp update =
        kb.nest({chunk * taps}, {false}, operands, outputs, maps, body);
    if (windowCopy)
      copyWindow(kb, outputs[0], first, chunk, taps, live,
                 update.getSchedule().getParallel() >= 0);
  }
  return success();
}

LogicalResult emitUpdate(KernelBuilder &kb, ArrayRef<bool> tensor, Body body,
                         ArrayRef<Value> scalars = {}) {
  if (kb.launch.getOptions().get("gradient_starts"))
    return emitWindowedUpdate(kb, tensor, scalars, body);
  return emitFlatUpdate(kb, tensor, scalars, body);
}

/// `count` f64 scalars that depend on the learning rate and the step alone
/// (inputs `first` and `first + 1`), computed by `body` from them once per
/// launch, into scratch, by a nest of one point; returns their 0-d views,
/// which an update reads as scalars. (Built in the update's body, Adam's
/// bias corrections ran once per element: LLVM did not hoist them, since
/// the step is loaded inside the loop, where the in-place stores may alias
/// it, and libm's pow took 31 % of the MLP's AdamW step.)
SmallVector<Value> perLaunchScalars(KernelBuilder &kb, unsigned first,
                                    unsigned count, Body body) {
  MLIRContext *context = kb.builder.getContext();
  SmallVector<Value> buffers;
  for (unsigned i = 0; i < count; ++i)
    buffers.push_back(kb.scratch({1}, kb.builder.getF64Type()));
  SmallVector<AffineMap> maps = {mapOf(context, 1, {}), mapOf(context, 1, {})};
  maps.append(count, mapOf(context, 1, {affineDim(context, 0)}));
  kb.nest({1}, {false}, {kb.input(first, {}), kb.input(first + 1, {})}, buffers,
          maps, body);
  return llvm::map_to_vector(
      buffers, [&](Value buffer) { return kb.scratchView(buffer, {}); });
}
} // namespace

/// graph.sgd_update(param, grad, lr, step[, buffer]) -> (param'[, buffer']),
/// torch.optim.SGD's arithmetic op for op (TrainingOps.td): in the
/// parameter's type (f32 for f16 and bf16), each `add` with an alpha one
/// fused multiply-add, as ATen's vectorized kernels round them; bit for
/// bit the reference's.
LogicalResult buildSgd(KernelBuilder &kb) {
  bool hasBuffer = kb.launch.getInputs().size() == 5;
  double momentum = kb.real("momentum", 0.0);
  double dampening = kb.real("dampening", 0.0);
  double weightDecay = kb.real("weight_decay", 0.0);
  bool nesterov = kb.flag("nesterov");
  SmallVector<bool> tensor = {true, true, false, false};
  if (hasBuffer)
    tensor.push_back(true);
  return emitUpdate(
      kb, tensor,
      [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        ComputeMath t{b, loc, x[0].getType()};
        Value param = t.widen(x[0]);
        // d_p = grad.add(param, alpha=weight_decay)
        Value direction = t.widen(x[1]);
        if (weightDecay != 0.0)
          direction = t.add(direction, t.c(weightDecay), param);
        SmallVector<Value> results;
        if (hasBuffer) {
          // buf.mul_(momentum).add_(d_p, alpha=1 - dampening), the whole
          // gradient on the first step (torch's buffer initialization
          // from zero; ONNX Momentum's beta adjustment).
          Value first = arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::eq, x[3],
              arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(0)));
          Value share = arith::SelectOp::create(b, loc, first, t.c(1.0),
                                                t.c(1.0 - dampening));
          Value buffer =
              t.add(t.mul(t.widen(x[4]), t.c(momentum)), share, direction);
          // d_p = d_p.add(buf, alpha=momentum) with Nesterov, else buf.
          direction =
              nesterov ? t.add(direction, t.c(momentum), buffer) : buffer;
          results.push_back(t.narrow(buffer));
        }
        // param.add_(d_p, alpha=-lr)
        Value rate = arith::NegFOp::create(b, loc, t.widen(x[2]));
        results.insert(results.begin(),
                       t.narrow(t.add(param, rate, direction)));
        return results;
      });
}

/// graph.adam_update(param, grad, m, v, lr, step) -> (param', m', v'). The
/// PyTorch convention as torch.optim.Adam and AdamW round it, op for op,
/// in the parameter's type (f32 for f16 and bf16; TrainingOps.td); the
/// ONNX convention in double, rounded once. Bit for bit the reference's.
/// The step size, the second moment's correction and AdamW's decay factor
/// are computed once per launch, in double as Python computes them.
LogicalResult buildAdam(KernelBuilder &kb) {
  double beta1 = kb.real("beta1", 0.9), beta2 = kb.real("beta2", 0.999);
  double epsilon = kb.real("epsilon", 1e-8);
  double weightDecay = kb.real("weight_decay", 0.0);
  bool decoupled = kb.flag("decoupled"), onnx = kb.flag("onnx_convention");
  bool decays = decoupled && weightDecay != 0.0 && !onnx;
  SmallVector<Value> scalars = perLaunchScalars(
      kb, 4, decays ? 3 : 2,
      [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        DoubleMath d{b, loc};
        auto pow = [&](double base, Value exponent) -> Value {
          return math::PowFOp::create(b, loc, d.c(base), exponent);
        };
        auto oneMinus = [&](Value v) -> Value {
          return arith::SubFOp::create(b, loc, d.c(1.0), v);
        };
        Value lr = d.wide(x[0]);
        Value t = arith::SIToFPOp::create(b, loc, d.f64, x[1]);
        if (onnx) {
          Value corrected = arith::DivFOp::create(
              b, loc,
              arith::MulFOp::create(
                  b, loc, lr,
                  math::SqrtOp::create(b, loc, oneMinus(pow(beta2, t)))),
              oneMinus(pow(beta1, t)));
          Value positive = arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::sgt, x[1],
              arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(0)));
          return {arith::SelectOp::create(b, loc, positive, corrected, lr),
                  d.c(1.0)};
        }
        // step_size = lr / (1 - beta1^k); sqrt(1 - beta2^k); AdamW's
        // 1 - lr * weight_decay.
        Value k = arith::AddFOp::create(b, loc, t, d.c(1.0));
        SmallVector<Value> values = {
            arith::DivFOp::create(b, loc, lr, oneMinus(pow(beta1, k))),
            math::SqrtOp::create(b, loc, oneMinus(pow(beta2, k)))};
        if (decays)
          values.push_back(
              oneMinus(arith::MulFOp::create(b, loc, lr, d.c(weightDecay))));
        return values;
      });
  auto sqrt = [](OpBuilder &b, Location loc, Value v) -> Value {
    return math::SqrtOp::create(b, loc, v);
  };
  auto div = [](OpBuilder &b, Location loc, Value l, Value r) -> Value {
    return arith::DivFOp::create(b, loc, l, r);
  };
  if (onnx)
    return emitUpdate(
        kb, {true, true, true, true, false, false},
        [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
          DoubleMath d{b, loc};
          Type element = x[0].getType();
          auto mul = [&](Value l, Value r) -> Value {
            return arith::MulFOp::create(b, loc, l, r);
          };
          auto add = [&](Value l, Value r) -> Value {
            return arith::AddFOp::create(b, loc, l, r);
          };
          Value lr = d.wide(x[4]), rate = x[6];
          Value p = d.wide(x[0]);
          Value g = decoupled ? d.wide(x[1])
                              : add(d.wide(x[1]), mul(d.c(weightDecay), p));
          if (decoupled)
            p = mul(p, arith::SubFOp::create(b, loc, d.c(1.0),
                                             mul(lr, d.c(weightDecay))));
          Value m =
              add(mul(d.c(beta1), d.wide(x[2])), mul(d.c(1.0 - beta1), g));
          Value v = add(mul(d.c(beta2), d.wide(x[3])),
                        mul(mul(d.c(1.0 - beta2), g), g));
          // p - rate * m / (sqrt(v) + eps)
          p = arith::SubFOp::create(
              b, loc, p,
              div(b, loc, mul(rate, m), add(sqrt(b, loc, v), d.c(epsilon))));
          return {arith::TruncFOp::create(b, loc, element, p),
                  arith::TruncFOp::create(b, loc, element, m),
                  arith::TruncFOp::create(b, loc, element, v)};
        },
        scalars);
  return emitUpdate(
      kb, {true, true, true, true, false, false},
      [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        ComputeMath t{b, loc, x[0].getType()};
        Value p = t.widen(x[0]), g = t.widen(x[1]);
        // param.mul_(1 - lr * weight_decay) (AdamW), or
        // grad = grad.add(param, alpha=weight_decay) (Adam).
        if (decays)
          p = t.mul(p, t.widen(x[8]));
        else if (!decoupled && weightDecay != 0.0)
          g = t.add(g, t.c(weightDecay), p);
        // exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
        Value m = t.add(t.mul(t.widen(x[2]), t.c(beta1)), t.c(1.0 - beta1), g);
        // exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2):
        // ATen's vectorized v + (s * g) * g, contracted to one fused
        // multiply-add by the compiler.
        Value v = t.add(t.mul(t.widen(x[3]), t.c(beta2)),
                        t.mul(t.c(1.0 - beta2), g), g);
        // denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        Value denominator = arith::AddFOp::create(
            b, loc, div(b, loc, sqrt(b, loc, v), t.widen(x[7])), t.c(epsilon));
        // param.addcdiv_(exp_avg, denom, value=-step_size)
        Value step = arith::NegFOp::create(b, loc, t.widen(x[6]));
        p = arith::AddFOp::create(b, loc, p,
                                  div(b, loc, t.mul(step, m), denominator));
        return {t.narrow(p), t.narrow(m), t.narrow(v)};
      },
      scalars);
}

/// graph.adagrad_update(param, grad, sum, lr, step) -> (param', sum'), as
/// torch.optim.Adagrad rounds it, op for op, in the parameter's type (f32
/// for f16 and bf16; TrainingOps.td); bit for bit the reference's. The
/// rate lr / (1 + step * lr_decay) is computed once per launch, in double.
LogicalResult buildAdagrad(KernelBuilder &kb) {
  double lrDecay = kb.real("lr_decay", 0.0);
  double epsilon = kb.real("epsilon", 1e-10);
  double weightDecay = kb.real("weight_decay", 0.0);
  SmallVector<Value> scalars = perLaunchScalars(
      kb, 3, 1,
      [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        DoubleMath d{b, loc};
        Value step = arith::SIToFPOp::create(b, loc, d.f64, x[1]);
        return {arith::DivFOp::create(
            b, loc, d.wide(x[0]),
            arith::AddFOp::create(
                b, loc, d.c(1.0),
                arith::MulFOp::create(b, loc, step, d.c(lrDecay))))};
      });
  return emitUpdate(
      kb, {true, true, true, false, false},
      [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        ComputeMath t{b, loc, x[0].getType()};
        Value p = t.widen(x[0]), g = t.widen(x[1]);
        // grad = grad.add(param, alpha=weight_decay)
        if (weightDecay != 0.0)
          g = t.add(g, t.c(weightDecay), p);
        // state_sum.addcmul_(grad, grad, value=1), one fused multiply-add
        Value sum = t.add(t.widen(x[2]), g, g);
        // std = state_sum.sqrt().add_(eps)
        Value deviation = arith::AddFOp::create(
            b, loc, math::SqrtOp::create(b, loc, sum), t.c(epsilon));
        // param.addcdiv_(grad, std, value=-clr)
        Value rate = arith::NegFOp::create(b, loc, t.widen(x[5]));
        p = arith::AddFOp::create(
            b, loc, p,
            arith::DivFOp::create(b, loc, t.mul(rate, g), deviation));
        return {t.narrow(p), t.narrow(sum)};
      },
      scalars);
}

} // namespace trainc::conversion
