//===- GpuKernels.cpp - loop kernels to CUDA fatbins ----------------------===//
//
// upstream's NVVM path, with the toolkit passed explicitly (CUDA.md: found
// only through PATH, libdevice is silently not linked):
//
//   --trainc-loop-to-gpu            each nest one gpu.func kernel
//   --trainc-approximate-math       the CPU's polynomials for exp, tanh, ...
//   canonicalize, cse
//   math.sqrt (f32)                 sqrt.rn.f32, as the CPU's
//   targets                         one #nvvm.target per architecture, O3,
//                                   no fixed PTX version (LLVM picks the
//                                   lowest the chip accepts)
//   gpu.module(convert-scf-to-cf, convert-gpu-to-nvvm{bare pointers},
//              reconcile-unrealized-casts)
//   gpu-module-to-binary            fatbin (ptxas + fatbinary) or PTX
//
// Kernels take bare pointers: one device address per buffer, which is what
// the runtime passes to cuLaunchKernel.
//
//===----------------------------------------------------------------------===//
#include "lib/Codegen/GpuKernels.h"

#include "dialects/loop/LoopOps.h"
#include "dialects/loop/Transforms/LoopToGPU.h"
#include "dialects/loop/Transforms/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace mlir;

namespace trainc::codegen {
namespace {

void registerGpuInterfaces(MLIRContext *context) {
  DialectRegistry registry;
  registry.insert<gpu::GPUDialect, NVVM::NVVMDialect, LLVM::LLVMDialect,
                  cf::ControlFlowDialect>();
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
  context->appendDialectRegistry(registry);
  context->loadAllAvailableDialects();
}

/// math.sqrt of a scalar f32 as NVVM's `sqrt.rn.f32` intrinsic, correctly
/// rounded as the CPU's square root. (convert-gpu-to-nvvm calls libdevice's
/// __nv_sqrtf, whose __CUDA_PREC_SQRT reflection is 0 there, so it was
/// `sqrt.approx.f32`, which need not round as the CPU does; nvcc's default
/// is the precise one. It forbids LLVM's own sqrt intrinsic; f64 already
/// gets `sqrt.rn.f64` from libdevice.)
struct CorrectlyRoundedSqrt : OpRewritePattern<math::SqrtOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::SqrtOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getType().isF32())
      return failure();
    rewriter.replaceOpWithNewOp<LLVM::CallIntrinsicOp>(
        op, op.getType(), rewriter.getStringAttr("llvm.nvvm.sqrt.rn.f"),
        ValueRange{op.getOperand()});
    return success();
  }
};

/// The toolkit's tools the NVVM serializer runs, checked up front for a
/// clear error.
llvm::Error checkToolkit(const std::string &toolkit, bool assemble) {
  std::vector<std::string> needed = {"nvvm/libdevice/libdevice.10.bc"};
  if (assemble) {
    needed.push_back("bin/ptxas");
    needed.push_back("bin/fatbinary");
  }
  for (const std::string &file : needed) {
    llvm::SmallString<256> path(toolkit);
    llvm::sys::path::append(path, file);
    if (!llvm::sys::fs::exists(path))
      return llvm::createStringError("the CUDA toolkit at '" + toolkit +
                                     "' has no " + file +
                                     " (pass the toolkit with --cuda-path)");
  }
  return llvm::Error::success();
}

/// Lowers a clone of `lowered`'s loop kernels for `archs` and serializes
/// them as `format` ("fatbin" or "isa"): the module holds the gpu.binary.
llvm::Expected<OwningOpRef<ModuleOp>>
lowerKernels(ModuleOp lowered, const GpuOptions &options,
             llvm::ArrayRef<std::string> archs, const std::string &format) {
  MLIRContext *context = lowered.getContext();
  registerGpuInterfaces(context);
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(lowered.getLoc());
  for (auto function : lowered.getOps<func::FuncOp>())
    if (function->hasAttr(loop::kKernelAttrName))
      kernels->push_back(function.clone());
  if (kernels->getBody()->empty())
    return kernels;
  if (auto error = checkToolkit(options.toolkitPath, format != "isa"))
    return std::move(error);

  std::string diagnostics;
  llvm::raw_string_ostream stream(diagnostics);
  ScopedDiagnosticHandler handler(context, [&](Diagnostic &diagnostic) {
    stream << diagnostic.getLocation() << ": " << diagnostic << "\n";
    return success();
  });
  PassManager pm(context);
  loop::LoopToGPUPassOptions toGpu;
  toGpu.blockSize = options.blockSize;
  pm.addPass(loop::createLoopToGPUPass(toGpu));
  // After the mapping: a greedy rewrite hoists constants out of loop.nest
  // bodies (not isolated from above), out of the nest's reach.
  pm.addPass(loop::createApproximateMathPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  if (failed(pm.run(*kernels)))
    return llvm::createStringError("mapping the generated kernels to the "
                                   "GPU failed:\n" +
                                   diagnostics);
  auto gpuModule =
      kernels->lookupSymbol<gpu::GPUModuleOp>(loop::kGpuModuleName);
  RewritePatternSet sqrt(context);
  sqrt.add<CorrectlyRoundedSqrt>(context);
  if (failed(applyPatternsGreedily(gpuModule, std::move(sqrt))))
    return llvm::createStringError("rewriting the kernels' square roots "
                                   "failed:\n" +
                                   diagnostics);
  SmallVector<Attribute> targets;
  for (const std::string &arch : archs)
    targets.push_back(NVVM::NVVMTargetAttr::get(context, /*optLevel=*/3,
                                                "nvptx64-nvidia-cuda", arch));
  gpuModule.setTargetsAttr(ArrayAttr::get(context, targets));

  PassManager lower(context);
  OpPassManager &device = lower.nest<gpu::GPUModuleOp>();
  device.addPass(createSCFToControlFlowPass());
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.useBarePtrCallConv = true;
  device.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  device.addPass(createReconcileUnrealizedCastsPass());
  GpuModuleToBinaryPassOptions binary;
  binary.toolkitPath = options.toolkitPath;
  binary.compilationTarget = format;
  lower.addPass(createGpuModuleToBinaryPass(binary));
  if (failed(lower.run(*kernels)))
    return llvm::createStringError(
        "compiling the generated kernels for the GPU failed:\n" + diagnostics);
  return kernels;
}

} // namespace

llvm::Expected<std::vector<GpuImage>>
compileGpuKernels(ModuleOp lowered, const GpuOptions &options) {
  auto kernels = lowerKernels(lowered, options, options.archs, "fatbin");
  if (!kernels)
    return kernels.takeError();
  std::vector<GpuImage> images;
  auto binary = (*kernels)->lookupSymbol<gpu::BinaryOp>(loop::kGpuModuleName);
  if (!binary)
    return images;
  for (Attribute attribute : binary.getObjects()) {
    auto object = cast<gpu::ObjectAttr>(attribute);
    auto target = cast<NVVM::NVVMTargetAttr>(object.getTarget());
    images.push_back(
        {target.getChip().str(), object.getObject().getValue().str()});
  }
  return images;
}

llvm::Expected<std::string> gpuKernelsPtx(ModuleOp lowered,
                                          const GpuOptions &options,
                                          const std::string &arch) {
  auto kernels = lowerKernels(lowered, options, {arch}, "isa");
  if (!kernels)
    return kernels.takeError();
  auto binary = (*kernels)->lookupSymbol<gpu::BinaryOp>(loop::kGpuModuleName);
  if (!binary)
    return std::string();
  auto object = cast<gpu::ObjectAttr>(binary.getObjects()[0]);
  return object.getObject().getValue().str();
}

} // namespace trainc::codegen
