//===- InterpreterTests.cpp - the reference interpreter and trainc's RNG --===//
//
// The driver (arguments, calls, rounding, errors), every graph op having a
// kernel, the host-tensor conversions, and Philox4x32-10 against the
// published known-answer vectors.
//
//===----------------------------------------------------------------------===//
#include "dialects/graph/GraphOps.h"
#include "trainc/Interpreter.h"
#include "trainc/Random.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>

#include <cmath>

using Catch::Matchers::Contains;
using trainc::DType;
using trainc::HostTensor;

namespace {

/// Parses `text` (func.func ops) into a module; fails the test on error.
struct Parsed {
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;

  explicit Parsed(const std::string &text) {
    context.loadDialect<mlir::func::FuncDialect, trainc::graph::GraphDialect>();
    context.allowUnregisteredDialects(); // for ops without a kernel
    std::string diagnostics;
    mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
      diagnostics += d.str() + "\n";
      return mlir::success();
    });
    module = mlir::parseSourceString<mlir::ModuleOp>(text, &context);
    INFO(diagnostics);
    REQUIRE(module);
  }

  mlir::func::FuncOp function(llvm::StringRef name = "main") {
    auto function = module->lookupSymbol<mlir::func::FuncOp>(name);
    REQUIRE(function);
    return function;
  }
};

HostTensor tensor(std::vector<int64_t> shape, std::vector<double> data,
                  DType dtype = DType::F32) {
  HostTensor result;
  result.dtype = dtype;
  result.shape = std::move(shape);
  result.data = std::move(data);
  return result;
}

/// True when `value` holds a value; otherwise reports its error.
template <typename T> bool succeeded(llvm::Expected<T> &value) {
  if (value)
    return true;
  FAIL_CHECK(llvm::toString(value.takeError()));
  return false;
}

std::string errorOf(llvm::Expected<std::vector<HostTensor>> result) {
  if (result)
    return "";
  return llvm::toString(result.takeError());
}

} // namespace

//===----------------------------------------------------------------------===//
// Philox4x32-10 and graph.random_mask
//===----------------------------------------------------------------------===//

TEST_CASE("Philox4x32-10 reproduces Random123's known answers", "[random]") {
  struct Vector {
    uint32_t counter[4];
    uint32_t key[2];
    uint32_t expected[4];
  };
  // Random123 1.09, examples/kat_vectors ("philox4x32 10" lines), checked
  // against an independent Python implementation.
  const Vector vectors[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Vector &vector : vectors) {
    trainc_philox4x32 result = trainc_philox4x32_10(vector.counter, vector.key);
    for (int i = 0; i < 4; ++i)
      CHECK(result.v[i] == vector.expected[i]);
  }
}

TEST_CASE("the dropout mask is a function of seed, stream, step and index",
          "[random]") {
  // Word 0 of the block (index, stream, step) under key seed, top 24 bits.
  const uint32_t key[2] = {0x2a, 0};
  const uint32_t counter[4] = {7, 3, 5, 0};
  uint32_t word = trainc_philox4x32_10(counter, key).v[0];
  CHECK(trainc_random_uniform(0x2a, 3, 5, 7) ==
        static_cast<float>(word >> 8) / 16777216.0f);

  const int64_t count = 20000;
  const double ratio = 0.3;
  int64_t kept = 0, differentStep = 0;
  for (int64_t i = 0; i < count; ++i) {
    double value = trainc_random_mask_value(1234, 1, 0, i, ratio);
    REQUIRE((value == 0.0 || value == 1.0 / (1.0 - ratio)));
    kept += value != 0.0;
    differentStep += value != trainc_random_mask_value(1234, 1, 1, i, ratio);
  }
  // 1 - ratio kept, within five standard deviations.
  double sigma = std::sqrt(count * ratio * (1 - ratio));
  CHECK(std::fabs(kept - count * (1 - ratio)) < 5 * sigma);
  CHECK(differentStep > count / 4);
  CHECK(trainc_random_mask_value(99, 0, 0, 0, 0.0) == 1.0);
}

TEST_CASE("graph.random_mask runs the header's stream", "[random]") {
  Parsed parsed(R"mlir(
    func.func @main(%seed: tensor<i64>, %step: tensor<i64>) -> tensor<4x8xf32> {
      %m = graph.random_mask %seed, %step {shape = array<i64: 4, 8>,
          element_type = f32, ratio = 0.25 : f64, stream = 6 : i64}
          : (tensor<i64>, tensor<i64>) -> tensor<4x8xf32>
      return %m : tensor<4x8xf32>
    })mlir");
  auto result = trainc::interpret(parsed.function(),
                                  {tensor({}, {-5}, DType::I64),
                                   tensor({}, {(1LL << 33) + 9}, DType::I64)});
  REQUIRE(succeeded(result));
  const HostTensor &mask = result->front();
  REQUIRE(mask.data.size() == 32);
  uint64_t seed = static_cast<uint64_t>(int64_t(-5));
  for (int64_t i = 0; i < 32; ++i)
    CHECK(mask.data[i] == static_cast<float>(trainc_random_mask_value(
                              seed, 6, (1ULL << 33) + 9, i, 0.25)));
}

//===----------------------------------------------------------------------===//
// The driver
//===----------------------------------------------------------------------===//

TEST_CASE("every graph op has a kernel", "[interpreter]") {
  mlir::MLIRContext context;
  context.loadDialect<trainc::graph::GraphDialect>();
  size_t ops = 0;
  for (mlir::RegisteredOperationName name : context.getRegisteredOperations()) {
    if (name.getDialectNamespace() != "graph")
      continue;
    ++ops;
    INFO(name.getStringRef().str());
    CHECK(trainc::canInterpret(name.getStringRef()));
  }
  CHECK(ops >= 68);
}

TEST_CASE("arguments are checked against the signature", "[interpreter]") {
  Parsed parsed(R"mlir(
    func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
      %y = graph.relu %x : tensor<2x3xf32>
      return %y : tensor<2x3xf32>
    })mlir");
  auto function = parsed.function();
  CHECK_THAT(errorOf(trainc::interpret(function, {})),
             Contains("@main takes 1 arguments, got 0"));
  CHECK_THAT(errorOf(trainc::interpret(
                 function, {tensor({3, 2}, std::vector<double>(6))})),
             Contains("argument 0 has shape [3, 2], expected [2, 3]"));
  CHECK_THAT(
      errorOf(trainc::interpret(
          function, {tensor({2, 3}, std::vector<double>(6), DType::F64)})),
      Contains("argument 0 has dtype f64, expected f32"));
  CHECK_THAT(errorOf(trainc::interpret(function, {tensor({2, 3}, {1, 2})})),
             Contains("holds 2 values for shape [2, 3]"));
}

TEST_CASE("an op that fails is named with its location", "[interpreter]") {
  Parsed parsed(R"mlir(
    func.func @main(%a: tensor<2xi32>, %b: tensor<2xi32>) -> tensor<2xi32> {
      %q = graph.div %a, %b : (tensor<2xi32>, tensor<2xi32>)
          -> tensor<2xi32> loc("quotient")
      return %q : tensor<2xi32>
    })mlir");
  std::string message = errorOf(
      trainc::interpret(parsed.function(), {tensor({2}, {7, -7}, DType::I32),
                                            tensor({2}, {2, 0}, DType::I32)}));
  CHECK_THAT(message, Contains("graph.div at loc(\"quotient\")"));
  CHECK_THAT(message, Contains("integer division by zero"));

  auto result =
      trainc::interpret(parsed.function(), {tensor({2}, {7, -7}, DType::I32),
                                            tensor({2}, {2, 2}, DType::I32)});
  REQUIRE(succeeded(result));
  CHECK(result->front().data == std::vector<double>{3, -3}); // truncates
}

TEST_CASE("an op without a kernel is an error, not a crash", "[interpreter]") {
  Parsed parsed(R"mlir(
    func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
      %y = "test.unknown"(%x) : (tensor<2xf32>) -> tensor<2xf32>
      return %y : tensor<2xf32>
    })mlir");
  CHECK_THAT(
      errorOf(trainc::interpret(parsed.function(), {tensor({2}, {1, 2})})),
      Contains("the interpreter has no kernel for this op"));
}

TEST_CASE("func.call runs the callee", "[interpreter]") {
  Parsed parsed(R"mlir(
    func.func @square(%x: tensor<3xf32>) -> tensor<3xf32> {
      %y = graph.mul %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
      return %y : tensor<3xf32>
    }
    func.func @main(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
      %a = func.call @square(%x) : (tensor<3xf32>) -> tensor<3xf32>
      %b = func.call @square(%a) : (tensor<3xf32>) -> tensor<3xf32>
      return %a, %b : tensor<3xf32>, tensor<3xf32>
    }
    func.func @forever(%x: tensor<3xf32>) -> tensor<3xf32> {
      %y = func.call @forever(%x) : (tensor<3xf32>) -> tensor<3xf32>
      return %y : tensor<3xf32>
    })mlir");
  auto result = trainc::interpret(parsed.function(), {tensor({3}, {1, 2, -3})});
  REQUIRE(succeeded(result));
  CHECK((*result)[0].data == std::vector<double>{1, 4, 9});
  CHECK((*result)[1].data == std::vector<double>{1, 16, 81});
  CHECK_THAT(errorOf(trainc::interpret(parsed.function("forever"),
                                       {tensor({3}, {1, 2, 3})})),
             Contains("recursion"));
}

TEST_CASE("f32 results are rounded unless fp64 is asked for", "[interpreter]") {
  Parsed parsed(R"mlir(
    func.func @main(%x: tensor<2xf32>, %y: tensor<2xf32>) -> tensor<f32> {
      %s = graph.add %x, %y : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      %r = graph.reduce_sum %s {axes = array<i64: 0>, keepdims = false}
          : (tensor<2xf32>) -> tensor<f32>
      return %r : tensor<f32>
    })mlir");
  std::vector<HostTensor> arguments = {tensor({2}, {1.0, 1.0}),
                                       tensor({2}, {1e-9, 1e-9})};
  auto rounded = trainc::interpret(parsed.function(), arguments);
  REQUIRE(succeeded(rounded));
  CHECK(rounded->front().data[0] == 2.0);
  trainc::InterpreterOptions options;
  options.fp64 = true;
  auto exact = trainc::interpret(parsed.function(), arguments, options);
  REQUIRE(succeeded(exact));
  CHECK(exact->front().data[0] == 2.0 + 2e-9);
}

TEST_CASE("reshape resolves 0 and -1 against the input", "[interpreter]") {
  Parsed parsed(R"mlir(
    func.func @main(%x: tensor<2x3x4xf32>) -> tensor<2x12xf32> {
      %y = graph.reshape %x {shape = array<i64: 0, -1>}
          : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
      return %y : tensor<2x12xf32>
    })mlir");
  std::vector<double> values(24);
  for (int i = 0; i < 24; ++i)
    values[i] = i;
  auto result =
      trainc::interpret(parsed.function(), {tensor({2, 3, 4}, values)});
  REQUIRE(succeeded(result));
  CHECK(result->front().shape == std::vector<int64_t>{2, 12});
  CHECK(result->front().data == values);
}

TEST_CASE("graph.dropout runs only with ratio 0", "[interpreter]") {
  Parsed parsed(R"mlir(
    func.func @keep(%x: tensor<2xf32>) -> tensor<2xf32> {
      %y = graph.dropout %x {ratio = 0.0 : f64} : tensor<2xf32>
      return %y : tensor<2xf32>
    }
    func.func @drop(%x: tensor<2xf32>) -> tensor<2xf32> {
      %y = graph.dropout %x {ratio = 0.5 : f64} : tensor<2xf32>
      return %y : tensor<2xf32>
    })mlir");
  auto kept = trainc::interpret(parsed.function("keep"), {tensor({2}, {1, 2})});
  REQUIRE(succeeded(kept));
  CHECK(kept->front().data == std::vector<double>{1, 2});
  CHECK_THAT(errorOf(trainc::interpret(parsed.function("drop"),
                                       {tensor({2}, {1, 2})})),
             Contains("graph.random_mask"));
}

//===----------------------------------------------------------------------===//
// Conversions
//===----------------------------------------------------------------------===//

TEST_CASE("values round to their dtype", "[interpreter]") {
  CHECK(trainc::roundTo(DType::F32, 0.1) == static_cast<double>(0.1f));
  CHECK(trainc::roundTo(DType::F16, 1.0 + 1.0 / 4096) == 1.0); // ties to even
  CHECK(trainc::roundTo(DType::F16, 65520.0) == INFINITY);     // overflows
  CHECK(trainc::roundTo(DType::BF16, 0.48033667) ==
        0.48046875); // not truncated
  CHECK(trainc::roundTo(DType::I64, -2.7) == -2.0);
  CHECK(trainc::roundTo(DType::I8, 200.0) == -56.0); // wraps
  CHECK(trainc::roundTo(DType::I32, 4294967297.0) == 1.0);
  CHECK(trainc::roundTo(DType::I1, 0.5) == 1.0);
  CHECK(trainc::roundTo(DType::I64, NAN) == 0.0);
}

TEST_CASE("host tensors convert to and from dense attributes",
          "[interpreter]") {
  mlir::MLIRContext context;
  for (DType dtype :
       {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I64, DType::I32,
        DType::I16, DType::I8, DType::I1}) {
    INFO(trainc::dtypeName(dtype).str());
    HostTensor original = tensor({2, 2}, {0, 1, -1, 1}, dtype);
    if (dtype == DType::I1)
      original.data = {0, 1, 1, 0};
    mlir::DenseElementsAttr attr = trainc::denseAttrOf(original, context);
    auto back =
        trainc::hostTensorFromAttr(llvm::cast<mlir::ElementsAttr>(attr));
    REQUIRE(succeeded(back));
    CHECK(back->dtype == dtype);
    CHECK(back->shape == original.shape);
    CHECK(back->data == original.data);
    auto roundTrip = trainc::dtypeOf(trainc::elementTypeOf(dtype, context));
    REQUIRE(succeeded(roundTrip));
    CHECK(*roundTrip == dtype);
  }
  CHECK_THAT(
      llvm::toString(
          trainc::dtypeOf(mlir::IntegerType::get(&context, 4)).takeError()),
      Contains("i4 is not supported"));
}
