//===- Passes.h - loop dialect passes --------------------------*- C++ -*-===//
#ifndef TRAINC_DIALECTS_LOOP_TRANSFORMS_PASSES_H
#define TRAINC_DIALECTS_LOOP_TRANSFORMS_PASSES_H

#include "dialects/loop/LoopOps.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace trainc::loop {

#define GEN_PASS_DECL
#include "dialects/loop/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dialects/loop/Transforms/Passes.h.inc"

} // namespace trainc::loop

#endif
