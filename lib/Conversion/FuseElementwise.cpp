//===- FuseElementwise.cpp - --trainc-fuse-elementwise --------------------===//
#include "lib/Conversion/Passes.h"

#include "dialects/loop/Schedule.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

namespace trainc::conversion {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace trainc::conversion

using namespace mlir;
using namespace trainc;

namespace {

/// The only nest of a generated elementwise kernel: every dimension
/// parallel, operands the function's arguments in order, outputs written
/// without being read, no input check, no loop.index.
loop::NestOp elementwiseNest(kernel::LaunchOp launch, SymbolTable &symbols) {
  if (!launch.getCallee() || !launch.getScratch().empty())
    return {};
  auto function = symbols.lookup<func::FuncOp>(*launch.getCallee());
  if (!function || function->hasAttr(loop::kCheckAttrName))
    return {};
  auto nests = function.getBody().getOps<loop::NestOp>();
  if (!llvm::hasSingleElement(nests))
    return {};
  loop::NestOp nest = *nests.begin();
  if (llvm::any_of(nest.getIterators(), [](Attribute iterator) {
        return cast<StringAttr>(iterator).getValue() != "parallel";
      }))
    return {};
  for (auto [i, operand] : llvm::enumerate(nest->getOperands())) {
    auto argument = dyn_cast<BlockArgument>(operand);
    if (!argument || argument.getArgNumber() != i)
      return {};
  }
  Block &body = nest.getBody().front();
  for (BlockArgument output :
       body.getArguments().drop_front(nest.getInputs().size()))
    if (!output.use_empty())
      return {};
  if (!body.getOps<loop::IndexOp>().empty())
    return {};
  return nest;
}

int64_t points(ArrayRef<int64_t> domain) {
  int64_t count = 1;
  for (int64_t extent : domain)
    count *= extent;
  return count;
}

/// Whether every buffer of `nest` is read or written whole (an identity
/// map) or is a scalar, so that the nest can run over any domain of the
/// same size.
bool isReshapable(loop::NestOp nest) {
  return llvm::all_of(nest.getIndexingMaps().getAsValueRange<AffineMapAttr>(),
                      [](AffineMap map) {
                        return map.isIdentity() || map.getNumResults() == 0;
                      });
}

/// Whether a launch strictly between `from` and `to` writes one of
/// `buffers` (through a view or not).
bool writtenBetween(ValueRange buffers, Operation *from, Operation *to) {
  auto root = [](Value buffer) {
    while (auto view = buffer.getDefiningOp<kernel::ViewOp>())
      buffer = view.getSource();
    return buffer;
  };
  for (Operation *op = from->getNextNode(); op && op != to;
       op = op->getNextNode())
    if (auto launch = dyn_cast<kernel::LaunchOp>(op))
      for (Value written : launch.getOutputs())
        for (Value buffer : buffers)
          if (root(written) == root(buffer))
            return true;
  return false;
}

/// One operand of the fused nest: the launch's buffer, how the kernel
/// function sees it and its map.
struct FusedOperand {
  Value buffer;
  MemRefType type;
  AffineMap map;
};

struct FuseElementwisePass
    : trainc::conversion::impl::FuseElementwisePassBase<FuseElementwisePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    for (auto function : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (function->hasAttr(loop::kKernelAttrName))
        continue;
      // In launch order: a producer is visited before its consumers, and a
      // fused launch is tried again at once (its own producers may fuse).
      Operation *op = &function.getBody().front().front();
      while (op) {
        auto launch = dyn_cast<kernel::LaunchOp>(op);
        kernel::LaunchOp fused = launch ? tryFuse(launch, symbols)
                                        : kernel::LaunchOp();
        op = fused ? fused.getOperation() : op->getNextNode();
      }
    }
    // Kernels no launch calls any more.
    llvm::DenseSet<StringRef> called;
    module.walk([&](kernel::LaunchOp launch) {
      if (auto callee = launch.getCallee())
        called.insert(*callee);
    });
    for (auto function : llvm::to_vector(module.getOps<func::FuncOp>()))
      if (function->hasAttr(loop::kKernelAttrName) &&
          !called.contains(function.getSymName()))
        function.erase();
  }

  /// Fuses the producer of one of `consumer`'s inputs into it; the launch
  /// that replaces both, or null.
  kernel::LaunchOp tryFuse(kernel::LaunchOp consumer, SymbolTable &symbols) {
    loop::NestOp consumerNest = elementwiseNest(consumer, symbols);
    if (!consumerNest)
      return {};
    for (auto [index, buffer] : llvm::enumerate(consumer.getInputs())) {
      auto alloc = buffer.getDefiningOp<kernel::AllocOp>();
      if (!alloc)
        continue;
      // The intermediate has one writer and this one reader.
      kernel::LaunchOp producer;
      bool onlyTheseTwo = true;
      for (Operation *user : buffer.getUsers()) {
        auto launch = dyn_cast<kernel::LaunchOp>(user);
        if (launch && launch != consumer && launch.getOutputs().size() == 1 &&
            launch.getOutputs()[0] == buffer && !producer)
          producer = launch;
        else if (user != consumer ||
                 llvm::count(consumer->getOperands(), buffer) != 1)
          onlyTheseTwo = false;
      }
      if (!producer || !onlyTheseTwo || !producer->isBeforeInBlock(consumer))
        continue;
      loop::NestOp producerNest = elementwiseNest(producer, symbols);
      if (!producerNest ||
          writtenBetween(producer.getInputs(), producer, consumer))
        continue;
      if (kernel::LaunchOp fused = fuse(producer, producerNest, consumer,
                                        consumerNest, index, symbols))
        return fused;
    }
    return {};
  }

  kernel::LaunchOp fuse(kernel::LaunchOp producer, loop::NestOp producerNest,
                     kernel::LaunchOp consumer, loop::NestOp consumerNest,
                     unsigned index, SymbolTable &symbols) {
    ArrayRef<int64_t> producerDomain = producerNest.getDomain();
    ArrayRef<int64_t> consumerDomain = consumerNest.getDomain();
    if (points(producerDomain) != points(consumerDomain))
      return {};
    auto producerMaps = llvm::to_vector(
        producerNest.getIndexingMaps().getAsValueRange<AffineMapAttr>());
    auto consumerMaps = llvm::to_vector(
        consumerNest.getIndexingMaps().getAsValueRange<AffineMapAttr>());
    unsigned producerInputs = producerNest.getInputs().size();
    // The intermediate is indexed alike on both sides.
    if (!producerMaps[producerInputs].isIdentity() ||
        !consumerMaps[index].isIdentity())
      return {};
    // The domain of the fused nest: the consumer's, unless the producer's
    // differs and the consumer can take it.
    bool sameDomain = producerDomain == consumerDomain;
    bool useProducerDomain = !sameDomain && isReshapable(consumerNest);
    if (!sameDomain && !useProducerDomain && !isReshapable(producerNest))
      return {};
    ArrayRef<int64_t> domain = useProducerDomain ? producerDomain : consumerDomain;
    MLIRContext *context = &getContext();
    AffineMap identity = AffineMap::getMultiDimIdentityMap(domain.size(), context);

    // Operands: the producer's inputs, the consumer's other inputs, the
    // consumer's outputs. A nest over the other domain sees its buffers
    // reshaped to the fused domain.
    auto operandOf = [&](loop::NestOp nest, bool ownDomain, unsigned i,
                         Value buffer) {
      auto argumentType =
          cast<MemRefType>(nest->getOperand(i).getType());
      AffineMap map = cast<AffineMapAttr>(nest.getIndexingMaps()[i]).getValue();
      if (ownDomain)
        return FusedOperand{buffer, argumentType, map};
      if (map.getNumResults() == 0) // a scalar, the same at every point
        return FusedOperand{buffer, argumentType,
                            AffineMap::get(domain.size(), 0, context)};
      return FusedOperand{
          buffer, MemRefType::get(domain, argumentType.getElementType()),
          identity};
    };
    bool producerOwn = sameDomain || useProducerDomain;
    bool consumerOwn = sameDomain || !useProducerDomain;
    SmallVector<FusedOperand> inputs, outputs;
    for (auto [i, buffer] : llvm::enumerate(producer.getInputs()))
      inputs.push_back(operandOf(producerNest, producerOwn, i, buffer));
    for (auto [i, buffer] : llvm::enumerate(consumer.getInputs()))
      if (i != index)
        inputs.push_back(operandOf(consumerNest, consumerOwn, i, buffer));
    unsigned consumerInputs = consumerNest.getInputs().size();
    for (auto [i, buffer] : llvm::enumerate(consumer.getOutputs()))
      outputs.push_back(
          operandOf(consumerNest, consumerOwn, consumerInputs + i, buffer));

    // The fused kernel function and its nest.
    OpBuilder b(context);
    b.setInsertionPointToEnd(getOperation().getBody());
    SmallVector<Type> argumentTypes;
    SmallVector<AffineMap> maps;
    for (const FusedOperand &operand : llvm::concat<FusedOperand>(inputs, outputs)) {
      argumentTypes.push_back(operand.type);
      maps.push_back(operand.map);
    }
    Location loc = consumer.getLoc();
    auto function = func::FuncOp::create(
        b, loc, "generated_fused", FunctionType::get(context, argumentTypes, {}));
    function.setPrivate();
    function->setAttr(loop::kKernelAttrName, UnitAttr::get(context));
    symbols.insert(function);
    Block *entry = function.addEntryBlock();
    b.setInsertionPointToStart(entry);
    ValueRange arguments = entry->getArguments();
    SmallVector<bool> parallel(domain.size(), false);
    SmallVector<Attribute> iterators(domain.size(),
                                     b.getStringAttr("parallel"));
    auto nest = loop::NestOp::create(
        b, loc, arguments.take_front(inputs.size()),
        arguments.drop_front(inputs.size()), b.getDenseI64ArrayAttr(domain),
        b.getAffineMapArrayAttr(maps), b.getArrayAttr(iterators),
        loop::defaultSchedule(context, domain, parallel, maps, outputs.size(),
                              vectorLanes));
    func::ReturnOp::create(b, loc);

    // Body: the producer's, then the consumer's on the producer's value.
    Block *body = b.createBlock(&nest.getBody());
    for (Value argument : arguments)
      body->addArgument(
          cast<MemRefType>(argument.getType()).getElementType(), loc);
    IRMapping mapping;
    Block &producerBody = producerNest.getBody().front();
    Block &consumerBody = consumerNest.getBody().front();
    unsigned next = 0;
    for (unsigned i = 0; i < producerInputs; ++i)
      mapping.map(producerBody.getArgument(i), body->getArgument(next++));
    for (Operation &op : producerBody.without_terminator())
      b.clone(op, mapping);
    Value produced = mapping.lookup(
        producerBody.getTerminator()->getOperand(0));
    for (unsigned i = 0; i < consumerBody.getNumArguments(); ++i)
      mapping.map(consumerBody.getArgument(i),
                  i == index ? produced : body->getArgument(next++));
    for (Operation &op : consumerBody)
      b.clone(op, mapping);

    // The launch that calls it replaces both.
    b.setInsertionPoint(consumer);
    SmallVector<Value> launchInputs;
    for (const FusedOperand &operand : inputs)
      launchInputs.push_back(operand.buffer);
    auto fused = kernel::LaunchOp::create(
        b, loc, launchInputs, consumer.getOutputs(),
        b.getStringAttr(fusedName(producer.getKernel(), consumer.getKernel())),
        b.getDictionaryAttr({}));
    fused.setBackend("generated");
    fused.setCalleeAttr(FlatSymbolRefAttr::get(function));
    Value intermediate = consumer.getInputs()[index];
    consumer.erase();
    producer.erase();
    intermediate.getDefiningOp()->erase();
    return fused;
  }

  /// "graph.greater" and "graph.where" -> "fused(greater,where)".
  static std::string fusedName(StringRef producer, StringRef consumer) {
    auto parts = [](StringRef kernel) {
      if (kernel.consume_front("fused(") && kernel.consume_back(")"))
        return kernel.str();
      return kernel.rsplit('.').second.empty() ? kernel.str()
                                               : kernel.rsplit('.').second.str();
    };
    return "fused(" + parts(producer) + "," + parts(consumer) + ")";
  }
};

} // namespace
