//===- BackendPredicates.h - the dispatch rules' predicates ----*- C++ -*-===//
//
// What the rule table of BackendRegistry.cpp and the convolution and product
// rules of ConvolutionRules.cpp and ProductRules.cpp share. A predicate says
// whether a backend can run a launch, and if not, why (`whyNot`). Internal
// to dialects/kernel.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_DIALECTS_KERNEL_BACKENDPREDICATES_H
#define TRAINC_DIALECTS_KERNEL_BACKENDPREDICATES_H

#include "dialects/kernel/BackendRegistry.h"

#include <string>

namespace trainc::kernel {

/// Every buffer f32.
bool allFloat32(LaunchOp launch, std::string &whyNot);
/// Every buffer f32, or every one bf16, or every one f16.
bool allFloat32OrLow(LaunchOp launch, std::string &whyNot);
/// bf16 or f16: the low precisions of --amp.
bool isLowFloat(mlir::Type element);
/// A buffer's shape.
llvm::ArrayRef<int64_t> shapeOf(mlir::Value buffer);
/// An integer-array option of the launch, empty when absent.
llvm::ArrayRef<int64_t> integers(LaunchOp launch, llvm::StringRef name);

// BackendPredicates.cpp: what each backend takes (docs at the definitions).
bool always(LaunchOp launch, std::string &whyNot);
bool referenceKernel(LaunchOp launch, std::string &whyNot);
bool float32OrMask(LaunchOp launch, std::string &whyNot);
bool floatOrMask(LaunchOp launch, std::string &whyNot);
bool floatOrInteger(LaunchOp launch, std::string &whyNot);
bool floatOrIntegerOrMask(LaunchOp launch, std::string &whyNot);
bool dnnlConv(LaunchOp launch, std::string &whyNot);
bool dnnlMatmul(LaunchOp launch, std::string &whyNot);
bool dnnlPool(LaunchOp launch, std::string &whyNot);
bool cublasProduct(LaunchOp launch, std::string &whyNot);
bool cudnnConv(LaunchOp launch, std::string &whyNot);
bool generatedCast(LaunchOp launch, std::string &whyNot);
bool float32ClassLoss(LaunchOp launch, std::string &whyNot);
bool float32ArgMax(LaunchOp launch, std::string &whyNot);
bool allFloat32Mask(LaunchOp launch, std::string &whyNot);
bool generatedGather(LaunchOp launch, std::string &whyNot);
bool dnnlBatchNorm(LaunchOp launch, std::string &whyNot);
bool generatedBatchNorm(LaunchOp launch, std::string &whyNot);
bool generatedMaxPool(LaunchOp launch, std::string &whyNot);
bool generatedMaxPoolVectorized(LaunchOp launch, std::string &whyNot);

// ConvolutionRules.cpp
bool smallPlaneConvWeight(LaunchOp launch, std::string &whyNot);
bool singleChannelConvWeight(LaunchOp launch, std::string &whyNot);
bool smallPlaneConvPaddedTaps(LaunchOp launch, std::string &whyNot);
bool generatedDepthwiseForward(LaunchOp launch, std::string &whyNot);
bool generatedDepthwiseInputGradient(LaunchOp launch, std::string &whyNot);
bool generatedDepthwiseWeightGradient(LaunchOp launch, std::string &whyNot);

// ProductRules.cpp
bool smallTransposedLhsProducts(LaunchOp launch, std::string &whyNot);

} // namespace trainc::kernel

#endif
