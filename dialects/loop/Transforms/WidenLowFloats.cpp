//===- WidenLowFloats.cpp - --trainc-widen-low-floats ---------------------===//
//
// Generated kernels load and store bf16 and f16 (the tensors of --amp) but
// compute in f32 registers: in the body of every `loop.nest`, a low-float
// element is widened once where it enters (`arith.extf`), the arithmetic
// runs in f32, and a result is rounded once where it is stored
// (`arith.truncf` before `loop.yield`):
//
//   ^bb0(%a: bf16, %b: bf16, %o: bf16):
//     %s = arith.addf %a, %b : bf16
//     %r = arith.maximumf %s, %c0 : bf16
//     loop.yield %r : bf16
//
// becomes
//
//   ^bb0(%a: bf16, %b: bf16, %o: bf16):
//     %a32 = arith.extf %a : bf16 to f32
//     %b32 = arith.extf %b : bf16 to f32
//     %s = arith.addf %a32, %b32 : f32
//     %r = arith.maximumf %s, %c0 : f32
//     %r16 = arith.truncf %r : f32 to bf16
//     loop.yield %r16 : bf16
//
// A fused chain of elementwise ops therefore rounds once, not after each
// op. A rounding the body states itself (a graph.cast to bf16 inside a
// fused nest: `arith.truncf` to a low type) stays, and its result is
// widened again for the ops that read it, and so are low-float bits a body
// reinterprets (`arith.bitcast` from an integer); a bitcast of a low float
// to an integer reads the low value. x86 has no bf16 arithmetic
// (LLVM would promote every op to f32 anyway, rounding after each) and
// the polynomial approximations of --trainc-approximate-math are f32.
//
//===----------------------------------------------------------------------===//
#include "dialects/loop/LoopOps.h"
#include "dialects/loop/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"

namespace trainc::loop {
#define GEN_PASS_DEF_WIDENLOWFLOATSPASS
#include "dialects/loop/Transforms/Passes.h.inc"
} // namespace trainc::loop

using namespace mlir;

namespace {

bool isLowFloat(Type type) { return type.isBF16() || type.isF16(); }

/// Rewrites one nest body to compute in f32.
void widen(Block &body) {
  MLIRContext *context = body.getParent()->getContext();
  Type f32 = Float32Type::get(context);
  OpBuilder b(context);
  // Bitcasts of low floats to integers (a max pooling packs two bf16 taps
  // into an i32) and the type they read, which they must read again.
  DenseMap<Operation *, Type> lowBits;
  body.walk([&](arith::BitcastOp bitcast) {
    if (isLowFloat(bitcast.getIn().getType()))
      lowBits[bitcast] = bitcast.getIn().getType();
  });
  // Elements enter: one extf per low-float argument.
  b.setInsertionPointToStart(&body);
  for (BlockArgument argument : body.getArguments()) {
    if (!isLowFloat(argument.getType()) || argument.use_empty())
      continue;
    Value wide = arith::ExtFOp::create(b, argument.getLoc(), f32, argument);
    argument.replaceAllUsesExcept(wide, wide.getDefiningOp());
  }
  for (Operation &op : llvm::make_early_inc_range(body.without_terminator())) {
    // An extf whose operand is now f32 (it widened an argument) goes.
    if (auto ext = dyn_cast<arith::ExtFOp>(op)) {
      if (ext.getIn().getType() == ext.getType()) {
        ext.replaceAllUsesWith(ext.getIn());
        ext.erase();
      }
      continue;
    }
    // Low-float bits reinterpreted as an integer: the low value, rounded
    // again (exactly: it was low) from its widening.
    if (auto it = lowBits.find(&op); it != lowBits.end()) {
      Value in = op.getOperand(0);
      if (in.getType() != it->second) {
        b.setInsertionPoint(&op);
        op.setOperand(0,
                      arith::TruncFOp::create(b, op.getLoc(), it->second, in));
      }
      continue;
    }
    // A rounding the body states, or low-float bits it reinterprets (a
    // bitcast from an integer): kept, then widened for its readers.
    if (isa<arith::TruncFOp, arith::BitcastOp>(op)) {
      Value low = op.getResult(0);
      if (!isLowFloat(low.getType()) || low.use_empty())
        continue;
      b.setInsertionPointAfter(&op);
      Value wide = arith::ExtFOp::create(b, op.getLoc(), f32, low);
      low.replaceAllUsesExcept(wide, wide.getDefiningOp());
      continue;
    }
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      auto value = dyn_cast<FloatAttr>(constant.getValue());
      if (value && isLowFloat(value.getType())) {
        b.setInsertionPoint(constant);
        Value wide = arith::ConstantOp::create(
            b, constant.getLoc(),
            b.getF32FloatAttr(value.getValue().convertToFloat()));
        constant.replaceAllUsesWith(wide);
        constant.erase();
      }
      continue;
    }
    // Everything else computes in f32 from its (now f32) operands.
    for (OpResult result : op.getResults())
      if (isLowFloat(result.getType()))
        result.setType(f32);
  }
  // Results leave: rounded once to the stored type.
  Operation *yield = body.getTerminator();
  b.setInsertionPoint(yield);
  auto nest = cast<trainc::loop::NestOp>(body.getParentOp());
  for (auto [operand, output] :
       llvm::zip(yield->getOpOperands(), nest.getOutputs())) {
    Type stored = cast<MemRefType>(output.getType()).getElementType();
    if (operand.get().getType() != stored)
      operand.set(
          arith::TruncFOp::create(b, yield->getLoc(), stored, operand.get()));
  }
}

struct WidenLowFloatsPass
    : trainc::loop::impl::WidenLowFloatsPassBase<WidenLowFloatsPass> {
  void runOnOperation() override {
    getOperation().walk([](trainc::loop::NestOp nest) {
      Block &body = nest.getBody().front();
      bool low = llvm::any_of(body.getArgumentTypes(), isLowFloat);
      body.walk([&](Operation *op) {
        low |= llvm::any_of(op->getResultTypes(), isLowFloat);
      });
      if (low)
        widen(body);
    });
  }
};

} // namespace
