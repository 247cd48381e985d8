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

llvm::ArrayRef<BackendRule> backendRules() {
  static const BackendRule rules[] = {
      // OpenBLAS sgemm: matrix products, and convolutions as im2col + sgemm.
      {"graph.matmul", "openblas", 10, allFloat32},
      {"graph.gemm", "openblas", 10, allFloat32},
      {"graph.conv", "openblas", 10, allFloat32},
      {"graph.conv_backward_input", "openblas", 10, allFloat32},
      {"graph.conv_backward_weight", "openblas", 10, allFloat32},
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
