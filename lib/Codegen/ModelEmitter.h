//===- ModelEmitter.h - kernel functions to LLVM IR ------------*- C++ -*-===//
#ifndef TRAINC_LIB_CODEGEN_MODELEMITTER_H
#define TRAINC_LIB_CODEGEN_MODELEMITTER_H

#include "lib/Codegen/GpuKernels.h"
#include "trainc/Import.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace trainc::codegen {

/// The model's LLVM module: one `trainc_model_<name>` function per lowered
/// function (train_step, eval), the kernel descriptors and constants, the
/// initial weights (`trainc_model_weights`) and the manifest
/// (`trainc_model_manifest`, JSON; `manifestJson` receives the same text).
/// `manifestBase` holds the keys the emitter does not compute itself.
/// `inferenceModel` (`trainc_model_onnx`) is the ONNX graph that
/// trainc_export_onnx completes with the trained initializers.
///
/// Instrumented builds: with `profile`, every launch is timed
/// (trainc_rt_profile_begin/end) and the manifest's "profile" list
/// describes each timed launch; with `checkNumerics`, each function's
/// arguments and every launch's float buffers are tested for NaN and
/// infinities (trainc_rt_check_numerics), as the manifest's "numerics" list
/// describes them.
struct Instrumentation {
  bool profile = false;
  bool checkNumerics = false;
};

/// What the launch sequence runs on. On the CUDA target, the generated
/// functions receive device addresses (arguments, arena); every launch is
/// a generated kernel, launched through trainc_rt_cuda_launch with the
/// shape --trainc-loop-to-gpu gave it; constants are copied to the device
/// when a session opens (trainc_model_constants); `gpuImages` become
/// trainc_model_gpu_images.
struct EmitTarget {
  bool cuda = false;
  int64_t gpuBlockSize = 256;
  std::vector<GpuImage> gpuImages;
};

/// `weightsFile`, when not empty, is where the emitter writes the initial
/// weights; the module then includes that file with the assembler's
/// `.incbin` instead of holding them as an IR constant (which LLVM hashes,
/// copies and emits byte by byte: 2.7 s of VGG-11's 530 MB at
/// CodeGenOptLevel::None). The file must exist until the module is
/// compiled.
llvm::Expected<std::unique_ptr<llvm::Module>>
emitModelModule(mlir::ModuleOp lowered, const WeightStore &weights,
                const std::string &manifestBase, llvm::StringRef inferenceModel,
                const Instrumentation &instrument, const EmitTarget &target,
                llvm::LLVMContext &context, std::string &manifestJson,
                const std::string &weightsFile = "");

} // namespace trainc::codegen

#endif
