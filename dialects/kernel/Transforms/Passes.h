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

} // namespace trainc::kernel

#endif
