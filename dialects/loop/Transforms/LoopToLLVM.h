//===- LoopToLLVM.h - generated kernels to LLVM IR -------------*- C++ -*-===//
#ifndef TRAINC_DIALECTS_LOOP_TRANSFORMS_LOOPTOLLVM_H
#define TRAINC_DIALECTS_LOOP_TRANSFORMS_LOOPTOLLVM_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <memory>
#include <string>

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

/// Registers in `context` what lowering and translating loop kernels
/// needs (upstream interface models, the LLVM IR translations). Call it
/// once before lowering modules of one context on several threads.
void prepareLoopTranslation(mlir::MLIRContext &context);

/// The pipeline and the translation of translateLoopKernels on a context
/// already prepared, with no diagnostic handler of its own (errors carry
/// what `diagnostics` returns). Distinct modules of one context may be
/// lowered concurrently.
llvm::Expected<std::unique_ptr<llvm::Module>>
lowerLoopKernels(mlir::ModuleOp module, llvm::LLVMContext &context,
                 const LoopTarget &target, mlir::TimingScope *timing,
                 const std::function<std::string()> &diagnostics);

/// Runs the pipeline on `module` (which holds only loop.kernel functions)
/// and translates the result to LLVM IR in `context`; its passes are timed
/// under `timing` when given (`trainc compile --timing`).
llvm::Expected<std::unique_ptr<llvm::Module>>
translateLoopKernels(mlir::ModuleOp module, llvm::LLVMContext &context,
                     const LoopTarget &target,
                     mlir::TimingScope *timing = nullptr);

} // namespace trainc::loop

#endif
