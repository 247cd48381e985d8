//===- RematElementwise.cpp - --trainc-remat-elementwise ------------------===//
//
// Autodiff keeps every forward value a gradient formula reads, so GELU's
// forward (h = x + b; s = h / sqrt 2; e = erf(s) + 1; y = h * e * 0.5)
// stores s next to h and e for its gradient: one more full-size tensor
// written in the forward pass and read back in the backward one, though
// it is one division of h, which the gradient reads anyway. This pass
// recomputes such arithmetic right before its far readers (see
// Passes.td), so the forward kernel, fused, no longer writes it and the
// backward kernel, fused, computes it in registers.
//
//===----------------------------------------------------------------------===//
#include "dialects/graph/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

#include "llvm/ADT/SetVector.h"

namespace trainc::graph {
#define GEN_PASS_DEF_REMATELEMENTWISEPASS
#include "dialects/graph/Transforms/Passes.h.inc"
} // namespace trainc::graph

using namespace mlir;
using namespace trainc::graph;

namespace {

/// Float arithmetic and casts between floats (--amp's bf16 -> f32 copies):
/// recomputing them costs an instruction per element inside a fused
/// kernel. Transcendental functions are not recomputed: erf's polynomial
/// costs more than reading a stored value back (GELU's gradient with erf
/// recomputed: 0.29 against 0.20 ms per launch).
bool isCheap(Operation *op) {
  if (!op || op->getNumResults() != 1 ||
      !isa<FloatType>(getElementTypeOrSelf(op->getResult(0).getType())))
    return false;
  if (auto cast = dyn_cast<CastOp>(op))
    return isa<FloatType>(getElementTypeOrSelf(cast.getInput().getType()));
  return isa<AddOp, SubOp, MulOp, DivOp, NegOp>(op);
}

/// An exact widening of a low float (--amp's f32 copy of a bf16
/// activation for an f32 product): the only cheap op recomputed for a
/// reader it does not fuse with, as a kernel of its own, since storing the
/// copy instead doubles the bytes the activation keeps alive.
bool isWidening(Operation *op) {
  auto cast = dyn_cast_or_null<CastOp>(op);
  return cast && isCheap(cast) &&
         widensExactly(getElementTypeOrSelf(cast.getInput().getType()),
                       getElementTypeOrSelf(cast.getResult().getType()));
}

/// The elementwise functions: recomputed only with `functions=true`.
bool isFunction(Operation *op) {
  return isa_and_nonnull<ExpOp, ErfOp, TanhOp, SigmoidOp, SqrtOp, AbsOp, ReluOp,
                         SinOp, CosOp, SoftplusOp>(op);
}

/// A copy of function arguments in another layout or type, such as
/// --trainc-drop-dead-taps' slice of a weight's live taps, --amp's bf16
/// copy of a weight or --trainc-convs-as-products' matrix of a weight (or
/// a chain of such ops): recomputing it reads the arguments again, which
/// stay in memory anyway. Only with `parameters=true`.
bool isArgumentCopy(Operation *op) {
  if (!isa_and_nonnull<SliceOp, CastOp, ReshapeOp, TransposeOp, ConvMatrixOp>(
          op))
    return false;
  return llvm::all_of(op->getOperands(), [](Value v) {
    Operation *def = v.getDefiningOp();
    return !def || isArgumentCopy(def);
  });
}

/// Ops that fuse with their neighbours into one generated loop nest.
bool fusesWithNeighbours(Operation *op) {
  return isCheap(op) || matchPattern(op, m_Constant()) || isFunction(op);
}

/// How many recomputed ops a chain may have.
constexpr int kMaxChain = 4;

struct RematElementwisePass
    : trainc::graph::impl::RematElementwisePassBase<RematElementwisePass> {
  using Base::Base;

  /// What this run recomputes for a reader: cheap arithmetic, and the
  /// elementwise functions with `functions=true`.
  bool recomputes(Operation *op) const {
    return isCheap(op) || (parameters && isArgumentCopy(op)) ||
           (functions && isFunction(op) &&
            isa<FloatType>(getElementTypeOrSelf(op->getResult(0).getType())));
  }

  /// Whether `op` is recomputed for any far reader, not only for one it
  /// fuses with: widenings, and with `parameters=true` argument copies.
  bool recomputedForAnyReader(Operation *op) const {
    return isWidening(op) || (parameters && isArgumentCopy(op));
  }

  void runOnOperation() override {
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      if (function.isExternal())
        continue;
      copies.clear();
      // In order, so that a copy made for one reader serves the readers
      // after it that fuse with it. A value read near a later reader
      // counts as available; when that reader gets a copy instead, the
      // next round gives the earlier reader one too.
      for (int round = 0; round < kMaxChain; ++round) {
        bool changed = false;
        for (Operation &op : llvm::make_early_inc_range(function.getOps()))
          changed |= rematerializeOperands(&op);
        if (!changed)
          break;
      }
    }
  }

  /// Whether `value` is read at `at`, after it, or by an op before it
  /// that fuses with it (nothing but cheap elementwise ops in between):
  /// then a copy that reads `value` at `at` keeps no buffer alive longer.
  static bool readNear(Value value, Operation *at) {
    return llvm::any_of(value.getUsers(), [&](Operation *user) {
      return user == at || at->isBeforeInBlock(user) || !far(user, at);
    });
  }

  /// Whether `value` is available at `at` without keeping anything alive
  /// longer: a constant, an argument, a value read near `at`, or one
  /// recomputable from such values by at most `budget` more cheap ops.
  bool available(Value value, Operation *at, int &budget) const {
    Operation *def = value.getDefiningOp();
    if (!def || matchPattern(def, m_Constant()) || readNear(value, at))
      return true;
    if (!recomputes(def) || --budget < 0)
      return false;
    return llvm::all_of(def->getOperands(),
                        [&](Value v) { return available(v, at, budget); });
  }

  /// `value` at `at`: itself if it is available there, an earlier copy
  /// that fuses with `at`, or a new copy right before `at` (see
  /// `available`).
  Value recompute(Value value, Operation *at, OpBuilder &builder) {
    Operation *def = value.getDefiningOp();
    if (!def || matchPattern(def, m_Constant()) || readNear(value, at))
      return value;
    return copyOf(def, at, builder);
  }

  /// A copy of `op` for a reader at `at`, its operands recomputed there.
  Value copyOf(Operation *op, Operation *at, OpBuilder &builder) {
    auto found = copies.find(op->getResult(0));
    if (found != copies.end() && !far(found->second.getDefiningOp(), at))
      return found->second;
    IRMapping mapping;
    for (Value operand : op->getOperands())
      mapping.map(operand, recompute(operand, at, builder));
    // Looked up again: the recursion above inserts into `copies`, which
    // may move its entries (a reference taken before would dangle).
    Value copy = builder.clone(*op, mapping)->getResult(0);
    copies[op->getResult(0)] = copy;
    return copy;
  }

  /// The latest copy of each value recomputed so far.
  DenseMap<Value, Value> copies;

  /// Whether something that does not fuse with `from` runs between `from`
  /// and `to`: a kernel boundary, so `to` reads `from`'s result from
  /// memory.
  static bool far(Operation *from, Operation *to) {
    if (!from->isBeforeInBlock(to))
      return true;
    for (Operation *op = from->getNextNode(); op && op != to;
         op = op->getNextNode())
      if (!fusesWithNeighbours(op))
        return true;
    return false;
  }

  /// Gives `reader` its own copies of the cheap values it reads from far
  /// (any reader: of widenings; a cheap one: of any cheap value); whether
  /// it did.
  bool rematerializeOperands(Operation *reader) {
    bool changed = false;
    for (Value operand : llvm::to_vector(reader->getOperands())) {
      Operation *def = operand.getDefiningOp();
      if (!recomputes(def) ||
          (!recomputes(reader) && !recomputedForAnyReader(def)) ||
          def->getBlock() != reader->getBlock() || !far(def, reader))
        continue;
      int budget = kMaxChain - 1;
      if (!llvm::all_of(def->getOperands(), [&](Value v) {
            return available(v, reader, budget);
          }))
        continue;
      OpBuilder builder(reader);
      reader->replaceUsesOfWith(operand, copyOf(def, reader, builder));
      changed = true;
    }
    return changed;
  }
};

} // namespace
