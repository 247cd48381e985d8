//===- Codegen.h - kernel-dialect module to a model library ----*- C++ -*-===//
//
// The last stage of `trainc compile`: the lowered, dispatched and planned
// kernel-dialect module becomes native code (the host's TargetMachine), is
// linked with the runtime into libNAME.so, and described by NAME.h (the C
// API) and NAME.json (the manifest, also embedded in the library).
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_CODEGEN_H
#define TRAINC_CODEGEN_H

#include "trainc/Import.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <cstdint>

#include <string>
#include <vector>

namespace llvm {
class Module;
} // namespace llvm
namespace mlir {
class TimingScope;
} // namespace mlir

namespace trainc {

struct CodegenOptions {
  /// Target CPU: "native" (the host, default) or an LLVM CPU name.
  std::string cpu = "native";
  /// The runtime archive (libtrainc_rt.a); found next to the executable
  /// when empty.
  std::string runtimeLibrary;
  /// Identifies the model in checkpoints (a hash of the ONNX file and the
  /// compile options).
  std::string modelHash;
  std::string modelName;
  /// The module's training configuration (graph.training), for the manifest.
  std::string trainingJson = "{}";
  /// The ONNX inference model without the initializers listed in
  /// `exportedInitializers`, which trainc_export_onnx appends from the
  /// session (empty: the library cannot export).
  std::string inferenceModel;
  std::vector<std::string> exportedInitializers;
  /// Time every kernel launch (trainc_get_profile); for `--profile` only,
  /// as the timers cost about 50 ns per launch.
  bool profile = false;
  /// Test every launch's float outputs for NaN and infinities, and fail
  /// the step naming the first launch that made one
  /// (`--check-numerics`; a pass over each output per launch).
  bool checkNumerics = false;
  /// "cpu", or "cuda": every launch a generated kernel, compiled for each
  /// of `gpuArchs` with the CUDA toolkit at `cudaPath` and run through the
  /// CUDA driver (the runtime archive is then libtrainc_rt_cuda.a).
  std::string target = "cpu";
  std::vector<std::string> gpuArchs = {"sm_80", "sm_90"};
  std::string cudaPath = "/usr/local/cuda";
  /// `--data-parallel`: the library also links libtrainc_rt_mpi.a (the
  /// `mpi` backend's kernels, found beside `runtimeLibrary`) and Open MPI.
  bool dataParallel = false;
  /// Threads that compile the generated kernels (`--compile-threads`): the
  /// kernels are cut into that many parts, each lowered, optimized and
  /// compiled to an object on a thread of its own, while the step
  /// functions compile on the caller's; 0: every hardware thread.
  unsigned compileThreads = 0;
  /// `--timing`: the phases of code generation (module emission, LLVM's
  /// optimization, code generation, linking) are timed as children of
  /// this scope (null: not timed).
  mlir::TimingScope *timing = nullptr;
};

/// `--timing`: LLVM's seconds on one generated kernel function.
struct KernelCompileTime {
  std::string kernel;    ///< the function's name
  std::string signature; ///< its arguments' types
  double optimize = 0;   ///< the O3 pipeline's function passes on it
  double codegen = 0;    ///< instruction selection to object code
};

/// What was produced.
struct ModelLibrary {
  std::string manifestJson;
  std::string header;
  /// With `CodegenOptions::timing`: every generated kernel's times
  /// (module-level passes, which no one function owns, are not in them).
  std::vector<KernelCompileTime> kernelTimes;
};

/// Emits `soPath` (and returns the manifest and header text, which the
/// caller writes next to it).
llvm::Expected<ModelLibrary> emitModelLibrary(mlir::ModuleOp lowered,
                                              const WeightStore &weights,
                                              const CodegenOptions &options,
                                              const std::string &soPath);

/// f32 lanes of the vector registers of CPU `cpu` ("native" or an LLVM CPU
/// name), which generated kernels are scheduled for: 16 with AVX-512, 8
/// with AVX, else 4.
llvm::Expected<int64_t> targetVectorLanes(const std::string &cpu);

/// Whether CPU `cpu` ("native" or an LLVM CPU name) computes bf16 products
/// natively (AVX512-BF16 or AMX-BF16), which --amp bf16 needs.
llvm::Expected<bool> targetHasNativeBf16(const std::string &cpu);

/// Whether CPU `cpu` ("native" or an LLVM CPU name) narrows f32 to bf16
/// in one instruction (AVX512-BF16's vcvtneps2bf16), which the generated
/// kernels compiled for it then use (--trainc-expand-bf16's
/// native-narrowing).
llvm::Expected<bool> targetConvertsBf16(const std::string &cpu);

/// LLVM's O3 pipeline for CPU `cpu` ("native" or an LLVM CPU name), as
/// `trainc compile` optimizes a model: the target's cost models decide
/// unrolling and vectorization. Sets the module's data layout and triple.
llvm::Error optimizeForCpu(llvm::Module &module, const std::string &cpu);

/// Generated kernels compiled as `trainc compile` compiles them for `cpu`.
struct KernelObject {
  std::string object;
  /// CPU seconds (of the compiling thread) of LLVM's O3 pipeline and of
  /// code generation.
  double optimizeSeconds = 0, codegenSeconds = 0;
};

/// Lowers `kernels` (functions of loop nests, the loop dialect: they are
/// rewritten in place), then optimizes and generates an object for `cpu`
/// exactly as the model library's kernels are.
llvm::Expected<KernelObject> compileLoopKernels(mlir::ModuleOp kernels,
                                                const std::string &cpu);

/// The runtime archive for the running executable: PREFIX/LIBDIR/
/// libtrainc_rt.a when installed, build/lib/libtrainc_rt.a in the build
/// tree (`name`: libtrainc_rt_cuda.a for the CUDA target).
std::string defaultRuntimeLibrary(const char *argv0,
                                  const std::string &name = "libtrainc_rt.a");

/// PTX of the generated kernels of a lowered module (every launch
/// generated) for GPU architecture `arch`, as `trainc compile --target cuda
/// --emit ptx` prints it.
llvm::Expected<std::string> emitGpuPtx(mlir::ModuleOp lowered,
                                       const CodegenOptions &options,
                                       const std::string &arch);

} // namespace trainc

#endif
