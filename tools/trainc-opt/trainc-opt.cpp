//===- trainc-opt.cpp - MlirOptMain with trainc's dialects and passes -----===//
//
// The driver of the lit tests: parses, verifies, runs passes and prints IR.
// Only the dialects and passes trainc uses are registered (upstream's
// canonicalize and cse included), which keeps the binary small.
//
//===----------------------------------------------------------------------===//
#include "dialects/graph/GraphOps.h"
#include "dialects/graph/Transforms/Passes.h"
#include "dialects/kernel/Transforms/Passes.h"
#include "dialects/loop/Transforms/LoopToLLVM.h"
#include "dialects/loop/Transforms/Passes.h"
#include "lib/Conversion/Passes.h"
#include "pipelines/TrainingPipeline.h"

#include "mlir/Dialect/Func/Extensions/InlinerExtension.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  mlir::registerInlinerPass();
  trainc::graph::registerGraphPasses();
  trainc::kernel::registerKernelPasses();
  trainc::loop::registerLoopPasses();
  trainc::conversion::registerConversionPasses();
  trainc::loop::registerLoopToLLVMPipeline();
  trainc::registerTrainingPipeline();

  mlir::DialectRegistry registry;
  registry.insert<mlir::func::FuncDialect, trainc::graph::GraphDialect,
                  trainc::kernel::KernelDialect, trainc::loop::LoopDialect,
                  mlir::arith::ArithDialect, mlir::math::MathDialect,
                  mlir::memref::MemRefDialect, mlir::linalg::LinalgDialect,
                  mlir::scf::SCFDialect, mlir::vector::VectorDialect,
                  mlir::affine::AffineDialect, mlir::ub::UBDialect,
                  mlir::LLVM::LLVMDialect, mlir::gpu::GPUDialect>();
  mlir::func::registerInlinerExtension(registry);
  trainc::loop::registerLoopLoweringInterfaces(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "trainc optimizer driver\n", registry));
}
