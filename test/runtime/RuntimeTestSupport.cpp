//===- RuntimeTestSupport.cpp - runtime kernels vs the interpreter --------===//
#include "RuntimeTestSupport.h"

#include "dialects/graph/GraphOps.h"
#include "lib/Runtime/Launch.h"
#include "lib/Runtime/Buffer.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "llvm/ADT/APFloat.h"

#include <catch2/catch.hpp>

#include <omp.h>

#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstring>

namespace trainc::rttest {

//===----------------------------------------------------------------------===//
// Attributes and tensors
//===----------------------------------------------------------------------===//

static std::string joined(const Shape &values, const char *separator) {
  std::string text;
  for (size_t i = 0; i < values.size(); ++i)
    text += (i ? separator : "") + std::to_string(values[i]);
  return text;
}

Attr ints(const std::string &name, const Shape &values) {
  std::string mlir = values.empty()
                         ? "array<i64>"
                         : "array<i64: " + joined(values, ", ") + ">";
  return {name, name + " = " + mlir, joined(values, ",")};
}

Attr integer(const std::string &name, int64_t value) {
  return {name, name + " = " + std::to_string(value) + " : i64",
          std::to_string(value)};
}

Attr real(const std::string &name, double value) {
  // MLIR: the exact bits; the descriptor: 17 significant digits.
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  char mlir[64], text[64];
  std::snprintf(mlir, sizeof mlir, "0x%016" PRIX64 " : f64", bits);
  std::snprintf(text, sizeof text, "%.17g", value);
  return {name, name + " = " + mlir, text};
}

Attr flag(const std::string &name, bool value) {
  return {name, name + " = " + (value ? "true" : "false"), value ? "1" : "0"};
}

Attr string(const std::string &name, const std::string &value) {
  return {name, name + " = \"" + value + "\"", value};
}

Attr type(const std::string &name, DType dtype) {
  return {name, name + " = " + dtypeName(dtype).str(), dtypeName(dtype).str()};
}

HostTensor tensor(DType dtype, const Shape &shape, std::vector<double> data) {
  HostTensor result;
  result.dtype = dtype;
  result.shape = shape;
  result.data = std::move(data);
  REQUIRE(static_cast<int64_t>(result.data.size()) == result.numElements());
  return result;
}

std::mt19937 &generator() {
  static std::mt19937 instance(20240611);
  return instance;
}

HostTensor randomTensor(DType dtype, const Shape &shape, double low,
                        double high) {
  HostTensor result;
  result.dtype = dtype;
  result.shape = shape;
  std::uniform_real_distribution<double> uniform(low, high);
  std::vector<double> data;
  for (int64_t i = 0; i < result.numElements(); ++i)
    data.push_back(roundTo(dtype, uniform(generator())));
  result.data = std::move(data);
  return result;
}

HostTensor randomIntegers(DType dtype, const Shape &shape, int64_t low,
                          int64_t high) {
  HostTensor result;
  result.dtype = dtype;
  result.shape = shape;
  std::uniform_int_distribution<int64_t> uniform(low, high);
  for (int64_t i = 0; i < result.numElements(); ++i)
    result.data.push_back(static_cast<double>(uniform(generator())));
  return result;
}

HostTensor classLabels(DType dtype, const Shape &shape, int64_t classes,
                       std::optional<int64_t> ignore) {
  HostTensor result = randomIntegers(dtype, shape, 0, classes - 1);
  if (ignore)
    for (size_t i = 0; i < result.data.size(); i += 3)
      result.data[i] = static_cast<double>(*ignore);
  return result;
}

Shape labelShape(const Shape &scores) {
  Shape shape = {scores[0]};
  shape.insert(shape.end(), scores.begin() + 2, scores.end());
  return shape;
}

Shape broadcastShape(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape result(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    result[i] = x == 1 ? y : x;
  }
  return result;
}

std::string formatShape(const Shape &shape) {
  return "[" + joined(shape, ", ") + "]";
}

//===----------------------------------------------------------------------===//
// MLIR and descriptors
//===----------------------------------------------------------------------===//

static std::string tensorType(DType dtype, const Shape &shape) {
  std::string text = "tensor<";
  for (int64_t dim : shape)
    text += std::to_string(dim) + "x";
  return text + dtypeName(dtype).str() + ">";
}

std::string mlirModule(const OpCase &c) {
  std::string arguments, operands, operandTypes, resultTypes, returned;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    std::string type = tensorType(c.inputs[i].dtype, c.inputs[i].shape);
    arguments += (i ? ", %a" : "%a") + std::to_string(i) + ": " + type;
    operands += (i ? ", %a" : "%a") + std::to_string(i);
    operandTypes += (i ? ", " : "") + type;
  }
  for (size_t i = 0; i < c.results.size(); ++i) {
    resultTypes +=
        (i ? ", " : "") + tensorType(c.results[i].dtype, c.results[i].shape);
    returned += (i ? ", %r#" : "%r#") + std::to_string(i);
  }
  std::string properties;
  for (size_t i = 0; i < c.attributes.size(); ++i)
    properties += (i ? ", " : "") + c.attributes[i].mlir;
  if (!properties.empty())
    properties = " <{" + properties + "}>";
  return "func.func @main(" + arguments + ") -> (" + resultTypes + ") {\n" +
         "  %r:" + std::to_string(c.results.size()) + " = \"" + c.op + "\"(" +
         operands + ")" + properties + " : (" + operandTypes + ") -> (" +
         resultTypes + ")\n  return " + returned + " : " + resultTypes +
         "\n}\n";
}

static std::string operandText(DType dtype, const Shape &shape) {
  return dtypeName(dtype).str() + ":" + joined(shape, "x");
}

std::string descriptor(const OpCase &c, const std::string &backend) {
  std::string text = c.op + ";backend=" + backend + ";in=";
  for (size_t i = 0; i < c.inputs.size(); ++i)
    text += (i ? "|" : "") + operandText(c.inputs[i].dtype, c.inputs[i].shape);
  text += ";out=";
  for (size_t i = 0; i < c.results.size(); ++i)
    text +=
        (i ? "|" : "") + operandText(c.results[i].dtype, c.results[i].shape);
  for (const Attr &attribute : c.attributes)
    text += ";" + attribute.name + "=" + attribute.descriptor;
  return text;
}

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

std::vector<HostTensor> interpretCase(const OpCase &c) {
  static mlir::MLIRContext *context = [] {
    auto *created = new mlir::MLIRContext();
    created->loadDialect<mlir::func::FuncDialect, graph::GraphDialect>();
    return created;
  }();
  std::string text = mlirModule(c);
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(context, [&](mlir::Diagnostic &d) {
    diagnostics += d.str() + "\n";
    return mlir::success();
  });
  auto module = mlir::parseSourceString<mlir::ModuleOp>(text, context);
  INFO(text << diagnostics);
  REQUIRE(module);
  auto function = module->lookupSymbol<mlir::func::FuncOp>("main");
  REQUIRE(function);
  auto results = interpret(function, c.inputs);
  if (!results)
    FAIL(llvm::toString(results.takeError()));
  return std::move(*results);
}

static rt::DType runtimeType(DType dtype) {
  return *rt::parseDType(dtypeName(dtype).str());
}

/// bf16 and f16 as 16-bit patterns (rounded to nearest even) and back.
static const llvm::fltSemantics &halfSemantics(DType dtype) {
  return dtype == DType::BF16 ? llvm::APFloat::BFloat()
                              : llvm::APFloat::IEEEhalf();
}
static uint16_t toHalfBits(DType dtype, double value) {
  llvm::APFloat half(value);
  bool lost;
  half.convert(halfSemantics(dtype), llvm::APFloat::rmNearestTiesToEven, &lost);
  return static_cast<uint16_t>(half.bitcastToAPInt().getZExtValue());
}
static double fromHalfBits(DType dtype, uint16_t bits) {
  llvm::APFloat half(halfSemantics(dtype), llvm::APInt(16, bits));
  bool lost;
  half.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
               &lost);
  return half.convertToDouble();
}

/// The bytes of `tensor` in its dtype's layout.
std::vector<unsigned char> toBytes(const HostTensor &tensor) {
  size_t size = rt::dtypeSize(runtimeType(tensor.dtype));
  std::vector<unsigned char> bytes(tensor.data.size() * size);
  for (size_t i = 0; i < tensor.data.size(); ++i) {
    double value = tensor.data[i];
    unsigned char *at = bytes.data() + i * size;
    auto store = [&](auto converted) { std::memcpy(at, &converted, size); };
    switch (tensor.dtype) {
    case DType::F32:
      store(static_cast<float>(value));
      break;
    case DType::F64:
      store(value);
      break;
    case DType::BF16:
    case DType::F16:
      store(toHalfBits(tensor.dtype, value));
      break;
    case DType::I64:
      store(static_cast<int64_t>(value));
      break;
    case DType::I32:
      store(static_cast<int32_t>(value));
      break;
    case DType::I16:
      store(static_cast<int16_t>(value));
      break;
    case DType::I8:
      store(static_cast<int8_t>(value));
      break;
    case DType::I1:
      store(static_cast<uint8_t>(value != 0.0));
      break;
    default:
      FAIL("unsupported dtype in a test");
    }
  }
  return bytes;
}

HostTensor fromBytes(DType dtype, const Shape &shape,
                            const unsigned char *bytes) {
  HostTensor result;
  result.dtype = dtype;
  result.shape = shape;
  size_t size = rt::dtypeSize(runtimeType(dtype));
  for (int64_t i = 0; i < result.numElements(); ++i) {
    const unsigned char *at = bytes + i * size;
    auto load = [&](auto value) {
      std::memcpy(&value, at, size);
      return static_cast<double>(value);
    };
    switch (dtype) {
    case DType::F32:
      result.data.push_back(load(float{}));
      break;
    case DType::F64:
      result.data.push_back(load(double{}));
      break;
    case DType::BF16:
    case DType::F16: {
      uint16_t bits;
      std::memcpy(&bits, at, sizeof(bits));
      result.data.push_back(fromHalfBits(dtype, bits));
      break;
    }
    case DType::I64:
      result.data.push_back(load(int64_t{}));
      break;
    case DType::I32:
      result.data.push_back(load(int32_t{}));
      break;
    case DType::I16:
      result.data.push_back(load(int16_t{}));
      break;
    case DType::I8:
      result.data.push_back(load(int8_t{}));
      break;
    case DType::I1:
      result.data.push_back(load(uint8_t{}));
      break;
    default:
      FAIL("unsupported dtype in a test");
    }
  }
  return result;
}

/// Bytes after every output buffer that a kernel must leave alone.
constexpr size_t kCanary = 64;
constexpr unsigned char kCanaryByte = 0xA5;

/// Libraries (oneDNN's engine) shared by every test launch, as a session's.
static rt::LibraryContext &libraries() {
  static rt::LibraryContext context;
  return context;
}

/// A prepared launch and scratch memory of the size it asks for.
struct TestLaunch {
  rt::PreparedLaunch prepared;
  rt::Buffer scratch;
  const rt::Launch *operator->() const { return &prepared.launch; }
  bool run(void *const *inputs, void *const *outputs, std::string &error) {
    return prepared.run(inputs, outputs, scratch.data(), error);
  }
};

/// Parses and prepares `text` (with the current OpenMP thread count).
static bool prepare(const std::string &text, TestLaunch &launch,
                    std::string &error) {
  if (!rt::prepareLaunch(text.c_str(), libraries(), launch.prepared, error))
    return false;
  launch.scratch = rt::Buffer(launch.prepared.scratchBytes());
  return true;
}

RuntimeRun runDescriptor(const std::string &text,
                         const std::vector<HostTensor> &inputs) {
  RuntimeRun run;
  TestLaunch launch;
  if (!prepare(text, launch, run.error))
    return run;
  std::vector<std::vector<unsigned char>> inputBytes;
  for (size_t i = 0; i < launch->inputs.size(); ++i)
    inputBytes.push_back(i < inputs.size() ? toBytes(inputs[i])
                                           : std::vector<unsigned char>(
                                                 launch->inputs[i].bytes(), 0));
  std::vector<std::vector<unsigned char>> outputBytes;
  for (const rt::OperandInfo &output : launch->outputs)
    outputBytes.emplace_back(output.bytes() + kCanary, kCanaryByte);
  std::vector<void *> inputPointers, outputPointers;
  for (auto &bytes : inputBytes)
    inputPointers.push_back(bytes.data());
  for (auto &bytes : outputBytes)
    outputPointers.push_back(bytes.data());
  run.ok = launch.run(inputPointers.data(), outputPointers.data(), run.error);
  for (size_t i = 0; i < outputBytes.size(); ++i) {
    size_t size = launch->outputs[i].bytes();
    for (size_t j = size; j < size + kCanary; ++j)
      if (outputBytes[i][j] != kCanaryByte) {
        run.ok = false;
        run.error +=
            " [wrote past the end of output " + std::to_string(i) + "]";
        break;
      }
    outputBytes[i].resize(size);
  }
  run.bytes = std::move(outputBytes);
  return run;
}

RuntimeRun runKernel(const OpCase &c, const std::string &backend) {
  RuntimeRun run = runDescriptor(descriptor(c, backend), c.inputs);
  if (run.ok)
    for (size_t i = 0; i < c.results.size(); ++i)
      run.outputs.push_back(fromBytes(c.results[i].dtype, c.results[i].shape,
                                      run.bytes[i].data()));
  return run;
}

RuntimeRun runInPlace(const OpCase &c, const std::string &backend,
                      const std::vector<std::pair<size_t, size_t>> &aliases) {
  RuntimeRun run;
  TestLaunch launch;
  INFO(run.error);
  REQUIRE(prepare(descriptor(c, backend), launch, run.error));
  std::vector<std::vector<unsigned char>> inputs, outputs;
  for (const HostTensor &tensor : c.inputs)
    inputs.push_back(toBytes(tensor));
  for (const rt::OperandInfo &output : launch->outputs)
    outputs.emplace_back(output.bytes());
  std::vector<void *> in, out;
  for (auto &bytes : inputs)
    in.push_back(bytes.data());
  for (auto &bytes : outputs)
    out.push_back(bytes.data());
  for (const auto &[output, input] : aliases)
    out[output] = in[input];
  run.ok = launch.run(in.data(), out.data(), run.error);
  for (size_t i = 0; i < out.size(); ++i) {
    const unsigned char *data = static_cast<const unsigned char *>(out[i]);
    run.bytes.emplace_back(data, data + launch->outputs[i].bytes());
  }
  return run;
}

void checkClose(const HostTensor &actual, const HostTensor &expected,
                double tolerance, double absolute) {
  REQUIRE(actual.dtype == expected.dtype);
  REQUIRE(actual.shape == expected.shape);
  REQUIRE(actual.data.size() == expected.data.size());
  bool floating = expected.dtype == DType::F32 ||
                  expected.dtype == DType::F64 ||
                  expected.dtype == DType::BF16 || expected.dtype == DType::F16;
  double scale = 0.0;
  for (double value : expected.data)
    if (std::isfinite(value))
      scale = std::max(scale, std::fabs(value));
  int64_t mismatches = 0;
  for (size_t i = 0; i < expected.data.size(); ++i) {
    double a = actual.data[i], b = expected.data[i];
    bool same = a == b || (std::isnan(a) && std::isnan(b));
    if (!same && floating && std::isfinite(a) && std::isfinite(b))
      same = std::fabs(a - b) <=
             tolerance * (std::fabs(b) + 0.05 * scale) + absolute;
    if (!same && mismatches++ < 5)
      FAIL_CHECK("element " << i << ": runtime " << a << ", interpreter " << b
                            << " (scale " << scale << ")");
  }
  CHECK(mismatches == 0);
}

double timeKernel(const OpCase &c, const std::string &backend, int threads,
                  int repeats) {
  std::string error;
  int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  TestLaunch launch; // prepared once, as a session does
  INFO(error);
  REQUIRE(prepare(descriptor(c, backend), launch, error));
  std::vector<std::vector<unsigned char>> inputs, outputs;
  std::vector<void *> in, out;
  for (const HostTensor &tensor : c.inputs)
    inputs.push_back(toBytes(tensor));
  for (const rt::OperandInfo &output : launch->outputs)
    outputs.emplace_back(output.bytes());
  for (auto &bytes : inputs)
    in.push_back(bytes.data());
  for (auto &bytes : outputs)
    out.push_back(bytes.data());
  bool ok = launch.run(in.data(), out.data(), error); // warm-up
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < repeats; ++i)
    launch.run(in.data(), out.data(), error);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count() /
      repeats;
  omp_set_num_threads(saved);
  INFO(error);
  REQUIRE(ok);
  return seconds;
}

int64_t &comparedCases() {
  static int64_t count = 0;
  return count;
}

void checkOp(const OpCase &c, const std::vector<std::string> &backends,
             double tolerance) {
  std::vector<HostTensor> expected = interpretCase(c);
  REQUIRE(expected.size() == c.results.size());
  for (const std::string &backend : backends) {
    INFO(descriptor(c, backend));
    RuntimeRun run = runKernel(c, backend);
    INFO(run.error);
    REQUIRE(run.ok);
    for (size_t i = 0; i < expected.size(); ++i) {
      INFO("output " << i);
      checkClose(run.outputs[i], expected[i], tolerance);
    }
    ++comparedCases();
  }
}

void checkDeterministic(const OpCase &c, const std::string &backend) {
  int saved = omp_get_max_threads();
  INFO(descriptor(c, backend));
  omp_set_num_threads(1);
  RuntimeRun one = runKernel(c, backend);
  omp_set_num_threads(2);
  RuntimeRun two = runKernel(c, backend);
  omp_set_num_threads(saved);
  INFO(one.error << two.error);
  REQUIRE(one.ok);
  REQUIRE(two.ok);
  REQUIRE(one.bytes.size() == two.bytes.size());
  for (size_t i = 0; i < one.bytes.size(); ++i)
    CHECK(one.bytes[i] == two.bytes[i]);
}

} // namespace trainc::rttest
