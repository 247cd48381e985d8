//===- TrainingTestSupport.cpp - helpers of the training tests ------------===//
#include "TrainingTestSupport.h"

#include "dialects/graph/GraphOps.h"
#include "pipelines/TrainingPipeline.h"

#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

namespace trainc::test {

std::unique_ptr<mlir::MLIRContext> makeContext() {
  auto context = std::make_unique<mlir::MLIRContext>();
  context->loadDialect<mlir::func::FuncDialect, graph::GraphDialect>();
  return context;
}

mlir::OwningOpRef<mlir::ModuleOp> parseModule(mlir::MLIRContext &context,
                                              const std::string &text) {
  auto module = mlir::parseSourceString<mlir::ModuleOp>(text, &context);
  INFO(text);
  REQUIRE(module);
  return module;
}

void buildTrainingGraph(mlir::ModuleOp module, const std::string &options) {
  // The textual pipeline below needs the passes registered, once.
  static bool registered = [] {
    graph::registerGraphPasses();
    mlir::registerCanonicalizerPass();
    mlir::registerCSEPass();
    return true;
  }();
  (void)registered;
  mlir::PassManager pm(module.getContext());
  std::string pipeline = "trainc-autodiff{" + options + "},canonicalize,cse";
  REQUIRE(mlir::succeeded(mlir::parsePassPipeline(pipeline, pm)));
  REQUIRE(mlir::succeeded(pm.run(module)));
}

double relativeError(const HostTensor &a, const HostTensor &b) {
  REQUIRE(a.data.size() == b.data.size());
  double difference = 0, norm = 0;
  for (size_t i = 0; i < a.data.size(); ++i) {
    difference += (a.data[i] - b.data[i]) * (a.data[i] - b.data[i]);
    norm += b.data[i] * b.data[i];
  }
  return std::sqrt(difference) /
         (std::sqrt(norm) + 1e-6 * std::sqrt(double(a.data.size())));
}

HostTensor randomTensor(mlir::Type type, std::mt19937 &generator, double low,
                        double high) {
  auto tensorType = mlir::cast<mlir::RankedTensorType>(type);
  HostTensor tensor;
  auto dtype = dtypeOf(tensorType.getElementType());
  REQUIRE(static_cast<bool>(dtype));
  tensor.dtype = *dtype;
  tensor.shape.assign(tensorType.getShape().begin(), tensorType.getShape().end());
  std::uniform_real_distribution<double> uniform(low, high);
  for (int64_t i = 0; i < tensor.numElements(); ++i) {
    double value = uniform(generator);
    tensor.data.push_back(roundTo(tensor.dtype, value));
  }
  return tensor;
}

HostTensor readNpy(const std::string &path) {
  std::ifstream stream(path, std::ios::binary);
  INFO(path);
  REQUIRE(stream);
  std::string contents((std::istreambuf_iterator<char>(stream)),
                       std::istreambuf_iterator<char>());
  REQUIRE(contents.size() > 10);
  REQUIRE(contents.compare(1, 5, "NUMPY") == 0);
  uint8_t major = contents[6];
  size_t headerLength, offset;
  if (major == 1) {
    headerLength = uint8_t(contents[8]) | (uint8_t(contents[9]) << 8);
    offset = 10;
  } else {
    uint32_t length;
    std::memcpy(&length, contents.data() + 8, 4);
    headerLength = length;
    offset = 12;
  }
  std::string header = contents.substr(offset, headerLength);
  const char *data = contents.data() + offset + headerLength;
  REQUIRE(header.find("'fortran_order': False") != std::string::npos);
  HostTensor tensor;
  size_t open = header.find("'shape': (") + 10;
  std::stringstream shape(header.substr(open, header.find(')', open) - open));
  std::string dim;
  while (std::getline(shape, dim, ','))
    if (dim.find_first_not_of(' ') != std::string::npos)
      tensor.shape.push_back(std::stoll(dim));
  int64_t count = tensor.numElements();
  if (header.find("'<f4'") != std::string::npos) {
    tensor.dtype = DType::F32;
    for (int64_t i = 0; i < count; ++i) {
      float v;
      std::memcpy(&v, data + 4 * i, 4);
      tensor.data.push_back(v);
    }
  } else if (header.find("'<f8'") != std::string::npos) {
    tensor.dtype = DType::F64;
    for (int64_t i = 0; i < count; ++i) {
      double v;
      std::memcpy(&v, data + 8 * i, 8);
      tensor.data.push_back(v);
    }
  } else if (header.find("'<i8'") != std::string::npos) {
    tensor.dtype = DType::I64;
    for (int64_t i = 0; i < count; ++i) {
      int64_t v;
      std::memcpy(&v, data + 8 * i, 8);
      tensor.data.push_back(static_cast<double>(v));
    }
  } else {
    FAIL("unsupported dtype in " << path << ": " << header);
  }
  return tensor;
}

} // namespace trainc::test
