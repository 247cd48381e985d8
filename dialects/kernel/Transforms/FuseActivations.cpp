//===- FuseActivations.cpp - --trainc-fuse-activations --------------------===//
#include "dialects/kernel/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace trainc::kernel {
#define GEN_PASS_DEF_FUSEACTIVATIONSPASS
#include "dialects/kernel/Transforms/Passes.h.inc"
} // namespace trainc::kernel

using namespace mlir;
using namespace trainc::kernel;

namespace {

bool takesPostOps(LaunchOp launch) {
  StringRef kernel = launch.getKernel();
  return launch.getBackend() == "dnnl" && launch.getOutputs().size() == 1 &&
         (kernel == "graph.conv" || kernel == "graph.gemm" ||
          kernel == "graph.matmul") &&
         !launch.getOptions().get("post_relu");
}

struct FuseActivationsPass
    : trainc::kernel::impl::FuseActivationsPassBase<FuseActivationsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<LaunchOp> relus;
    getOperation().walk([&](LaunchOp launch) {
      if (launch.getKernel() == "graph.relu")
        relus.push_back(launch);
    });
    for (LaunchOp relu : relus)
      fuse(relu);
  }

  void fuse(LaunchOp relu) {
    Value preActivation = relu.getInputs()[0];
    auto alloc = preActivation.getDefiningOp<AllocOp>();
    if (!alloc)
      return;
    // The intermediate has one writer, a launch that takes post-ops, and
    // the ReLU as its only reader.
    LaunchOp producer;
    for (Operation *user : preActivation.getUsers()) {
      if (user == relu.getOperation())
        continue;
      auto launch = dyn_cast<LaunchOp>(user);
      if (!launch || producer || !takesPostOps(launch) ||
          launch.getOutputs()[0] != preActivation ||
          llvm::is_contained(launch.getInputs(), preActivation))
        return;
      producer = launch;
    }
    if (!producer || llvm::count(relu->getOperands(), preActivation) != 1)
      return;
    // The producer moves to the ReLU's place: its inputs must not change
    // in between (nothing in between may write them).
    for (Operation *op = producer->getNextNode(); op != relu;
         op = op->getNextNode())
      if (auto launch = dyn_cast<LaunchOp>(op))
        for (Value written : launch.getOutputs())
          if (llvm::is_contained(producer.getInputs(), written))
            return;
    NamedAttrList options(producer.getOptions());
    options.set("post_relu", BoolAttr::get(&getContext(), true));
    producer.setOptionsAttr(options.getDictionary(&getContext()));
    producer.getOutputsMutable()[0].assign(relu.getOutputs()[0]);
    producer->moveBefore(relu);
    relu.erase();
    alloc.erase();
  }
};

} // namespace
