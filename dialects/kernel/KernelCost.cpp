//===- KernelCost.cpp - what a kernel launch costs, estimated -------------===//
#include "dialects/kernel/KernelCost.h"

using namespace mlir;

namespace trainc::kernel {
namespace {

MemRefType typeOf(Value buffer) { return cast<MemRefType>(buffer.getType()); }

double elements(Value buffer) {
  return static_cast<double>(typeOf(buffer).getNumElements());
}

double bytesOf(Value buffer) {
  MemRefType type = typeOf(buffer);
  unsigned bits = type.getElementType().getIntOrFloatBitWidth();
  return static_cast<double>(type.getNumElements()) * std::max(1u, bits / 8);
}

/// Multiply-adds of a matrix product whose result is `output`: K per
/// output element, K being the reduced dim of the left operand.
double productFlops(LaunchOp launch) {
  ArrayRef<int64_t> lhs = typeOf(launch.getInputs()[0]).getShape();
  int64_t reduced = lhs.empty() ? 1 : lhs.back();
  if (launch.getKernel() == "graph.gemm") {
    auto transposed = launch.getOptions().getAs<BoolAttr>("trans_a");
    if (transposed && transposed.getValue() && lhs.size() == 2)
      reduced = lhs[0];
  }
  return 2.0 * elements(launch.getOutputs()[0]) * reduced;
}

/// A convolution and its two gradients do the same multiply-adds: one per
/// (output-gradient element, weight element of its output channel).
double convolutionFlops(LaunchOp launch) {
  StringRef kernel = launch.getKernel();
  Value activation = kernel == "graph.conv" ? launch.getOutputs()[0]
                                            : launch.getInputs()[0];
  Value weight = kernel == "graph.conv_backward_weight"
                     ? launch.getOutputs()[0]
                     : launch.getInputs()[1];
  int64_t outputChannels = typeOf(weight).getDimSize(0);
  return 2.0 * elements(activation) * elements(weight) /
         std::max<int64_t>(outputChannels, 1);
}

/// Pooling visits its window once per output element.
double poolingFlops(LaunchOp launch, Value output) {
  auto window = launch.getOptions().getAs<DenseI64ArrayAttr>("kernel_shape");
  double size = 1;
  if (window)
    for (int64_t extent : window.asArrayRef())
      size *= extent;
  return elements(output) * size;
}

bool movesDataOnly(StringRef kernel) {
  return kernel == "graph.reshape" || kernel == "graph.identity" ||
         kernel == "graph.transpose" || kernel == "graph.expand" ||
         kernel == "runtime.copy" || kernel == "graph.concat" ||
         kernel == "graph.slice" || kernel == "graph.gather" ||
         kernel == "graph.gather_elements";
}

} // namespace

KernelCost estimateCost(LaunchOp launch) {
  KernelCost cost;
  double largest = 0;
  for (Value operand : launch->getOperands()) {
    cost.bytes += bytesOf(operand);
    largest = std::max(largest, elements(operand));
  }
  StringRef kernel = launch.getKernel();
  if (kernel == "graph.matmul" || kernel == "graph.gemm")
    cost.flops = productFlops(launch);
  else if (kernel.starts_with("graph.conv"))
    cost.flops = convolutionFlops(launch);
  else if (kernel == "graph.max_pool" || kernel == "graph.avg_pool")
    cost.flops = poolingFlops(launch, launch.getOutputs()[0]);
  else if (kernel == "graph.max_pool_backward" ||
           kernel == "graph.avg_pool_backward")
    cost.flops = poolingFlops(launch, launch.getInputs()[0]);
  else if (!movesDataOnly(kernel))
    cost.flops = largest;
  return cost;
}

} // namespace trainc::kernel
