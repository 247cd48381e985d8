//===- OnnxTestData.h - ONNX node tests in the interpreter ---*- C++ -*-===//
//
// Runs one directory of ONNX's backend node tests (model.onnx plus
// test_data_set_*/input_N.pb and output_N.pb) through the importer and the
// reference interpreter and compares with the expected outputs.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_TEST_UNIT_ONNXTESTDATA_H
#define TRAINC_TEST_UNIT_ONNXTESTDATA_H

#include "trainc/Interpreter.h"

#include <onnx/onnx_pb.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

namespace trainc::test {

/// A TensorProto's value as a host tensor (error for unsupported types).
/// `declaredType` is the ONNX type the model declares for the value: ONNX
/// 1.12's test data stores BFLOAT16 values as UINT16 bit patterns.
llvm::Expected<HostTensor> hostTensorFromProto(const onnx::TensorProto &proto,
                                               int32_t declaredType = 0);

/// "" when `actual` matches `expected` (same dtype and shape, every element
/// within `tolerance` absolute plus `tolerance` relative, NaN matching
/// NaN); else what differs first.
std::string compareTensors(const HostTensor &actual, const HostTensor &expected,
                           double tolerance);

enum class Outcome { Passed, Failed, Skipped };

struct NodeTestResult {
  Outcome outcome = Outcome::Failed;
  std::string message; ///< why it failed or was skipped, or what was adapted
};

struct NodeTestOptions {
  double tolerance = 1e-5;
  /// Graph outputs (by index) not compared, e.g. a convention that differs.
  std::set<int> ignoredOutputs;
  /// Applied to the model before everything else (fixes of known bugs in
  /// the test data).
  std::function<void(onnx::ModelProto &)> patchModel;
};

/// Runs the node test in `directory` (every test_data_set_*).
NodeTestResult runNodeTest(const std::string &directory,
                           const NodeTestOptions &options = {});

/// The op types (domain-qualified outside the default domain) of a model.
std::set<std::string> opTypesOf(const std::string &modelPath);

} // namespace trainc::test

#endif // TRAINC_TEST_UNIT_ONNXTESTDATA_H
