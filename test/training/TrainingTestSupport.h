//===- TrainingTestSupport.h - helpers of the training tests ---*- C++ -*-===//
#ifndef TRAINC_TEST_TRAINING_TRAININGTESTSUPPORT_H
#define TRAINC_TEST_TRAINING_TRAININGTESTSUPPORT_H

#include "trainc/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <random>
#include <string>

namespace trainc::test {

/// A context with every dialect the training tests use.
std::unique_ptr<mlir::MLIRContext> makeContext();

/// Parses `text`; fails the test (REQUIRE) if it does not parse.
mlir::OwningOpRef<mlir::ModuleOp> parseModule(mlir::MLIRContext &context,
                                              const std::string &text);

/// Runs the training pipeline (--trainc-autodiff=`options` + folding).
void buildTrainingGraph(mlir::ModuleOp module, const std::string &options);

/// The parity figure of every test here:
///   e(a, b) = ||a - b|| / (||b|| + 1e-6 * sqrt(n)).
double relativeError(const HostTensor &a, const HostTensor &b);

/// A tensor of `type`'s shape and dtype filled from `generator`.
HostTensor randomTensor(mlir::Type type, std::mt19937 &generator,
                        double low = -1.0, double high = 1.0);

/// Reads a NumPy .npy file (float32/float64/int64, C order).
HostTensor readNpy(const std::string &path);

} // namespace trainc::test

#endif
