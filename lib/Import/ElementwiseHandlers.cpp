//===- ElementwiseHandlers.cpp - ONNX elementwise and reduction ops -------===//
//
// Arithmetic on values known at import time (shape arithmetic) is computed
// here; everything else becomes a graph op.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/NodeImporter.h"

#include "dialects/graph/GraphOps.h"
#include "dialects/graph/ShapeInference.h"

#include <cmath>

using namespace mlir;

namespace trainc::import {
namespace {

template <typename OpTy> LogicalResult importUnary(NodeImporter &n) {
  auto input = n.input(0);
  if (failed(input))
    return failure();
  auto result = n.create<OpTy>({*input});
  if (failed(result))
    return failure();
  n.setOutput(0, *result);
  return success();
}

/// Broadcasts two known integer tensors through `compute`; nullopt when
/// either is unknown or not integer.
template <typename Compute>
std::optional<KnownTensor>
broadcastKnown(const KnownTensor *lhs, const KnownTensor *rhs,
               Type resultElementType, Compute compute) {
  if (!lhs || !rhs || lhs->isFloat() || rhs->isFloat())
    return std::nullopt;
  auto shape = graph::broadcastShapes(lhs->shape, rhs->shape);
  if (!shape)
    return std::nullopt;
  KnownTensor result;
  result.elementType = resultElementType;
  result.shape = *shape;
  int64_t count = result.numElements();
  if (count < 0 || count > kMaxKnownElements)
    return std::nullopt;
  // Index of output element `flat` in an operand of shape `operandShape`.
  auto operandIndex = [&](ArrayRef<int64_t> operandShape, int64_t flat) {
    int64_t index = 0, stride = 1, rank = shape->size();
    int64_t offset = rank - operandShape.size();
    for (int64_t d = rank - 1; d >= 0; --d) {
      int64_t coordinate = flat % (*shape)[d];
      flat /= (*shape)[d];
      if (d >= offset) {
        int64_t size = operandShape[d - offset];
        index += (size == 1 ? 0 : coordinate) * stride;
        stride *= size;
      }
    }
    return index;
  };
  for (int64_t i = 0; i < count; ++i) {
    std::optional<int64_t> value =
        compute(lhs->ints[operandIndex(lhs->shape, i)],
                rhs->ints[operandIndex(rhs->shape, i)]);
    if (!value)
      return std::nullopt;
    result.ints.push_back(*value);
  }
  return result;
}

template <typename OpTy, typename Compute>
LogicalResult importBinary(NodeImporter &n, Compute compute,
                           bool comparison = false) {
  const KnownTensor *lhs = n.known(0), *rhs = n.known(1);
  Type elementType =
      comparison ? n.builder().getI1Type() : (lhs ? lhs->elementType : Type());
  if (auto folded = broadcastKnown(lhs, rhs, elementType, compute)) {
    n.setKnownOutput(0, std::move(*folded));
    return success();
  }
  auto a = n.input(0);
  if (failed(a))
    return failure();
  auto b = n.input(1);
  if (failed(b))
    return failure();
  auto result = n.create<OpTy>({*a, *b});
  if (failed(result))
    return failure();
  n.setOutput(0, *result);
  return success();
}

// Known integer arithmetic (shape computations): a result that overflows
// int64 is not folded (the node imports as an op, which then fails or
// computes at run time as the model's own integer type does).
LogicalResult importAdd(NodeImporter &n) {
  return importBinary<graph::AddOp>(
      n, [](int64_t a, int64_t b) -> std::optional<int64_t> {
        int64_t r;
        if (__builtin_add_overflow(a, b, &r))
          return std::nullopt;
        return r;
      });
}
LogicalResult importSub(NodeImporter &n) {
  return importBinary<graph::SubOp>(
      n, [](int64_t a, int64_t b) -> std::optional<int64_t> {
        int64_t r;
        if (__builtin_sub_overflow(a, b, &r))
          return std::nullopt;
        return r;
      });
}
LogicalResult importMul(NodeImporter &n) {
  return importBinary<graph::MulOp>(
      n, [](int64_t a, int64_t b) -> std::optional<int64_t> {
        int64_t r;
        if (__builtin_mul_overflow(a, b, &r))
          return std::nullopt;
        return r;
      });
}
LogicalResult importDiv(NodeImporter &n) {
  // ONNX integer Div truncates toward zero, as C++ does.
  return importBinary<graph::DivOp>(
      n, [](int64_t a, int64_t b) -> std::optional<int64_t> {
        if (b == 0 || (a == INT64_MIN && b == -1))
          return std::nullopt;
        return a / b;
      });
}
/// Mod of integers known at import time (Swin's window padding computes
/// `(window - size % window) % window` from shapes). `fmod = 0`: the
/// result takes the divisor's sign (Python's %); `fmod = 1`: the
/// dividend's (C's %). Mod of tensors computed at run time is not built.
LogicalResult importMod(NodeImporter &n) {
  bool fmod = n.getBool("fmod", false);
  const KnownTensor *lhs = n.known(0), *rhs = n.known(1);
  if (lhs && rhs && !lhs->isFloat() && !rhs->isFloat()) {
    auto folded =
        broadcastKnown(lhs, rhs, lhs->elementType,
                       [fmod](int64_t a, int64_t b) -> std::optional<int64_t> {
                         if (b == 0 || (a == INT64_MIN && b == -1))
                           return std::nullopt;
                         int64_t r = a % b;
                         if (!fmod && r != 0 && ((r < 0) != (b < 0)))
                           r += b;
                         return r;
                       });
    if (folded) {
      n.setKnownOutput(0, std::move(*folded));
      return success();
    }
    return n.error("Mod of known integers: a divisor is 0 (or the result "
                   "overflows), or the operands do not broadcast");
  }
  return n.error("Mod is supported on integers known at import time (shape "
                 "arithmetic) only; this one reads tensors computed at run "
                 "time");
}
LogicalResult importPow(NodeImporter &n) {
  return importBinary<graph::PowOp>(
      n,
      [](int64_t, int64_t) -> std::optional<int64_t> { return std::nullopt; });
}
LogicalResult importEqual(NodeImporter &n) {
  return importBinary<graph::EqualOp>(
      n, [](int64_t a, int64_t b) -> std::optional<int64_t> { return a == b; },
      true);
}
LogicalResult importAnd(NodeImporter &n) {
  // Known masks (shape arithmetic on attention masks) fold.
  return importBinary<graph::AndOp>(
      n, [](int64_t a, int64_t b) -> std::optional<int64_t> { return a && b; },
      true);
}
LogicalResult importLess(NodeImporter &n) {
  return importBinary<graph::LessOp>(
      n, [](int64_t a, int64_t b) -> std::optional<int64_t> { return a < b; },
      true);
}
LogicalResult importGreater(NodeImporter &n) {
  return importBinary<graph::GreaterOp>(
      n, [](int64_t a, int64_t b) -> std::optional<int64_t> { return a > b; },
      true);
}
LogicalResult importLessOrEqual(NodeImporter &n) {
  return importBinary<graph::LessEqualOp>(
      n, [](int64_t a, int64_t b) -> std::optional<int64_t> { return a <= b; },
      true);
}
LogicalResult importGreaterOrEqual(NodeImporter &n) {
  return importBinary<graph::GreaterEqualOp>(
      n, [](int64_t a, int64_t b) -> std::optional<int64_t> { return a >= b; },
      true);
}

LogicalResult importWhere(NodeImporter &n) {
  const KnownTensor *condition = n.known(0), *lhs = n.known(1),
                    *rhs = n.known(2);
  if (condition && lhs && rhs && !lhs->isFloat() && !rhs->isFloat()) {
    // select(c, a, b) = c * a + (1 - c) * b, on integers.
    auto taken =
        broadcastKnown(condition, lhs, lhs->elementType,
                       [](int64_t c, int64_t a) -> std::optional<int64_t> {
                         return c ? a : 0;
                       });
    auto mask =
        broadcastKnown(condition, rhs, rhs->elementType,
                       [](int64_t c, int64_t b) -> std::optional<int64_t> {
                         return c ? 0 : b;
                       });
    if (taken && mask) {
      auto sum = broadcastKnown(
          &*taken, &*mask, lhs->elementType,
          [](int64_t a, int64_t b) -> std::optional<int64_t> { return a + b; });
      if (sum) {
        n.setKnownOutput(0, std::move(*sum));
        return success();
      }
    }
  }
  SmallVector<Value, 3> operands;
  for (unsigned i = 0; i < 3; ++i) {
    auto value = n.input(i);
    if (failed(value))
      return failure();
    operands.push_back(*value);
  }
  auto result = n.create<graph::WhereOp>(operands);
  if (failed(result))
    return failure();
  n.setOutput(0, *result);
  return success();
}

LogicalResult importIdentity(NodeImporter &n) {
  if (const KnownTensor *value = n.foldable(0)) {
    n.setKnownOutput(0, *value);
    return success();
  }
  auto input = n.input(0);
  if (failed(input))
    return failure();
  n.setOutput(0, *input);
  return success();
}

/// Input 0 converted to `target` (a known value at import time, else a
/// graph.cast). A small f64 initializer is folded even though it has a
/// parameter's role: torch 2.x's dynamo exporter writes a model's scalar
/// constants (`x * 0.5`) as f64 initializers read through CastLike, which
/// PyTorch does not train (nor are its trained parameters f64). A small
/// f32, f16 or bf16 weight read through a Cast stays a parameter.
LogicalResult importCastTo(NodeImporter &n, Type target) {
  const KnownTensor *value = n.known(0);
  if (value && value->isFloat() && n.isWeight(0) &&
      !value->elementType.isF64())
    value = nullptr;
  if (value) {
    KnownTensor result = *value;
    result.elementType = target;
    if (isa<FloatType>(target) && !value->isFloat()) {
      for (int64_t v : value->ints)
        result.floats.push_back(static_cast<double>(v));
      result.ints.clear();
    } else if (!isa<FloatType>(target) && value->isFloat()) {
      for (double v : value->floats)
        result.ints.push_back(target.isInteger(1) ? v != 0.0
                                                  : static_cast<int64_t>(v));
      result.floats.clear();
    } else if (target.isInteger(1)) {
      for (int64_t &v : result.ints)
        v = v != 0;
    }
    n.setKnownOutput(0, std::move(result));
    return success();
  }
  auto input = n.input(0);
  if (failed(input))
    return failure();
  auto result = n.create<graph::CastOp>(
      {*input}, {n.namedAttr("to", TypeAttr::get(target))});
  if (failed(result))
    return failure();
  n.setOutput(0, *result);
  return success();
}

LogicalResult importCast(NodeImporter &n) {
  const auto *to = n.attribute("to");
  if (!to)
    return n.error("missing attribute 'to'");
  Type target;
  switch (to->i()) {
  case onnx::TensorProto::FLOAT:
    target = n.builder().getF32Type();
    break;
  case onnx::TensorProto::DOUBLE:
    target = n.builder().getF64Type();
    break;
  case onnx::TensorProto::FLOAT16:
    target = n.builder().getF16Type();
    break;
  case onnx::TensorProto::BFLOAT16:
    target = n.builder().getBF16Type();
    break;
  case onnx::TensorProto::INT64:
    target = n.builder().getI64Type();
    break;
  case onnx::TensorProto::INT32:
    target = n.builder().getI32Type();
    break;
  case onnx::TensorProto::BOOL:
    target = n.builder().getI1Type();
    break;
  default:
    return n.error("cast to ONNX data type " + std::to_string(to->i()) +
                   " is not supported");
  }
  return importCastTo(n, target);
}

/// CastLike (opset 15; torch 2.x's dynamo exporter emits it around
/// scalars): a Cast to the element type of input 1.
LogicalResult importCastLike(NodeImporter &n) {
  if (const KnownTensor *like = n.known(1))
    return importCastTo(n, like->elementType);
  auto like = n.inputType(1);
  if (failed(like))
    return failure();
  return importCastTo(n, like->getElementType());
}

LogicalResult importLeakyRelu(NodeImporter &n) {
  auto input = n.input(0);
  if (failed(input))
    return failure();
  auto result = n.create<graph::LeakyReluOp>(
      {*input}, {n.f64Attr("alpha", n.getFloat("alpha", 0.01))});
  if (failed(result))
    return failure();
  n.setOutput(0, *result);
  return success();
}

LogicalResult importGelu(NodeImporter &n) {
  std::string approximate = n.getString("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    return n.error("unknown Gelu approximation '" + approximate + "'");
  auto input = n.input(0);
  if (failed(input))
    return failure();
  auto result = n.create<graph::GeluOp>(
      {*input}, {n.boolAttr("tanh_approximation", approximate == "tanh")});
  if (failed(result))
    return failure();
  n.setOutput(0, *result);
  return success();
}

LogicalResult importClip(NodeImporter &n) {
  auto input = n.input(0);
  if (failed(input))
    return failure();
  SmallVector<NamedAttribute, 2> attrs;
  const char *names[] = {"min", "max"};
  for (unsigned i = 1; i <= 2; ++i) {
    if (!n.hasInput(i))
      continue;
    auto bound = n.knownScalar(i, std::string("Clip ") + names[i - 1]);
    if (failed(bound))
      return failure();
    attrs.push_back(n.f64Attr(names[i - 1], *bound));
  }
  auto result = n.create<graph::ClipOp>({*input}, attrs);
  if (failed(result))
    return failure();
  n.setOutput(0, *result);
  return success();
}

LogicalResult importDropout(NodeImporter &n) {
  if (n.outputUsed(1))
    return n.error("the Dropout mask output is not supported");
  double ratio = 0.5;
  if (n.hasInput(1)) {
    auto value = n.knownScalar(1, "Dropout ratio");
    if (failed(value))
      return failure();
    ratio = *value;
  }
  bool training = false;
  if (n.hasInput(2)) {
    auto value = n.knownScalar(2, "Dropout training_mode");
    if (failed(value))
      return failure();
    training = *value != 0.0;
  }
  if (ratio < 0.0 || ratio >= 1.0)
    return n.error("Dropout ratio " + std::to_string(ratio) +
                   " is outside [0, 1)");
  auto input = n.input(0);
  if (failed(input))
    return failure();
  // Inference-mode dropout (and ratio 0) is the identity in ONNX.
  if (!training || ratio == 0.0) {
    n.setOutput(0, *input);
    return success();
  }
  auto result =
      n.create<graph::DropoutOp>({*input}, {n.f64Attr("ratio", ratio)});
  if (failed(result))
    return failure();
  n.setOutput(0, *result);
  return success();
}

template <typename OpTy> LogicalResult importSoftmax(NodeImporter &n) {
  auto type = n.inputType(0);
  if (failed(type))
    return failure();
  auto axis = n.normalizeAxis(n.getInt("axis", -1), type->getRank());
  if (failed(axis))
    return failure();
  auto result = n.create<OpTy>({*n.input(0)}, {n.i64Attr("axis", *axis)});
  if (failed(result))
    return failure();
  n.setOutput(0, *result);
  return success();
}

enum class Reduction { Sum, Mean, Max, Min, L2 };

/// Reductions: axes are an attribute up to a per-op opset and an input
/// from then on (ReduceSum-13, the others at 18). ReduceMin and ReduceL2
/// are compositions of ops the compiler differentiates: -max(-x) (exact,
/// NaN included) and sqrt(sum(x * x)).
LogicalResult importReduce(NodeImporter &n, Reduction kind,
                           int64_t axesInputSince) {
  auto type = n.inputType(0);
  if (failed(type))
    return failure();
  if ((kind == Reduction::Min || kind == Reduction::L2) &&
      !isa<FloatType>(type->getElementType()))
    return n.error("only float inputs are supported");
  SmallVector<int64_t> axes;
  if (n.opset() >= axesInputSince) {
    if (n.hasInput(1)) {
      auto values = n.knownInts(1, "reduction axes");
      if (failed(values))
        return failure();
      axes = *values;
    }
  } else {
    axes = n.getInts("axes");
  }
  if (axes.empty()) {
    if (n.getBool("noop_with_empty_axes", false)) {
      n.setOutput(0, *n.input(0));
      return success();
    }
    for (int64_t i = 0; i < type->getRank(); ++i)
      axes.push_back(i);
  }
  for (int64_t &axis : axes) {
    auto normalized = n.normalizeAxis(axis, type->getRank());
    if (failed(normalized))
      return failure();
    axis = *normalized;
  }
  llvm::sort(axes);
  SmallVector<NamedAttribute> attributes = {
      n.arrayAttr("axes", axes),
      n.boolAttr("keepdims", n.getBool("keepdims", true))};
  Value x = *n.input(0);
  FailureOr<Value> result;
  switch (kind) {
  case Reduction::Sum:
    result = n.create<graph::ReduceSumOp>({x}, attributes);
    break;
  case Reduction::Mean:
    result = n.create<graph::ReduceMeanOp>({x}, attributes);
    break;
  case Reduction::Max:
    result = n.create<graph::ReduceMaxOp>({x}, attributes);
    break;
  case Reduction::Min: {
    auto negated = n.create<graph::NegOp>({x});
    if (failed(negated))
      return failure();
    auto largest = n.create<graph::ReduceMaxOp>({*negated}, attributes);
    if (failed(largest))
      return failure();
    result = n.create<graph::NegOp>({*largest});
    break;
  }
  case Reduction::L2: {
    auto squares = n.create<graph::MulOp>({x, x});
    if (failed(squares))
      return failure();
    auto sum = n.create<graph::ReduceSumOp>({*squares}, attributes);
    if (failed(sum))
      return failure();
    result = n.create<graph::SqrtOp>({*sum});
    break;
  }
  }
  if (failed(result))
    return failure();
  n.setOutput(0, *result);
  return success();
}

/// ArgMax: an i64 index along `axis`.
LogicalResult importArgMax(NodeImporter &n) {
  auto type = n.inputType(0);
  if (failed(type))
    return failure();
  auto axis = n.normalizeAxis(n.getInt("axis", 0), type->getRank());
  if (failed(axis))
    return failure();
  auto result = n.create<graph::ArgMaxOp>(
      {*n.input(0)},
      {n.i64Attr("axis", *axis),
       n.boolAttr("keepdims", n.getBool("keepdims", true)),
       n.boolAttr("select_last_index", n.getBool("select_last_index", false))});
  if (failed(result))
    return failure();
  n.setOutput(0, *result);
  return success();
}

template <Reduction kind, int64_t axesInputSince>
LogicalResult importReduceAs(NodeImporter &n) {
  return importReduce(n, kind, axesInputSince);
}

} // namespace

void registerElementwiseHandlers(HandlerTable &table) {
  table["Neg"] = importUnary<graph::NegOp>;
  table["Abs"] = importUnary<graph::AbsOp>;
  table["Sqrt"] = importUnary<graph::SqrtOp>;
  table["Exp"] = importUnary<graph::ExpOp>;
  table["Log"] = importUnary<graph::LogOp>;
  table["Tanh"] = importUnary<graph::TanhOp>;
  table["Sigmoid"] = importUnary<graph::SigmoidOp>;
  table["Relu"] = importUnary<graph::ReluOp>;
  table["Erf"] = importUnary<graph::ErfOp>;
  table["Sin"] = importUnary<graph::SinOp>;
  table["Cos"] = importUnary<graph::CosOp>;
  table["Softplus"] = importUnary<graph::SoftplusOp>;
  table["Reciprocal"] = importUnary<graph::ReciprocalOp>;
  table["Not"] = importUnary<graph::NotOp>;
  table["And"] = importAnd;
  table["IsNaN"] = importUnary<graph::IsNaNOp>;
  table["LeakyRelu"] = importLeakyRelu;
  table["Gelu"] = importGelu;
  table["Clip"] = importClip;
  table["Dropout"] = importDropout;
  table["Cast"] = importCast;
  table["CastLike"] = importCastLike;
  table["Identity"] = importIdentity;
  table["Add"] = importAdd;
  table["Sub"] = importSub;
  table["Mul"] = importMul;
  table["Div"] = importDiv;
  table["Mod"] = importMod;
  table["Pow"] = importPow;
  table["Equal"] = importEqual;
  table["Less"] = importLess;
  table["Greater"] = importGreater;
  table["LessOrEqual"] = importLessOrEqual;
  table["GreaterOrEqual"] = importGreaterOrEqual;
  table["Where"] = importWhere;
  table["Softmax"] = importSoftmax<graph::SoftmaxOp>;
  table["LogSoftmax"] = importSoftmax<graph::LogSoftmaxOp>;
  table["ReduceSum"] = importReduceAs<Reduction::Sum, 13>;
  table["ReduceMean"] = importReduceAs<Reduction::Mean, 18>;
  table["ReduceMax"] = importReduceAs<Reduction::Max, 18>;
  table["ReduceMin"] = importReduceAs<Reduction::Min, 18>;
  table["ReduceL2"] = importReduceAs<Reduction::L2, 18>;
  table["ArgMax"] = importArgMax;
}

} // namespace trainc::import
