//===- GeneratedKernelHarness.cpp - run a generated kernel, JIT -----------===//
#include "GeneratedKernelHarness.h"

#include "dialects/kernel/KernelOps.h"
#include "dialects/loop/LoopOps.h"
#include "dialects/loop/Transforms/LoopToLLVM.h"
#include "lib/Conversion/Passes.h"
#include "trainc/Codegen.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/TargetSelect.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

using namespace trainc;

namespace trainc::rttest {
namespace {

std::string memrefType(DType dtype, const Shape &shape) {
  std::string text = "memref<";
  for (int64_t dim : shape)
    text += std::to_string(dim) + "x";
  return text + dtypeName(dtype).str() + ">";
}

/// The case as one launch of the generated backend.
std::string kernelModule(const OpCase &c) {
  std::string arguments, inputs, outputs, inputTypes, outputTypes, options;
  size_t index = 0;
  auto argument = [&](DType dtype, const Shape &shape, std::string &names,
                      std::string &types) {
    std::string type = memrefType(dtype, shape);
    std::string name = "%b" + std::to_string(index++);
    arguments += (arguments.empty() ? "" : ", ") + name + ": " + type;
    names += (names.empty() ? "" : ", ") + name;
    types += (types.empty() ? "" : ", ") + type;
  };
  for (const HostTensor &input : c.inputs)
    argument(input.dtype, input.shape, inputs, inputTypes);
  for (const Result &result : c.results)
    argument(result.dtype, result.shape, outputs, outputTypes);
  for (const Attr &attribute : c.attributes)
    options += (options.empty() ? "" : ", ") + attribute.mlir;
  return "func.func @main(" + arguments + ") {\n  kernel.launch \"" + c.op +
         "\"(" + inputs + ") -> (" + outputs +
         ") {backend = \"generated\", options = {" + options + "}} : (" +
         inputTypes + ") -> (" + outputTypes + ")\n  return\n}\n";
}

mlir::MLIRContext &context() {
  static mlir::MLIRContext *created = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    mlir::DialectRegistry registry;
    registry.insert<mlir::func::FuncDialect, kernel::KernelDialect,
                    loop::LoopDialect>();
    loop::registerLoopLoweringInterfaces(registry);
    auto *context = new mlir::MLIRContext(registry);
    context->loadAllAvailableDialects();
    return context;
  }();
  return *created;
}

/// The most buffers (inputs, outputs, scratch and its views) a case's
/// kernel may take: a batch norm gradient over small planes takes 30.
constexpr size_t kMaxBuffers = 32;

/// Calls `nest(begin, end, buffers...)` for up to kMaxBuffers buffers.
void callNest(void *address, int64_t begin, int64_t end,
              std::vector<void *> &b) {
  b.resize(kMaxBuffers, nullptr);
  using P = void *;
  using F = void (*)(int64_t, int64_t, P, P, P, P, P, P, P, P, P, P, P, P, P, P,
                     P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P);
  reinterpret_cast<F>(address)(begin, end, b[0], b[1], b[2], b[3], b[4], b[5],
                               b[6], b[7], b[8], b[9], b[10], b[11], b[12],
                               b[13], b[14], b[15], b[16], b[17], b[18], b[19],
                               b[20], b[21], b[22], b[23], b[24], b[25], b[26],
                               b[27], b[28], b[29], b[30], b[31]);
}

/// The CPU the kernels are scheduled and optimized for before they run on
/// the host: "native", as `trainc compile` by default, or
/// $TRAINC_TEST_CPU (say znver3 on an AVX-512 host, to run the AVX2
/// schedules; code generation stays the host's).
const std::string &testCpu() {
  static const std::string cpu = [] {
    const char *name = std::getenv("TRAINC_TEST_CPU");
    return std::string(name && *name ? name : "native");
  }();
  return cpu;
}

/// f32 lanes of that CPU's vector registers.
int64_t hostVectorLanes() {
  static int64_t lanes = llvm::cantFail(targetVectorLanes(testCpu()));
  return lanes;
}

/// The case's launch lowered to loop nests for vectors of `lanes` f32.
struct LoweredCase {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  kernel::LaunchOp launch;
  mlir::func::FuncOp kernelFunction;
};

LoweredCase lowerCase(const OpCase &c, int64_t lanes) {
  LoweredCase lowered;
  lowered.module =
      mlir::parseSourceString<mlir::ModuleOp>(kernelModule(c), &context());
  REQUIRE(lowered.module);
  mlir::PassManager pm(&context());
  conversion::KernelToLoopPassOptions options;
  options.vectorLanes = lanes;
  pm.addPass(conversion::createKernelToLoopPass(options));
  REQUIRE(mlir::succeeded(pm.run(*lowered.module)));
  lowered.module->walk([&](kernel::LaunchOp op) { lowered.launch = op; });
  REQUIRE(lowered.launch.getCallee());
  lowered.kernelFunction = lowered.module->lookupSymbol<mlir::func::FuncOp>(
      *lowered.launch.getCallee());
  return lowered;
}

/// The kernel function alone, as lib/Codegen compiles it.
mlir::OwningOpRef<mlir::ModuleOp> kernelsOf(LoweredCase &lowered) {
  auto kernels = mlir::ModuleOp::create(mlir::UnknownLoc::get(&context()));
  kernels.push_back(lowered.kernelFunction.clone());
  return kernels;
}

/// The case's kernel also compiles in seconds for `cpu`, as `trainc
/// compile --cpu CPU` would compile it (scheduled for that CPU's vectors,
/// LLVM's O3 and code generation for it). LLVM's x86 instruction selection
/// without AVX-512 once took minutes on one generated kernel
/// (docs/PERFORMANCE.md, "Compile time on AVX2").
void checkCompilesQuickly(const OpCase &c, const std::string &cpu) {
  LoweredCase lowered = lowerCase(c, llvm::cantFail(targetVectorLanes(cpu)));
  mlir::OwningOpRef<mlir::ModuleOp> kernels = kernelsOf(lowered);
  auto object = compileLoopKernels(*kernels, cpu);
  if (!object)
    FAIL(llvm::toString(object.takeError()));
  INFO("compiling for " << cpu << " (CPU time): O3 " << object->optimizeSeconds
                        << " s, code generation " << object->codegenSeconds
                        << " s");
  CHECK(object->optimizeSeconds + object->codegenSeconds <
        kMaxKernelCompileSeconds);
}

} // namespace

/// Compiles and runs the case.
GeneratedRun runGenerated(const OpCase &c) {
  INFO(kernelModule(c));
  // Every kernel compiles quickly for AVX2 (and AVX-512, on a host
  // without it) whatever the host, besides running on the host.
  checkCompilesQuickly(c, "znver3");
  if (hostVectorLanes() < 16)
    checkCompilesQuickly(c, "znver4");
  LoweredCase lowered = lowerCase(c, hostVectorLanes());
  kernel::LaunchOp launch = lowered.launch;
  mlir::func::FuncOp kernelFunction = lowered.kernelFunction;

  // The buffers: inputs, outputs, then the launch's scratch.
  std::vector<std::vector<unsigned char>> storage;
  for (const HostTensor &input : c.inputs)
    storage.push_back(toBytes(input));
  for (mlir::Value buffer :
       llvm::concat<mlir::Value>(launch.getOutputs(), launch.getScratch())) {
    auto type = mlir::cast<mlir::MemRefType>(buffer.getType());
    int64_t bytes = std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
    // Garbage, not zeros: kernels must initialize what they accumulate.
    storage.emplace_back(type.getNumElements() * bytes, 0x7f);
  }
  REQUIRE(storage.size() <= kMaxBuffers);
  std::vector<void *> pointers;
  for (auto &bytes : storage)
    pointers.push_back(bytes.data());
  // A scratch view (KernelBuilder::scratchView) is the same memory as the
  // scratch buffer it views.
  std::vector<mlir::Value> buffers(launch.getInputs().begin(),
                                   launch.getInputs().end());
  llvm::append_range(buffers, launch.getOutputs());
  llvm::append_range(buffers, launch.getScratch());
  for (auto [i, buffer] : llvm::enumerate(buffers))
    if (auto view = buffer.getDefiningOp<kernel::ViewOp>())
      pointers[i] =
          pointers[llvm::find(buffers, view.getSource()) - buffers.begin()];
  std::vector<int64_t> blocks;
  for (loop::NestOp nest : kernelFunction.getBody().getOps<loop::NestOp>())
    blocks.push_back(nest.getNumBlocks());

  // Only the loop kernels are compiled, as in lib/Codegen.
  mlir::OwningOpRef<mlir::ModuleOp> kernels = kernelsOf(lowered);
  std::string name = kernelFunction.getSymName().str();
  std::string translateError;
  mlir::ExecutionEngineOptions options;
  // The options hold function_refs: the callables must outlive create().
  auto buildModule =
      [&](mlir::Operation *op,
          llvm::LLVMContext &llvmContext) -> std::unique_ptr<llvm::Module> {
    loop::LoopTarget target;
    target.nativeBf16 = llvm::cantFail(targetConvertsBf16(testCpu()));
    auto translated = loop::translateLoopKernels(mlir::cast<mlir::ModuleOp>(op),
                                                 llvmContext, target);
    if (!translated) {
      // An empty module, not null (which the engine would dereference):
      // the lookups below then fail with this message.
      translateError = llvm::toString(translated.takeError());
      return std::make_unique<llvm::Module>("failed", llvmContext);
    }
    return std::move(*translated);
  };
  options.llvmModuleBuilder = buildModule;
  // LLVM's O3 for the host, as `trainc compile` optimizes: without the
  // target's cost models, O3 unrolls masked vector loops completely.
  auto optimizeModule = [](llvm::Module *module) {
    return optimizeForCpu(*module, testCpu());
  };
  options.transformer = optimizeModule;
  auto engine = mlir::ExecutionEngine::create(*kernels, options);
  if (!engine)
    FAIL(llvm::toString(engine.takeError()) << "\n" << translateError);
  for (size_t i = 0; i < blocks.size(); ++i) {
    auto address = (*engine)->lookup(loop::nestFunctionName(name, i));
    if (!address)
      FAIL(llvm::toString(address.takeError()) << "\n" << translateError);
    if (blocks[i] > 1) {
      int64_t split = blocks[i] / 3 + 1; // two uneven "threads"
      callNest(*address, 0, split, pointers);
      callNest(*address, split, blocks[i], pointers);
    } else {
      callNest(*address, 0, 1, pointers);
    }
    pointers.resize(storage.size());
  }
  GeneratedRun run;
  for (size_t i = 0; i < c.results.size(); ++i)
    run.outputs.push_back(fromBytes(c.results[i].dtype, c.results[i].shape,
                                    storage[c.inputs.size() + i].data()));
  if (auto check = kernelFunction->getAttrOfType<loop::CheckAttr>(
          loop::kCheckAttrName)) {
    int64_t status;
    std::memcpy(&status, storage[check.getStatus()].data(), sizeof(status));
    if (status != 0) {
      std::string message = check.getMessage().str();
      message.replace(message.find("{}"), 2, std::to_string(status));
      run.checkFailure = message;
    }
  }
  return run;
}

/// The generated kernel agrees with the interpreter.
void checkGenerated(const OpCase &c, double tolerance, double absolute) {
  std::vector<HostTensor> expected = interpretCase(c);
  GeneratedRun run = runGenerated(c);
  INFO(kernelModule(c));
  REQUIRE(run.checkFailure == std::nullopt);
  const std::vector<HostTensor> &actual = run.outputs;
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("output " << i);
    checkClose(actual[i], expected[i], tolerance, absolute);
  }
  ++comparedCases();
}

/// The generated kernel gives the interpreter's values exactly, and the
/// same signs of zero.
void checkGeneratedBits(const OpCase &c) {
  std::vector<HostTensor> expected = interpretCase(c);
  GeneratedRun run = runGenerated(c);
  REQUIRE(run.checkFailure == std::nullopt);
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("output " << i);
    checkClose(run.outputs[i], expected[i], 0.0);
    int64_t signs = 0;
    for (size_t j = 0; j < expected[i].data.size(); ++j)
      signs += std::signbit(run.outputs[i].data[j]) !=
               std::signbit(expected[i].data[j]);
    CHECK(signs == 0);
  }
  ++comparedCases();
}

const std::vector<Shape> kShapes = {
    {}, {1}, {7}, {64}, {1000}, {3, 5}, {1, 37}, {17, 1}, {64, 784},
    {2, 3, 4, 5}, {300, 257}};

const std::vector<std::pair<Shape, Shape>> kBroadcastShapes = {
    {{2, 3, 4}, {4}},   {{2, 1, 4}, {3, 1}},     {{}, {2, 3}},
    {{5, 1}, {1, 6}},   {{3, 1, 2, 1}, {1, 4, 1, 5}},
    {{64, 1024}, {1024}}, {{64, 1, 33}, {64, 40, 1}}, {{256, 300}, {256, 1}}};

} // namespace trainc::rttest
