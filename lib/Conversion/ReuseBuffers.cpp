//===- ReuseBuffers.cpp - --trainc-reuse-buffers
//---------------------------===//
//
// A generated elementwise kernel reads each input element and writes each
// output element at the same point, once. When one of its inputs is read
// whole and is used by no later launch, the output can be written over it:
// the output's alloc is replaced by (a view of) the input's buffer, and
// the arena holds one buffer where it held two. GELU's gradient, batch
// norm's and a residual's elementwise chains each free a buffer as large
// as the activation they work on.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/Passes.h"

#include "lib/Conversion/ElementwiseNests.h"

#include "mlir/IR/Builders.h"

namespace trainc::conversion {
#define GEN_PASS_DEF_REUSEBUFFERSPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace trainc::conversion

using namespace mlir;
using namespace trainc;
using namespace trainc::conversion;

namespace {

/// Whether `buffer`, or a view of it, is used after `launch`.
bool usedAfter(Value buffer, Operation *launch) {
  for (Operation *user : buffer.getUsers()) {
    if (isa<kernel::ViewOp>(user)) {
      if (usedAfter(user->getResult(0), launch))
        return true;
    } else if (user != launch && launch->isBeforeInBlock(user)) {
      return true;
    }
  }
  return false;
}

/// Bytes of a buffer of `type`.
int64_t bytes(MemRefType type) {
  return type.getNumElements() * type.getElementTypeBitWidth();
}

/// The input of `launch` whose buffer output `j` may take over: read whole
/// by the same nest, same element type, a buffer of the same size that no
/// other operand of the launch touches and nothing after it uses.
std::optional<unsigned> reusableInput(kernel::LaunchOp launch,
                                      loop::NestOp nest, unsigned j,
                                      ArrayRef<Value> taken) {
  unsigned inputs = launch.getInputs().size();
  auto output = launch.getOutputs()[j].getDefiningOp<kernel::AllocOp>();
  if (!output || !isWhole(nest, inputs + j))
    return std::nullopt;
  for (auto [k, input] : llvm::enumerate(launch.getInputs())) {
    Value root = kernel::viewRoot(input);
    auto alloc = root.getDefiningOp<kernel::AllocOp>();
    if (!alloc || llvm::is_contained(taken, root) || !isWhole(nest, k) ||
        cast<MemRefType>(input.getType()).getElementType() !=
            output.getType().getElementType() ||
        bytes(alloc.getType()) != bytes(output.getType()) ||
        bytes(cast<MemRefType>(input.getType())) != bytes(output.getType()) ||
        usedAfter(root, launch))
      continue;
    bool shared = false;
    for (auto [other, operand] : llvm::enumerate(launch->getOperands()))
      if (other != k && kernel::viewRoot(operand) == root)
        shared = true;
    if (!shared)
      return k;
  }
  return std::nullopt;
}

struct ReuseBuffersPass
    : trainc::conversion::impl::ReuseBuffersPassBase<ReuseBuffersPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    module.walk([&](kernel::LaunchOp launch) {
      loop::NestOp nest = elementwiseNest(launch, symbols);
      if (!nest)
        return;
      SmallVector<Value> taken;
      for (unsigned j = 0; j < launch.getOutputs().size(); ++j) {
        std::optional<unsigned> k = reusableInput(launch, nest, j, taken);
        if (!k)
          continue;
        Value input = launch.getInputs()[*k];
        Value output = launch.getOutputs()[j];
        taken.push_back(kernel::viewRoot(input));
        OpBuilder builder(launch);
        Value replacement =
            input.getType() == output.getType()
                ? input
                : builder
                      .create<kernel::ViewOp>(launch.getLoc(), output.getType(),
                                              input)
                      .getResult();
        Operation *alloc = output.getDefiningOp();
        output.replaceAllUsesWith(replacement);
        alloc->erase();
      }
    });
  }
};

} // namespace
