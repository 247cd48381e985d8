//===- LowerToKernel.cpp - --trainc-lower-to-kernel -----------------------===//
//
// Value-semantic graph functions to kernel launches on buffers. Buffer
// assignment is direct because the graph is a single block of ops with
// static shapes: every result gets a fresh buffer (kernel.alloc), except
// reshapes, which view their operand's buffer (kernel.view), and optimizer
// updates, which write their state in place when they are its last reader
// (directly or through a view).
//
//===----------------------------------------------------------------------===//
#include "dialects/graph/GraphOps.h"
#include "dialects/kernel/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

namespace trainc::kernel {
#define GEN_PASS_DEF_LOWERTOKERNELPASS
#include "dialects/kernel/Transforms/Passes.h.inc"
} // namespace trainc::kernel

using namespace mlir;
using namespace trainc;
using namespace trainc::kernel;

int64_t trainc::kernel::bufferBytes(MemRefType type) {
  unsigned bits = type.getElementTypeBitWidth();
  return type.getNumElements() * std::max<int64_t>(1, bits / 8);
}

namespace {

MemRefType bufferType(Type tensorType) {
  auto type = cast<RankedTensorType>(tensorType);
  return MemRefType::get(type.getShape(), type.getElementType());
}

/// The graph op's attributes: its properties (inherent) and the rest.
DictionaryAttr opAttributes(Operation *op) {
  NamedAttrList attrs;
  if (Attribute properties = op->getPropertiesAsAttribute())
    if (auto dictionary = dyn_cast<DictionaryAttr>(properties))
      attrs.append(dictionary.getValue());
  for (NamedAttribute attr : op->getDiscardableAttrs())
    attrs.set(attr.getName(), attr.getValue());
  return attrs.getDictionary(op->getContext());
}

/// For an optimizer update: result index -> the operand holding the state
/// that result replaces (param -> new_param, buffer -> new buffer, ...);
/// for a batch norm in training, its running statistics (every backend
/// may write them in place: lib/Runtime/kernels/README.md, Aliasing).
std::optional<unsigned> updatedOperand(Operation *op, unsigned result) {
  if (isa<graph::BatchNormTrainingOp>(op) && (result == 1 || result == 2))
    return result + 2; // running_mean = 3, running_var = 4
  if (isa<graph::SgdUpdateOp>(op))
    return result == 0 ? 0u : 4u;
  if (isa<graph::AdamUpdateOp>(op))
    return result == 0 ? 0u : result + 1; // exp_avg = 2, exp_avg_sq = 3
  if (isa<graph::AdagradUpdateOp>(op))
    return result == 0 ? 0u : 2u;
  return std::nullopt;
}

struct LowerToKernelPass
    : trainc::kernel::impl::LowerToKernelPassBase<LowerToKernelPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::string> names(functions.begin(), functions.end());
    if (names.empty())
      names = {"train_step", "eval"};
    SmallVector<func::FuncOp> lowered;
    for (const std::string &name : names) {
      auto function = module.lookupSymbol<func::FuncOp>(name);
      if (!function) {
        module.emitError("--trainc-lower-to-kernel: no function @") << name;
        return signalPassFailure();
      }
      FailureOr<func::FuncOp> result = lower(function);
      if (failed(result))
        return signalPassFailure();
      lowered.push_back(*result);
    }
    // Only the lowered functions remain, under their original names.
    for (func::FuncOp function :
         llvm::to_vector(module.getOps<func::FuncOp>()))
      if (!llvm::is_contained(lowered, function))
        function.erase();
    for (func::FuncOp function : lowered)
      function.setSymName(
          cast<StringAttr>(function->getAttr(kLoweredFromAttrName)).getValue());
  }

  FailureOr<func::FuncOp> lower(func::FuncOp source) {
    Block &body = source.getBody().front();
    auto returnOp = cast<func::ReturnOp>(body.getTerminator());
    OpBuilder b(source);

    // Signature: one buffer per argument, then one per result that does
    // not replace an argument.
    SmallVector<Type> argTypes;
    SmallVector<Attribute> argAttrs;
    for (unsigned i = 0; i < source.getNumArguments(); ++i) {
      argTypes.push_back(bufferType(source.getArgumentTypes()[i]));
      DictionaryAttr attrs = source.getArgAttrDict(i);
      argAttrs.push_back(attrs ? attrs : b.getDictionaryAttr({}));
    }
    SmallVector<std::optional<unsigned>> resultTarget; // argument index
    for (unsigned r = 0; r < source.getNumResults(); ++r) {
      auto updates = source.getResultAttrOfType<IntegerAttr>(
          r, graph::kUpdatesAttrName);
      if (updates) {
        resultTarget.push_back(updates.getInt());
        continue;
      }
      resultTarget.push_back(argTypes.size());
      argTypes.push_back(bufferType(source.getResultTypes()[r]));
      DictionaryAttr attrs = source.getResultAttrDict(r);
      NamedAttrList list(attrs ? attrs : b.getDictionaryAttr({}));
      if (!list.get(graph::kRoleAttrName))
        list.set(graph::kRoleAttrName, b.getStringAttr(graph::kRoleOutput));
      argAttrs.push_back(list.getDictionary(b.getContext()));
    }

    auto function = func::FuncOp::create(
        b, source.getLoc(), (source.getSymName() + ".lowered").str(),
        b.getFunctionType(argTypes, {}));
    function->setAttr(kLoweredFromAttrName, source.getSymNameAttr());
    function.setAllArgAttrs(argAttrs);
    Block *block = function.addEntryBlock();
    b.setInsertionPointToStart(block);

    DenseMap<Value, Value> buffers;
    for (unsigned i = 0; i < source.getNumArguments(); ++i)
      buffers[source.getArgument(i)] = block->getArgument(i);

    // Last op (in order) that reads each function argument, directly or
    // through views of it.
    DenseMap<Value, Value> viewed; // a view's result -> the viewed value
    auto root = [&](Value value) {
      while (Value source = viewed.lookup(value))
        value = source;
      return value;
    };
    DenseMap<Value, Operation *> lastReader;
    for (Operation &op : body) {
      if (isView(&op))
        viewed[op.getResult(0)] = op.getOperand(0);
      for (Value operand : op.getOperands())
        if (isa<BlockArgument>(root(operand)))
          lastReader[root(operand)] = &op;
    }

    for (Operation &op : body.without_terminator()) {
      if (!isa<graph::GraphDialect>(op.getDialect())) {
        op.emitError("cannot lower ") << op.getName()
                                      << " to kernels (inline calls first)";
        return failure();
      }
      Location loc = op.getLoc();
      if (auto constant = dyn_cast<graph::ConstantOp>(op)) {
        buffers[constant.getResult()] = ConstantOp::create(
            b, loc, bufferType(constant.getType()), constant.getValueAttr());
        continue;
      }
      if (isView(&op)) {
        buffers[op.getResult(0)] =
            ViewOp::create(b, loc, bufferType(op.getResult(0).getType()),
                           buffers.lookup(op.getOperand(0)));
        continue;
      }
      SmallVector<Value> inputs, outputs;
      for (Value operand : op.getOperands())
        inputs.push_back(buffers.lookup(operand));
      for (OpResult result : op.getResults()) {
        Value buffer;
        // An optimizer update writes its state in place when the state is
        // an argument that this op reads last and the result replaces it.
        if (auto operand = updatedOperand(&op, result.getResultNumber());
            operand && *operand < op.getNumOperands()) {
          Value state = op.getOperand(*operand);
          if (isa<BlockArgument>(state) && lastReader.lookup(state) == &op &&
              replacesArgument(result, returnOp, resultTarget,
                               cast<BlockArgument>(state).getArgNumber()))
            buffer = buffers.lookup(state);
        }
        if (!buffer)
          buffer = AllocOp::create(b, loc, bufferType(result.getType()),
                                   IntegerAttr());
        outputs.push_back(buffer);
        buffers[result] = buffer;
      }
      LaunchOp::create(b, loc, inputs, outputs, op.getName().getStringRef(),
                       opAttributes(&op));
    }

    // Results land in their argument buffers.
    for (auto [r, value] : llvm::enumerate(returnOp.getOperands())) {
      Value target = block->getArgument(*resultTarget[r]);
      Value buffer = buffers.lookup(value);
      if (buffer == target)
        continue;
      LaunchOp::create(b, returnOp.getLoc(), ValueRange{buffer},
                       ValueRange{target}, "runtime.copy",
                       b.getDictionaryAttr({}));
    }
    func::ReturnOp::create(b, returnOp.getLoc());
    return function;
  }

  /// Ops that only rename the elements of a dense buffer.
  static bool isView(Operation *op) {
    return isa<graph::ReshapeOp, graph::IdentityOp>(op);
  }

  /// Whether `result` is returned as the replacement of argument `index`.
  static bool replacesArgument(Value result, func::ReturnOp returnOp,
                               ArrayRef<std::optional<unsigned>> targets,
                               unsigned index) {
    for (auto [r, value] : llvm::enumerate(returnOp.getOperands()))
      if (value == result && targets[r] == index)
        return true;
    return false;
  }
};

} // namespace
