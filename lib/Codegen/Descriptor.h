//===- Descriptor.h - kernel launch descriptors -----------------*- C++ -*-===//
//
// The compiler's side of lib/Runtime/Launch.h: the text that tells the
// runtime which kernel a launch runs, on which operands, with which
// attributes.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_LIB_CODEGEN_DESCRIPTOR_H
#define TRAINC_LIB_CODEGEN_DESCRIPTOR_H

#include "dialects/kernel/KernelOps.h"

#include "llvm/Support/Error.h"

#include <string>

namespace trainc::codegen {

/// "f32", "i64", ... (the runtime's dtype names).
llvm::Expected<std::string> dtypeName(mlir::Type elementType);

llvm::Expected<std::string> launchDescriptor(kernel::LaunchOp launch);

} // namespace trainc::codegen

#endif
