//===- ScalarsToLLVM.cpp - --trainc-scalars-to-llvm
//------------------------===//
//
// One dialect conversion for what is left of a kernel module once its
// vectors are LLVM's: affine.apply, memrefs, math, arith, ub, func (bare
// pointers) and cf, with upstream's patterns and one LLVMTypeConverter,
// as upstream's convert-to-llvm pass combines them. The results are those
// of the seven passes run one after the other.
//
//===----------------------------------------------------------------------===//
#include "dialects/loop/Transforms/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/DialectConversion.h"

namespace trainc::loop {
#define GEN_PASS_DEF_SCALARSTOLLVMPASS
#include "dialects/loop/Transforms/Passes.h.inc"
} // namespace trainc::loop

using namespace mlir;

namespace {

struct ScalarsToLLVMPass
    : trainc::loop::impl::ScalarsToLLVMPassBase<ScalarsToLLVMPass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *context = &getContext();
    LowerToLLVMOptions options(context);
    options.useBarePtrCallConv = true;
    LLVMTypeConverter converter(context, options);
    SymbolTableCollection symbolTables;
    RewritePatternSet patterns(context);
    // The affine.apply of --trainc-expand-views (view offsets).
    populateAffineToStdConversionPatterns(patterns);
    populateFinalizeMemRefToLLVMConversionPatterns(converter, patterns,
                                                   &symbolTables);
    populateMathToLLVMConversionPatterns(converter, patterns);
    arith::populateArithToLLVMConversionPatterns(converter, patterns);
    ub::populateUBToLLVMConversionPatterns(converter, patterns);
    populateFuncToLLVMConversionPatterns(converter, patterns, &symbolTables);
    cf::populateControlFlowToLLVMConversionPatterns(converter, patterns);
    cf::populateAssertToLLVMConversionPattern(converter, patterns,
                                              /*abortOnFailure=*/true,
                                              &symbolTables);
    LLVMConversionTarget target(*context);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
