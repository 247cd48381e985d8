//===- ElementwiseNests.h - generated elementwise kernels ------*- C++ -*-===//
//
// What --trainc-fuse-elementwise and --trainc-reuse-buffers ask of a
// launch's generated kernel before they touch it.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_LIB_CONVERSION_ELEMENTWISENESTS_H
#define TRAINC_LIB_CONVERSION_ELEMENTWISENESTS_H

#include "dialects/kernel/KernelOps.h"
#include "dialects/loop/LoopOps.h"

#include "mlir/IR/SymbolTable.h"

namespace trainc::conversion {

/// The only nest of a generated elementwise kernel: every dimension
/// parallel, operands the function's arguments in order, outputs written
/// without being read, no input check, no loop.index; null otherwise.
loop::NestOp elementwiseNest(kernel::LaunchOp launch,
                             mlir::SymbolTable &symbols);

/// Whether operand `i` of `nest` is its whole buffer in the nest's order:
/// an identity map over a buffer shaped as the domain. (A slice from the
/// start of each axis also has an identity map, over a larger buffer.)
bool isWhole(loop::NestOp nest, unsigned i);

} // namespace trainc::conversion

#endif
