//===- KernelToLoop.cpp - --trainc-kernel-to-loop -------------------------===//
#include "lib/Conversion/GeneratedKernels.h"
#include "lib/Conversion/Passes.h"

#include "mlir/IR/SymbolTable.h"

namespace trainc::conversion {
#define GEN_PASS_DEF_KERNELTOLOOPPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace trainc::conversion

using namespace mlir;
using namespace trainc;

namespace {

/// "graph.reduce_sum" -> "reduce_sum", for readable kernel names.
std::string shortName(StringRef kernel) {
  std::string name = kernel.rsplit('.').second.str();
  return name.empty() ? kernel.str() : name;
}

struct KernelToLoopPass
    : trainc::conversion::impl::KernelToLoopPassBase<KernelToLoopPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<kernel::LaunchOp> launches;
    module.walk([&](kernel::LaunchOp launch) {
      if (launch.getBackend() == "generated" && !launch.getCallee())
        launches.push_back(launch);
    });
    for (kernel::LaunchOp launch : launches)
      if (failed(convert(launch, symbols)))
        return signalPassFailure();
  }

  LogicalResult convert(kernel::LaunchOp launch, SymbolTable &symbols) {
    MLIRContext *context = launch.getContext();
    ModuleOp module = getOperation();
    OpBuilder b(context);
    b.setInsertionPointToEnd(module.getBody());
    auto type = FunctionType::get(context, launch->getOperandTypes(), {});
    auto function = func::FuncOp::create(
        b, launch.getLoc(), "generated_" + shortName(launch.getKernel()), type);
    function.setPrivate();
    function->setAttr(loop::kKernelAttrName, UnitAttr::get(context));
    symbols.insert(function); // makes the name unique
    Block *entry = function.addEntryBlock();
    OpBuilder atEnd = OpBuilder::atBlockEnd(entry);
    func::ReturnOp::create(atEnd, launch.getLoc());
    if (failed(conversion::buildGeneratedKernel(launch, function, vectorLanes)))
      return failure();

    // Arguments past the launch's operands are scratch buffers, or views
    // of an earlier one.
    b.setInsertionPoint(launch);
    unsigned numOperands = launch->getNumOperands();
    SmallVector<Value> scratch;
    for (BlockArgument argument :
         entry->getArguments().drop_front(numOperands)) {
      auto type = cast<MemRefType>(argument.getType());
      if (auto of = function.getArgAttrOfType<IntegerAttr>(
              argument.getArgNumber(), conversion::kScratchViewAttrName)) {
        scratch.push_back(kernel::ViewOp::create(
            b, launch.getLoc(), type, scratch[of.getInt() - numOperands]));
        continue;
      }
      scratch.push_back(
          kernel::AllocOp::create(b, launch.getLoc(), type, IntegerAttr()));
    }
    launch.getScratchMutable().append(scratch);
    launch.setCalleeAttr(FlatSymbolRefAttr::get(function));
    return success();
  }
};

} // namespace
