//===- NodeImporter.cpp - per-node import context -------------------------===//
#include "lib/Import/ImportState.h"

#include "dialects/graph/GraphOps.h"

#include "mlir/IR/Verifier.h"

using namespace mlir;

namespace trainc::import {

//===----------------------------------------------------------------------===//
// ImportState
//===----------------------------------------------------------------------===//

FailureOr<Value> ImportState::initializerArgument(llvm::StringRef name,
                                                  Location loc) {
  const onnx::TensorProto *tensor = initializers.lookup(name);
  Type elementType = elementTypeFor(tensor->data_type(), context);
  if (!elementType) {
    error = "initializer '" + name.str() + "' has unsupported data type " +
            onnxTypeName(tensor->data_type());
    return failure();
  }
  SmallVector<int64_t> shape(tensor->dims().begin(), tensor->dims().end());
  Block &entry = function.getBody().front();
  Value argument =
      entry.addArgument(RankedTensorType::get(shape, elementType), loc);
  initializerArguments.push_back(name.str());
  values[name].value = argument;
  return argument;
}

//===----------------------------------------------------------------------===//
// NodeImporter
//===----------------------------------------------------------------------===//

static Location nodeLocation(ImportState &state, const onnx::NodeProto &node,
                             size_t index) {
  std::string name = node.name().empty()
                         ? node.op_type() + "#" + std::to_string(index)
                         : node.name();
  return NameLoc::get(
      StringAttr::get(&state.context, name),
      FileLineColLoc::get(&state.context, state.fileName, 0, 0));
}

NodeImporter::NodeImporter(ImportState &state, const onnx::NodeProto &node,
                           size_t nodeIndex)
    : state_(state), node_(node), nodeIndex_(nodeIndex),
      loc_(nodeLocation(state, node, nodeIndex)) {}

int64_t NodeImporter::opset() const { return state_.opset; }
const ImportOptions &NodeImporter::options() const { return state_.options; }
OpBuilder &NodeImporter::builder() { return state_.builder; }
MLIRContext *NodeImporter::context() { return &state_.context; }

bool NodeImporter::hasInput(unsigned i) const {
  return static_cast<int>(i) < node_.input_size() && !node_.input(i).empty();
}

const KnownTensor *NodeImporter::known(unsigned i) const {
  if (!hasInput(i))
    return nullptr;
  auto it = state_.values.find(node_.input(i));
  if (it == state_.values.end() || !it->second.known)
    return nullptr;
  return &*it->second.known;
}

const KnownTensor *NodeImporter::foldable(unsigned i) const {
  const KnownTensor *value = known(i);
  return value && value->isFloat() && isWeight(i) ? nullptr : value;
}

bool NodeImporter::isWeight(unsigned i) const {
  return hasInput(i) && state_.initializers.count(node_.input(i)) &&
         state_.roles.count(node_.input(i));
}

FailureOr<Value> NodeImporter::input(unsigned i) {
  if (!hasInput(i)) {
    (void)error("input " + std::to_string(i) + " is missing");
    return failure();
  }
  const std::string &name = node_.input(i);
  auto it = state_.values.find(name);
  if (it != state_.values.end() && it->second.value)
    return it->second.value;
  if (state_.initializers.count(name) && state_.roles.count(name)) {
    auto argument = state_.initializerArgument(name, loc_);
    if (failed(argument))
      return failure();
    return *argument;
  }
  if (it == state_.values.end() || !it->second.known) {
    (void)error("input '" + name + "' has no value");
    return failure();
  }
  // A value known at import time, used as data: materialize a constant.
  auto constant = create<graph::ConstantOp>(
      {}, {namedAttr("value", it->second.known->toAttr())});
  if (failed(constant))
    return failure();
  state_.values[name].value = *constant;
  return *constant;
}

FailureOr<SmallVector<int64_t>> NodeImporter::knownInts(unsigned i,
                                                        llvm::StringRef what) {
  const KnownTensor *value = known(i);
  if (!value || value->isFloat()) {
    (void)error(what + " (input " + std::to_string(i) +
                ") must be an integer constant or computed from shapes");
    return failure();
  }
  return value->ints;
}

FailureOr<double> NodeImporter::knownScalar(unsigned i, llvm::StringRef what) {
  const KnownTensor *value = known(i);
  if (!value || value->numElements() != 1) {
    (void)error(what + " (input " + std::to_string(i) +
                ") must be a constant scalar");
    return failure();
  }
  return value->isFloat() ? value->floats[0]
                          : static_cast<double>(value->ints[0]);
}

FailureOr<RankedTensorType> NodeImporter::inputType(unsigned i) {
  auto value = input(i);
  if (failed(value))
    return failure();
  auto type = dyn_cast<RankedTensorType>(value->getType());
  if (!type) {
    (void)error("input " + std::to_string(i) + " is not a ranked tensor");
    return failure();
  }
  return type;
}

const onnx::AttributeProto *
NodeImporter::attribute(llvm::StringRef name) const {
  for (const auto &attr : node_.attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

bool NodeImporter::typed(const onnx::AttributeProto *attr, int expected) const {
  // Writers that leave `type` unset (old exporters) are taken at their
  // word.
  if (attr->type() == onnx::AttributeProto::UNDEFINED ||
      attr->type() == expected)
    return true;
  auto name = [](int type) {
    return onnx::AttributeProto::AttributeType_IsValid(type)
               ? onnx::AttributeProto::AttributeType_Name(
                     static_cast<onnx::AttributeProto::AttributeType>(type))
               : "type " + std::to_string(type);
  };
  if (attributeError_.empty())
    attributeError_ = "attribute '" + attr->name() + "' must be " +
                      name(expected) + ", got " + name(attr->type());
  return false;
}

int64_t NodeImporter::getInt(llvm::StringRef name, int64_t defaultValue) const {
  const auto *attr = attribute(name);
  return attr && typed(attr, onnx::AttributeProto::INT) ? attr->i()
                                                        : defaultValue;
}

bool NodeImporter::getBool(llvm::StringRef name, bool defaultValue) const {
  const auto *attr = attribute(name);
  if (!attr || !typed(attr, onnx::AttributeProto::INT))
    return defaultValue;
  if (attr->i() != 0 && attr->i() != 1) {
    if (attributeError_.empty())
      attributeError_ = "attribute '" + attr->name() +
                        "' must be 0 or 1, got " + std::to_string(attr->i());
    return defaultValue;
  }
  return attr->i() == 1;
}

double NodeImporter::getFloat(llvm::StringRef name, double defaultValue) const {
  const auto *attr = attribute(name);
  return attr && typed(attr, onnx::AttributeProto::FLOAT) ? attr->f()
                                                          : defaultValue;
}

std::string NodeImporter::getString(llvm::StringRef name,
                                    llvm::StringRef defaultValue) const {
  const auto *attr = attribute(name);
  return attr && typed(attr, onnx::AttributeProto::STRING) ? attr->s()
                                                           : defaultValue.str();
}

SmallVector<int64_t> NodeImporter::getInts(llvm::StringRef name) const {
  const auto *attr = attribute(name);
  if (!attr || !typed(attr, onnx::AttributeProto::INTS))
    return {};
  return SmallVector<int64_t>(attr->ints().begin(), attr->ints().end());
}

FailureOr<Operation *>
NodeImporter::createOp(llvm::StringRef opName, ValueRange operands,
                       ArrayRef<NamedAttribute> attributes) {
  MLIRContext *ctx = context();
  auto name = RegisteredOperationName::lookup(opName, ctx);
  auto *inference = name ? name->getInterface<InferTypeOpInterface>() : nullptr;
  if (!inference)
    return error("internal: " + opName + " cannot infer its result types");

  // Inference reads attributes through the op's properties, so build a
  // temporary properties object from the attribute dictionary.
  NamedAttrList attrList(attributes);
  DictionaryAttr dictionary = attrList.getDictionary(ctx);
  SmallVector<char> storage(std::max(name->getOpPropertyByteSize(), 1) + 16);
  void *aligned = reinterpret_cast<void *>(
      (reinterpret_cast<uintptr_t>(storage.data()) + 15) & ~uintptr_t(15));
  OpaqueProperties properties(aligned);
  name->initOpProperties(properties, OpaqueProperties(nullptr));
  auto emitPropertyError = [&]() {
    return mlir::emitError(loc_, "invalid attributes for " + opName + ": ");
  };
  LogicalResult propertiesSet =
      name->getOpPropertyByteSize() == 0
          ? success()
          : name->setOpPropertiesFromAttribute(*name, properties, dictionary,
                                               emitPropertyError);
  SmallVector<Type> resultTypes;
  LogicalResult inferred =
      succeeded(propertiesSet)
          ? inference->inferReturnTypes(ctx, loc_, operands, dictionary,
                                        properties, /*regions=*/{}, resultTypes)
          : failure();
  name->destroyOpProperties(properties);
  if (failed(inferred)) {
    std::string message;
    for (const std::string &diagnostic : state_.pendingDiagnostics)
      message += (message.empty() ? "" : "; ") + diagnostic;
    state_.pendingDiagnostics.clear();
    return error(message.empty() ? "cannot infer the result type" : message);
  }

  OperationState opState(loc_, *name);
  opState.addOperands(operands);
  opState.addAttributes(attributes);
  opState.addTypes(resultTypes);
  Operation *op = builder().create(opState);
  // Operand constraints (e.g. a float-only op given integers) are checked by
  // the verifier, not by inference: run it here so the node is named.
  if (failed(mlir::verify(op))) {
    std::string message;
    for (const std::string &diagnostic : state_.pendingDiagnostics)
      message += (message.empty() ? "" : "; ") + diagnostic;
    state_.pendingDiagnostics.clear();
    op->erase();
    return error(message.empty() ? "the op does not verify" : message);
  }
  return op;
}

NamedAttribute NodeImporter::namedAttr(llvm::StringRef name, Attribute value) {
  return builder().getNamedAttr(name, value);
}
NamedAttribute NodeImporter::i64Attr(llvm::StringRef name, int64_t value) {
  return namedAttr(name, builder().getI64IntegerAttr(value));
}
NamedAttribute NodeImporter::f64Attr(llvm::StringRef name, double value) {
  return namedAttr(name, builder().getF64FloatAttr(value));
}
NamedAttribute NodeImporter::boolAttr(llvm::StringRef name, bool value) {
  return namedAttr(name, builder().getBoolAttr(value));
}
NamedAttribute NodeImporter::arrayAttr(llvm::StringRef name,
                                       ArrayRef<int64_t> values) {
  return namedAttr(name, builder().getDenseI64ArrayAttr(values));
}

bool NodeImporter::outputUsed(unsigned i) const {
  if (static_cast<int>(i) >= node_.output_size() || node_.output(i).empty())
    return false;
  return state_.useCounts.lookup(node_.output(i)) > 0;
}

void NodeImporter::setOutput(unsigned i, Value value) {
  if (static_cast<int>(i) < node_.output_size() && !node_.output(i).empty())
    state_.values[node_.output(i)].value = value;
}

void NodeImporter::setKnownOutput(unsigned i, KnownTensor value) {
  if (static_cast<int>(i) < node_.output_size() && !node_.output(i).empty())
    state_.values[node_.output(i)] = ImportedValue{Value(), std::move(value)};
}

void NodeImporter::setSequenceOutput(unsigned i, SmallVector<Value> values) {
  if (static_cast<int>(i) < node_.output_size() && !node_.output(i).empty())
    state_.sequences[node_.output(i)] = std::move(values);
}

FailureOr<ArrayRef<Value>> NodeImporter::sequenceInput(unsigned i) {
  auto it = static_cast<int>(i) < node_.input_size()
                ? state_.sequences.find(node_.input(i))
                : state_.sequences.end();
  if (it == state_.sequences.end()) {
    (void)error("input " + std::to_string(i) +
                " is not a sequence made by SplitToSequence");
    return failure();
  }
  return ArrayRef<Value>(it->second);
}

LogicalResult NodeImporter::error(const llvm::Twine &message) {
  if (state_.error.empty()) {
    std::string name = node_.name().empty()
                           ? node_.op_type() + "#" + std::to_string(nodeIndex_)
                           : node_.name();
    state_.error =
        "node '" + name + "' (" + node_.op_type() + "): " + message.str();
  }
  return failure();
}

void NodeImporter::warning(const llvm::Twine &message) {
  if (state_.probing)
    return;
  state_.warnings.push_back("node '" + node_.name() + "' (" + node_.op_type() +
                            "): " + message.str());
}

void NodeImporter::warnOnce(const std::string &kind,
                            const llvm::Twine &message) {
  if (!state_.probing && state_.warnedOnce.insert(kind).second)
    warning(message);
}

FailureOr<int64_t> NodeImporter::normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    (void)error("axis " + std::to_string(axis) + " is out of range for rank " +
                std::to_string(rank));
    return failure();
  }
  return axis < 0 ? axis + rank : axis;
}

SmallVector<bool> NodeImporter::batchDependence(llvm::StringRef key,
                                                ArrayRef<int64_t> values) {
  SmallVector<bool> dependent(values.size(), false);
  if (!state_.probeRecords)
    return dependent;
  auto recordKey = std::make_pair(nodeIndex_, key.str());
  if (state_.probing) {
    (*state_.probeRecords)[recordKey] = SmallVector<int64_t>(values);
    return dependent;
  }
  auto it = state_.probeRecords->find(recordKey);
  if (it == state_.probeRecords->end() || it->second.size() != values.size())
    return dependent;
  for (size_t i = 0; i < values.size(); ++i)
    dependent[i] = it->second[i] != values[i];
  return dependent;
}

FailureOr<Value> sliceAxis(NodeImporter &n, Value input, int64_t axis,
                           int64_t start, int64_t end, int64_t step) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(input.getType()).getShape();
  SmallVector<int64_t> starts(shape.size(), 0), ends(shape),
      steps(shape.size(), 1);
  starts[axis] = start;
  ends[axis] = end;
  steps[axis] = step;
  return n.create<graph::SliceOp>({input}, {n.arrayAttr("starts", starts),
                                            n.arrayAttr("ends", ends),
                                            n.arrayAttr("steps", steps)});
}

} // namespace trainc::import
