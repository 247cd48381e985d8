//===- ModelLibrary.cpp - object code and the linked .so ------------------===//
//
// The model's LLVM IR (ModelEmitter) and its generated kernels (the loop
// dialect's lowering, cut into parts compiled on threads of their own) are
// each optimized at O3 for the target and become objects (position
// independent); then the C++ driver links them with the runtime archive
// into a shared object that exports only the C API (a version script)
// and has no undefined symbols (-z defs). Both steps write temporaries
// that are renamed into place only when everything succeeded.
//
//===----------------------------------------------------------------------===//
#include "trainc/Codegen.h"

#include "lib/Codegen/GpuKernels.h"
#include "lib/Codegen/ModelEmitter.h"

#include "dialects/loop/LoopOps.h"
#include "dialects/loop/Transforms/LoopToLLVM.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/PassInstrumentation.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Pass.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <ctime>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>
#include <unistd.h>

namespace trainc {

namespace {

/// LLVM feature names checked at session open, with /proc/cpuinfo's
/// spelling where it differs.
const std::pair<const char *, const char *> kCheckedFeatures[] = {
    {"sse4.1", "sse4_1"},      {"sse4.2", "sse4_2"},
    {"avx", "avx"},            {"avx2", "avx2"},
    {"fma", "fma"},            {"f16c", "f16c"},
    {"avx512f", "avx512f"},    {"avx512bw", "avx512bw"},
    {"avx512vl", "avx512vl"},  {"avx512dq", "avx512dq"},
    {"avx512cd", "avx512cd"},  {"avx512bf16", "avx512_bf16"},
    {"avx512fp16", "avx512_fp16"}, {"amx-bf16", "amx_bf16"},
    {"amx-tile", "amx_tile"},
};

struct Target {
  std::unique_ptr<llvm::TargetMachine> machine;
  std::vector<std::string> checkedFeatures;
};

llvm::Expected<Target> makeTarget(const std::string &cpuOption) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  // The step functions' module includes the weights with inline assembly.
  llvm::InitializeNativeTargetAsmParser();
  llvm::Triple triple(llvm::sys::getProcessTriple());
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return llvm::createStringError("no target for " + triple.str() + ": " +
                                   error);
  std::string cpu = cpuOption == "native" ? llvm::sys::getHostCPUName().str()
                                          : cpuOption;
  std::string features;
  Target result;
  if (cpuOption == "native") {
    for (const auto &feature : llvm::sys::getHostCPUFeatures())
      features += (features.empty() ? "" : ",") +
                  std::string(feature.second ? "+" : "-") +
                  feature.first().str();
  }
  llvm::TargetOptions options;
  result.machine.reset(target->createTargetMachine(
      triple, cpu, features, options, llvm::Reloc::PIC_));
  if (!result.machine)
    return llvm::createStringError("cannot create a target machine for CPU '" +
                                   cpu + "'");
  const llvm::MCSubtargetInfo *subtarget =
      result.machine->getMCSubtargetInfo();
  if (!subtarget->isCPUStringValid(cpu))
    return llvm::createStringError("unknown CPU '" + cpu +
                                   "' (try --cpu=native or an LLVM CPU name "
                                   "such as x86-64-v3, skylake-avx512)");
  for (const auto &[llvmName, cpuinfoName] : kCheckedFeatures)
    if (subtarget->checkFeatures(std::string("+") + llvmName))
      result.checkedFeatures.push_back(cpuinfoName);
  return result;
}

/// `query` of the subtarget of CPU `cpu` ("native" or an LLVM CPU name).
template <typename T>
llvm::Expected<T>
querySubtarget(const std::string &cpu,
               llvm::function_ref<T(const llvm::MCSubtargetInfo &)> query) {
  llvm::Expected<Target> target = makeTarget(cpu);
  if (!target)
    return target.takeError();
  return query(*target->machine->getMCSubtargetInfo());
}

/// What the generated kernels' lowering may assume of a CPU.
loop::LoopTarget loopTarget(const llvm::MCSubtargetInfo &subtarget) {
  loop::LoopTarget target;
  target.nativeBf16 = subtarget.checkFeatures("+avx512bf16");
  return target;
}
loop::LoopTarget loopTarget(const llvm::TargetMachine &machine) {
  return loopTarget(*machine.getMCSubtargetInfo());
}

} // namespace

llvm::Expected<int64_t> targetVectorLanes(const std::string &cpu) {
  return querySubtarget<int64_t>(cpu, [](const llvm::MCSubtargetInfo &s) {
    if (s.checkFeatures("+avx512f"))
      return int64_t(16);
    return int64_t(s.checkFeatures("+avx") ? 8 : 4);
  });
}

llvm::Expected<bool> targetHasNativeBf16(const std::string &cpu) {
  return querySubtarget<bool>(cpu, [](const llvm::MCSubtargetInfo &s) {
    return s.checkFeatures("+avx512bf16") || s.checkFeatures("+amx-bf16");
  });
}

llvm::Expected<bool> targetConvertsBf16(const std::string &cpu) {
  return querySubtarget<bool>(cpu, [](const llvm::MCSubtargetInfo &s) {
    return loopTarget(s).nativeBf16;
  });
}

namespace {

/// --timing: seconds LLVM spent on each function, by name.
using FunctionSeconds = llvm::StringMap<double>;
using Clock = std::chrono::steady_clock;

double secondsBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

/// Appended to the code generation pipeline, which (after one module
/// pass, pre-ISel intrinsic lowering) runs all its passes on a function
/// before it starts the next: the time from one function's stamp to the
/// next is the next one's, instruction selection to object code.
class StampFunctions : public llvm::FunctionPass {
public:
  static char ID;
  explicit StampFunctions(FunctionSeconds &seconds)
      : llvm::FunctionPass(ID), seconds(seconds) {}
  llvm::StringRef getPassName() const override {
    return "trainc: code generation time per function";
  }
  void getAnalysisUsage(llvm::AnalysisUsage &usage) const override {
    usage.setPreservesAll();
  }
  bool doInitialization(llvm::Module &) override {
    last = Clock::now();
    return false;
  }
  bool runOnFunction(llvm::Function &function) override {
    Clock::time_point now = Clock::now();
    seconds[function.getName()] += secondsBetween(last, now);
    last = now;
    return false;
  }

private:
  FunctionSeconds &seconds;
  Clock::time_point last;
};
char StampFunctions::ID = 0;

/// Adds the time of the O3 pipeline's outermost passes on a function (its
/// function pass managers, with the loop passes inside them) to that
/// function's entry. Module and call-graph passes are no one function's.
class FunctionPassTimer {
public:
  FunctionPassTimer(llvm::PassInstrumentationCallbacks &callbacks,
                    FunctionSeconds &seconds)
      : seconds(seconds) {
    // Every pass, of any IR unit, is bracketed by a before and exactly one
    // of the two afters.
    callbacks.registerBeforeNonSkippedPassCallback(
        [this](llvm::StringRef, llvm::Any ir) {
          const auto *function = llvm::any_cast<const llvm::Function *>(&ir);
          running.push_back(function != nullptr);
          if (function && functionPasses++ == 0) {
            current = (*function)->getName().str();
            start = Clock::now();
          }
        });
    callbacks.registerAfterPassCallback(
        [this](llvm::StringRef, llvm::Any, const llvm::PreservedAnalyses &) {
          finish();
        });
    callbacks.registerAfterPassInvalidatedCallback(
        [this](llvm::StringRef, const llvm::PreservedAnalyses &) { finish(); });
  }

private:
  void finish() {
    bool function = running.pop_back_val();
    if (function && --functionPasses == 0)
      this->seconds[current] += secondsBetween(start, Clock::now());
  }

  FunctionSeconds &seconds;
  llvm::SmallVector<bool> running;
  unsigned functionPasses = 0;
  std::string current;
  Clock::time_point start;
};

/// Generates `module`'s object code for `machine` into `stream` (with
/// `seconds`, the time of each function's).
llvm::Error emitObject(llvm::Module &module, llvm::TargetMachine &machine,
                       llvm::raw_pwrite_stream &stream,
                       FunctionSeconds *seconds = nullptr) {
  module.setDataLayout(machine.createDataLayout());
  module.setTargetTriple(machine.getTargetTriple());
  llvm::legacy::PassManager passes;
  if (machine.addPassesToEmitFile(passes, stream, nullptr,
                                  llvm::CodeGenFileType::ObjectFile))
    return llvm::createStringError("the target cannot emit object files");
  if (seconds)
    passes.add(new StampFunctions(*seconds));
  passes.run(module);
  return llvm::Error::success();
}

llvm::Error emitObject(llvm::Module &module, llvm::TargetMachine &machine,
                       const std::string &path,
                       FunctionSeconds *seconds = nullptr) {
  std::error_code code;
  llvm::raw_fd_ostream stream(path, code, llvm::sys::fs::OF_None);
  if (code)
    return llvm::createStringError("cannot write '" + path +
                                   "': " + code.message());
  if (auto error = emitObject(module, machine, stream, seconds))
    return error;
  stream.flush();
  return llvm::Error::success();
}

/// LLVM's O3 pipeline for the target (vectorizer cost models included;
/// with `seconds`, the time of each function's passes).
void optimize(llvm::Module &module, llvm::TargetMachine &machine,
              FunctionSeconds *seconds = nullptr) {
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager cgscc;
  llvm::ModuleAnalysisManager modules;
  llvm::PassInstrumentationCallbacks callbacks;
  std::optional<FunctionPassTimer> timer;
  if (seconds)
    timer.emplace(callbacks, *seconds);
  llvm::PassBuilder builder(&machine, llvm::PipelineTuningOptions(),
                            std::nullopt, seconds ? &callbacks : nullptr);
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(cgscc);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, cgscc, modules);
  builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3)
      .run(module, modules);
}

/// `seconds` by kernel: a kernel's nests are functions of their own
/// (loop::nestFunctionName: KERNEL_nestN).
FunctionSeconds byKernel(const FunctionSeconds &seconds) {
  FunctionSeconds kernels;
  for (const auto &entry : seconds) {
    llvm::StringRef name = entry.getKey();
    auto [kernel, index] = name.rsplit("_nest");
    bool nest =
        !index.empty() && index != name && llvm::all_of(index, llvm::isDigit);
    kernels[nest ? kernel : name] += entry.getValue();
  }
  return kernels;
}

/// How many parts compileKernelParts cuts the kernels into: `threads`, or
/// every hardware thread when 0, and never more than there are kernels.
unsigned kernelParts(unsigned threads, size_t kernels) {
  if (threads == 0)
    threads = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<unsigned>(
      std::max<size_t>(1, std::min<size_t>(threads, kernels)));
}

/// Lowers the module's loop kernels and compiles them into object files
/// `objectPrefix` + N + ".o", one per part (appended to `objects`), the parts
/// on threads of their own: each part a module of every Nth kernel function,
/// lowered through the loop pipeline (distinct modules of one MLIR context),
/// translated into an LLVM context of its own, optimized and compiled by a
/// TargetMachine of its own. Returns the objects' paths, written even
/// when a part failed (for the caller to remove). When `timing` is on,
/// `times` gets LLVM's seconds on each kernel.
///
/// The kernels' functions are never inlined into the step functions (they
/// are in other objects): a step calls hundreds to thousands of them once
/// each, and with single-block kernels inlined, DenseNet-121's train step
/// became one function that LLVM's O3 and instruction scheduling took
/// 170 s of a 213-s compile to handle (29 s without; a call per launch
/// costs nanoseconds).
llvm::Error compileKernelParts(mlir::ModuleOp lowered, const std::string &cpu,
                               unsigned threads,
                               const std::string &objectPrefix,
                               std::vector<std::string> &objects,
                               mlir::TimingScope &timing,
                               const std::function<void()> &whileCompiling,
                               std::vector<KernelCompileTime> &times) {
  std::vector<mlir::func::FuncOp> kernels;
  for (auto function : lowered.getOps<mlir::func::FuncOp>())
    if (function->hasAttr(loop::kKernelAttrName))
      kernels.push_back(function);
  unsigned parts = kernelParts(threads, kernels.size());
  if (kernels.empty()) {
    whileCompiling();
    return llvm::Error::success();
  }
  mlir::MLIRContext *context = lowered.getContext();
  loop::prepareLoopTranslation(*context);
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> modules;
  std::vector<Target> targets;
  size_t firstObject = objects.size();
  for (unsigned part = 0; part < parts; ++part) {
    modules.emplace_back(mlir::ModuleOp::create(lowered.getLoc()));
    llvm::Expected<Target> target = makeTarget(cpu);
    if (!target)
      return target.takeError();
    targets.push_back(std::move(*target));
    objects.push_back(objectPrefix + std::to_string(part) + ".o");
  }
  for (size_t i = 0; i < kernels.size(); ++i)
    modules[i % parts]->push_back(kernels[i].clone());

  // One handler for every part's diagnostics (handlers are per context).
  std::mutex mutex;
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(context, [&](mlir::Diagnostic &d) {
    std::lock_guard<std::mutex> lock(mutex);
    llvm::raw_string_ostream(diagnostics)
        << d.getLocation() << ": " << d << "\n";
    return mlir::success();
  });
  auto collected = [&] {
    std::lock_guard<std::mutex> lock(mutex);
    return diagnostics;
  };
  std::vector<std::string> failures(parts);
  bool timed = static_cast<bool>(timing);
  std::vector<FunctionSeconds> optimizeSeconds(parts), codegenSeconds(parts);
  auto compilePart = [&](unsigned part) {
    mlir::TimingScope scope =
        timing.nest("kernels, part " + std::to_string(part + 1) + " of " +
                    std::to_string(parts));
    llvm::TargetMachine &machine = *targets[part].machine;
    llvm::LLVMContext llvmContext;
    auto module = loop::lowerLoopKernels(
        *modules[part], llvmContext, loopTarget(machine), &scope, collected);
    if (!module) {
      failures[part] = llvm::toString(module.takeError());
      return;
    }
    (*module)->setDataLayout(machine.createDataLayout());
    (*module)->setTargetTriple(machine.getTargetTriple());
    {
      mlir::TimingScope phase = scope.nest("LLVM optimization (O3)");
      optimize(**module, machine, timed ? &optimizeSeconds[part] : nullptr);
    }
    mlir::TimingScope phase = scope.nest("LLVM code generation");
    if (llvm::Error error =
            emitObject(**module, machine, objects[firstObject + part],
                       timed ? &codegenSeconds[part] : nullptr))
      failures[part] = llvm::toString(std::move(error));
  };
  std::vector<std::thread> workers;
  for (unsigned part = 0; part < parts; ++part)
    workers.emplace_back(compilePart, part);
  whileCompiling();
  for (std::thread &worker : workers)
    worker.join();
  for (const std::string &failure : failures)
    if (!failure.empty())
      return llvm::createStringError(failure);
  FunctionSeconds optimizeByKernel, codegenByKernel;
  for (unsigned part = 0; timed && part < parts; ++part)
    for (auto [from, to] : {std::make_pair(&optimizeSeconds, &optimizeByKernel),
                            std::make_pair(&codegenSeconds, &codegenByKernel)})
      for (const auto &entry : byKernel((*from)[part]))
        (*to)[entry.getKey()] += entry.getValue();
  if (timed)
    for (size_t i = 0; i < kernels.size(); ++i) {
      KernelCompileTime time;
      time.kernel = kernels[i].getSymName().str();
      llvm::raw_string_ostream signature(time.signature);
      llvm::interleaveComma(
          kernels[i].getArgumentTypes(), signature, [&](mlir::Type type) {
            auto memref = llvm::dyn_cast<mlir::MemRefType>(type);
            if (!memref) {
              signature << type;
              return;
            }
            for (int64_t extent : memref.getShape())
              signature << extent << "x";
            signature << memref.getElementType();
          });
      time.optimize = optimizeByKernel.lookup(time.kernel);
      time.codegen = codegenByKernel.lookup(time.kernel);
      times.push_back(std::move(time));
    }
  return llvm::Error::success();
}

/// Exports the C API and nothing else.
const char *kVersionScript = R"(TRAINC_1 {
  global:
    trainc_api_version; trainc_manifest; trainc_last_error;
    trainc_session_open; trainc_session_close; trainc_get_memory;
    trainc_set_learning_rate; trainc_get_learning_rate; trainc_get_step;
    trainc_get_loss_scale;
    trainc_train_step; trainc_forward;
    trainc_num_parameters; trainc_parameter_name;
    trainc_get_parameter; trainc_set_parameter;
    trainc_save_checkpoint; trainc_load_checkpoint; trainc_export_onnx;
    trainc_get_profile;
    trainc_get_world; trainc_get_communication; trainc_all_reduce_sum;
    trainc_use_communicator;
  local: *;
};
)";

/// Links `object` with the runtime into `output`, a temporary that is later
/// renamed to a file called `soname`: its SONAME, so that programs linked
/// against the library record that name, not the path they linked from.
llvm::Error linkSharedObject(const std::vector<std::string> &objects,
                             const std::string &runtime,
                             const std::string &output,
                             const std::string &soname, bool cuda,
                             bool dataParallel) {
  auto compiler = llvm::sys::findProgramByName("c++");
  if (!compiler)
    return llvm::createStringError("no C++ compiler driver (c++) on PATH to "
                                   "link the model");
  if (!llvm::sys::fs::exists(runtime))
    return llvm::createStringError("runtime library '" + runtime +
                                   "' not found (pass --runtime-library)");
  // A data-parallel library also links the `mpi` backend's kernels,
  // which sit beside the runtime archive, and Open MPI.
  llvm::SmallString<256> mpiRuntime(llvm::sys::path::parent_path(runtime));
  llvm::sys::path::append(mpiRuntime, "libtrainc_rt_mpi.a");
  if (dataParallel && !llvm::sys::fs::exists(mpiRuntime))
    return llvm::createStringError("--data-parallel: the MPI runtime '" +
                                   mpiRuntime.str().str() +
                                   "' is not beside the runtime library");
  std::string script = output + ".map";
  {
    std::ofstream stream(script);
    stream << kVersionScript;
    if (!stream)
      return llvm::createStringError("cannot write '" + script + "'");
  }
  std::vector<std::string> args = {*compiler, "-shared", "-o", output};
  args.insert(args.end(), objects.begin(), objects.end());
  args.insert(args.end(), {"-Wl,--whole-archive", runtime});
  if (dataParallel)
    args.push_back(mpiRuntime.str().str());
  args.insert(args.end(),
              {"-Wl,--no-whole-archive", "-Wl,--version-script=" + script,
               "-Wl,-soname," + soname, "-Wl,-z,defs", "-fopenmp", "-lm"});
  if (dataParallel)
    for (llvm::StringRef library :
         llvm::split(llvm::StringRef(TRAINC_MPI_LIBRARIES), ';'))
      if (!library.empty())
        args.push_back(library.str());
  // The runtime archive of a sanitized build (scripts/sanitize.sh) calls
  // the sanitizer runtimes.
  if (llvm::StringRef sanitize = TRAINC_RUNTIME_SANITIZE; !sanitize.empty())
    args.push_back("-fsanitize=" + sanitize.str());
  // The CUDA runtime has no host kernels (and opens the driver itself).
  if (cuda)
    args.push_back("-ldl");
  else
    args.insert(args.end(), {"-lopenblas", "-ldnnl"});
  std::vector<llvm::StringRef> argRefs(args.begin(), args.end());
  std::string message;
  std::string log = output + ".log";
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(log),
                                                llvm::StringRef(log)};
  int status = llvm::sys::ExecuteAndWait(*compiler, argRefs, std::nullopt,
                                         redirects, 0, 0, &message);
  std::ifstream logStream(log);
  std::string linkerOutput((std::istreambuf_iterator<char>(logStream)), {});
  llvm::sys::fs::remove(script);
  llvm::sys::fs::remove(log);
  if (status != 0)
    return llvm::createStringError("linking the model failed: " + message +
                                   "\n" + linkerOutput);
  return llvm::Error::success();
}

codegen::GpuOptions gpuOptions(const CodegenOptions &options) {
  codegen::GpuOptions gpu;
  gpu.archs = options.gpuArchs;
  gpu.toolkitPath = options.cudaPath;
  return gpu;
}

std::string headerFor(const std::string &name, const std::string &manifest) {
  return "/* " + name +
         ".h - generated by trainc: the C API of lib" + name +
         ".so (trainc/runtime.h).\n *\n * The model's manifest:\n" + manifest +
         "\n */\n#include \"trainc/runtime.h\"\n";
}

} // namespace

std::string defaultRuntimeLibrary(const char *argv0, const std::string &name) {
  std::string executable =
      llvm::sys::fs::getMainExecutable(argv0, (void *)&defaultRuntimeLibrary);
  llvm::StringRef binDir = llvm::sys::path::parent_path(executable);
  auto besideBin = [&](llvm::StringRef libDir) {
    llvm::SmallString<256> path(binDir);
    llvm::sys::path::append(path, "..", libDir, name);
    return std::string(path);
  };
  // Installed: PREFIX/<libdir>, where libdir may be lib/<multiarch>; in the
  // build tree: build/lib. An absolute libdir comes last, so that a build
  // tree never picks up an installed archive.
  llvm::StringRef installLibDir = TRAINC_INSTALL_LIBDIR;
  std::vector<std::string> candidates;
  if (!llvm::sys::path::is_absolute(installLibDir))
    candidates.push_back(besideBin(installLibDir));
  candidates.push_back(besideBin("lib"));
  if (llvm::sys::path::is_absolute(installLibDir))
    candidates.push_back((installLibDir + "/" + name).str());
  for (const std::string &candidate : candidates)
    if (llvm::sys::fs::exists(candidate))
      return candidate;
  return besideBin("lib");
}

llvm::Expected<ModelLibrary> emitModelLibrary(mlir::ModuleOp lowered,
                                              const WeightStore &weights,
                                              const CodegenOptions &options,
                                              const std::string &soPath) {
  llvm::StringRef directory = llvm::sys::path::parent_path(soPath);
  if (!directory.empty() && !llvm::sys::fs::is_directory(directory))
    return llvm::createStringError("cannot write '" + soPath +
                                   "': no directory '" + directory.str() + "'");
  auto target = makeTarget(options.cpu);
  if (!target)
    return target.takeError();
  nlohmann::json base = {
      {"format", 1},
      {"api_version", 1},
      {"model", options.modelName},
      {"hash", options.modelHash},
      {"cpu",
       {{"name", options.cpu == "native" ? llvm::sys::getHostCPUName().str()
                                         : options.cpu},
        {"checked_features", target->checkedFeatures}}},
      {"target",
       options.target == "cuda"
           ? nlohmann::json{{"kind", "cuda"}, {"gpu_archs", options.gpuArchs}}
           : nlohmann::json{{"kind", "cpu"}}},
      {"training", nlohmann::json::parse(options.trainingJson)},
      {"onnx_export", {{"initializers", options.exportedInitializers}}}};
  llvm::LLVMContext context;
  ModelLibrary library;
  // --timing: each phase a child of the caller's scope (a no-op scope when
  // not timed).
  mlir::TimingScope untimed;
  mlir::TimingScope &timing = options.timing ? *options.timing : untimed;
  codegen::EmitTarget emitTarget;
  emitTarget.cuda = options.target == "cuda";
  if (emitTarget.cuda) {
    mlir::TimingScope phase = timing.nest("GPU kernels (MLIR, NVPTX, ptxas)");
    auto images = codegen::compileGpuKernels(lowered, gpuOptions(options));
    if (!images)
      return images.takeError();
    emitTarget.gpuImages = std::move(*images);
  }
  // Temporaries beside the library: the initial weights (which the step
  // functions' object includes), the step functions' object, one per part
  // of the generated kernels, and the library before its rename.
  std::string prefix = soPath + ".tmp." + std::to_string(::getpid());
  std::string temporary = prefix;
  std::string weightsFile = prefix + ".weights";
  std::vector<std::string> objects = {prefix + ".o"};
  auto cleanup = [&] {
    for (const std::string &object : objects)
      llvm::sys::fs::remove(object);
    llvm::sys::fs::remove(weightsFile);
    llvm::sys::fs::remove(temporary);
  };

  mlir::TimingScope emitPhase = timing.nest("LLVM IR of the step functions");
  auto module = codegen::emitModelModule(
      lowered, weights, base.dump(), options.inferenceModel,
      codegen::Instrumentation{options.profile, options.checkNumerics},
      emitTarget, context, library.manifestJson, weightsFile);
  if (!module) {
    cleanup();
    return module.takeError();
  }
  emitPhase.stop();
  (*module)->setDataLayout(target->machine->createDataLayout());
  (*module)->setTargetTriple(target->machine->getTargetTriple());

  // The step functions' object and the kernels' compiled at the same time.
  llvm::Error stepError = llvm::Error::success();
  auto compileSteps = [&] {
    {
      mlir::TimingScope phase = timing.nest("LLVM optimization (O3)");
      optimize(**module, *target->machine);
    }
    // The step functions are straight lines of calls (a launch each, and
    // the runtime's checks): SelectionDAG and the greedy register
    // allocator took 4.9 s of DenseNet-121's 15-s compile on them (0.4 s
    // at CodeGenOptLevel::None) for no measurable difference per step.
    // Their IR is optimized all the same.
    target->machine->setOptLevel(llvm::CodeGenOptLevel::None);
    mlir::TimingScope phase = timing.nest("LLVM code generation");
    stepError = emitObject(**module, *target->machine, objects.front());
  };
  llvm::Error kernelError = llvm::Error::success();
  if (emitTarget.cuda) {
    compileSteps();
  } else {
    mlir::TimingScope phase = timing.nest("generated kernels");
    kernelError = compileKernelParts(
        lowered, options.cpu, options.compileThreads, prefix + ".kernels.",
        objects, phase, compileSteps, library.kernelTimes);
  }
  if (stepError || kernelError) {
    cleanup();
    return llvm::joinErrors(std::move(stepError), std::move(kernelError));
  }
  mlir::TimingScope linkPhase = timing.nest("link (c++ -shared)");
  if (auto error = linkSharedObject(objects, options.runtimeLibrary, temporary,
                                    llvm::sys::path::filename(soPath).str(),
                                    emitTarget.cuda, options.dataParallel)) {
    cleanup();
    return std::move(error);
  }
  linkPhase.stop();
  if (std::error_code code = llvm::sys::fs::rename(temporary, soPath)) {
    cleanup();
    return llvm::createStringError("cannot write '" + soPath +
                                   "': " + code.message());
  }
  cleanup();
  library.header = headerFor(options.modelName, library.manifestJson);
  return library;
}

llvm::Expected<std::string> emitGpuPtx(mlir::ModuleOp lowered,
                                       const CodegenOptions &options,
                                       const std::string &arch) {
  return codegen::gpuKernelsPtx(lowered, gpuOptions(options), arch);
}

namespace {
/// CPU seconds of the calling thread: what a compile costs, however busy
/// the machine is.
double threadSeconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return now.tv_sec + now.tv_nsec * 1e-9;
}
} // namespace

llvm::Error optimizeForCpu(llvm::Module &module, const std::string &cpu) {
  llvm::Expected<Target> target = makeTarget(cpu);
  if (!target)
    return target.takeError();
  module.setDataLayout(target->machine->createDataLayout());
  module.setTargetTriple(target->machine->getTargetTriple());
  optimize(module, *target->machine);
  return llvm::Error::success();
}

llvm::Expected<KernelObject> compileLoopKernels(mlir::ModuleOp kernels,
                                                const std::string &cpu) {
  llvm::Expected<Target> target = makeTarget(cpu);
  if (!target)
    return target.takeError();
  llvm::LLVMContext context;
  auto module = loop::translateLoopKernels(kernels, context,
                                           loopTarget(*target->machine));
  if (!module)
    return module.takeError();
  KernelObject result;
  double start = threadSeconds();
  (*module)->setDataLayout(target->machine->createDataLayout());
  (*module)->setTargetTriple(target->machine->getTargetTriple());
  optimize(**module, *target->machine);
  double optimized = threadSeconds();
  llvm::SmallVector<char, 0> object;
  llvm::raw_svector_ostream stream(object);
  if (auto error = emitObject(**module, *target->machine, stream))
    return std::move(error);
  double emitted = threadSeconds();
  result.object.assign(object.begin(), object.end());
  result.optimizeSeconds = optimized - start;
  result.codegenSeconds = emitted - optimized;
  return result;
}

} // namespace trainc
