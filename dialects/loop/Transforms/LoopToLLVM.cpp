//===- LoopToLLVM.cpp - generated kernels to LLVM IR ----------------------===//
//
// The order follows upstream's CPU lowering: vector masks and reductions are
// lowered while the IR is still structured, then every dialect goes to LLVM.
//
//===----------------------------------------------------------------------===//
#include "dialects/loop/Transforms/LoopToLLVM.h"
#include "dialects/loop/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Affine/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/Transforms/TilingInterfaceImpl.h"
#include "mlir/Dialect/MemRef/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace trainc::loop {

void buildLoopToLLVMPipeline(OpPassManager &pm, const LoopTarget &target) {
  pm.addPass(createWidenLowFloatsPass());
  pm.addPass(createLowerLoopNestsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createApproximateMathPass());
  ExpandBf16PassOptions bf16;
  bf16.nativeNarrowing = target.nativeBf16;
  pm.addPass(createExpandBf16Pass(bf16));
  pm.addPass(createUnmaskReductionsPass());
  pm.addNestedPass<func::FuncOp>(vector::createLowerVectorMaskPass());
  // Tiles only span the innermost dimension, so a reduction either combines
  // whole vectors (reduced outer dims are unit and fold away) or reduces
  // along the vector: one vector.reduction each, not a lane-by-lane chain.
  pm.addNestedPass<func::FuncOp>(vector::createLowerVectorMultiReductionPass(
      vector::VectorMultiReductionLowering::InnerReduction));
  pm.addPass(createConvertVectorToSCFPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  // A vector reduction (one tile of a row sum, max, ...) as a tree: in
  // order, its adds form one dependency chain as long as the tile, about
  // 4x slower. The tree's shape depends only on the target's vector width,
  // so results stay the same for any thread count.
  ConvertVectorToLLVMPassOptions vectorOptions;
  vectorOptions.reassociateFPReductions = true;
  pm.addPass(createConvertVectorToLLVMPass(vectorOptions));
  pm.addPass(createBf16AccessesAsI16Pass());
  pm.addPass(createExpandViewsPass());
  // affine.apply, memref, math, arith, ub, func (bare pointers) and cf in
  // one conversion.
  pm.addPass(createScalarsToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void registerLoopLoweringInterfaces(DialectRegistry &registry) {
  linalg::registerTilingInterfaceExternalModels(registry);
  linalg::registerValueBoundsOpInterfaceExternalModels(registry);
  affine::registerValueBoundsOpInterfaceExternalModels(registry);
  arith::registerValueBoundsOpInterfaceExternalModels(registry);
  memref::registerValueBoundsOpInterfaceExternalModels(registry);
  scf::registerValueBoundsOpInterfaceExternalModels(registry);
}

namespace {
struct LoopToLLVMOptions : PassPipelineOptions<LoopToLLVMOptions> {
  Option<bool> nativeBf16{*this, "native-bf16",
                          llvm::cl::desc("The target has AVX512-BF16 (see "
                                         "--trainc-expand-bf16)"),
                          llvm::cl::init(false)};
};
} // namespace

void registerLoopToLLVMPipeline() {
  PassPipelineRegistration<LoopToLLVMOptions>(
      "trainc-loop-to-llvm",
      "Loop-nest kernels to the LLVM dialect (bare-pointer functions)",
      [](OpPassManager &pm, const LoopToLLVMOptions &options) {
        LoopTarget target;
        target.nativeBf16 = options.nativeBf16;
        buildLoopToLLVMPipeline(pm, target);
      });
}

void prepareLoopTranslation(MLIRContext &context) {
  DialectRegistry registry;
  registerLoopLoweringInterfaces(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  context.appendDialectRegistry(registry);
  // The dialects the pipeline's passes depend on, loaded now: running a
  // pass manager loads them, which may not happen on several threads.
  PassManager pm(&context);
  buildLoopToLLVMPipeline(pm);
  DialectRegistry dependent;
  pm.getDependentDialects(dependent);
  context.appendDialectRegistry(dependent);
  for (StringRef name : dependent.getDialectNames())
    context.getOrLoadDialect(name);
}

llvm::Expected<std::unique_ptr<llvm::Module>>
lowerLoopKernels(ModuleOp module, llvm::LLVMContext &context,
                 const LoopTarget &target, TimingScope *timing,
                 const std::function<std::string()> &diagnostics) {
  PassManager pm(module.getContext());
  TimingScope untimed;
  TimingScope passes =
      (timing ? *timing : untimed).nest("loop to LLVM dialect");
  pm.enableTiming(passes);
  buildLoopToLLVMPipeline(pm, target);
  if (failed(pm.run(module)))
    return llvm::createStringError("lowering the generated kernels failed:\n" +
                                   diagnostics());
  passes.stop();
  TimingScope translation =
      (timing ? *timing : untimed).nest("LLVM dialect to LLVM IR");
  std::unique_ptr<llvm::Module> result =
      translateModuleToLLVMIR(module, context, "trainc_kernels");
  if (!result)
    return llvm::createStringError(
        "translating the generated kernels to LLVM IR failed:\n" +
        diagnostics());
  return result;
}

llvm::Expected<std::unique_ptr<llvm::Module>>
translateLoopKernels(ModuleOp module, llvm::LLVMContext &context,
                     const LoopTarget &target, TimingScope *timing) {
  MLIRContext *mlirContext = module.getContext();
  prepareLoopTranslation(*mlirContext);
  std::string diagnostics;
  llvm::raw_string_ostream stream(diagnostics);
  ScopedDiagnosticHandler handler(mlirContext, [&](Diagnostic &diagnostic) {
    stream << diagnostic.getLocation() << ": " << diagnostic << "\n";
    return success();
  });
  return lowerLoopKernels(module, context, target, timing,
                          [&] { return diagnostics; });
}

} // namespace trainc::loop
