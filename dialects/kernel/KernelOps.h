//===- KernelOps.h - the operator dialect ----------------------*- C++ -*-===//
#ifndef TRAINC_DIALECTS_KERNEL_KERNELOPS_H
#define TRAINC_DIALECTS_KERNEL_KERNELOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/kernel/KernelDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/kernel/KernelOps.h.inc"

namespace trainc::kernel {
/// Function attribute: the arena's size in bytes (set by the planner).
inline constexpr llvm::StringLiteral kArenaSizeAttrName = "kernel.arena_size";
/// Function attribute on lowered functions: the graph function it came from.
inline constexpr llvm::StringLiteral kLoweredFromAttrName = "kernel.lowered_from";
/// Argument attribute (i64): the argument's layout group, in which a
/// library may keep it in a layout of its own (--trainc-assign-weight-layouts);
/// the manifest's `layout` of the argument.
inline constexpr llvm::StringLiteral kLayoutAttrName = "kernel.layout";
/// Launch option (i64): the layout group of the launch's weights operand
/// (or weight-gradient output).
inline constexpr llvm::StringLiteral kWeightLayoutOption = "weight_layout";

/// The buffer `value` is a view of (itself if none).
inline mlir::Value viewRoot(mlir::Value value) {
  while (auto view = value.getDefiningOp<ViewOp>())
    value = view.getSource();
  return value;
}

/// Whether a launch strictly between `from` and `to` (in one block) writes
/// `buffer`, through a view or not.
inline bool writtenBetween(mlir::Value buffer, mlir::Operation *from,
                           mlir::Operation *to) {
  mlir::Value root = viewRoot(buffer);
  for (mlir::Operation *op = from->getNextNode(); op && op != to;
       op = op->getNextNode())
    if (auto launch = llvm::dyn_cast<LaunchOp>(op))
      for (mlir::Value out : launch.getOutputs())
        if (viewRoot(out) == root)
          return true;
  return false;
}
} // namespace trainc::kernel

#endif
