//===- KernelCost.cpp - what a kernel launch costs, estimated -------------===//
//
// A launch of a graph op costs what the op says it costs (CostOpInterface,
// dialects/graph/CostInterface.td: the launch's buffers have the op's
// shapes and its options are the op's attributes). Launches of no graph op
// are a copy (runtime.copy) or a fused elementwise chain.
//
//===----------------------------------------------------------------------===//
#include "dialects/kernel/KernelCost.h"

#include "dialects/graph/GraphOps.h"

using namespace mlir;

namespace trainc::kernel {

KernelCost estimateCost(LaunchOp launch) {
  SmallVector<Type> inputs(launch.getInputs().getTypes());
  SmallVector<Type> outputs(launch.getOutputs().getTypes());
  OperationName name(launch.getKernel(), launch.getContext());
  if (std::optional<graph::Cost> cost =
          graph::estimateCost(name, inputs, outputs, launch.getOptions()))
    return {cost->flops, cost->bytes};
  KernelCost cost;
  cost.bytes = graph::totalBytes(inputs, outputs);
  // A fused chain (fused(add,relu)) does one operation per element; a
  // copy or a collective's packing (comm.*) none.
  if (launch.getKernel() != "runtime.copy" &&
      !launch.getKernel().starts_with("comm."))
    cost.flops = graph::largestElementCount(inputs, outputs);
  return cost;
}

} // namespace trainc::kernel
