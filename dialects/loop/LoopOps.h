//===- LoopOps.h - the loop dialect ----------------------------*- C++ -*-===//
#ifndef TRAINC_DIALECTS_LOOP_LOOPOPS_H
#define TRAINC_DIALECTS_LOOP_LOOPOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/loop/LoopDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/loop/LoopAttrs.h.inc"

#define GET_OP_CLASSES
#include "dialects/loop/LoopOps.h.inc"

#include <string>

namespace trainc::loop {
/// Unit attribute on a func.func whose body is loop nests.
inline constexpr llvm::StringLiteral kKernelAttrName = "loop.kernel";
/// A CheckAttr on a loop kernel: the input check reported after it runs.
inline constexpr llvm::StringLiteral kCheckAttrName = "loop.check";

/// The function --trainc-lower-loop-nests makes of nest `index` of `kernel`:
///   void NAME(index begin, index end, <the kernel's buffers>)
/// computes blocks [begin, end) of the nest's parallel dimension.
std::string nestFunctionName(llvm::StringRef kernel, unsigned index);
} // namespace trainc::loop

#endif
