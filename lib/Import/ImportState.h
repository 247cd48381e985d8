//===- ImportState.h - state of one import run ----------------*- C++ -*-===//
#ifndef TRAINC_LIB_IMPORT_IMPORTSTATE_H
#define TRAINC_LIB_IMPORT_IMPORTSTATE_H

#include "lib/Import/NodeImporter.h"
#include "trainc/Import.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringMap.h"

#include <map>
#include <set>
#include <vector>

namespace trainc::import {

/// What an ONNX value name stands for: an IR value, a value known at import
/// time, or both.
struct ImportedValue {
  mlir::Value value;
  std::optional<KnownTensor> known;
};

/// Shape vectors recorded per (node index, key) during the probe run.
using ProbeRecords = std::map<std::pair<size_t, std::string>,
                              llvm::SmallVector<int64_t>>;

class ImportState {
public:
  ImportState(mlir::MLIRContext &context, const onnx::ModelProto &model,
              std::string fileName)
      : context(context), builder(&context), model(model),
        graph(model.graph()), fileName(std::move(fileName)) {}

  mlir::MLIRContext &context;
  mlir::OpBuilder builder;
  const onnx::ModelProto &model;
  const onnx::GraphProto &graph;
  std::string fileName;
  int64_t opset = 0;
  ImportOptions options;

  /// True during the probe run (batch size changed to detect which shape
  /// entries depend on it); false during the real run.
  bool probing = false;
  int64_t batchSize = 1;
  ProbeRecords *probeRecords = nullptr;

  mlir::func::FuncOp function;
  llvm::StringMap<ImportedValue> values;
  llvm::StringMap<const onnx::TensorProto *> initializers;
  /// Role of each initializer that becomes a function argument.
  llvm::StringMap<std::string> roles;
  /// Initializers materialized as arguments, in argument order.
  std::vector<std::string> initializerArguments;
  /// How many nodes or graph outputs read each value name.
  llvm::StringMap<unsigned> useCounts;

  /// Diagnostics emitted by MLIR (op inference) while importing a node.
  std::vector<std::string> pendingDiagnostics;
  std::vector<std::string> warnings;
  /// ONNX sequences (SplitToSequence's output) by name: their tensors.
  std::map<std::string, llvm::SmallVector<mlir::Value>> sequences;
  /// The kinds of warning that are given once per model (warnOnce).
  std::set<std::string> warnedOnce;
  /// The first error; import stops there.
  std::string error;

  /// The IR value of initializer `name`, creating its argument on first use.
  mlir::FailureOr<mlir::Value> initializerArgument(llvm::StringRef name,
                                                   mlir::Location loc);
};

/// Element type for an ONNX TensorProto data type; null if unsupported.
mlir::Type elementTypeFor(int32_t onnxType, mlir::MLIRContext &context);
/// Name of an ONNX data type for messages ("FLOAT", "INT64", ...).
std::string onnxTypeName(int32_t onnxType);
/// Decodes a (small) tensor into a KnownTensor.
mlir::FailureOr<KnownTensor> decodeKnown(const onnx::TensorProto &tensor,
                                         mlir::MLIRContext &context,
                                         std::string &error);
/// The most bytes one tensor may take (1 TiB): sizes computed from a
/// model's dims are checked against it, so that none wraps around.
constexpr int64_t kMaxTensorBytes = int64_t(1) << 40;
/// Checks a shape from a model: every dim at least `minDim`, and the
/// tensor's bytes (elements times `width`) at most kMaxTensorBytes,
/// computed without overflow. An error message ("" when it is fine).
std::string checkShape(llvm::ArrayRef<int64_t> dims, int64_t width,
                       int64_t minDim = 0);
/// Bytes per element of the ONNX data types trainc reads; 0 otherwise.
size_t elementBytes(int32_t onnxType);
/// Decodes a tensor's raw bytes for the WeightStore.
mlir::FailureOr<WeightTensor> decodeWeight(const onnx::TensorProto &tensor,
                                           std::string &error);

} // namespace trainc::import

#endif // TRAINC_LIB_IMPORT_IMPORTSTATE_H
