//===- Amp.cpp - --trainc-amp: automatic mixed precision ------------------===//
//
// Gives every float value of a function a precision by the cast class of
// the op that computes it (CastClass.td), so that products run in bf16 or
// f16 while softmax, losses, normalization statistics and accumulating
// reductions stay in f32:
//
//   %w16 = graph.cast %w {to = bf16}   // once per value, shared
//   %y   = graph.conv %x16, %w16 ...   // CastLow: operands cast down
//   %r   = graph.relu %y               // CastFollow: bf16, as %y is
//   %r32 = graph.cast %r {to = f32}
//   %p   = graph.softmax %r32          // CastFp32
//
// Where the target has no low-precision products, `products=rounded`
// (f16 on CPU) computes CastLow ops in f32 on rounded operands, and
// `products=f32` (bf16 on AVX2-only CPUs) in f32 on the f32 parameters
// and widened activations, storing only the activations low.
//
// The training pipeline runs it twice. On @forward, before
// --trainc-autodiff, so the backward pass mirrors it: a backward op has
// its forward op's types, and the gradient of the cast of an f32
// parameter is the cast of its gradient back to f32. Parameters,
// optimizer state and updates therefore stay f32 (master weights): each
// step makes one low copy of a weight and hands the optimizer an f32
// gradient. Then on the training functions, so that ops only the reverse
// sweep builds get their own class (a bias gradient's reduce_sum
// accumulates in f32, not in the bf16 of the gradient it sums); on ops
// the first run placed it changes nothing. A function's results keep
// their types (values are cast back at the return); calls and other
// dialects' ops are left alone.
//
// A cast is made once per (value, type), before its first user, and
// shared by all users; a value that is the exact widening of one of the
// wanted type (bf16 -> f32) is replaced by its source, not cast back.
//
//===----------------------------------------------------------------------===//
#include "dialects/graph/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/StringSwitch.h"

namespace trainc::graph {
#define GEN_PASS_DEF_AMPPASS
#include "dialects/graph/Transforms/Passes.h.inc"
} // namespace trainc::graph

using namespace mlir;
using namespace trainc::graph;

namespace {

Type elementTypeOf(Value value) {
  return getElementTypeOrSelf(value.getType());
}

bool isFloat(Value value) { return isa<FloatType>(elementTypeOf(value)); }

/// Where CastLow ops compute (the pass's `products` option).
enum class Products { Low, Rounded, F32 };

/// Rewrites one function's ops in program order.
class Precisions {
public:
  Precisions(FloatType low, Products products)
      : low(low), f32(Float32Type::get(low.getContext())), products(products) {}

  LogicalResult run(func::FuncOp function) {
    for (Operation &op : llvm::make_early_inc_range(function.getOps())) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        // The function's results keep their declared types.
        for (auto [operand, type] : llvm::zip(
                 ret->getOpOperands(), function.getFunctionType().getResults()))
          operand.set(as(operand.get(), getElementTypeOrSelf(type), ret));
        continue;
      }
      // Calls and other dialects' ops keep their types (@train_step's
      // call of @gradients).
      if (!isa<GraphDialect>(op.getDialect()))
        continue;
      if (failed(rewrite(&op)))
        return failure();
    }
    return success();
  }

private:
  LogicalResult rewrite(Operation *op) {
    std::optional<CastClass> castClass = getCastClass(op);
    if (!castClass)
      return op->emitOpError("declares no cast class (CastClass.td)");
    auto lowOperand = [&](Value v) { return elementTypeOf(v) == low; };
    Type target;
    switch (*castClass) {
    case CastClass::Fixed:
      return success();
    case CastClass::Low:
      if (products == Products::Rounded)
        return emulateLow(op);
      if (products == Products::F32)
        return storeLow(op);
      target = low;
      break;
    case CastClass::Fp32:
      target = f32;
      break;
    case CastClass::Follow:
      target = llvm::any_of(op->getOperands(), lowOperand) ? Type(low) : f32;
      break;
    case CastClass::Activations:
      return rewriteActivations(op);
    }
    // Only the other of the two precisions moves: f64 data and integer
    // indices stay what they are.
    Type from = target == low ? Type(f32) : Type(low);
    for (OpOperand &operand : op->getOpOperands())
      if (elementTypeOf(operand.get()) == from)
        operand.set(as(operand.get(), target, op));
    // Also when no operand moved here: an earlier op may have changed one.
    return reinferResults(op);
  }

  /// A CastActivations op (a normalization): its activations (operands
  /// shaped like the first) follow, low if any is; its parameters and
  /// statistics (the other float operands) are f32.
  LogicalResult rewriteActivations(Operation *op) {
    auto shape = cast<ShapedType>(op->getOperand(0).getType()).getShape();
    auto activation = [&](Value v) {
      return cast<ShapedType>(v.getType()).getShape() == shape;
    };
    bool anyLow = llvm::any_of(op->getOperands(), [&](Value v) {
      return activation(v) && elementTypeOf(v) == low;
    });
    for (OpOperand &operand : op->getOpOperands()) {
      Value v = operand.get();
      Type want = activation(v) && anyLow ? Type(low) : f32;
      if (elementTypeOf(v) == low || elementTypeOf(v) == f32)
        operand.set(as(v, want, op));
    }
    return reinferResults(op);
  }

  /// A CastLow op under `products=rounded`: it reads its float operands
  /// rounded to the low precision (cast down and back up), computes in
  /// f32, and its users read its results rounded down, as a low-precision
  /// product with f32 accumulation would (tensor cores).
  LogicalResult emulateLow(Operation *op) {
    for (OpOperand &operand : op->getOpOperands())
      if (elementTypeOf(operand.get()) == f32 ||
          elementTypeOf(operand.get()) == low)
        operand.set(as(as(operand.get(), low, op), f32, op));
    if (failed(reinferResults(op)))
      return failure();
    roundResults(op, /*forLowUsersOnly=*/false);
    return success();
  }

  /// A CastLow op under `products=f32`: low operands (activations) are
  /// widened, f32 ones (parameters) are read as they are, it computes in
  /// f32, and its results are stored rounded where a user computes low.
  LogicalResult storeLow(Operation *op) {
    for (OpOperand &operand : op->getOpOperands())
      if (elementTypeOf(operand.get()) == low)
        operand.set(as(operand.get(), f32, op));
    if (failed(reinferResults(op)))
      return failure();
    roundResults(op, /*forLowUsersOnly=*/true);
    return success();
  }

  /// Whether `value` reaches an op that computes in the low precision: a
  /// CastLow or CastActivations user, or a CastFollow one that reads
  /// another low operand or whose results reach one in turn (a weight
  /// gradient transposed for its update does not).
  bool readLow(Value value) const {
    return llvm::any_of(value.getUsers(), [&](Operation *user) {
      std::optional<CastClass> userClass = getCastClass(user);
      if (!userClass)
        return false;
      if (*userClass == CastClass::Low || *userClass == CastClass::Activations)
        return true;
      if (*userClass != CastClass::Follow)
        return false;
      return llvm::any_of(user->getOperands(),
                          [&](Value v) {
                            return v != value && elementTypeOf(v) == low;
                          }) ||
             llvm::any_of(user->getResults(),
                          [&](Value result) { return readLow(result); });
    });
  }

  /// The f32 results of `op` as its users read them: rounded to the low
  /// precision, once. With `forLowUsersOnly`, a result that reaches no op
  /// computing low (a weight gradient's optimizer update, maybe through a
  /// transpose; a loss) stays f32: rounding it would only lose bits.
  void roundResults(Operation *op, bool forLowUsersOnly) {
    OpBuilder b(op->getContext());
    b.setInsertionPointAfter(op);
    for (Value result : op->getResults()) {
      // A result whose users all read it rounded already (a second run).
      if (elementTypeOf(result) != f32 ||
          llvm::all_of(result.getUsers(), [&](Operation *user) {
            auto cast = dyn_cast<CastOp>(user);
            return cast && elementTypeOf(cast.getResult()) == low;
          }))
        continue;
      if (forLowUsersOnly && !readLow(result))
        continue;
      Value rounded = CastOp::create(b, op->getLoc(), result, low);
      result.replaceAllUsesExcept(rounded, rounded.getDefiningOp());
    }
  }

  /// Recomputes the result types from the new operands.
  LogicalResult reinferResults(Operation *op) {
    auto infer = dyn_cast<InferTypeOpInterface>(op);
    if (!infer)
      return op->emitOpError("infers no result types, so --trainc-amp cannot "
                             "change its operands' precision");
    SmallVector<Type> types;
    if (failed(infer.inferReturnTypes(
            op->getContext(), op->getLoc(), op->getOperands(),
            op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
            op->getRegions(), types)))
      return op->emitOpError("has no valid result types with its operands "
                             "in mixed precision");
    for (auto [result, type] : llvm::zip(op->getResults(), types))
      result.setType(type);
    return success();
  }

  /// `value` as element type `type` for `user`: itself, the source of an
  /// exact widening, or one cast shared by all users, placed before the
  /// first (ops are visited in order, so it dominates the later ones).
  Value as(Value value, Type type, Operation *user) {
    if (!isFloat(value) || elementTypeOf(value) == type)
      return value;
    if (auto widening = value.getDefiningOp<CastOp>()) {
      Value source = widening.getInput();
      if (elementTypeOf(source) == type &&
          widensExactly(type, elementTypeOf(value)))
        return source;
    }
    Value &cached = casts[{value, type}];
    if (!cached) {
      OpBuilder b(user);
      cached = CastOp::create(b, value.getLoc(), value, type);
    }
    return cached;
  }

  FloatType low;
  FloatType f32;
  Products products;
  DenseMap<std::pair<Value, Type>, Value> casts;
};

struct AmpPass : trainc::graph::impl::AmpPassBase<AmpPass> {
  using AmpPassBase::AmpPassBase;

  void runOnOperation() override {
    MLIRContext *context = &getContext();
    FloatType low;
    if (precision == "bf16")
      low = BFloat16Type::get(context);
    else if (precision == "fp16")
      low = Float16Type::get(context);
    else {
      getOperation().emitError("--trainc-amp: precision must be bf16 or fp16, "
                               "not '")
          << precision << "'";
      return signalPassFailure();
    }
    std::optional<Products> where =
        llvm::StringSwitch<std::optional<Products>>(products)
            .Case("low", Products::Low)
            .Case("rounded", Products::Rounded)
            .Case("f32", Products::F32)
            .Default(std::nullopt);
    if (!where) {
      getOperation().emitError("--trainc-amp: products must be low, rounded "
                               "or f32, not '")
          << products << "'";
      return signalPassFailure();
    }
    for (auto function : getOperation().getOps<func::FuncOp>())
      if (!function.isExternal() &&
          failed(Precisions(low, *where).run(function)))
        return signalPassFailure();
  }
};

} // namespace
