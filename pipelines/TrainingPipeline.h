//===- TrainingPipeline.h - named pass pipelines ---------------*- C++ -*-===//
//
// `trainc-train`: from the imported @forward to the training graph
// (@gradients, @train_step, @eval), folded and deduplicated. Later
// pipelines (AMP, rematerialization, lowering to the kernel dialect) are
// appended here, in one place, for the driver and for trainc-opt alike.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_PIPELINES_TRAININGPIPELINE_H
#define TRAINC_PIPELINES_TRAININGPIPELINE_H

#include "dialects/graph/Transforms/Passes.h"
#include "dialects/kernel/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"

namespace trainc {

/// The options of the training pipeline are the autodiff pass's.
using TrainingPipelineOptions = graph::AutodiffPassOptions;

/// Choices of the kernel pipeline after dispatch.
struct KernelLoweringOptions {
  /// ReLUs after oneDNN products become their post-ops (faster, but
  /// oneDNN 2.6 maps NaN to 0 there: `trainc compile --relu-epilogues`).
  bool reluEpilogues = false;
  /// --trainc-assign-weight-layouts: convolution weights that only oneDNN
  /// convolutions and updates touch stay in oneDNN's blocked layout
  /// (`trainc compile --weight-layout`).
  bool blockedWeights = true;
  /// --trainc-schedule-memory: launches reordered for a smaller arena
  /// (`trainc compile --schedule memory`, the default).
  bool scheduleMemory = true;
  /// --trainc-reuse-buffers: elementwise kernels write over an input that
  /// dies there (off under --check-numerics, which reads inputs after).
  bool reuseBuffers = true;
  /// --trainc-bucket-all-reduces: bytes of gradients per all-reduce bucket
  /// (data-parallel libraries; `trainc compile --bucket-mib`).
  int64_t bucketBytes = 1 << 20;
  /// --trainc-keep-weight-copies: the low-precision copies of the weights
  /// (--amp) are persistent, written by the updates (the CPU target; the
  /// CUDA runtime does not run @refresh_weight_copies yet).
  bool keepWeightCopies = true;
};

/// With `amp`, --trainc-amp runs before autodiff and again after it.
void buildTrainingPipeline(
    mlir::OpPassManager &pm, const TrainingPipelineOptions &options,
    const std::optional<graph::AmpPassOptions> &amp = std::nullopt);

/// The training graph to planned kernel launches: inline the calls, lower
/// to the kernel dialect, choose backends (`dispatchOverrides` are
/// KERNEL=BACKEND), schedule generated kernels for vectors of
/// `vectorLanes` f32 (the target's: targetVectorLanes in trainc/Codegen.h),
/// place buffers in the arena. `target` "cuda" restricts dispatch to the
/// backends a GPU runs (cublas, generated).
void buildKernelPipeline(mlir::OpPassManager &pm,
                         llvm::ArrayRef<std::string> dispatchOverrides,
                         int64_t vectorLanes,
                         const KernelLoweringOptions &lowering = {},
                         const std::string &target = "cpu");
/// buildKernelPipeline in two halves, for a step between them (`trainc
/// compile --tune` changes backends): up to and including dispatch (and
/// the transposes folded into library products, which reads the same on
/// either library), and everything after it.
void buildDispatchPipeline(mlir::OpPassManager &pm,
                           llvm::ArrayRef<std::string> dispatchOverrides,
                           int64_t vectorLanes,
                           const std::string &target = "cpu");
void buildKernelLoweringPipeline(mlir::OpPassManager &pm, int64_t vectorLanes,
                                 const KernelLoweringOptions &lowering = {});

/// Registers `--trainc-train` (for trainc-opt).
void registerTrainingPipeline();

} // namespace trainc

#endif // TRAINC_PIPELINES_TRAININGPIPELINE_H
