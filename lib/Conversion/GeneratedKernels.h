//===- GeneratedKernels.h - loop nests for kernel launches -----*- C++ -*-===//
//
// The `generated` backend: one builder per graph op family writes the loop
// nests of a kernel. The dispatch registry offers `generated` only for the
// kernels listed here (a unit test checks the two agree).
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_LIB_CONVERSION_GENERATEDKERNELS_H
#define TRAINC_LIB_CONVERSION_GENERATEDKERNELS_H

#include "dialects/kernel/KernelOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace trainc::conversion {

/// Argument attribute (i64) of a loop.kernel's scratch argument that is a
/// second view, in its own shape, of an earlier scratch argument (that
/// argument's number): the launch passes a kernel.view of the same alloc.
inline constexpr llvm::StringLiteral kScratchViewAttrName = "loop.view_of";
/// Unit argument attribute of a loop.kernel's scratch argument that
/// nothing else reaches while the kernel runs (no view of it; the plan
/// gives each of a launch's buffers its own bytes, and threads write
/// disjoint elements): LLVM's `noalias`, which --trainc-lower-loop-nests
/// hands to the nest functions.
inline constexpr llvm::StringLiteral kPrivateScratchAttrName = "llvm.noalias";

/// Whether the generated backend can build `kernel` (e.g. "graph.add").
bool hasGeneratedKernel(llvm::StringRef kernel);
/// Every kernel it can build.
llvm::SmallVector<llvm::StringRef> generatedKernels();

/// Fills `function`, whose entry block has one argument per operand of
/// `launch` (inputs, then outputs), with the loop nests computing it. The
/// builder may retype those arguments (another shape or element type of the
/// same size in bytes) and append scratch arguments; the function type is
/// updated to match.
/// Nests are scheduled for vectors of `vectorLanes` f32.
mlir::LogicalResult buildGeneratedKernel(kernel::LaunchOp launch,
                                         mlir::func::FuncOp function,
                                         int64_t vectorLanes);

} // namespace trainc::conversion

#endif
