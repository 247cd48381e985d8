//===- OnnxImporter.cpp - ONNX ModelProto to graph dialect ----------------===//
//
// The flow of one import:
//   1. parse and validate the model (opset range, supported ops, every
//      input defined, no cycle) and order the nodes topologically;
//   2. give every initializer its role (parameter, state, constant);
//   3. run the node handlers twice: once at a probe batch size, recording
//      every shape vector a node computes, and once at the real batch
//      size; entries that differ between the runs depend on the batch and
//      are written batch-relatively (0 / -1);
//   4. canonicalize and verify.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/ImportState.h"

#include "dialects/graph/GraphOps.h"
#include "dialects/graph/ShapeInference.h"
#include "trainc/Import.h"

#include "mlir/Dialect/Func/Extensions/InlinerExtension.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"

#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

using namespace mlir;

namespace trainc {

using import::ImportState;
using import::NodeImporter;

/// Whether a float initializer holds an infinity or a NaN (its exponent
/// bits all ones).
static bool holdsNonFinite(const WeightTensor &weight) {
  auto scan = [&](auto bits, auto exponent) {
    using Bits = decltype(bits);
    size_t count = weight.bytes.size() / sizeof(Bits);
    for (size_t i = 0; i < count; ++i) {
      Bits value;
      std::memcpy(&value, weight.bytes.data() + i * sizeof(Bits), sizeof(Bits));
      if ((value & exponent) == exponent)
        return true;
    }
    return false;
  };
  if (weight.dtype == "f32")
    return scan(uint32_t(), uint32_t(0x7f800000));
  if (weight.dtype == "f64")
    return scan(uint64_t(), uint64_t(0x7ff0000000000000));
  if (weight.dtype == "f16")
    return scan(uint16_t(), uint16_t(0x7c00));
  if (weight.dtype == "bf16")
    return scan(uint16_t(), uint16_t(0x7f80));
  return false;
}

static llvm::Error makeError(const std::string &file, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 file + ": " + message.str());
}

void registerImportDialects(MLIRContext &context) {
  // The func dialect's inliner extension lets the pipelines inline calls.
  DialectRegistry registry;
  func::registerInlinerExtension(registry);
  context.appendDialectRegistry(registry);
  context.loadDialect<func::FuncDialect, graph::GraphDialect>();
}

namespace {

constexpr int64_t kMinOpset = 13;
constexpr int64_t kMaxOpset = 21;
/// The version of ai.onnx.preview.training trainc reads.
constexpr int64_t kTrainingOpset = 1;
/// The default-domain opset of a model that imports only the training
/// domain.
constexpr int64_t kTrainingOnlyOpset = 17;

/// Structural checks that need no op knowledge, and the node order.
struct GraphPlan {
  std::vector<size_t> order; ///< node indices, producers first
};

std::string nodeName(const onnx::NodeProto &node, size_t index) {
  return node.name().empty() ? node.op_type() + "#" + std::to_string(index)
                             : node.name();
}

llvm::Expected<GraphPlan> planGraph(const onnx::GraphProto &graph,
                                    const std::string &file) {
  // Every op type must have a handler; list all that do not at once.
  std::map<std::string, std::vector<std::string>> unsupported;
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto &node = graph.node(i);
    std::string key = import::handlerKey(node);
    if (!import::handlerTable().count(key))
      unsupported[key].push_back(nodeName(node, i));
  }
  if (!unsupported.empty()) {
    std::string message = "unsupported ONNX ops:";
    for (auto &[type, nodes] : unsupported) {
      message += " " + type + " (node" + (nodes.size() > 1 ? "s " : " ");
      for (size_t i = 0; i < nodes.size() && i < 5; ++i)
        message += (i ? ", " : "") + nodes[i];
      if (nodes.size() > 5)
        message += ", and " + std::to_string(nodes.size() - 5) + " more";
      message += ")";
    }
    return makeError(file, message);
  }

  // Who defines each value name.
  std::set<std::string> external;
  for (const auto &input : graph.input())
    external.insert(input.name());
  for (const auto &initializer : graph.initializer())
    external.insert(initializer.name());
  std::map<std::string, size_t> producer;
  for (int i = 0; i < graph.node_size(); ++i) {
    for (const std::string &output : graph.node(i).output()) {
      if (output.empty())
        continue;
      if (external.count(output))
        return makeError(file, "node '" + nodeName(graph.node(i), i) +
                                   "' redefines '" + output +
                                   "', a graph input or initializer");
      auto [it, inserted] = producer.emplace(output, i);
      if (!inserted)
        return makeError(file, "value '" + output + "' is produced by both '" +
                                   nodeName(graph.node(it->second), it->second) +
                                   "' and '" + nodeName(graph.node(i), i) + "'");
    }
  }

  // Kahn's algorithm over node -> node edges.
  size_t count = graph.node_size();
  std::vector<std::vector<size_t>> users(count);
  std::vector<size_t> pending(count, 0);
  for (size_t i = 0; i < count; ++i) {
    const auto &node = graph.node(i);
    for (const std::string &input : node.input()) {
      if (input.empty() || external.count(input))
        continue;
      auto it = producer.find(input);
      if (it == producer.end())
        return makeError(file, "node '" + nodeName(node, i) + "' (" +
                                   node.op_type() + ") reads '" + input +
                                   "', which no node, graph input or "
                                   "initializer defines");
      users[it->second].push_back(i);
      ++pending[i];
    }
  }
  GraphPlan plan;
  std::vector<size_t> ready;
  for (size_t i = count; i-- > 0;)
    if (pending[i] == 0)
      ready.push_back(i);
  while (!ready.empty()) {
    size_t node = ready.back();
    ready.pop_back();
    plan.order.push_back(node);
    for (auto user = users[node].rbegin(); user != users[node].rend(); ++user)
      if (--pending[*user] == 0)
        ready.push_back(*user);
  }
  if (plan.order.size() != count) {
    std::string names;
    size_t listed = 0;
    for (size_t i = 0; i < count && listed < 5; ++i)
      if (pending[i] > 0)
        names += (listed++ ? ", " : "") + nodeName(graph.node(i), i);
    return makeError(file, "the graph has a cycle through nodes " + names);
  }
  for (const auto &output : graph.output())
    if (!producer.count(output.name()) && !external.count(output.name()))
      return makeError(file, "graph output '" + output.name() +
                                 "' is not produced by any node");
  return plan;
}

/// The batch dimension(s) of the graph inputs: every dim with a dim_param
/// (all must name the same symbol), or else dim 0 of every input.
struct BatchInfo {
  std::string symbol; ///< empty when the model's batch is static
  int64_t staticSize = 0;
  /// Per graph input (by name): which dims are the batch.
  std::map<std::string, std::vector<bool>> dims;
};

llvm::Expected<BatchInfo> findBatch(const onnx::GraphProto &graph,
                                    const std::set<std::string> &initializers,
                                    const std::string &file) {
  BatchInfo info;
  for (const auto &input : graph.input()) {
    if (initializers.count(input.name()))
      continue;
    if (info.dims.count(input.name()))
      return makeError(file,
                       "graph input '" + input.name() + "' is declared twice");
    if (!input.type().has_tensor_type() ||
        !input.type().tensor_type().has_shape())
      return makeError(file, "graph input '" + input.name() +
                                 "' has no tensor shape; trainc needs static "
                                 "shapes except for the batch dimension");
    const auto &shape = input.type().tensor_type().shape();
    std::vector<bool> batchDims(shape.dim_size(), false);
    for (int d = 0; d < shape.dim_size(); ++d) {
      const auto &dim = shape.dim(d);
      if (dim.has_dim_value())
        continue;
      std::string symbol = dim.has_dim_param() ? dim.dim_param() : "?";
      if (!info.symbol.empty() && info.symbol != symbol)
        return makeError(file, "graph inputs use several symbolic dimensions ('" +
                                   info.symbol + "' and '" + symbol +
                                   "'); only a symbolic batch is supported");
      info.symbol = symbol;
      batchDims[d] = true;
    }
    info.dims[input.name()] = batchDims;
  }
  if (info.symbol.empty()) {
    // Static model: the batch is dim 0 of the first input that has one, and
    // dim 0 of every other input of the same size (a model whose inputs
    // disagree there, e.g. a bare MatMul, keeps those inputs as they are).
    for (const auto &input : graph.input()) {
      auto it = info.dims.find(input.name());
      if (it == info.dims.end() || it->second.empty() ||
          input.type().tensor_type().shape().dim_size() == 0)
        continue;
      int64_t size = input.type().tensor_type().shape().dim(0).dim_value();
      if (info.staticSize == 0)
        info.staticSize = size;
      it->second[0] = size == info.staticSize;
    }
  }
  return info;
}

/// Runs every node handler at `batchSize` into a fresh module. Returns the
/// module, or null with `state.error` set.
OwningOpRef<ModuleOp> runNodes(ImportState &state, const GraphPlan &plan,
                               const BatchInfo &batch, int64_t batchSize) {
  MLIRContext &ctx = state.context;
  OpBuilder &b = state.builder;
  Location fileLoc = FileLineColLoc::get(&ctx, state.fileName, 0, 0);
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  b.setInsertionPointToEnd(module->getBody());
  auto function =
      func::FuncOp::create(b, fileLoc, "forward", b.getFunctionType({}, {}));
  state.function = function;
  Block *entry = function.addEntryBlock();
  b.setInsertionPointToStart(entry);
  state.batchSize = batchSize;

  // Graph inputs become the first arguments.
  std::vector<std::string> inputNames;
  for (const auto &input : state.graph.input()) {
    if (state.initializers.count(input.name()))
      continue;
    const auto &tensorType = input.type().tensor_type();
    Type elementType = import::elementTypeFor(tensorType.elem_type(), ctx);
    if (!elementType) {
      state.error = "graph input '" + input.name() + "' has unsupported type " +
                    import::onnxTypeName(tensorType.elem_type());
      return nullptr;
    }
    SmallVector<int64_t> shape;
    const auto &batchDims = batch.dims.at(input.name());
    for (int d = 0; d < tensorType.shape().dim_size(); ++d)
      shape.push_back(batchDims[d] ? batchSize
                                   : tensorType.shape().dim(d).dim_value());
    if (std::string bad = import::checkShape(
            shape, (elementType.getIntOrFloatBitWidth() + 7) / 8, 1);
        !bad.empty()) {
      state.error = "graph input '" + input.name() + "' has " + bad;
      return nullptr;
    }
    Value argument =
        entry->addArgument(RankedTensorType::get(shape, elementType), fileLoc);
    state.values[input.name()].value = argument;
    inputNames.push_back(input.name());
  }

  // Diagnostics from op inference are collected, then reported by the node.
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diagnostic) {
    if (diagnostic.getSeverity() == DiagnosticSeverity::Error)
      state.pendingDiagnostics.push_back(diagnostic.str());
    return success();
  });

  for (size_t index : plan.order) {
    const onnx::NodeProto &node = state.graph.node(index);
    NodeImporter importer(state, node, index);
    auto handler = import::handlerTable().lookup(import::handlerKey(node));
    bool imported = succeeded(handler(importer));
    // A wrong attribute is the cause of whatever followed from it.
    if (!importer.attributeError().empty()) {
      state.error.clear();
      (void)importer.error(importer.attributeError());
      return nullptr;
    }
    if (!imported) {
      if (state.error.empty())
        (void)importer.error("import failed");
      return nullptr;
    }
    for (int i = 0; i < node.output_size(); ++i) {
      const std::string &name = node.output(i);
      if (name.empty() || state.useCounts.lookup(name) == 0 ||
          state.sequences.count(name))
        continue;
      auto it = state.values.find(name);
      if (it == state.values.end() || (!it->second.value && !it->second.known)) {
        (void)importer.error("output " + std::to_string(i) + " ('" + name +
                             "') is used but was not produced");
        return nullptr;
      }
      // Shapes computed from the model's data (Reshape targets, Expand,
      // ConstantOfShape) must be static and fit.
      if (Value value = it->second.value) {
        auto type = dyn_cast<RankedTensorType>(value.getType());
        std::string bad =
            !type || !type.hasStaticShape()
                ? std::string("a shape that is not static")
                : import::checkShape(
                      type.getShape(),
                      (type.getElementType().getIntOrFloatBitWidth() + 7) / 8);
        if (!bad.empty()) {
          (void)importer.error("output " + std::to_string(i) + " ('" + name +
                               "') has " + bad);
          return nullptr;
        }
      }
    }
  }

  // Graph outputs, checked against their declared shapes.
  SmallVector<Value> results;
  SmallVector<Attribute> resultAttrs;
  for (const auto &output : state.graph.output()) {
    auto it = state.values.find(output.name());
    Value value = it != state.values.end() ? it->second.value : Value();
    if (!value && it != state.values.end() && it->second.known) {
      NamedAttrList attrs;
      attrs.append("value", it->second.known->toAttr());
      OperationState opState(fileLoc, graph::ConstantOp::getOperationName());
      opState.addAttributes(attrs);
      opState.addTypes(it->second.known->toAttr().getType());
      value = b.create(opState)->getResult(0);
    }
    if (!value) {
      // An initializer returned as is.
      auto argument = state.initializerArgument(output.name(), fileLoc);
      if (failed(argument))
        return nullptr;
      value = *argument;
    }
    auto type = cast<RankedTensorType>(value.getType());
    if (!state.probing && output.type().has_tensor_type() &&
        output.type().tensor_type().has_shape()) {
      const auto &declared = output.type().tensor_type().shape();
      // A static model re-batched with --batch declares the old size.
      bool rebatched = batch.symbol.empty() && batchSize != batch.staticSize;
      bool mismatch = declared.dim_size() != type.getRank();
      for (int d = 0; !mismatch && d < declared.dim_size(); ++d) {
        if (!declared.dim(d).has_dim_value())
          continue;
        int64_t expected = declared.dim(d).dim_value();
        mismatch = expected != type.getDimSize(d) &&
                   !(rebatched && expected == batch.staticSize &&
                     type.getDimSize(d) == batchSize);
      }
      if (mismatch) {
        std::string shape;
        for (int d = 0; d < declared.dim_size(); ++d)
          shape += (d ? "x" : "") + (declared.dim(d).has_dim_value()
                                         ? std::to_string(declared.dim(d).dim_value())
                                         : declared.dim(d).dim_param());
        state.error = "graph output '" + output.name() + "' is declared as " +
                      shape + " but the graph computes " +
                      graph::formatShape(type.getShape());
        return nullptr;
      }
    }
    results.push_back(value);
    resultAttrs.push_back(
        b.getDictionaryAttr({b.getNamedAttr(graph::kNameAttrName,
                                            b.getStringAttr(output.name()))}));
  }
  func::ReturnOp::create(b, fileLoc, results);

  // The signature and the role of every argument.
  function.setFunctionType(
      b.getFunctionType(entry->getArgumentTypes(), ValueRange(results).getTypes()));
  SmallVector<Attribute> argAttrs;
  auto describe = [&](StringRef name, StringRef role) {
    argAttrs.push_back(b.getDictionaryAttr(
        {b.getNamedAttr(graph::kNameAttrName, b.getStringAttr(name)),
         b.getNamedAttr(graph::kRoleAttrName, b.getStringAttr(role))}));
  };
  for (const std::string &name : inputNames)
    describe(name, graph::kRoleInput);
  for (const std::string &name : state.initializerArguments)
    describe(name, state.roles.lookup(name));
  function.setAllArgAttrs(argAttrs);
  function.setAllResultAttrs(resultAttrs);

  module->getOperation()->setAttr("graph.opset", b.getI64IntegerAttr(state.opset));
  module->getOperation()->setAttr("graph.batch_size", b.getI64IntegerAttr(batchSize));
  std::string producer = state.model.producer_name();
  if (!state.model.producer_version().empty())
    producer += " " + state.model.producer_version();
  if (!producer.empty())
    module->getOperation()->setAttr("graph.producer", b.getStringAttr(producer));
  return module;
}

} // namespace

llvm::Expected<ImportedModel> importOnnxBytes(MLIRContext &context,
                                              const std::string &bytes,
                                              const std::string &file,
                                              const ImportOptions &options) {
  registerImportDialects(context);
  if (bytes.empty())
    return makeError(file, "the file is empty, not an ONNX model");
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes))
    return makeError(file, "not a valid ONNX model (the protobuf does not "
                           "parse: truncated, corrupted or not ONNX)");
  if (!model.has_graph() || model.ir_version() <= 0)
    return makeError(file, "not a valid ONNX model (no graph or IR version)");
  if (llvm::Error error =
          loadExternalData(model, options.externalDataDirectory))
    return makeError(file, llvm::toString(std::move(error)));

  int64_t opset = 0, trainingOpset = 0;
  for (const auto &entry : model.opset_import()) {
    if (entry.domain().empty() || entry.domain() == "ai.onnx")
      opset = entry.version();
    else if (entry.domain() == import::kTrainingDomain)
      trainingOpset = entry.version();
  }
  if (trainingOpset != 0 && trainingOpset != kTrainingOpset)
    return makeError(file, std::string(import::kTrainingDomain) + " version " +
                               std::to_string(trainingOpset) +
                               " is not supported (trainc reads version " +
                               std::to_string(kTrainingOpset) + ")");
  for (int i = 0; i < model.graph().node_size(); ++i)
    if (model.graph().node(i).domain() == import::kTrainingDomain &&
        trainingOpset == 0)
      return makeError(file, "node '" + nodeName(model.graph().node(i), i) +
                                 "' uses " + import::kTrainingDomain.str() +
                                 ", which the model does not import");
  // A model of training operators only (an optimizer step exported on its
  // own) needs no default-domain op; it imports as opset 17.
  if (opset == 0 && trainingOpset != 0)
    opset = kTrainingOnlyOpset;
  if (opset == 0)
    return makeError(file, "the model imports no version of the ONNX opset");
  if (opset < kMinOpset || opset > kMaxOpset)
    return makeError(file, "opset " + std::to_string(opset) +
                               " is not supported (trainc reads opsets " +
                               std::to_string(kMinOpset) + " to " +
                               std::to_string(kMaxOpset) + ")");

  const onnx::GraphProto &graph = model.graph();
  auto plan = planGraph(graph, file);
  if (!plan)
    return plan.takeError();

  std::set<std::string> initializerNames;
  for (const auto &initializer : graph.initializer())
    initializerNames.insert(initializer.name());
  auto batch = findBatch(graph, initializerNames, file);
  if (!batch)
    return batch.takeError();

  llvm::Regex freeze(options.freezePattern);
  std::string regexError;
  if (!options.freezePattern.empty() && !freeze.isValid(regexError))
    return makeError(file, "invalid --freeze pattern '" + options.freezePattern +
                               "': " + regexError);

  int64_t batchSize = options.batchSize.value_or(
      batch->staticSize > 0 ? batch->staticSize : 1);
  if (batchSize <= 0)
    return makeError(file, "the batch size must be positive");

  // Every initializer's data must fill its shape, whether or not it is used.
  WeightStore allWeights;
  for (const auto &initializer : graph.initializer()) {
    std::string error;
    auto weight = import::decodeWeight(initializer, error);
    if (failed(weight))
      return makeError(file, error);
    allWeights[initializer.name()] = std::move(*weight);
  }
  // A float initializer holding an infinity or a NaN cannot be trained
  // (one update makes it NaN): it is a mask, such as a causal attention
  // mask of -inf that torch.export keeps as a buffer. It stays constant.
  std::vector<std::string> warnings;
  std::set<std::string> masks;
  for (const auto &[name, weight] : allWeights)
    if (holdsNonFinite(weight) &&
        !(!options.freezePattern.empty() && freeze.match(name))) {
      masks.insert(name);
      warnings.push_back("initializer '" + name +
                         "' holds infinities or NaNs: it is kept constant, "
                         "not trained (--freeze names such initializers "
                         "explicitly)");
    }

  // Prepares a state; called once per run.
  auto prepare = [&](ImportState &state) -> llvm::Error {
    state.opset = opset;
    state.options = options;
    for (const auto &node : graph.node())
      for (const std::string &input : node.input())
        if (!input.empty())
          ++state.useCounts[input];
    for (const auto &output : graph.output())
      ++state.useCounts[output.name()];
    // BatchNorm running statistics are state, not parameters.
    std::set<std::string> statistics;
    for (const auto &node : graph.node())
      if (node.op_type() == "BatchNormalization")
        for (int i = 3; i < std::min(5, node.input_size()); ++i)
          statistics.insert(node.input(i));
    for (const auto &initializer : graph.initializer()) {
      const std::string &name = initializer.name();
      state.initializers[name] = &initializer;
      Type type = import::elementTypeFor(initializer.data_type(), context);
      bool floating = type && isa<FloatType>(type);
      int64_t elements = 1;
      for (int64_t d : initializer.dims())
        elements *= d;
      if (floating) {
        state.roles[name] =
            statistics.count(name) ? graph::kRoleState
            : (masks.count(name) ||
               (!options.freezePattern.empty() && freeze.match(name)))
                ? graph::kRoleConstant
                : graph::kRoleParameter;
      }
      // Small values are also known at import time (shape arithmetic,
      // Clip bounds, Reshape targets).
      if (!floating || elements <= 16) {
        std::string error;
        auto known = import::decodeKnown(initializer, context, error);
        if (failed(known)) {
          if (!floating)
            return makeError(file, error);
          continue;
        }
        state.values[name].known = std::move(*known);
      }
    }
    return llvm::Error::success();
  };

  // Probe run: a different batch size reveals which computed shape
  // entries depend on the batch. A model whose shapes bake the batch size
  // in fails here; it is then imported as is, with a warning.
  import::ProbeRecords records;
  std::vector<std::string> probeWarnings = std::move(warnings);
  {
    ImportState probe(context, model, file);
    if (auto error = prepare(probe))
      return std::move(error);
    probe.probing = true;
    probe.probeRecords = &records;
    OwningOpRef<ModuleOp> probeModule =
        runNodes(probe, *plan, *batch, batchSize + 3);
    if (!probeModule) {
      records.clear();
      probeWarnings.push_back(
          "the model does not import with another batch size (" +
          probe.error + "); its shapes may bake in the batch size");
    }
  }

  ImportState state(context, model, file);
  if (auto error = prepare(state))
    return std::move(error);
  state.probeRecords = records.empty() ? nullptr : &records;
  OwningOpRef<ModuleOp> module = runNodes(state, *plan, *batch, batchSize);
  if (!module)
    return makeError(file, state.error);

  if (options.canonicalize) {
    PassManager pm(&context);
    pm.addPass(createCanonicalizerPass());
    if (failed(pm.run(*module)))
      return makeError(file, "canonicalization failed");
  }
  {
    std::string diagnostics;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diagnostic) {
      diagnostics += (diagnostics.empty() ? "" : "; ") + diagnostic.str();
      return success();
    });
    if (failed(verify(*module)))
      return makeError(file, "internal error: the imported IR does not "
                             "verify: " + diagnostics);
  }

  ImportedModel imported;
  imported.warnings = std::move(probeWarnings);
  llvm::append_range(imported.warnings, state.warnings);
  for (const std::string &name : state.initializerArguments)
    imported.weights[name] = std::move(allWeights[name]);
  imported.module = std::move(module);
  return imported;
}

llvm::Expected<ImportedModel> importOnnxFile(MLIRContext &context,
                                             const std::string &path,
                                             const ImportOptions &options) {
  // A regular file, at most protobuf's 2 GiB: never a device or a pipe
  // read without bound.
  llvm::sys::fs::file_status status;
  if (llvm::sys::fs::status(path, status))
    return makeError(path, "cannot open the file");
  if (status.type() != llvm::sys::fs::file_type::regular_file)
    return makeError(path, "not a regular file");
  constexpr uint64_t kMaxModelBytes = uint64_t(2) << 30;
  if (status.getSize() > kMaxModelBytes)
    return makeError(path, "larger than 2 GiB, protobuf's limit (save the "
                           "large tensors as external data)");
  std::ifstream stream(path, std::ios::binary);
  if (!stream)
    return makeError(path, "cannot open the file");
  std::string contents(status.getSize(), '\0');
  if (!stream.read(contents.data(), contents.size()))
    return makeError(path, "cannot read the file");
  ImportOptions fileOptions = options;
  llvm::SmallString<256> directory(path);
  llvm::sys::path::remove_filename(directory);
  fileOptions.externalDataDirectory =
      directory.empty() ? "." : directory.str().str();
  return importOnnxBytes(context, contents, path, fileOptions);
}

} // namespace trainc
