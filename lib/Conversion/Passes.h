//===- Passes.h - conversions between trainc's dialects --------*- C++ -*-===//
#ifndef TRAINC_LIB_CONVERSION_PASSES_H
#define TRAINC_LIB_CONVERSION_PASSES_H

#include "dialects/kernel/KernelOps.h"
#include "dialects/loop/LoopOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Pass/Pass.h"

namespace trainc::conversion {

#define GEN_PASS_DECL
#include "lib/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "lib/Conversion/Passes.h.inc"

} // namespace trainc::conversion

#endif
