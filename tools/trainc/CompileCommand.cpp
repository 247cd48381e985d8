//===- CompileCommand.cpp - `trainc compile` ------------------------------===//
//
// Import -> training graph -> kernel launches -> libNAME.so (+ NAME.h and
// NAME.json), or any of the intermediate IRs with --emit.
//
//===----------------------------------------------------------------------===//
#include "tools/trainc/Commands.h"
#include "tools/trainc/MemoryBudget.h"
#include "tools/trainc/Stats.h"

#include "lib/Runtime/FileWrite.h"
#include "lib/Runtime/Fnv1a.h"

#include "dialects/kernel/KernelOps.h"
#include "dialects/kernel/Transforms/Passes.h"
#include "tools/trainc/TuneDispatch.h"
#include "trainc/Codegen.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace trainc::cli {

/// FNV-1a of the ONNX file and everything that changes the code: the hash
/// checkpoints carry.
static std::string modelHash(const CompileCommandOptions &options) {
  // The file in pieces (VGG-11's is 515 MB), then the options.
  uint64_t hash = rt::kFnv1aBasis;
  std::ifstream stream(options.model.model, std::ios::binary);
  std::vector<char> piece(1 << 20);
  while (stream.read(piece.data(), piece.size()) || stream.gcount() > 0)
    hash = rt::fnv1a(piece.data(), stream.gcount(), hash);
  std::ostringstream text;
  text << "|batch=" << options.model.batch.value_or(0)
       << "|freeze=" << options.model.freeze
       << "|loss=" << options.training.loss
       << "|optimizer=" << options.training.optimizer
       << "|momentum=" << options.training.momentum
       << "|nesterov=" << options.training.nesterov
       << "|weight_decay=" << options.training.weightDecay
       << "|clip=" << options.training.clipGradNorm << "|amp=" << options.amp
       << "|relu_epilogues=" << options.reluEpilogues
       << "|memory_budget=" << options.memoryBudget << ","
       << options.rematSolver
       << "|loss_scale=" << options.training.initialLossScale << ","
       << options.training.lossScaleGrowthInterval
       << "|target=" << options.target;
  if (options.model.trainBatchNorm) // only then: older hashes stay valid
    text << "|train_batch_norm=1";
  std::string suffix = text.str();
  hash = rt::fnv1a(suffix.data(), suffix.size(), hash);
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(hash));
  return hex;
}

/// The training configuration, as JSON for the manifest. Reals are written
/// so that they read back as the same double: the runtime's default
/// learning rate is this file's (`std::to_string`'s six decimals made
/// `--lr 0.0078125` train at 0.007812 and `--lr 1e-7` at 0).
static std::string trainingJson(mlir::ModuleOp module, const std::string &amp) {
  auto config = module->getAttrOfType<mlir::DictionaryAttr>("graph.training");
  std::function<nlohmann::json(mlir::Attribute)> value =
      [&](mlir::Attribute attr) -> nlohmann::json {
    if (auto text = llvm::dyn_cast<mlir::StringAttr>(attr))
      return text.str();
    if (auto real = llvm::dyn_cast<mlir::FloatAttr>(attr))
      return real.getValueAsDouble();
    if (auto flag = llvm::dyn_cast<mlir::BoolAttr>(attr))
      return flag.getValue();
    if (auto list = llvm::dyn_cast<mlir::ArrayAttr>(attr)) {
      nlohmann::json items = nlohmann::json::array();
      for (mlir::Attribute item : list)
        items.push_back(value(item));
      return items;
    }
    return nullptr;
  };
  nlohmann::json json = {{"amp", amp}};
  if (config)
    for (auto entry : config.getValue())
      json[entry.getName().str()] = value(entry.getValue());
  return json.dump();
}

/// --timing: the generated kernels LLVM spent longest on, on stderr (the
/// timing tree has each part's total; this says which kernels fill it).
static void printKernelTimes(std::vector<KernelCompileTime> times) {
  if (times.empty())
    return;
  auto total = [](const KernelCompileTime &time) {
    return time.optimize + time.codegen;
  };
  double optimize = 0, codegen = 0;
  for (const KernelCompileTime &time : times) {
    optimize += time.optimize;
    codegen += time.codegen;
  }
  std::stable_sort(times.begin(), times.end(),
                   [&](const KernelCompileTime &a, const KernelCompileTime &b) {
                     return total(a) > total(b);
                   });
  constexpr size_t kShown = 15;
  llvm::errs() << llvm::formatv(
      "LLVM's seconds on the generated kernels ({0} kernels: O3's function "
      "passes {1:F2} s, code generation {2:F2} s, CPU time over all compile "
      "threads); the {3} longest:\n",
      times.size(), optimize, codegen, std::min(kShown, times.size()));
  llvm::errs() << "      O3  codegen  kernel (arguments)\n";
  for (size_t i = 0; i < std::min(kShown, times.size()); ++i)
    llvm::errs() << llvm::formatv("  {0,6:F3}   {1,6:F3}  {2} ({3})\n",
                                  times[i].optimize, times[i].codegen,
                                  times[i].kernel, times[i].signature);
}

int runCompileCommand(const CompileCommandOptions &options) {
  // --timing: a tree of wall-clock times, printed on stderr when the
  // command returns (the manager outlives every scope below).
  mlir::DefaultTimingManager timingManager;
  timingManager.setEnabled(options.timing);
  mlir::TimingScope timing = timingManager.getRootScope();
  mlir::MLIRContext context;
  mlir::TimingScope importTiming =
      timing.nest("import (ONNX to graph dialect)");
  auto imported = importModel(context, options.model);
  if (!imported)
    return 1;
  importTiming.stop();
  mlir::ModuleOp module = *imported->module;
  std::string output = options.output;
  if (output.empty())
    output =
        options.emit == "so"
            ? "lib" + llvm::sys::path::stem(options.model.model).str() + ".so"
            : "-";
  // Nothing the command reads is written over, by any name.
  std::vector<std::string> inputs = {options.model.model,
                                     options.runtimeLibrary};
  std::vector<std::string> outputs = {output};
  if (options.emit == "so") {
    std::string stem = llvm::sys::path::stem(output).str();
    std::string name =
        llvm::StringRef(stem).starts_with("lib") ? stem.substr(3) : stem;
    for (const char *suffix : {".h", ".json"}) {
      llvm::SmallString<256> path(llvm::sys::path::parent_path(output));
      llvm::sys::path::append(path, name + suffix);
      outputs.push_back(std::string(path));
    }
  }
  for (const std::string &path : outputs)
    if (std::string error = overwritesInput(path, inputs); !error.empty()) {
      spdlog::error("{}", error);
      return 1;
    }
  if (options.emit == "graph")
    return writeIR(module, output, options.printLocations);
  if (options.profile && options.emit != "so") {
    spdlog::error("--profile runs the compiled library: it needs --emit=so");
    return 1;
  }

  // Pass diagnostics become one "trainc: error:" line each.
  bool failed = false;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error) {
      spdlog::error("{}: {}", options.model.model, d.str());
      failed = true;
    }
    return mlir::success();
  });
  // Generated kernels are scheduled for the target's vector registers.
  llvm::Expected<int64_t> vectorLanes = targetVectorLanes(options.cpu);
  if (!vectorLanes) {
    spdlog::error("{}: --cpu: {}", options.model.model,
                  llvm::toString(vectorLanes.takeError()));
    return 1;
  }
  std::optional<MemoryBudget> budget;
  if (!options.memoryBudget.empty()) {
    std::string error;
    budget = parseMemoryBudget(options.memoryBudget, error);
    if (!budget) {
      spdlog::error("{}", error);
      return 1;
    }
    budget->solver = options.rematSolver;
    budget->scheduleMemory = options.schedule == "memory";
    if (options.tune || options.emit == "train-graph") {
      spdlog::error("--memory-budget plans the kernels' arena: it works "
                    "with --emit so or kernel, without --tune");
      return 1;
    }
  }
  if (options.bucketMiB != 1.0 && !options.training.dataParallel) {
    spdlog::error("--bucket-mib sets the all-reduce buckets of "
                  "--data-parallel, which is not given");
    return 1;
  }
  if (options.tune && options.cpu != "native") {
    spdlog::error("--tune times kernels on this machine: it needs "
                  "--cpu=native, got '{}'",
                  options.cpu);
    return 1;
  }
  // Mixed precision: products in bf16 where the target multiplies in it
  // natively, else f32 (no emulated products, which would be slower than
  // f32; bf16 storage around f32 products is --amp bf16-storage).
  std::string amp = options.amp;
  TrainingPipelineOptions training = options.training;
  bool scalerOptions = training.initialLossScale != 65536.0 ||
                       training.lossScaleGrowthInterval != 2000;
  if (scalerOptions && amp != "fp16") {
    spdlog::error("--initial-loss-scale and --loss-scale-growth-interval "
                  "set the loss scaling of --amp fp16; this is --amp {}",
                  amp);
    return 1;
  }
  // (A GPU's tensor cores multiply bf16: the check is the CPU's.)
  if (amp == "bf16" && options.target != "cuda") {
    llvm::Expected<bool> native = targetHasNativeBf16(options.cpu);
    if (!native) {
      spdlog::error("{}: --cpu: {}", options.model.model,
                    llvm::toString(native.takeError()));
      return 1;
    }
    if (!*native) {
      if (!options.instrument)
        spdlog::warn("--amp bf16: the target CPU ({}) has no native bf16 "
                     "products (AVX512-BF16 or AMX-BF16), so the model "
                     "trains in f32 (--amp bf16-storage stores its "
                     "activations in bf16 around f32 products: a smaller "
                     "arena, but slower on such a CPU)",
                     options.cpu);
      amp = "off";
    }
  }
  // --stats with --amp: the arenas of the same model in f32, for the
  // bytes mixed precision saves (the f32 plan, compiled here too).
  KernelLoweringOptions kernelLowering;
  kernelLowering.reluEpilogues = options.reluEpilogues;
  kernelLowering.blockedWeights = options.weightLayout == "library";
  kernelLowering.scheduleMemory = options.schedule == "memory";
  kernelLowering.reuseBuffers = !options.checkNumerics;
  kernelLowering.bucketBytes =
      static_cast<int64_t>(options.bucketMiB * (1 << 20));
  PrecisionStats precisionStats;
  precisionStats.amp = amp;
  if (options.stats && amp != "off" && options.emit != "train-graph") {
    mlir::OwningOpRef<mlir::ModuleOp> f32 = module.clone();
    mlir::PassManager f32Pipeline(&context);
    buildTrainingPipeline(f32Pipeline, options.training);
    buildKernelPipeline(f32Pipeline, options.dispatch, *vectorLanes,
                        kernelLowering);
    if (mlir::succeeded(f32Pipeline.run(*f32)) && !failed)
      precisionStats.f32Arenas = arenaSizes(*f32);
  }
  std::optional<graph::AmpPassOptions> ampPass;
  if (amp != "off") {
    ampPass.emplace();
    ampPass->precision = amp == "fp16" ? "fp16" : "bf16";
    // Activations stored in bf16, products in f32 on f32 parameters.
    if (amp == "bf16-storage")
      ampPass->products = "f32";
    if (amp == "fp16" && options.checkNumerics) {
      // Loss scaling expects overflows: a step whose scaled gradients are
      // not finite is skipped, not an error.
      spdlog::error("--check-numerics cannot be used with --amp fp16: "
                    "dynamic loss scaling makes infinities on purpose "
                    "(use --amp bf16 or off to find where a NaN starts)");
      return 1;
    }
    if (amp == "fp16") {
      // No CPU library multiplies in f16 (oneDNN 2.6 does not): products
      // read f16-rounded operands and compute in f32; everything else is
      // stored in f16, and the loss is scaled (f16 gradients underflow).
      ampPass->products = "rounded";
      training.lossScaling = "dynamic";
      if (!options.instrument)
        spdlog::warn("--amp fp16: no f16 product kernels on CPU: "
                     "convolutions and products compute in f32 on "
                     "f16-rounded operands (dynamic loss scaling on)");
    }
  }
  // The CUDA target: products on cuBLAS, convolutions on cuDNN, every other
  // launch a generated kernel (GPU kernels from the same loop nests as on
  // the CPU).
  bool cuda = options.target == "cuda";
  kernelLowering.keepWeightCopies = !cuda;
  const std::vector<std::string> &dispatch = options.dispatch;
  if (cuda) {
    // --amp bf16 runs its products and convolutions on tensor cores
    // (cuBLAS, cuDNN); fp16 (loss scaling) and bf16-storage are CPU modes.
    std::string ampFlag = "--amp " + amp;
    const char *unsupported = options.tune            ? "--tune"
                              : options.profile       ? "--profile"
                              : options.reluEpilogues ? "--relu-epilogues"
                              : amp != "off" && amp != "bf16" ? ampFlag.c_str()
                              : options.checkNumerics ? "--check-numerics"
                              : options.training.dataParallel
                                  ? "--data-parallel"
                                  : nullptr;
    if (unsupported) {
      spdlog::error("{} is not built for --target cuda yet", unsupported);
      return 1;
    }
  } else if (options.emit == "ptx") {
    spdlog::error("--emit ptx prints GPU code: it needs --target cuda");
    return 1;
  }
  bool tune = options.tune && options.emit != "train-graph";
  // With --tune, the pipeline stops after dispatch for the measurements.
  mlir::PassManager pm(&context);
  mlir::TimingScope pipelineTiming = timing.nest("MLIR pipeline");
  pm.enableTiming(pipelineTiming);
  buildTrainingPipeline(pm, training, ampPass);
  if (tune)
    buildDispatchPipeline(pm, dispatch, *vectorLanes);
  else if (options.emit != "train-graph" && !budget)
    buildKernelPipeline(pm, dispatch, *vectorLanes, kernelLowering,
                        options.target);
  if (mlir::failed(pm.run(module)) || failed) {
    if (!failed)
      spdlog::error("{}: the training pipeline failed", options.model.model);
    return 1;
  }
  pipelineTiming.stop();
  BudgetReport budgetReport;
  if (budget) {
    std::string error;
    auto lower = [&](mlir::OpPassManager &kernels, bool scheduleMemory) {
      KernelLoweringOptions choices = kernelLowering;
      choices.scheduleMemory = scheduleMemory;
      buildKernelPipeline(kernels, dispatch, *vectorLanes, choices,
                          options.target);
    };
    bool fits = mlir::succeeded(
        lowerWithinBudget(module, *budget, lower, budgetReport, error));
    if (budgetReport.timedOutPlans)
      spdlog::warn("--memory-budget: the integer program stopped at CBC's "
                   "time limit, not its node limit{}: on a slower or "
                   "busier machine the plan (or the smallest arena) may "
                   "differ (docs/TRAINING.md, Rematerialization)",
                   budgetReport.greedyAfterTimeout
                       ? "; plans for lower targets are the greedy's"
                       : "");
    if (!fits || failed) {
      if (!failed)
        spdlog::error("{}: {}", options.model.model, error);
      return 1;
    }
  }
  if (tune) {
    TuneOptions tuning;
    tuning.cachePath =
        options.tuneCache.empty() ? defaultTuneCache() : options.tuneCache;
    tuning.overrides = options.dispatch;
    TuneReport report;
    std::string error;
    if (!tuneDispatch(module, tuning, report, error)) {
      spdlog::error("{}: {}", options.model.model, error);
      return 1;
    }
    // Always said (on stderr: stdout may carry the emitted IR), since
    // timing is what makes --tune slow and its result machine-dependent.
    if (!options.instrument)
      llvm::errs() << llvm::formatv(
          "trainc: --tune: {0} launches with a choice of library, {1} "
          "timings measured, {2} from {3}; {4} launches moved to another "
          "backend\n",
          report.launches, report.measured, report.cached,
          tuning.cachePath.empty() ? "no cache" : tuning.cachePath,
          report.changed);
    mlir::PassManager lowering(&context);
    buildKernelLoweringPipeline(lowering, *vectorLanes, kernelLowering);
    if (mlir::failed(lowering.run(module)) || failed) {
      if (!failed)
        spdlog::error("{}: the kernel pipeline failed", options.model.model);
      return 1;
    }
  }
  if (cuda && amp == "bf16" && !options.instrument) {
    // Measured on an H200 (docs/GPU.md): cuDNN runs NCHW bf16 convolution
    // gradients on legacy kernels without tensor cores, slower than f32.
    int lowConvolutions = 0;
    module.walk([&](kernel::LaunchOp launch) {
      lowConvolutions +=
          launch.getBackend() == "cudnn" &&
          mlir::cast<mlir::MemRefType>(launch.getOutputs()[0].getType())
              .getElementType()
              .isBF16();
    });
    if (lowConvolutions)
      spdlog::warn("--amp bf16 --target cuda: {} convolution launches run on "
                   "cuDNN in NCHW bf16, whose kernels were slower than f32 "
                   "on an H200 (ResNet-18 2.5x slower than in f32; "
                   "docs/GPU.md, Mixed precision): measure both",
                   lowConvolutions);
  }
  if (options.stats) {
    printStats(module, *imported, precisionStats);
    if (budget && budgetReport.attempts == 0 &&
        budgetReport.functionsRecomputed)
      llvm::outs() << llvm::formatv(
          "  --memory-budget {0}: {1} bytes; @train_step's arena fits with "
          "the elementwise functions and parameter copies the backward pass "
          "reads recomputed in it: {2} bytes ({3} without)\n",
          options.memoryBudget, budgetReport.budget, budgetReport.arena,
          budgetReport.unconstrained);
    else if (budget && budgetReport.attempts == 0)
      llvm::outs() << llvm::formatv(
          "  --memory-budget {0}: {1} bytes; @train_step's arena fits "
          "without recomputation ({2} bytes)\n",
          options.memoryBudget, budgetReport.budget, budgetReport.arena);
    else if (budget)
      llvm::outs() << llvm::formatv(
          "  --memory-budget {0}: {1} bytes; @train_step arena {2} bytes "
          "without recomputation, {11} bytes with the elementwise functions "
          "and parameter copies recomputed, {3} bytes planned ({4} "
          "lowerings); "
          "@gradients' live-bytes peak {5} -> {6}; {7} ops recomputed, "
          "{8:F1} MFLOP per step (--remat-solver {9}: {10})\n",
          options.memoryBudget, budgetReport.budget, budgetReport.unconstrained,
          budgetReport.arena, budgetReport.attempts + 1,
          budgetReport.graphPeakBefore, budgetReport.graphPeakAfter,
          budgetReport.recomputedOps, budgetReport.recomputedFlops / 1e6,
          options.rematSolver, budgetReport.solver, budgetReport.withFunctions);
  }
  CodegenOptions codegen;
  codegen.cpu = options.cpu;
  codegen.compileThreads = options.compileThreads;
  codegen.target = options.target;
  codegen.gpuArchs = options.gpuArchs;
  codegen.cudaPath = options.cudaPath;
  codegen.dataParallel = options.training.dataParallel;
  if (options.emit == "ptx") {
    auto ptx = emitGpuPtx(module, codegen, options.gpuArchs.front());
    if (!ptx) {
      spdlog::error("{}: {}", options.model.model,
                    llvm::toString(ptx.takeError()));
      return 1;
    }
    std::string error = writeFileAtomically(output, *ptx);
    if (!error.empty()) {
      spdlog::error("{}", error);
      return 1;
    }
    return 0;
  }
  if (options.emit != "so")
    return writeIR(module, output, options.printLocations);

  if (!llvm::StringRef(output).ends_with(".so")) {
    spdlog::error("--emit=so writes a shared object: -o must end in .so, got "
                  "'{}'",
                  output);
    return 1;
  }
  codegen.runtimeLibrary =
      !options.runtimeLibrary.empty() ? options.runtimeLibrary
      : cuda ? defaultRuntimeLibrary(programPath, "libtrainc_rt_cuda.a")
             : defaultRuntimeLibrary(programPath);
  codegen.modelHash = modelHash(options);
  std::string stem = llvm::sys::path::stem(output).str();
  codegen.modelName =
      llvm::StringRef(stem).starts_with("lib") ? stem.substr(3) : stem;
  codegen.trainingJson = trainingJson(module, amp);
  codegen.profile = options.instrument;
  codegen.checkNumerics = options.checkNumerics;
  mlir::TimingScope codegenTiming = timing.nest("code generation");
  codegen.timing = &codegenTiming;
  // What trainc_export_onnx writes: the ONNX graph, with the session's
  // parameters and state as initializers.
  std::set<std::string> trained;
  for (auto function : module.getOps<mlir::func::FuncOp>())
    for (unsigned i = 0; i < function.getNumArguments(); ++i) {
      auto role = function.getArgAttrOfType<mlir::StringAttr>(i, "graph.role");
      auto name = function.getArgAttrOfType<mlir::StringAttr>(i, "graph.name");
      if (role && name &&
          (role.getValue() == "parameter" || role.getValue() == "state"))
        trained.insert(name.str());
    }
  std::string skeletonError;
  auto skeleton =
      inferenceModelSkeleton(options.model.model, trained, skeletonError);
  if (!skeleton) {
    spdlog::error("{}", skeletonError);
    return 1;
  }
  codegen.inferenceModel = std::move(*skeleton);
  codegen.exportedInitializers.assign(trained.begin(), trained.end());
  auto library = emitModelLibrary(module, imported->weights, codegen, output);
  if (!library) {
    spdlog::error("{}: {}", options.model.model,
                  llvm::toString(library.takeError()));
    return 1;
  }
  codegenTiming.stop();
  printKernelTimes(std::move(library->kernelTimes));
  // What compiles killed before their rename left beside the library.
  rt::removeStaleTemporaries(output);
  llvm::SmallString<256> directory(llvm::sys::path::parent_path(output));
  auto sibling = [&](const std::string &suffix) {
    llvm::SmallString<256> path(directory);
    llvm::sys::path::append(path, codegen.modelName + suffix);
    return std::string(path);
  };
  for (auto [path, text] :
       {std::make_pair(sibling(".h"), library->header),
        std::make_pair(sibling(".json"), library->manifestJson)}) {
    std::string error = writeFileAtomically(path, text + "\n");
    if (!error.empty()) {
      spdlog::error("{}", error);
      return 1;
    }
  }
  if (options.instrument)
    return 0; // a private copy for --profile
  spdlog::info("wrote {} ({}.h, {}.json)", output, codegen.modelName,
               codegen.modelName);
  return options.profile ? runProfile(options) : 0;
}

} // namespace trainc::cli
