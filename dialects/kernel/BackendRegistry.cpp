//===- BackendRegistry.cpp - which backend runs a kernel launch -----------===//
#include "dialects/kernel/BackendRegistry.h"

using namespace mlir;

namespace trainc::kernel {

static bool allFloat32(LaunchOp launch, std::string &whyNot) {
  for (Value buffer : launch->getOperands())
    if (!cast<MemRefType>(buffer.getType()).getElementType().isF32()) {
      whyNot = "it handles f32 buffers only";
      return false;
    }
  return true;
}

static bool always(LaunchOp, std::string &) { return true; }

/// f32 tensors, with i1 allowed for masks and comparison results.
static bool float32OrMask(LaunchOp launch, std::string &whyNot) {
  for (Value buffer : launch->getOperands()) {
    Type element = cast<MemRefType>(buffer.getType()).getElementType();
    if (!element.isF32() && !element.isInteger(1)) {
      whyNot = "it handles f32 tensors (and i1 masks) only";
      return false;
    }
  }
  return true;
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
      // OpenBLAS sgemm: matrix products, and convolutions as im2col + sgemm.
      {"graph.matmul", "openblas", 10, allFloat32},
      {"graph.gemm", "openblas", 10, allFloat32},
      {"graph.conv", "openblas", 10, allFloat32},
      {"graph.conv_backward_input", "openblas", 10, allFloat32},
      {"graph.conv_backward_weight", "openblas", 10, allFloat32},
      // Generated loop nests (lib/Conversion/GeneratedKernels.cpp): vectorized,
      // split across threads, faster than the reference kernels.
      {"graph.add", "generated", 5, float32OrMask},
      {"graph.sub", "generated", 5, float32OrMask},
      {"graph.mul", "generated", 5, float32OrMask},
      {"graph.div", "generated", 5, float32OrMask},
      {"graph.equal", "generated", 5, float32OrMask},
      {"graph.less", "generated", 5, float32OrMask},
      {"graph.greater", "generated", 5, float32OrMask},
      {"graph.less_equal", "generated", 5, float32OrMask},
      {"graph.greater_equal", "generated", 5, float32OrMask},
      {"graph.where", "generated", 5, float32OrMask},
      {"graph.neg", "generated", 5, float32OrMask},
      {"graph.abs", "generated", 5, float32OrMask},
      {"graph.sqrt", "generated", 5, float32OrMask},
      {"graph.exp", "generated", 5, float32OrMask},
      {"graph.log", "generated", 5, float32OrMask},
      {"graph.tanh", "generated", 5, float32OrMask},
      {"graph.erf", "generated", 5, float32OrMask},
      {"graph.sigmoid", "generated", 5, float32OrMask},
      {"graph.relu", "generated", 5, float32OrMask},
      {"graph.reciprocal", "generated", 5, float32OrMask},
      {"graph.leaky_relu", "generated", 5, float32OrMask},
      {"graph.gelu", "generated", 5, float32OrMask},
      {"graph.clip", "generated", 5, float32OrMask},
      {"graph.reduce_sum", "generated", 5, float32OrMask},
      {"graph.reduce_mean", "generated", 5, float32OrMask},
      {"graph.reduce_max", "generated", 5, float32OrMask},
      {"graph.softmax", "generated", 5, float32OrMask},
      {"graph.log_softmax", "generated", 5, float32OrMask},
      {"graph.sgd_update", "generated", 5, float32Update<3>},
      {"graph.adam_update", "generated", 5, float32Update<5>},
      {"graph.expand", "generated", 5, always},
      {"graph.transpose", "generated", 5, always},
      {"graph.reshape", "generated", 5, always},
      {"graph.identity", "generated", 5, always},
      {"runtime.copy", "generated", 5, always},
      // The runtime's reference kernels run everything.
      {"*", "reference", 0, always},
  };
  return rules;
}

llvm::SmallVector<StringRef> backendsFor(StringRef kernel) {
  llvm::SmallVector<StringRef> backends;
  for (const BackendRule &rule : backendRules())
    if (rule.kernel == kernel || rule.kernel == "*")
      backends.push_back(rule.backend);
  return backends;
}

FailureOr<StringRef> chooseBackend(LaunchOp launch, StringRef requested,
                                   std::string &error) {
  StringRef kernel = launch.getKernel();
  const BackendRule *best = nullptr;
  for (const BackendRule &rule : backendRules()) {
    if (rule.kernel != kernel && rule.kernel != "*")
      continue;
    std::string whyNot;
    if (!requested.empty()) {
      if (rule.backend != requested)
        continue;
      if (!rule.applies(launch, whyNot)) {
        error = "backend '" + requested.str() + "' cannot run " + kernel.str() +
                " here: " + whyNot;
        return failure();
      }
      return rule.backend;
    }
    if (rule.applies(launch, whyNot) && (!best || rule.priority > best->priority))
      best = &rule;
  }
  if (!requested.empty()) {
    std::string known;
    for (StringRef backend : backendsFor(kernel))
      known += (known.empty() ? "" : ", ") + backend.str();
    error = "no backend '" + requested.str() + "' for " + kernel.str() +
            " (available: " + known + ")";
    return failure();
  }
  if (!best) {
    error = "no backend can run " + kernel.str();
    return failure();
  }
  return best->backend;
}

} // namespace trainc::kernel
