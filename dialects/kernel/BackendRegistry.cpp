//===- BackendRegistry.cpp - which backend runs a kernel launch -----------===//
#include "dialects/kernel/BackendRegistry.h"
#include "dialects/kernel/BackendPredicates.h"

#include "mlir/IR/BuiltinOps.h"

#include <optional>

using namespace mlir;

namespace trainc::kernel {

/// The target recorded on `launch`'s module ("cpu" when none is).
static StringRef targetOf(LaunchOp launch) {
  auto module = launch->getParentOfType<ModuleOp>();
  auto target =
      module ? module->getAttrOfType<StringAttr>(kTargetAttrName) : nullptr;
  return target ? target.getValue() : StringRef("cpu");
}

bool backendRunsOn(StringRef backend, StringRef target) {
  bool gpu = backend == "cublas" || backend == "cudnn";
  return backend == "generated" || gpu == (target == "cuda");
}

int64_t targetVectorLanes(LaunchOp launch) {
  auto module = launch->getParentOfType<ModuleOp>();
  auto lanes = module ? module->getAttrOfType<IntegerAttr>(kVectorLanesAttrName)
                      : nullptr;
  return lanes ? lanes.getInt() : 16;
}

/// Optimizer updates: f32 tensors and learning rate, the i64 step (operand
/// `stepIndex`).
template <unsigned stepIndex>
static bool float32Update(LaunchOp launch, std::string &whyNot) {
  for (auto [i, buffer] : llvm::enumerate(launch->getOperands())) {
    Type element = cast<MemRefType>(buffer.getType()).getElementType();
    bool isStep = i == stepIndex;
    if (isStep ? !element.isInteger(64) : !element.isF32()) {
      whyNot = "it handles f32 parameters with an i64 step only";
      return false;
    }
  }
  return true;
}

llvm::ArrayRef<BackendRule> backendRules() {
  static const BackendRule rules[] = {
      // oneDNN, ahead of OpenBLAS and the reference kernels where it was
      // faster at the reference models' shapes (docs/RUNTIME.md has the
      // numbers).
      {"graph.matmul", "cublas", 30, cublasProduct},
      {"graph.gemm", "cublas", 30, cublasProduct},
      // Batches of small matrices read transposed: OpenBLAS on AVX-512
      // targets (ProductRules.cpp).
      {"graph.matmul", "openblas", 21, smallTransposedLhsProducts},
      {"graph.matmul", "dnnl", 20, dnnlMatmul},
      {"graph.gemm", "dnnl", 20, dnnlMatmul},
      // The CUDA target's convolutions: cuDNN wherever it applies.
      {"graph.conv", "cudnn", 35, cudnnConv},
      {"graph.conv_backward_input", "cudnn", 35, cudnnConv},
      {"graph.conv_backward_weight", "cudnn", 35, cudnnConv},
      {"graph.conv", "generated", 30, generatedDepthwiseForward},
      {"graph.conv_backward_input", "generated", 30,
       generatedDepthwiseInputGradient},
      {"graph.conv_backward_weight", "generated", 30,
       generatedDepthwiseWeightGradient},
      {"graph.conv", "openblas", 25, smallPlaneConvPaddedTaps},
      {"graph.conv", "dnnl", 20, dnnlConv},
      {"graph.conv_backward_input", "openblas", 25, smallPlaneConvPaddedTaps},
      {"graph.conv_backward_input", "dnnl", 20, dnnlConv},
      {"graph.conv_backward_weight", "openblas", 25, smallPlaneConvWeight},
      {"graph.conv_backward_weight", "openblas", 24, singleChannelConvWeight},
      {"graph.conv_backward_weight", "dnnl", 20, dnnlConv},
      // Where the windows tile the input and are at most 2 wide along the
      // last dim, the generated max pooling and its gradient are faster
      // than oneDNN's (whose gradient reruns the forward for a workspace;
      // plain NCHW pooling is a slow path there). The CNN's two 2x2/2 pools
      // at batch 64 on 2 threads, ms per step: gradient 0.78-0.87 (dnnl)
      // against 0.56-0.60, forward 0.31-0.37 against 0.18-0.20
      // (docs/RUNTIME.md).
      {"graph.max_pool", "generated", 25, generatedMaxPoolVectorized},
      {"graph.max_pool", "dnnl", 20, dnnlPool},
      {"graph.avg_pool", "dnnl", 20, dnnlPool},
      {"graph.max_pool_backward", "generated", 25, generatedMaxPoolVectorized},
      {"graph.max_pool_backward", "dnnl", 20, dnnlPool},
      {"graph.avg_pool_backward", "dnnl", 20, dnnlPool},
      // OpenBLAS sgemm: matrix products, and convolutions as im2col + sgemm.
      {"graph.matmul", "openblas", 10, allFloat32},
      {"graph.gemm", "openblas", 10, allFloat32},
      {"graph.conv", "openblas", 10, allFloat32},
      {"graph.conv_backward_input", "openblas", 10, allFloat32},
      {"graph.conv_backward_weight", "openblas", 10, allFloat32},
      // Generated loop nests (lib/Conversion/GeneratedKernels.cpp): vectorized,
      // split across threads, faster than the reference kernels.
      {"graph.add", "generated", 5, floatOrInteger},
      {"graph.sub", "generated", 5, floatOrInteger},
      {"graph.mul", "generated", 5, floatOrInteger},
      {"graph.div", "generated", 5, floatOrMask},
      {"graph.equal", "generated", 5, floatOrIntegerOrMask},
      {"graph.less", "generated", 5, floatOrIntegerOrMask},
      {"graph.greater", "generated", 5, floatOrIntegerOrMask},
      {"graph.less_equal", "generated", 5, floatOrIntegerOrMask},
      {"graph.greater_equal", "generated", 5, floatOrIntegerOrMask},
      {"graph.where", "generated", 5, floatOrIntegerOrMask},
      {"graph.cast", "generated", 5, generatedCast},
      {"graph.neg", "generated", 5, floatOrMask},
      {"graph.abs", "generated", 5, floatOrMask},
      {"graph.sqrt", "generated", 5, floatOrMask},
      {"graph.exp", "generated", 5, floatOrMask},
      {"graph.log", "generated", 5, floatOrMask},
      {"graph.tanh", "generated", 5, floatOrMask},
      {"graph.erf", "generated", 5, floatOrMask},
      {"graph.sin", "generated", 5, floatOrMask},
      {"graph.cos", "generated", 5, floatOrMask},
      {"graph.softplus", "generated", 5, floatOrMask},
      {"graph.sigmoid", "generated", 5, floatOrMask},
      {"graph.relu", "generated", 5, floatOrMask},
      {"graph.reciprocal", "generated", 5, floatOrMask},
      {"graph.leaky_relu", "generated", 5, floatOrMask},
      {"graph.gelu", "generated", 5, floatOrMask},
      {"graph.clip", "generated", 5, floatOrMask},
      {"graph.not", "generated", 5, floatOrMask},
      {"graph.and", "generated", 5, floatOrMask},
      {"graph.is_nan", "generated", 5, floatOrMask},
      {"graph.pow", "generated", 5, allFloat32},
      {"graph.reduce_sum", "generated", 5, float32OrMask},
      {"graph.reduce_mean", "generated", 5, float32OrMask},
      {"graph.reduce_max", "generated", 5, floatOrMask},
      {"graph.argmax", "generated", 5, float32ArgMax},
      {"graph.softmax", "generated", 5, float32OrMask},
      {"graph.log_softmax", "generated", 5, float32OrMask},
      // Statistics in f32 scratch whatever the activations' type.
      {"graph.layer_norm", "generated", 5, floatOrMask},
      {"graph.layer_norm_backward", "generated", 5, floatOrMask},
      {"graph.batch_norm_training", "generated", 5, generatedBatchNorm},
      {"graph.batch_norm_inference", "generated", 5, generatedBatchNorm},
      {"graph.batch_norm_training_backward", "generated", 5,
       generatedBatchNorm},
      {"graph.softmax_cross_entropy", "generated", 5, float32ClassLoss},
      {"graph.softmax_cross_entropy_backward", "generated", 5,
       float32ClassLoss},
      {"graph.nll_loss", "generated", 5, float32ClassLoss},
      {"graph.nll_loss_backward", "generated", 5, float32ClassLoss},
      {"graph.mse_loss", "generated", 5, allFloat32},
      {"graph.l1_loss", "generated", 5, allFloat32},
      {"graph.bce_with_logits_loss", "generated", 5, allFloat32},
      {"graph.sgd_update", "generated", 5, float32Update<3>},
      {"graph.adam_update", "generated", 5, float32Update<5>},
      {"graph.adagrad_update", "generated", 5, float32Update<4>},
      {"graph.global_avg_pool", "generated", 5, allFloat32},
      // Products as loop nests: the fallback where neither library applies.
      {"graph.matmul", "generated", 5, allFloat32},
      {"graph.gemm", "generated", 5, allFloat32},
      // Slices as strided views: vectorized where the innermost step is 1,
      // about twice the reference's speed (Transformer b16 on 2 threads:
      // slice_backward 0.13 against 0.31 ms/step, slice 0.07 against
      // 0.14; ResNet-18's live-tap slices of its 3x3 weights 1.2 against
      // 3.0, their gradients 1.6 against 6.9).
      {"graph.slice", "generated", 5, always},
      // Concatenation as copies into strided views: on the GPU, or when
      // asked. On the CPU the runtime's kernel (one memcpy per row and
      // input, the copies split across threads) is faster and costs no
      // compile time (Sapphire Rapids, 2 threads, --profile, two runs
      // each): DenseNet-121's 58 concatenations (batch 8, 64 px) 1.5-1.8
      // against 1.9-2.1 ms/step, the Transformer's QKV gradient 0.085-0.091
      // against 0.097-0.104; and DenseNet-121 compiles in 7.2 against 9.9 s.
      {"graph.concat", "generated", -10, always},
      {"graph.slice_backward", "generated", 5, always},
      {"graph.expand", "generated", 5, always},
      {"graph.transpose", "generated", 5, always},
      {"graph.reshape", "generated", 5, always},
      {"graph.identity", "generated", 5, always},
      {"runtime.copy", "generated", 5, always},
      // Data-parallel gradient averaging (--data-parallel): Open MPI
      // (lib/Runtime/kernels/MpiKernels.cpp), bucketed by
      // --trainc-bucket-all-reduces.
      {"graph.all_reduce", "mpi", 10, allFloat32},
      // The runtime's reference kernels run everything.
      {"*", "reference", 0, referenceKernel},
      // oneDNN's batch norm was not faster than the reference kernels (nor
      // than the generated ones): it runs only when asked for (--dispatch).
      {"graph.batch_norm_training", "dnnl", -10, dnnlBatchNorm},
      {"graph.batch_norm_inference", "dnnl", -10, dnnlBatchNorm},
      {"graph.batch_norm_training_backward", "dnnl", -10, dnnlBatchNorm},
      // Windows and slices as loop nests with affine maps
      // (GeneratedConvKernels.cpp, GeneratedWindowPoolKernels.cpp,
      // GeneratedSliceKernels.cpp): the fallback, whose windows run as
      // scalar loops. Only when asked.
      {"graph.conv", "generated", -10, allFloat32},
      {"graph.conv_backward_input", "generated", -10, allFloat32},
      {"graph.conv_backward_weight", "generated", -10, allFloat32},
      // The only kernels of f16 max pooling (--amp fp16; oneDNN 2.6 has
      // none on CPU).
      {"graph.max_pool", "generated", -20, allFloat32OrLow},
      {"graph.max_pool_backward", "generated", -20, allFloat32OrLow},
      {"graph.avg_pool", "generated", -10, allFloat32},
      {"graph.avg_pool_backward", "generated", -10, allFloat32},
      {"graph.gather", "generated", -10, generatedGather},
      {"graph.gather_backward", "generated", -10, generatedGather},
      {"graph.gather_elements", "generated", -10, generatedGather},
      {"graph.gather_elements_backward", "generated", -10, generatedGather},
      // A convolution's weight over a small plane as a matrix and its
      // gradient (--trainc-convs-as-products): copies of each filter's
      // taps, rows of 2 or 4 elements, which the runtime's kernel moves
      // at twice the loop nests' speed. On the GPU, or when asked.
      {"graph.conv_matrix", "generated", -10, always},
      {"graph.conv_matrix_backward", "generated", -10, allFloat32},
      {"graph.random_mask", "generated", -10, allFloat32Mask},

      // Wider exactly tiling windows are read strided, by scalar loops:
      // 1.18 ms against oneDNN's 0.36-0.42 ms for the gradient of a 3x3/3
      // pool of 64x32x27x27 (2 threads).
      {"graph.max_pool", "generated", -10, generatedMaxPool},
      {"graph.max_pool_backward", "generated", -10, generatedMaxPool},
  };
  return rules;
}

llvm::SmallVector<StringRef> backendsFor(StringRef kernel) {
  llvm::SmallVector<StringRef> backends;
  for (const BackendRule &rule : backendRules())
    if ((rule.kernel == kernel || rule.kernel == "*") &&
        !llvm::is_contained(backends, rule.backend))
      backends.push_back(rule.backend);
  return backends;
}

FailureOr<StringRef> chooseBackend(LaunchOp launch, StringRef requested,
                                   std::string &error) {
  StringRef kernel = launch.getKernel();
  StringRef target = targetOf(launch);
  const BackendRule *best = nullptr;
  // A requested backend may have several rules (a kernel generated at a
  // high priority in some cases and only when asked for in others): any
  // applicable one will do; if none, the first one's reason.
  std::optional<std::string> requestedWhyNot;
  for (const BackendRule &rule : backendRules()) {
    if (rule.kernel != kernel && rule.kernel != "*")
      continue;
    std::string whyNot;
    if (!backendRunsOn(rule.backend, target)) {
      if (rule.backend == requested && !requestedWhyNot)
        requestedWhyNot = "it does not run on the " + target.str() + " target";
      continue;
    }
    if (!requested.empty()) {
      if (rule.backend != requested)
        continue;
      if (rule.applies(launch, whyNot))
        return rule.backend;
      if (!requestedWhyNot)
        requestedWhyNot = whyNot;
      continue;
    }
    if (rule.applies(launch, whyNot) &&
        (!best || rule.priority > best->priority))
      best = &rule;
  }
  if (requestedWhyNot) {
    error = "backend '" + requested.str() + "' cannot run " + kernel.str() +
            " here: " + *requestedWhyNot;
    return failure();
  }
  if (!requested.empty()) {
    std::string known;
    for (StringRef backend : backendsFor(kernel))
      if (backendRunsOn(backend, target))
        known += (known.empty() ? "" : ", ") + backend.str();
    error = "no backend '" + requested.str() + "' for " + kernel.str() +
            " (available: " + known + ")";
    return failure();
  }
  if (!best) {
    error = "no backend can run " + kernel.str() +
            (target == "cpu" ? "" : " on the " + target.str() + " target");
    return failure();
  }
  return best->backend;
}

} // namespace trainc::kernel
