//===- TorchCaseTests.cpp - kernels against PyTorch's answers -------------===//
//
// test/interpreter/torch_cases.json holds small MLIR functions of graph ops
// (backward kernels, losses, optimizer updates, and the forward ops they
// pair with) with inputs and PyTorch's outputs, written by
// test/interpreter/make_torch_cases.py. Each runs in the interpreter and
// must match within 1e-5 (absolute + relative).
//
//===----------------------------------------------------------------------===//
#include "OnnxTestData.h"

#include "dialects/graph/GraphOps.h"
#include "trainc/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>

using trainc::HostTensor;

namespace {

HostTensor tensorFromJson(const nlohmann::json &value) {
  HostTensor tensor;
  tensor.dtype =
      value.at("dtype") == "i64" ? trainc::DType::I64 : trainc::DType::F32;
  tensor.shape = value.at("shape").get<std::vector<int64_t>>();
  tensor.data = value.at("data").get<std::vector<double>>();
  return tensor;
}

/// "" when the case matches PyTorch, else what went wrong.
std::string runCase(mlir::MLIRContext &context,
                    const nlohmann::json &testCase) {
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    diagnostics += d.str() + " ";
    return mlir::success();
  });
  auto module = mlir::parseSourceString<mlir::ModuleOp>(
      testCase.at("mlir").get<std::string>(), &context);
  if (!module || failed(mlir::verify(*module)))
    return "does not parse: " + diagnostics;
  auto function = module->lookupSymbol<mlir::func::FuncOp>("main");
  std::vector<HostTensor> inputs;
  for (const auto &input : testCase.at("inputs"))
    inputs.push_back(tensorFromJson(input));
  auto results = trainc::interpret(function, inputs);
  if (!results)
    return llvm::toString(results.takeError());
  const auto &expected = testCase.at("outputs");
  if (results->size() != expected.size())
    return "got " + std::to_string(results->size()) + " results";
  for (size_t i = 0; i < expected.size(); ++i) {
    std::string difference = trainc::test::compareTensors(
        (*results)[i], tensorFromJson(expected[i]), 1e-5);
    if (!difference.empty())
      return "output " + std::to_string(i) + ": " + difference;
  }
  return "";
}

} // namespace

TEST_CASE("backward kernels, losses and optimizers match PyTorch", "[torch]") {
  std::ifstream stream(TRAINC_TORCH_CASES);
  REQUIRE(stream);
  nlohmann::json cases = nlohmann::json::parse(stream).at("cases");
  mlir::MLIRContext context;
  context.loadDialect<mlir::func::FuncDialect, trainc::graph::GraphDialect>();
  size_t passed = 0;
  for (const auto &testCase : cases) {
    std::string name = testCase.at("name");
    std::string failure = runCase(context, testCase);
    std::cout << "  " << (failure.empty() ? "PASS " : "FAIL ") << name
              << (failure.empty() ? "" : ": " + failure) << "\n";
    INFO(name << ": " << failure);
    CHECK(failure.empty());
    passed += failure.empty();
  }
  std::cout << "PyTorch cases: " << passed << " of " << cases.size()
            << " passed\n";
  CHECK(cases.size() >= 100);
}
