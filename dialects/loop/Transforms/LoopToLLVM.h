//===- LoopToLLVM.h - generated kernels to LLVM IR -------------*- C++ -*-===//
#ifndef TRAINC_DIALECTS_LOOP_TRANSFORMS_LOOPTOLLVM_H
#define TRAINC_DIALECTS_LOOP_TRANSFORMS_LOOPTOLLVM_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"

#include <memory>

namespace trainc::loop {

/// What the lowering may assume of the target CPU.
struct LoopTarget {
  /// AVX512-BF16: conversions to bf16 are left to LLVM's vcvtneps2bf16
  /// (--trainc-expand-bf16's native-narrowing).
  bool nativeBf16 = false;
};

/// loop.nest kernels -> scheduled linalg/scf/vector -> the LLVM dialect.
/// Nest functions take their buffers as bare pointers
/// (`void NAME(i64 begin, i64 end, ptr...)`), which static shapes allow.
void buildLoopToLLVMPipeline(mlir::OpPassManager &pm,
                             const LoopTarget &target = {});

/// The upstream interface implementations the lowering relies on (linalg's
/// TilingInterface, value bounds of tile sizes).
void registerLoopLoweringInterfaces(mlir::DialectRegistry &registry);

/// Registers the pipeline as --trainc-loop-to-llvm.
void registerLoopToLLVMPipeline();

/// Runs the pipeline on `module` (which holds only loop.kernel functions)
/// and translates the result to LLVM IR in `context`; its passes are timed
/// under `timing` when given (`trainc compile --timing`).
llvm::Expected<std::unique_ptr<llvm::Module>>
translateLoopKernels(mlir::ModuleOp module, llvm::LLVMContext &context,
                     const LoopTarget &target,
                     mlir::TimingScope *timing = nullptr);

} // namespace trainc::loop

#endif
