//===- GpuKernels.h - loop kernels to CUDA fatbins -------------*- C++ -*-===//
//
// The CUDA target's half of the code generator: the generated kernels
// (loop.kernel functions) become one gpu.module (--trainc-loop-to-gpu),
// lowered through NVVM and assembled by the toolkit's ptxas and fatbinary
// into one fatbin per GPU architecture. This header is light on purpose:
// the MLIR GPU/NVVM includes stay in GpuKernels.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_LIB_CODEGEN_GPUKERNELS_H
#define TRAINC_LIB_CODEGEN_GPUKERNELS_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace trainc::codegen {

struct GpuOptions {
  /// sm_80, sm_90, ...: one fatbin each.
  std::vector<std::string> archs = {"sm_80", "sm_90"};
  /// The CUDA toolkit (ptxas, fatbinary, libdevice), passed explicitly.
  std::string toolkitPath = "/usr/local/cuda";
  int64_t blockSize = 256;
};

/// One architecture's device code: a fatbin (its cubin and PTX).
struct GpuImage {
  std::string arch;
  std::string fatbin;
};

/// Compiles the loop.kernel functions of `lowered` (cloned; `lowered` is
/// not changed) for every architecture of `options`. No kernels: no images.
llvm::Expected<std::vector<GpuImage>>
compileGpuKernels(mlir::ModuleOp lowered, const GpuOptions &options);

/// The kernels of `lowered` after --trainc-loop-to-gpu and NVVM lowering,
/// as PTX text for `arch` (what `trainc compile --emit ptx` prints).
llvm::Expected<std::string> gpuKernelsPtx(mlir::ModuleOp lowered,
                                          const GpuOptions &options,
                                          const std::string &arch);

} // namespace trainc::codegen

#endif
