//===- Import.h - ONNX to graph dialect -----------------------*- C++ -*-===//
//
// The compiler's entry point for reading a model: an ONNX ModelProto (opset
// 13 to 21) becomes a module holding `func.func @forward` in the graph
// dialect. Initializer values are kept out of the IR, in a WeightStore.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_IMPORT_H
#define TRAINC_IMPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
class MLIRContext;
} // namespace mlir
namespace onnx {
class ModelProto;
} // namespace onnx

namespace trainc {

struct ImportOptions {
  /// Size bound to the batch dimension. Default: the model's own static
  /// batch size, or 1 when the model's batch dimension is symbolic.
  std::optional<int64_t> batchSize;
  /// Floating-point initializers whose name matches this (ECMAScript-like,
  /// llvm::Regex) pattern become constants instead of trainable parameters.
  std::string freezePattern;
  /// Train every BatchNormalization as PyTorch's train() mode does (batch
  /// statistics, running statistics updated with the node's momentum), also
  /// one written in inference form (training_mode 0: torch.onnx.export's
  /// dynamo exporter writes every BatchNorm so, whatever the module's mode).
  bool trainBatchNorm = false;
  /// Run the graph dialect's canonicalization after import.
  bool canonicalize = true;
  /// Where tensors stored as external data are read from (never outside
  /// it). importOnnxFile sets the model's directory; empty: a model with
  /// external data is refused.
  std::string externalDataDirectory;
};

/// The initial value of one initializer, as raw little-endian bytes.
struct WeightTensor {
  std::string dtype; ///< "f32", "f64", "i64", ...
  std::vector<int64_t> shape;
  std::vector<char> bytes;
};

/// Initial values by ONNX initializer name (every `@forward` argument whose
/// role is parameter, state or constant has an entry).
using WeightStore = std::map<std::string, WeightTensor>;

struct ImportedModel {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  WeightStore weights;
  /// Non-fatal findings (e.g. a reshape that had to bake the batch size).
  std::vector<std::string> warnings;
};

/// Gives every tensor of `model` (initializers, Constant values) whose data
/// is EXTERNAL its bytes as raw_data, read from files in `directory` and
/// never outside it (lib/Import/ExternalData.cpp); an error if a tensor is
/// external and `directory` is empty, or its file may not be read.
llvm::Error loadExternalData(onnx::ModelProto &model,
                             llvm::StringRef directory);

/// Registers the dialects an imported module uses.
void registerImportDialects(mlir::MLIRContext &context);

/// Reads and imports an ONNX file. Every failure is an llvm::Error whose
/// message names the file and, where one is at fault, the node.
llvm::Expected<ImportedModel> importOnnxFile(mlir::MLIRContext &context,
                                             const std::string &path,
                                             const ImportOptions &options);

/// Imports serialized ModelProto bytes; `displayName` names them in errors.
llvm::Expected<ImportedModel> importOnnxBytes(mlir::MLIRContext &context,
                                              const std::string &bytes,
                                              const std::string &displayName,
                                              const ImportOptions &options);

} // namespace trainc

#endif // TRAINC_IMPORT_H
