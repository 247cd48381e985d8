//===- NodeImporter.h - per-node import context ---------------*- C++ -*-===//
//
// What an op handler sees while translating one ONNX node: its inputs (as
// IR values, or as values known at import time), its attributes, a builder
// that creates graph ops with inferred result types, and error reporting
// that names the node.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_LIB_IMPORT_NODEIMPORTER_H
#define TRAINC_LIB_IMPORT_NODEIMPORTER_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringMap.h"

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>

namespace trainc {
struct ImportOptions;
} // namespace trainc

namespace trainc::import {

/// A small tensor whose value is known while importing: ONNX Constant
/// nodes, integer initializers and everything computed from tensor shapes.
struct KnownTensor {
  mlir::Type elementType;
  llvm::SmallVector<int64_t> shape;
  llvm::SmallVector<int64_t> ints;  ///< integer and bool elements
  llvm::SmallVector<double> floats; ///< floating-point elements

  bool isFloat() const { return llvm::isa<mlir::FloatType>(elementType); }
  /// Appends `from`'s element at `offset` (a tensor of the same kind).
  void appendElementOf(const KnownTensor &from, int64_t offset) {
    if (from.isFloat())
      floats.push_back(from.floats[offset]);
    else
      ints.push_back(from.ints[offset]);
  }
  /// The product of `shape`, or -1 when a dimension is negative or the
  /// product overflows (a shape computed from a hostile file).
  int64_t numElements() const;
  /// The value as a dense attribute of the matching tensor type.
  mlir::DenseElementsAttr toAttr() const;
  static KnownTensor ofInts(mlir::Type elementType,
                            llvm::ArrayRef<int64_t> shape,
                            llvm::ArrayRef<int64_t> values);
};

/// The most elements a known tensor keeps: larger results of shape
/// arithmetic are imported as ordinary ops, and a larger ConstantOfShape is
/// refused (that is data, not shape arithmetic).
inline constexpr int64_t kMaxKnownElements = 1 << 20;

class ImportState;

class NodeImporter {
public:
  NodeImporter(ImportState &state, const onnx::NodeProto &node,
               size_t nodeIndex);

  const onnx::NodeProto &node() const { return node_; }
  /// Opset version of the default ONNX domain.
  int64_t opset() const;
  /// The options the model is imported with.
  const ImportOptions &options() const;

  // ---- inputs ------------------------------------------------------------
  /// True when input `i` is given (ONNX marks an omitted optional input
  /// with an empty name).
  bool hasInput(unsigned i) const;
  /// Input `i` as an IR value; known values are materialized as constants.
  mlir::FailureOr<mlir::Value> input(unsigned i);
  /// Input `i`'s value if it is known at import time, else null. Small
  /// float initializers are known too, although they are parameters: only
  /// fold a float value when `isWeight(i)` is false.
  const KnownTensor *known(unsigned i) const;
  /// known(i) where its value may be folded into what the node computes:
  /// not a float weight (a parameter, state or frozen constant is an
  /// argument of @forward and is trained through every op that reads it,
  /// however small). Handlers that pass a value on (Identity, Reshape,
  /// Squeeze, Unsqueeze, Slice, Transpose, Expand) take this; Cast and
  /// CastLike fold small float initializers (ElementwiseHandlers.cpp).
  const KnownTensor *foldable(unsigned i) const;
  /// True when input `i` is a float initializer with a role (a parameter,
  /// state or frozen constant): an argument of @forward, never folded.
  bool isWeight(unsigned i) const;
  /// Input `i` must be known integers (e.g. a Reshape shape); else error.
  mlir::FailureOr<llvm::SmallVector<int64_t>> knownInts(unsigned i,
                                                        llvm::StringRef what);
  /// Input `i` must be a known scalar float (e.g. a Clip bound); else error.
  mlir::FailureOr<double> knownScalar(unsigned i, llvm::StringRef what);
  /// Ranked tensor type of input `i` (materializing it if needed).
  mlir::FailureOr<mlir::RankedTensorType> inputType(unsigned i);

  // ---- attributes --------------------------------------------------------
  // Each getter checks the attribute's declared type (a STRING where an INT
  // belongs is not read as 0): a mismatch is recorded, and the node fails
  // with it once its handler returns (attributeError()).
  const onnx::AttributeProto *attribute(llvm::StringRef name) const;
  int64_t getInt(llvm::StringRef name, int64_t defaultValue) const;
  /// An INT attribute that is a flag: 0 or 1, nothing else.
  bool getBool(llvm::StringRef name, bool defaultValue) const;
  double getFloat(llvm::StringRef name, double defaultValue) const;
  std::string getString(llvm::StringRef name,
                        llvm::StringRef defaultValue) const;
  llvm::SmallVector<int64_t> getInts(llvm::StringRef name) const;
  /// The first attribute a getter found wrong ("" if none).
  const std::string &attributeError() const { return attributeError_; }

  // ---- building ----------------------------------------------------------
  mlir::OpBuilder &builder();
  mlir::Location loc() const { return loc_; }
  mlir::MLIRContext *context();
  /// Creates `opName` with result types inferred by the op itself. An
  /// inference failure becomes an error naming this node.
  mlir::FailureOr<mlir::Operation *>
  createOp(llvm::StringRef opName, mlir::ValueRange operands,
           llvm::ArrayRef<mlir::NamedAttribute> attributes = {});
  template <typename OpTy>
  mlir::FailureOr<mlir::Value>
  create(mlir::ValueRange operands,
         llvm::ArrayRef<mlir::NamedAttribute> attributes = {}) {
    auto op = createOp(OpTy::getOperationName(), operands, attributes);
    if (mlir::failed(op))
      return mlir::failure();
    return (*op)->getResult(0);
  }
  mlir::NamedAttribute namedAttr(llvm::StringRef name, mlir::Attribute value);
  mlir::NamedAttribute i64Attr(llvm::StringRef name, int64_t value);
  mlir::NamedAttribute f64Attr(llvm::StringRef name, double value);
  mlir::NamedAttribute boolAttr(llvm::StringRef name, bool value);
  mlir::NamedAttribute arrayAttr(llvm::StringRef name,
                                 llvm::ArrayRef<int64_t> values);

  // ---- outputs -----------------------------------------------------------
  unsigned numOutputs() const { return node_.output_size(); }
  /// True when output `i` exists and some node or graph output reads it.
  bool outputUsed(unsigned i) const;
  void setOutput(unsigned i, mlir::Value value);
  void setKnownOutput(unsigned i, KnownTensor value);
  /// Sequences (SplitToSequence, SequenceAt): output `i` as a list of
  /// tensors, and input `i`'s list (an error if it is not a sequence).
  void setSequenceOutput(unsigned i, llvm::SmallVector<mlir::Value> values);
  mlir::FailureOr<llvm::ArrayRef<mlir::Value>> sequenceInput(unsigned i);

  // ---- diagnostics -------------------------------------------------------
  /// Reports "node 'NAME' (OpType): message" and returns failure.
  mlir::LogicalResult error(const llvm::Twine &message);
  void warning(const llvm::Twine &message);
  /// A warning about every node of a kind: given at the first one only.
  void warnOnce(const std::string &kind, const llvm::Twine &message);

  // ---- axes and the batch ------------------------------------------------
  /// Maps an ONNX axis in [-rank, rank) to [0, rank); error otherwise.
  mlir::FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank);
  /// For a shape vector this node computed from its inputs: which entries
  /// change with the batch size. The importer runs once with a probe batch
  /// size and once with the real one; `key` names the vector within the
  /// node. Returns all-false during the probe run.
  llvm::SmallVector<bool> batchDependence(llvm::StringRef key,
                                          llvm::ArrayRef<int64_t> values);

private:
  ImportState &state_;
  const onnx::NodeProto &node_;
  size_t nodeIndex_;
  mlir::Location loc_;
  mutable std::string attributeError_;

  /// `attr` (non-null) has the type `expected`; else records the error.
  bool typed(const onnx::AttributeProto *attr, int expected) const;
};

/// graph.slice of `input` along `axis` from `start` to `end` by `step`
/// (normalized as graph.slice takes them); every other dimension whole.
mlir::FailureOr<mlir::Value> sliceAxis(NodeImporter &n, mlir::Value input,
                                       int64_t axis, int64_t start, int64_t end,
                                       int64_t step = 1);

using NodeHandler = mlir::LogicalResult (*)(NodeImporter &);
using HandlerTable = llvm::StringMap<NodeHandler>;

void registerElementwiseHandlers(HandlerTable &table);
void registerShapeHandlers(HandlerTable &table);
void registerPadHandler(HandlerTable &table);
void registerGatherHandlers(HandlerTable &table);
void registerResizeHandler(HandlerTable &table);
void registerCompositeHandlers(HandlerTable &table);
void registerSplitHandlers(HandlerTable &table);
void registerEinsumHandler(HandlerTable &table);
void registerNeuralHandlers(HandlerTable &table);
void registerLossHandlers(HandlerTable &table);
void registerTrainingHandlers(HandlerTable &table);

/// The domain of ONNX's training operators (Adam, Adagrad, Momentum);
/// trainc reads its version 1.
inline constexpr llvm::StringLiteral kTrainingDomain =
    "ai.onnx.preview.training";

/// A node's key in the handler table: its op type in the default domain,
/// "DOMAIN::OpType" in any other, so that a domain's ops never answer for
/// another's.
std::string handlerKey(const onnx::NodeProto &node);

/// The table of every supported ONNX op (see handlerKey).
const HandlerTable &handlerTable();

} // namespace trainc::import

#endif // TRAINC_LIB_IMPORT_NODEIMPORTER_H
