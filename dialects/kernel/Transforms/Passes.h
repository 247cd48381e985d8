//===- Passes.h - operator dialect passes ----------------------*- C++ -*-===//
#ifndef TRAINC_DIALECTS_KERNEL_TRANSFORMS_PASSES_H
#define TRAINC_DIALECTS_KERNEL_TRANSFORMS_PASSES_H

#include "dialects/kernel/KernelOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace trainc::kernel {

#define GEN_PASS_DECL
#include "dialects/kernel/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dialects/kernel/Transforms/Passes.h.inc"

/// Bytes a buffer of `type` occupies (f32: 4 per element, i1: 1).
int64_t bufferBytes(mlir::MemRefType type);

/// An optimizer's update of one parameter and its state (SGD, Adam,
/// Adagrad): elementwise over every non-scalar operand, run once per step.
inline bool isOptimizerUpdate(LaunchOp launch) {
  llvm::StringRef kernel = launch.getKernel();
  return kernel == "graph.sgd_update" || kernel == "graph.adam_update" ||
         kernel == "graph.adagrad_update";
}

} // namespace trainc::kernel

#endif
