//===- TrainingPipeline.cpp - named pass pipelines ------------------------===//
#include "pipelines/TrainingPipeline.h"

#include "lib/Conversion/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace trainc {

void buildTrainingPipeline(mlir::OpPassManager &pm,
                           const TrainingPipelineOptions &options,
                           const std::optional<graph::AmpPassOptions> &amp) {
  // Before autodiff, so that the backward pass mirrors the forward's
  // precisions and parameters stay f32 behind a cast (master weights).
  if (amp)
    pm.addPass(graph::createAmpPass(*amp));
  pm.addPass(graph::createAutodiffPass(options));
  // Again after it: ops only the reverse sweep builds (a bias gradient's
  // sum) take their own class.
  if (amp)
    pm.addPass(graph::createAmpPass(*amp));
  // The reverse sweep builds gradients for every operand; folding and
  // dead-code elimination keep only what the parameters need.
  pm.addPass(mlir::createCanonicalizerPass());
  // Convolutions over planes smaller than their padded window read
  // their live taps only (one slice per weight and function, after CSE).
  pm.addPass(graph::createDropDeadTapsPass());
  // Convolutions left with a kernel as large as their input (the last
  // stage's, after their dead taps go) as GEMMs.
  pm.addPass(graph::createConvsAsProductsPass());
  // Gradients of adjacent slices (the QKV split) as one concatenation.
  pm.addPass(graph::createMergeSliceGradientsPass());
  // ReLU gradient masks after a max pooling's gradient run on the pooled
  // gradient (before CSE, which merges the pooling it adds with the
  // forward's).
  pm.addPass(graph::createMaskPooledGradientsPass());
  // After autodiff, so that the gradients' divisions go too.
  pm.addPass(graph::createReciprocalDivisorsPass());
  pm.addPass(mlir::createCSEPass());
  // After CSE, which would merge the copies back. bf16 storage (products
  // in f32) is for memory: there the weight copies a backward pass reads
  // again (live-tap slices) are read again from the weights too.
  graph::RematElementwisePassOptions remat;
  remat.parameters = amp && amp->products == "f32";
  pm.addPass(graph::createRematElementwisePass(remat));
}

void buildDispatchPipeline(mlir::OpPassManager &pm,
                           llvm::ArrayRef<std::string> dispatchOverrides,
                           int64_t vectorLanes, const std::string &target) {
  pm.addPass(mlir::createInlinerPass());
  pm.addPass(kernel::createLowerToKernelPass());
  kernel::DispatchPassOptions dispatch;
  dispatch.overrides = llvm::to_vector(dispatchOverrides);
  dispatch.vectorLanes = vectorLanes;
  dispatch.target = target;
  pm.addPass(kernel::createDispatchPass(dispatch));
  // Before --tune, so that it times the products as they will run. oneDNN
  // and OpenBLAS read the same permutations, so tuning may move a launch
  // between them after the fold.
  pm.addPass(kernel::createFoldTransposesPass());
}

void buildKernelPipeline(mlir::OpPassManager &pm,
                         llvm::ArrayRef<std::string> dispatchOverrides,
                         int64_t vectorLanes,
                         const KernelLoweringOptions &lowering,
                         const std::string &target) {
  buildDispatchPipeline(pm, dispatchOverrides, vectorLanes, target);
  buildKernelLoweringPipeline(pm, vectorLanes, lowering);
}

void buildKernelLoweringPipeline(mlir::OpPassManager &pm, int64_t vectorLanes,
                                 const KernelLoweringOptions &lowering) {
  // ReLUs stay generated kernels unless asked: oneDNN 2.6's ReLU post-op
  // (vmaxps against 0) turns NaN into 0, and a NaN must reach the loss
  // (the CNN at batch 64 on a Sapphire Rapids: 5 % slower, 7.5-7.7
  // against 8.0-8.1 ms/step, 3 interleaved runs, 2026-11-26).
  kernel::FuseActivationsPassOptions activations;
  activations.relus = lowering.reluEpilogues;
  pm.addPass(kernel::createFuseActivationsPass(activations));
  // Blocked conv weights (docs/RUNTIME.md "Layouts"), before the updates
  // move: the groups follow the updates as autodiff placed them.
  if (lowering.blockedWeights)
    pm.addPass(kernel::createAssignWeightLayoutsPass());
  // Before the updates move: each then follows its gradient's window.
  pm.addPass(kernel::createWindowUpdatesPass());
  pm.addPass(kernel::createScheduleUpdatesPass());
  // After the updates moved: the copy is written after its update (moved
  // down to the copy's readers when it may) and fused with it.
  if (lowering.keepWeightCopies) {
    pm.addPass(kernel::createKeepWeightCopiesPass());
    pm.addPass(kernel::createCompactWindowUpdatesPass());
  }
  // Last before the loop nests: the passes above read slices' options.
  pm.addPass(kernel::createFoldSliceTransposesPass());
  pm.addPass(kernel::createFoldConcatTransposesPass());
  conversion::KernelToLoopPassOptions toLoop;
  toLoop.vectorLanes = vectorLanes;
  pm.addPass(conversion::createKernelToLoopPass(toLoop));
  conversion::FuseElementwisePassOptions fuse;
  fuse.vectorLanes = vectorLanes;
  pm.addPass(conversion::createFuseElementwisePass(fuse));
  pm.addPass(conversion::createDedupeKernelsPass());
  // After fusion, which changes what is stored. Reordered first (the
  // order decides which input dies where), then an output written over a
  // dying input is one buffer, which a second reordering moves as one
  // (the Transformer's FFN gradient: the weight gradient before the input
  // gradient once GELU's gradient writes over its input).
  if (lowering.scheduleMemory)
    pm.addPass(kernel::createScheduleMemoryPass());
  if (lowering.reuseBuffers)
    pm.addPass(conversion::createReuseBuffersPass());
  if (lowering.scheduleMemory && lowering.reuseBuffers)
    pm.addPass(kernel::createScheduleMemoryPass());
  // After the memory schedule, which would move a bucket's wait next to
  // its start; nothing to do without data-parallel all-reduces.
  kernel::BucketAllReducesPassOptions buckets;
  buckets.bucketBytes = lowering.bucketBytes;
  pm.addPass(kernel::createBucketAllReducesPass(buckets));
  pm.addPass(kernel::createPlanMemoryPass());
}

namespace {
/// PassPipelineRegistration needs a PassPipelineOptions subclass; this one
/// mirrors the autodiff options it forwards.
struct TrainPipelineCLOptions
    : public mlir::PassPipelineOptions<TrainPipelineCLOptions> {
  Option<std::string> loss{*this, "loss", llvm::cl::init("auto")};
  Option<std::string> optimizer{*this, "optimizer", llvm::cl::init("sgd")};
  Option<double> learningRate{*this, "lr", llvm::cl::init(0.01)};
  Option<double> momentum{*this, "momentum", llvm::cl::init(0.0)};
  Option<double> weightDecay{*this, "weight-decay", llvm::cl::init(-1.0)};
  Option<std::string> amp{*this, "amp", llvm::cl::init("off")};
};
} // namespace

void registerTrainingPipeline() {
  mlir::PassPipelineRegistration<TrainPipelineCLOptions>(
      "trainc-train",
      "Autodiff + canonicalization: @forward to the training graph",
      [](mlir::OpPassManager &pm, const TrainPipelineCLOptions &cl) {
        TrainingPipelineOptions options;
        options.loss = cl.loss;
        options.optimizer = cl.optimizer;
        options.learningRate = cl.learningRate;
        options.momentum = cl.momentum;
        options.weightDecay = cl.weightDecay;
        std::optional<graph::AmpPassOptions> amp;
        if (cl.amp != "off") {
          amp.emplace();
          amp->precision = cl.amp == "fp16" ? "fp16" : "bf16";
          if (cl.amp == "bf16-storage")
            amp->products = "f32";
          // f16 products on CPU are emulated, and f16 needs loss scaling.
          if (cl.amp == "fp16") {
            amp->products = "rounded";
            options.lossScaling = "dynamic";
          }
        }
        buildTrainingPipeline(pm, options, amp);
      });
}

} // namespace trainc
