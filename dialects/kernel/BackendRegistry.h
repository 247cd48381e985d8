//===- BackendRegistry.h - which backend runs a kernel launch -*- C++ -*-===//
//
// The dispatch registry: (kernel, backend) -> priority + a predicate on the
// launch's shapes and dtypes. --trainc-dispatch picks the applicable backend
// of highest priority, or the one `--dispatch KERNEL=BACKEND` asks for.
// Every (kernel, backend) listed here must exist in the runtime's kernel
// table (a test checks it).
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_DIALECTS_KERNEL_BACKENDREGISTRY_H
#define TRAINC_DIALECTS_KERNEL_BACKENDREGISTRY_H

#include "dialects/kernel/KernelOps.h"

#include "llvm/ADT/StringMap.h"

#include <string>

namespace trainc::kernel {

/// Module attribute (i64) that --trainc-dispatch sets: f32 lanes of the
/// target's vectors, which some rules depend on.
inline constexpr llvm::StringLiteral kVectorLanesAttrName =
    "kernel.vector_lanes";

/// The target's f32 vector lanes recorded on `launch`'s module (16, the
/// AVX-512 default, when none is).
int64_t targetVectorLanes(LaunchOp launch);

/// Module attribute (string) that --trainc-dispatch sets for the CUDA
/// target: "cuda". Absent: the CPU.
inline constexpr llvm::StringLiteral kTargetAttrName = "kernel.target";

/// Whether `backend` runs on `target` ("cpu" or "cuda"): the CUDA target
/// runs the `cublas` and `generated` backends, the CPU every other.
bool backendRunsOn(llvm::StringRef backend, llvm::StringRef target);

struct BackendRule {
  /// The graph op the rule is for, or "*" for every kernel.
  llvm::StringLiteral kernel;
  llvm::StringLiteral backend;
  int priority;
  /// Whether the backend can run this launch; sets `whyNot` if not.
  bool (*applies)(LaunchOp launch, std::string &whyNot);
};

/// Every rule, highest priority first within a kernel.
llvm::ArrayRef<BackendRule> backendRules();

/// The backends that could ever run `kernel` (for messages and --stats).
llvm::SmallVector<llvm::StringRef> backendsFor(llvm::StringRef kernel);

/// The backend for `launch`: `requested` if given and one of its rules
/// applies (an error explains why none does), else the applicable rule of
/// highest priority.
llvm::FailureOr<llvm::StringRef> chooseBackend(LaunchOp launch,
                                               llvm::StringRef requested,
                                               std::string &error);

} // namespace trainc::kernel

#endif
