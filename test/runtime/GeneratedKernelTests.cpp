//===- GeneratedKernelTests.cpp - generated kernels vs the interpreter ----===//
//
// Each case is one kernel.launch of the `generated` backend, taken through
// the production path (--trainc-kernel-to-loop, then LoopToLLVM's
// translateLoopKernels and LLVM O3), JIT-compiled, and run nest by nest.
// Every parallel nest is also run as two separate runs of blocks, as two
// threads would, to check that blocks are independent. The results are
// compared with the reference interpreter on shapes chosen to hit tails,
// broadcasting, unit dimensions, every reduction axis and transposes.
//
//===----------------------------------------------------------------------===//
#include "RuntimeTestSupport.h"
#include "WindowCases.h"

#include "dialects/kernel/KernelOps.h"
#include "dialects/loop/LoopOps.h"
#include "dialects/loop/Transforms/LoopToLLVM.h"
#include "lib/Conversion/Passes.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/TargetSelect.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>

using namespace trainc;
using namespace trainc::rttest;

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

/// Calls `nest(begin, end, buffers...)` for up to 12 buffers.
void callNest(void *address, int64_t begin, int64_t end,
              std::vector<void *> &b) {
  b.resize(12, nullptr);
  using F = void (*)(int64_t, int64_t, void *, void *, void *, void *, void *,
                     void *, void *, void *, void *, void *, void *, void *);
  reinterpret_cast<F>(address)(begin, end, b[0], b[1], b[2], b[3], b[4], b[5],
                               b[6], b[7], b[8], b[9], b[10], b[11]);
}

/// What a generated kernel computed.
struct GeneratedRun {
  std::vector<HostTensor> outputs;
  /// With a loop.check: the message the caller would report, if any.
  std::optional<std::string> checkFailure;
};

/// Compiles and runs the case.
GeneratedRun runGenerated(const OpCase &c) {
  INFO(kernelModule(c));
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(kernelModule(c), &context());
  REQUIRE(module);
  mlir::PassManager pm(&context());
  pm.addPass(conversion::createKernelToLoopPass());
  REQUIRE(mlir::succeeded(pm.run(*module)));

  // The buffers: inputs, outputs, then the launch's scratch.
  kernel::LaunchOp launch;
  module->walk([&](kernel::LaunchOp op) { launch = op; });
  REQUIRE(launch.getCallee());
  auto kernelFunction =
      module->lookupSymbol<mlir::func::FuncOp>(*launch.getCallee());
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
  REQUIRE(storage.size() <= 12);
  std::vector<void *> pointers;
  for (auto &bytes : storage)
    pointers.push_back(bytes.data());
  std::vector<int64_t> blocks;
  for (loop::NestOp nest : kernelFunction.getBody().getOps<loop::NestOp>())
    blocks.push_back(nest.getNumBlocks());

  // Only the loop kernels are compiled, as in lib/Codegen.
  auto kernels = mlir::ModuleOp::create(mlir::UnknownLoc::get(&context()));
  mlir::OwningOpRef<mlir::ModuleOp> owner(kernels);
  kernels.push_back(kernelFunction.clone());
  std::string name = kernelFunction.getSymName().str();
  std::string translateError;
  mlir::ExecutionEngineOptions options;
  options.llvmModuleBuilder = [&](mlir::Operation *op,
                                  llvm::LLVMContext &llvmContext) {
    auto translated = loop::translateLoopKernels(
        mlir::cast<mlir::ModuleOp>(op), llvmContext);
    if (!translated) {
      translateError = llvm::toString(translated.takeError());
      return std::unique_ptr<llvm::Module>();
    }
    return std::move(*translated);
  };
  auto transformer = mlir::makeOptimizingTransformer(3, 0, nullptr);
  options.transformer = transformer;
  auto engine = mlir::ExecutionEngine::create(kernels, options);
  if (!engine)
    FAIL(llvm::toString(engine.takeError()) << "\n" << translateError);
  for (size_t i = 0; i < blocks.size(); ++i) {
    auto address = (*engine)->lookup(loop::nestFunctionName(name, i));
    if (!address)
      FAIL(llvm::toString(address.takeError()));
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
void checkGenerated(const OpCase &c, double tolerance = 2e-6,
                    double absolute = 0.0) {
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

} // namespace

TEST_CASE("generated unary kernels match the interpreter", "[generated]") {
  for (const Shape &shape : kShapes) {
    HostTensor any = randomTensor(DType::F32, shape, -4.0, 4.0);
    HostTensor positive = randomTensor(DType::F32, shape, 0.05, 6.0);
    for (const char *op : {"neg", "abs", "relu", "sigmoid", "tanh", "erf",
                           "exp", "identity"})
      checkGenerated({std::string("graph.") + op, {any}, {{DType::F32, shape}}});
    for (const char *op : {"sqrt", "log", "reciprocal"})
      checkGenerated(
          {std::string("graph.") + op, {positive}, {{DType::F32, shape}}});
    checkGenerated({"graph.leaky_relu", {any}, {{DType::F32, shape}},
                    {real("alpha", 0.2)}});
    checkGenerated({"graph.gelu", {any}, {{DType::F32, shape}}});
    checkGenerated({"graph.gelu", {any}, {{DType::F32, shape}},
                    {flag("tanh_approximation", true)}});
    checkGenerated({"graph.clip", {any}, {{DType::F32, shape}},
                    {real("min", -1.5), real("max", 0.5)}});
  }
}

TEST_CASE("generated casts are exact", "[generated]") {
  const DType types[] = {DType::F32, DType::F64, DType::I64, DType::I32,
                         DType::I1};
  for (const Shape &shape : {Shape{}, Shape{7}, Shape{64, 33}}) {
    for (DType from : types) {
      bool isFloat = from == DType::F32 || from == DType::F64;
      // Floats with zeros, halves and values past f32's integer range;
      // integers past 2^24 (their f32 rounding goes through double).
      int64_t bound = from == DType::I1    ? 1
                      : from == DType::I32 ? int64_t(1) << 30
                                           : int64_t(1) << 40;
      HostTensor input = isFloat ? randomTensor(from, shape, -3.0, 3.0)
                                 : randomIntegers(from, shape,
                                                  from == DType::I1 ? 0 : -bound,
                                                  bound);
      if (isFloat && !input.data.empty())
        input.data[0] = 0.0;
      for (DType to : types) {
        bool isInteger = to == DType::I64 || to == DType::I32;
        if (isFloat && isInteger)
          continue; // not generated
        checkGenerated({"graph.cast", {input}, {{to, shape}}, {type("to", to)}},
                       0.0);
      }
    }
  }
}

TEST_CASE("generated binary kernels broadcast like the interpreter",
          "[generated]") {
  for (const auto &[a, b] : kBroadcastShapes) {
    for (const auto &[x, y] : {std::pair(a, b), std::pair(b, a)}) {
      HostTensor lhs = randomTensor(DType::F32, x, -3.0, 3.0);
      HostTensor rhs = randomTensor(DType::F32, y, 0.5, 3.0);
      Shape out = broadcastShape(x, y);
      for (const char *op : {"add", "sub", "mul", "div"})
        checkGenerated({std::string("graph.") + op, {lhs, rhs},
                        {{DType::F32, out}}});
      for (const char *op : {"less", "greater", "equal", "less_equal",
                             "greater_equal"})
        checkGenerated(
            {std::string("graph.") + op, {lhs, rhs}, {{DType::I1, out}}});
      HostTensor mask = randomIntegers(DType::I1, x, 0, 1);
      checkGenerated({"graph.where", {mask, lhs, rhs}, {{DType::F32, out}}});
    }
  }
  // Comparisons of equal values: equal and the non-strict ones hold.
  HostTensor same = randomTensor(DType::F32, {33, 7});
  checkGenerated({"graph.equal", {same, same}, {{DType::I1, {33, 7}}}});
}

TEST_CASE("generated reductions match the interpreter on every axis set",
          "[generated]") {
  const std::vector<std::pair<Shape, std::vector<Shape>>> cases = {
      {{7}, {{0}}},
      {{64, 10}, {{0}, {1}, {0, 1}}},
      {{1, 300}, {{0}, {1}}},
      {{3, 4, 5}, {{0}, {1}, {2}, {0, 2}, {1, 2}, {0, 1, 2}}},
      {{2, 3, 1, 33}, {{3}, {0, 1}, {2}, {1, 3}}},
      {{128, 1000}, {{0}, {1}}}};
  for (const auto &[shape, axesList] : cases) {
    HostTensor x = randomTensor(DType::F32, shape, -2.0, 2.0);
    for (const Shape &axes : axesList) {
      for (bool keepdims : {true, false}) {
        Shape out;
        for (size_t d = 0; d < shape.size(); ++d) {
          bool reduced = std::find(axes.begin(), axes.end(), int64_t(d)) !=
                         axes.end();
          if (!reduced)
            out.push_back(shape[d]);
          else if (keepdims)
            out.push_back(1);
        }
        for (const char *op : {"reduce_sum", "reduce_mean", "reduce_max"})
          checkGenerated({std::string("graph.") + op, {x}, {{DType::F32, out}},
                          {ints("axes", axes), flag("keepdims", keepdims)}},
                         1e-5);
      }
    }
  }
}

TEST_CASE("generated softmax and log_softmax match on every axis",
          "[generated]") {
  for (const Shape &shape :
       {Shape{10}, Shape{64, 10}, Shape{3, 1, 7}, Shape{2, 4, 64, 64},
        Shape{5, 130}}) {
    HostTensor x = randomTensor(DType::F32, shape, -6.0, 6.0);
    for (int64_t axis = 0; axis < static_cast<int64_t>(shape.size()); ++axis)
      for (const char *op : {"softmax", "log_softmax"})
        checkGenerated({std::string("graph.") + op, {x}, {{DType::F32, shape}},
                        {integer("axis", axis)}},
                       1e-5);
  }
}

TEST_CASE("generated layer_norm and its gradient match the interpreter", "[generated]") {
  for (const auto &[shape, axis] :
       {std::pair(Shape{16, 64, 128}, int64_t(2)), std::pair(Shape{3, 5, 7}, int64_t(1)),
        std::pair(Shape{3, 5, 7}, int64_t(2)), std::pair(Shape{4, 1}, int64_t(1)),
        std::pair(Shape{2, 1, 300}, int64_t(0)), std::pair(Shape{100}, int64_t(0))}) {
    HostTensor x = randomTensor(DType::F32, shape, -3.0, 5.0);
    Shape normalized(shape.begin() + axis, shape.end());
    HostTensor scale = randomTensor(DType::F32, normalized, 0.5, 1.5);
    HostTensor bias = randomTensor(DType::F32, normalized);
    std::vector<Attr> attributes = {integer("axis", axis), real("epsilon", 1e-5)};
    checkGenerated({"graph.layer_norm", {x, scale, bias}, {{DType::F32, shape}},
                    attributes},
                   1e-5);
    checkGenerated({"graph.layer_norm", {x, scale}, {{DType::F32, shape}},
                    attributes},
                   1e-5);
    HostTensor dy = randomTensor(DType::F32, shape);
    checkGenerated({"graph.layer_norm_backward",
                    {dy, x, scale},
                    {{DType::F32, shape},
                     {DType::F32, normalized},
                     {DType::F32, normalized}},
                    attributes},
                   1e-5);
  }
}

// Shapes: no spatial dims, 1 and 3 spatial dims, a batch of 1, one
// channel, unit spatial dims, spatial sizes that are no multiple of the
// vector width, and ResNet-sized ones whose nests are split over channels
// (sums) and over the batch (the data passes).
// Tolerance 1e-5: the generated sums accumulate in f32 (a tree per vector
// tile, then tile after tile), the interpreter's in double. The worst seen
// is 1.9e-6 (a scale gradient over 256 rows of 200 channels).
TEST_CASE("generated batch norm and its gradient match the interpreter",
          "[generated]") {
  for (const Shape &shape :
       {Shape{6, 3}, Shape{256, 200}, Shape{4, 5, 7}, Shape{3, 6, 1, 37},
        Shape{1, 3, 5, 5}, Shape{8, 1, 9, 9}, Shape{5, 4, 1, 1},
        Shape{16, 40, 13, 13}, Shape{32, 64, 16, 16},
        Shape{2, 3, 15, 15, 15}}) {
    int64_t c = shape[1];
    HostTensor x = randomTensor(DType::F32, shape, -2.0, 3.0);
    HostTensor scale = randomTensor(DType::F32, {c}, 0.5, 1.5);
    HostTensor bias = randomTensor(DType::F32, {c});
    HostTensor mean = randomTensor(DType::F32, {c});
    HostTensor var = randomTensor(DType::F32, {c}, 0.5, 2.0);
    Result tensorResult{DType::F32, shape}, channelResult{DType::F32, {c}};
    checkGenerated({"graph.batch_norm_training",
                    {x, scale, bias, mean, var},
                    {tensorResult, channelResult, channelResult},
                    {real("epsilon", 1e-5), real("momentum", 0.9)}},
                   1e-5);
    checkGenerated({"graph.batch_norm_inference",
                    {x, scale, bias, mean, var},
                    {tensorResult},
                    {real("epsilon", 1e-3)}},
                   1e-5);
    checkGenerated({"graph.batch_norm_training_backward",
                    {randomTensor(DType::F32, shape), x, scale},
                    {tensorResult, channelResult, channelResult},
                    {real("epsilon", 1e-5)}},
                   1e-5);
  }
}

TEST_CASE("generated data movement is exact", "[generated]") {
  HostTensor x = randomTensor(DType::F32, {4, 5, 6});
  checkGenerated({"graph.reshape", {x}, {{DType::F32, {20, 6}}},
                  {ints("shape", {20, 6})}},
                 0.0);
  for (const Shape &perm :
       {Shape{0, 1, 2}, Shape{2, 1, 0}, Shape{1, 0, 2}, Shape{0, 2, 1},
        Shape{2, 0, 1}}) {
    Shape out = {x.shape[perm[0]], x.shape[perm[1]], x.shape[perm[2]]};
    checkGenerated({"graph.transpose", {x}, {{DType::F32, out}},
                    {ints("perm", perm)}},
                   0.0);
  }
  HostTensor big = randomTensor(DType::F32, {128, 384});
  checkGenerated({"graph.transpose", {big}, {{DType::F32, {384, 128}}},
                  {ints("perm", {1, 0})}},
                 0.0);
  HostTensor row = randomTensor(DType::F32, {1, 7});
  checkGenerated({"graph.expand", {row}, {{DType::F32, {5, 7}}},
                  {ints("shape", {5, 7})}},
                 0.0);
  HostTensor mask = randomIntegers(DType::I1, {3, 9}, 0, 1);
  checkGenerated({"graph.identity", {mask}, {{DType::I1, {3, 9}}}}, 0.0);
}

TEST_CASE("generated sgd_update is bit-identical to the interpreter",
          "[generated]") {
  for (int64_t count : {int64_t(1), int64_t(100), int64_t(200704)}) {
    HostTensor param = randomTensor(DType::F32, {count});
    HostTensor grad = randomTensor(DType::F32, {count});
    HostTensor buffer = randomTensor(DType::F32, {count});
    HostTensor rate = tensor(DType::F32, {}, {0.05});
    for (int64_t step : {int64_t(0), int64_t(3)}) {
      HostTensor stepTensor = tensor(DType::I64, {}, {double(step)});
      checkGenerated({"graph.sgd_update",
                      {param, grad, rate, stepTensor},
                      {{DType::F32, {count}}},
                      {real("weight_decay", 0.01)}},
                     0.0);
      for (bool nesterov : {false, true})
        checkGenerated({"graph.sgd_update",
                        {param, grad, rate, stepTensor, buffer},
                        {{DType::F32, {count}}, {DType::F32, {count}}},
                        {real("momentum", 0.9), real("dampening", 0.1),
                         flag("nesterov", nesterov),
                         real("weight_decay", 0.001)}},
                       0.0);
    }
  }
}

TEST_CASE("generated adam_update is bit-identical to the interpreter",
          "[generated]") {
  for (int64_t count : {int64_t(1), int64_t(1000), int64_t(100000)}) {
    HostTensor param = randomTensor(DType::F32, {count});
    HostTensor grad = randomTensor(DType::F32, {count});
    HostTensor m = randomTensor(DType::F32, {count}, -0.1, 0.1);
    HostTensor v = randomTensor(DType::F32, {count}, 0.0, 0.01);
    HostTensor rate = tensor(DType::F32, {}, {0.001});
    for (int64_t step : {int64_t(0), int64_t(7)})
      for (bool decoupled : {false, true})
        for (bool onnx : {false, true})
          checkGenerated({"graph.adam_update",
                          {param, grad, m, v, rate,
                           tensor(DType::I64, {}, {double(step)})},
                          {{DType::F32, {count}},
                           {DType::F32, {count}},
                           {DType::F32, {count}}},
                          {real("weight_decay", 0.01),
                           flag("decoupled", decoupled),
                           flag("onnx_convention", onnx)}},
                         0.0);
  }
}

TEST_CASE("generated adagrad_update is bit-identical to the interpreter",
          "[generated]") {
  for (int64_t count : {int64_t(1), int64_t(1000), int64_t(100000)}) {
    HostTensor param = randomTensor(DType::F32, {count});
    HostTensor grad = randomTensor(DType::F32, {count});
    HostTensor sum = randomTensor(DType::F32, {count}, 0.0, 0.1);
    HostTensor rate = tensor(DType::F32, {}, {0.01});
    for (int64_t step : {int64_t(0), int64_t(7)})
      for (double decay : {0.0, 0.01})
        checkGenerated({"graph.adagrad_update",
                        {param, grad, sum, rate,
                         tensor(DType::I64, {}, {double(step)})},
                        {{DType::F32, {count}}, {DType::F32, {count}}},
                        {real("weight_decay", decay), real("lr_decay", decay),
                         real("epsilon", 1e-10)}},
                       0.0);
  }
}

// Losses sum in f32 in the schedule's order and use the polynomial exp and
// log; the interpreter sums in double. The class losses below (at most a few
// thousand terms per sum) agree within 2e-6 relative; 1e-5, as for the
// reductions above, leaves margin and still catches a wrong or missing term.
// Except where the prediction is confident (2 classes, logits 12 apart):
// the loss log(1 + e^-12) and the gradient p - 1 are differences of numbers
// near 1, which f32 (here as in PyTorch) knows to an ulp of 1. Softmax
// cross-entropy is therefore also allowed a few ulps of 1 times the
// incoming gradient (at most 2) in absolute terms: far below any wrong or
// missing term (of the order of g/N).
constexpr double kNearOneUlps = 4 * 2 * 1.1920929e-7;
TEST_CASE("generated class losses and their gradients match the interpreter",
          "[generated]") {
  // Classes 1 (the class dimension dropped), 2, 10 and 1000; a batch of 1
  // and odd ones; spatial dims (with a unit one); the 33x1000 and 64x1000
  // nests are split across threads.
  for (const Shape &shape :
       {Shape{5, 1}, Shape{7, 2}, Shape{1, 10}, Shape{64, 10}, Shape{33, 1000},
        Shape{64, 1000}, Shape{3, 10, 4, 5}, Shape{2, 3, 1, 7},
        Shape{1, 4, 9}}) {
    Shape labelsShape = labelShape(shape);
    HostTensor logits = randomTensor(DType::F32, shape, -6.0, 6.0);
    for (std::optional<int64_t> ignore :
         {std::optional<int64_t>(), std::optional<int64_t>(-100),
          std::optional<int64_t>(1)}) {
      HostTensor y = classLabels(DType::I64, labelsShape, shape[1], ignore);
      for (const char *reduction : {"mean", "sum", "none"}) {
        Shape lossShape =
            std::string(reduction) == "none" ? labelsShape : Shape();
        HostTensor gradLoss = randomTensor(DType::F32, lossShape, 0.5, 2.0);
        std::vector<Attr> common = {string("reduction", reduction)};
        if (ignore)
          common.push_back(integer("ignore_index", *ignore));
        INFO(formatShape(shape) << " " << reduction << " ignore "
                                << (ignore ? std::to_string(*ignore) : "-"));
        for (double smoothing : {0.0, 0.1}) {
          std::vector<Attr> attributes = common;
          attributes.push_back(real("label_smoothing", smoothing));
          checkGenerated({"graph.softmax_cross_entropy",
                          {logits, y},
                          {{DType::F32, lossShape}},
                          attributes},
                         1e-5, kNearOneUlps);
          checkGenerated({"graph.softmax_cross_entropy_backward",
                          {gradLoss, logits, y},
                          {{DType::F32, shape}},
                          attributes},
                         1e-5, kNearOneUlps);
        }
        checkGenerated(
            {"graph.nll_loss", {logits, y}, {{DType::F32, lossShape}}, common},
            1e-5);
        checkGenerated({"graph.nll_loss_backward",
                        {gradLoss, logits, y},
                        {{DType::F32, shape}},
                        common},
                       1e-5);
      }
    }
  }
}

TEST_CASE("generated class losses of an all-ignored batch match the "
          "interpreter",
          "[generated]") {
  // The mean over no element is 0/0 = NaN, as in the reference (and
  // PyTorch); the gradient is 0 everywhere.
  HostTensor logits = randomTensor(DType::F32, {6, 5});
  HostTensor y = tensor(DType::I64, {6}, std::vector<double>(6, -100.0));
  HostTensor one = tensor(DType::F32, {}, {1.0});
  for (const char *reduction : {"mean", "sum"}) {
    std::vector<Attr> attributes = {string("reduction", reduction),
                                    integer("ignore_index", -100)};
    for (const char *op : {"softmax_cross_entropy", "nll_loss"}) {
      std::string name = std::string("graph.") + op;
      checkGenerated({name, {logits, y}, {{DType::F32, {}}}, attributes}, 0.0);
      checkGenerated({name + "_backward",
                      {one, logits, y},
                      {{DType::F32, {6, 5}}},
                      attributes},
                     0.0);
    }
  }
}

TEST_CASE("generated class losses report the reference's error for a label "
          "out of range",
          "[generated]") {
  // Out of range: negative, C and beyond, but not ignore_index; the first
  // one in element order is reported, as by the reference kernel.
  Shape shape = {4, 10, 3};
  HostTensor logits = randomTensor(DType::F32, shape);
  for (const auto &[bad, second] : {std::pair(int64_t(10), int64_t(-3)),
                                    std::pair(int64_t(-1), int64_t(12)),
                                    std::pair(int64_t(1000), int64_t(10))}) {
    HostTensor y = classLabels(DType::I64, labelShape(shape), 10, -100);
    y.data[4] = double(bad);
    y.data[9] = double(second);
    for (const char *op :
         {"softmax_cross_entropy", "softmax_cross_entropy_backward", "nll_loss",
          "nll_loss_backward"}) {
      std::string name = std::string("graph.") + op;
      bool backward = name.find("_backward") != std::string::npos;
      std::vector<HostTensor> inputs = {logits, y};
      if (backward)
        inputs.insert(inputs.begin(), tensor(DType::F32, {}, {1.0}));
      OpCase c{name,
               inputs,
               {{DType::F32, backward ? shape : Shape()}},
               {integer("ignore_index", -100)}};
      RuntimeRun reference = runKernel(c, "reference");
      REQUIRE_FALSE(reference.ok);
      GeneratedRun generated = runGenerated(c);
      REQUIRE(generated.checkFailure);
      CHECK(*generated.checkFailure == reference.error);
      ++comparedCases();
    }
  }
}

TEST_CASE("generated pointwise losses match the interpreter", "[generated]") {
  // Sums of 90000 terms in f32 (the interpreter's in double) differ by a
  // little more than 1e-5 relative: 1e-4.
  for (const Shape &shape :
       {Shape{}, Shape{1}, Shape{7}, Shape{4, 5, 6}, Shape{300, 300}}) {
    HostTensor prediction = randomTensor(DType::F32, shape, -4.0, 4.0);
    HostTensor target = randomTensor(DType::F32, shape, 0.0, 1.0);
    for (const char *op : {"mse_loss", "l1_loss", "bce_with_logits_loss"})
      for (const char *reduction : {"mean", "sum", "none"})
        checkGenerated(
            {std::string("graph.") + op,
             {prediction, target},
             {{DType::F32, std::string(reduction) == "none" ? shape : Shape()}},
             {string("reduction", reduction)}},
            1e-4);
  }
}

// Max pooling and its gradient only move values: the generated kernels
// must give the interpreter's bits (the gradients route dy + 0, as the
// reference; the inputs here have no -0). Windows that tile the input
// (what the generated kernels cover): 1 to 4 spatial dims, a last window
// dim of 2 (pairs of taps) and not, kernels of 1, a batch or a channel of
// 1, an empty batch, the CNN's pools (split across threads). Inputs are
// ReLU'd small integers, so most windows have ties (whole windows of 0),
// and plain random numbers.
TEST_CASE("generated max pooling and its gradient are exact, ties included",
          "[generated]") {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{64, 32, 28, 28}, {2, 2}}, {{64, 64, 14, 14}, {2, 2}},
      {{2, 3, 9, 9}, {3, 3}},     {{1, 5, 6, 8}, {3, 2}},
      {{3, 1, 8, 6}, {2, 3}},     {{2, 3, 5, 7}, {1, 1}},
      {{1, 1, 2, 2}, {2, 2}},     {{5, 4, 10, 1}, {2, 1}},
      {{2, 3, 12}, {2}},          {{3, 2, 12}, {3}},
      {{1, 1, 70}, {1}},          {{2, 2, 4, 6, 8}, {2, 2, 2}},
      {{1, 2, 6, 6, 6}, {3, 1, 2}}, {{2, 1, 3, 4, 9}, {1, 2, 3}},
      {{2, 2, 2, 4, 2, 6}, {2, 2, 1, 2}}, {{0, 3, 4, 4}, {2, 2}}};
  for (const auto &[input, kernel] : cases) {
    size_t rank = kernel.size();
    PoolCase pool{DType::F32, input, kernel, kernel, Shape(2 * rank, 0),
                  Shape(rank, 1)};
    HostTensor ties = randomIntegers(DType::F32, input, -3, 2);
    for (double &value : ties.data)
      value = std::max(value, 0.0);
    for (const HostTensor &x :
         {ties, randomTensor(DType::F32, input, -2.0, 2.0)}) {
      INFO(formatShape(input) << " kernel " << formatShape(kernel));
      checkGeneratedBits({"graph.max_pool",
                          {x},
                          {{DType::F32, pool.output(true)}},
                          pool.attributes(true)});
      checkGeneratedBits({"graph.max_pool_backward",
                          {randomTensor(DType::F32, pool.output(true)), x},
                          {{DType::F32, input}},
                          pool.attributes(true)});
    }
  }
}

TEST_CASE("generated max pooling takes NaN over numbers and -0 as 0",
          "[generated]") {
  // Windows of 2x2 taps, row-major: a NaN among numbers, two NaNs (the
  // gradient goes to the last), all -inf, zeros of both signs, a +inf tie;
  // the gradient -0 becomes 0. The forward's maximum of -0 and 0 is 0 (the
  // reference's is the first one): values are compared, not signs.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> windows[] = {{1, nan, 3, 2},   {nan, 1, 2, nan},
                                   {-inf, -inf, -inf, -inf},
                                   {-0.0, 0, 0, -0.0}, {0, -0.0, -1, -2},
                                   {inf, 5, inf, 1}};
  for (bool pairs : {true, false}) {
    // With pairs, each window is one row of two tap pairs; without, the
    // taps of the window's last dim are 4 in a row (a 1x4 window).
    Shape input = pairs ? Shape{1, 1, 2, 12} : Shape{1, 1, 1, 24};
    Shape kernel = pairs ? Shape{2, 2} : Shape{1, 4};
    HostTensor x = tensor(DType::F32, input, std::vector<double>(24));
    for (auto [w, taps] : llvm::enumerate(windows))
      for (int t = 0; t < 4; ++t) {
        int64_t index = pairs ? (t / 2) * 12 + 2 * w + t % 2 : 4 * w + t;
        x.data[index] = taps[t];
      }
    PoolCase pool{DType::F32, input, kernel, kernel, {0, 0, 0, 0}, {1, 1}};
    HostTensor dy = randomTensor(DType::F32, pool.output(true), 1.0, 2.0);
    dy.data[3] = -0.0;
    checkGenerated(
        {"graph.max_pool", {x}, {{DType::F32, dy.shape}}, pool.attributes(true)},
        0.0);
    checkGeneratedBits({"graph.max_pool_backward",
                        {dy, x},
                        {{DType::F32, input}},
                        pool.attributes(true)});
  }
}
