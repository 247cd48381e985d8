//===- FuseElementwise.cpp - --trainc-fuse-elementwise --------------------===//
#include "lib/Conversion/Passes.h"

#include "lib/Conversion/ElementwiseNests.h"

#include "dialects/loop/Schedule.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

namespace trainc::conversion {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace trainc::conversion

using namespace mlir;
using namespace trainc;
using namespace trainc::conversion;

namespace {

int64_t points(ArrayRef<int64_t> domain) {
  int64_t count = 1;
  for (int64_t extent : domain)
    count *= extent;
  return count;
}

/// Whether every buffer of `nest` is read or written whole or is a scalar,
/// so that the nest can run over any domain of the same size.
bool isReshapable(loop::NestOp nest) {
  for (unsigned i = 0; i < nest->getNumOperands(); ++i) {
    AffineMap map = cast<AffineMapAttr>(nest.getIndexingMaps()[i]).getValue();
    if (map.getNumResults() != 0 && !isWhole(nest, i))
      return false;
  }
  return true;
}

/// Whether a launch strictly between `from` and `to` writes one of
/// `buffers` (through a view or not).
bool writtenBetween(ValueRange buffers, Operation *from, Operation *to) {
  for (Operation *op = from->getNextNode(); op && op != to;
       op = op->getNextNode())
    if (auto launch = dyn_cast<kernel::LaunchOp>(op))
      for (Value written : launch.getOutputs())
        for (Value buffer : buffers)
          if (kernel::viewRoot(written) == kernel::viewRoot(buffer))
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

/// Operand `i` of `nest`, the launch's `buffer`, as a nest over `domain`
/// sees it: unchanged if `domain` is the nest's own, else a scalar (the
/// same at every point) or the whole buffer viewed in `domain` (the nest
/// must be reshapable).
FusedOperand operandIn(loop::NestOp nest, unsigned i, Value buffer,
                       ArrayRef<int64_t> domain, bool ownDomain) {
  MLIRContext *context = nest.getContext();
  auto type = cast<MemRefType>(nest->getOperand(i).getType());
  AffineMap map = cast<AffineMapAttr>(nest.getIndexingMaps()[i]).getValue();
  if (ownDomain)
    return {buffer, type, map};
  // A scalar read alike at every point of a larger nest. In a nest over no
  // dimensions (one point) the scalar is the whole buffer instead, and is
  // viewed in `domain` like any other: an output must not be written as a
  // value broadcast over the domain, which no vectorizer takes.
  if (map.getNumResults() == 0 && !nest.getDomain().empty())
    return {buffer, type, AffineMap::get(domain.size(), 0, context)};
  return {buffer, MemRefType::get(domain, type.getElementType()),
          AffineMap::getMultiDimIdentityMap(domain.size(), context)};
}

/// Whether `nest` only widens its one input (bf16 or f16 to f32): cheaper
/// to compute again from the narrower input wherever it is read than to
/// write and read back.
bool isWideningCast(loop::NestOp nest) {
  if (nest.getInputs().size() != 1 || nest.getOutputs().size() != 1)
    return false;
  Block &body = nest.getBody().front();
  auto widen = dyn_cast<arith::ExtFOp>(&body.front());
  return widen && widen->getNextNode() == body.getTerminator() &&
         widen.getIn() == body.getArgument(0) &&
         body.getTerminator()->getOperand(0) == widen.getResult();
}

/// Clones the ops of a nest body `block` at `b`, its arguments bound in
/// `mapping`, and returns the values it yields.
SmallVector<Value> inlineBody(OpBuilder &b, Block &block, IRMapping &mapping) {
  for (Operation &op : block.without_terminator())
    b.clone(op, mapping);
  return llvm::map_to_vector(
      block.getTerminator()->getOperands(),
      [&](Value v) { return mapping.lookupOrDefault(v); });
}

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
      return fuseIntoReader(consumer, symbols);
    for (Value buffer : consumer.getInputs()) {
      if (isa<BlockArgument>(buffer)) {
        if (kernel::LaunchOp fused =
                fuseInPlaceWriter(buffer, consumer, consumerNest, symbols))
          return fused;
        continue;
      }
      if (!buffer.getDefiningOp<kernel::AllocOp>())
        continue;
      kernel::LaunchOp producer = writerOf(buffer);
      if (!producer || !producer->isBeforeInBlock(consumer))
        continue;
      loop::NestOp producerNest = elementwiseNest(producer, symbols);
      if (!producerNest) {
        if (kernel::LaunchOp fused = fuseIntoWriter(producer, buffer, consumer,
                                                    consumerNest, symbols))
          return fused;
        continue;
      }
      if (writtenBetween(producer.getInputs(), producer, consumer))
        continue;
      // A widening cast that other launches read too stays for them and is
      // computed again in the fused nest: its output is not written twice,
      // and each reader may fuse it in turn (softmax's gradient reads its
      // bf16 incoming gradient in a reduction and in an elementwise nest).
      bool duplicate = isWideningCast(producerNest) &&
                       readElsewhere(buffer, producer, consumer);
      if (!duplicate && !readLaterOnly(producer, consumer))
        continue;
      if (kernel::LaunchOp fused = fuse(producer, producerNest, consumer,
                                        consumerNest, duplicate, symbols))
        return fused;
    }
    return {};
  }

  /// A function argument updated in place by the launch right before
  /// `consumer` (an optimizer update, then the cast that writes the
  /// weight's low-precision copy: --trainc-keep-weight-copies): the two as
  /// one nest, which writes the argument and the consumer's outputs. With
  /// no launch in between, nothing else can see the difference.
  kernel::LaunchOp fuseInPlaceWriter(Value argument, kernel::LaunchOp consumer,
                                     loop::NestOp consumerNest,
                                     SymbolTable &symbols) {
    Operation *previous = consumer->getPrevNode();
    while (previous && isa<kernel::AllocOp, kernel::ViewOp>(previous))
      previous = previous->getPrevNode();
    auto producer = dyn_cast_or_null<kernel::LaunchOp>(previous);
    if (!producer || !llvm::is_contained(producer.getOutputs(), argument) ||
        llvm::is_contained(consumer.getOutputs(), argument))
      return {};
    loop::NestOp producerNest = elementwiseNest(producer, symbols);
    if (!producerNest)
      return {};
    return fuse(producer, producerNest, consumer, consumerNest,
                /*duplicate=*/false, symbols);
  }

  /// The one launch that writes `buffer`, if it writes it whole (as one of
  /// its outputs, not in place).
  static kernel::LaunchOp writerOf(Value buffer) {
    kernel::LaunchOp writer;
    for (Operation *user : buffer.getUsers()) {
      auto launch = dyn_cast<kernel::LaunchOp>(user);
      if (!launch || !llvm::is_contained(launch.getOutputs(), buffer))
        continue;
      if (writer || llvm::is_contained(launch.getInputs(), buffer))
        return {};
      writer = launch;
    }
    return writer;
  }

  /// Whether no launch between `producer` and `consumer` uses an output of
  /// `producer` (the consumer only reads them), so that the fused launch
  /// may write them at the consumer's place. Launches before the producer
  /// are unaffected: an output updated in place (GELU's gradient writes
  /// the forward's saved value) was read by the forward pass long before.
  static bool readLaterOnly(kernel::LaunchOp producer,
                            kernel::LaunchOp consumer) {
    for (Value output : producer.getOutputs()) {
      if (!output.getDefiningOp<kernel::AllocOp>())
        return false;
      for (Operation *user : output.getUsers()) {
        if (user == producer.getOperation() || isa<kernel::AllocOp>(user) ||
            user->isBeforeInBlock(producer))
          continue;
        if (user == consumer.getOperation()) {
          if (llvm::is_contained(consumer.getOutputs(), output))
            return false;
          continue;
        }
        if (!isa<kernel::LaunchOp>(user) || user->isBeforeInBlock(consumer))
          return false;
      }
    }
    return true;
  }

  /// Whether something besides `consumer` (and its writer) uses `buffer`.
  static bool readElsewhere(Value buffer, kernel::LaunchOp producer,
                            kernel::LaunchOp consumer) {
    return llvm::any_of(buffer.getUsers(), [&](Operation *user) {
      return user != producer.getOperation() &&
             user != consumer.getOperation() && !isa<kernel::AllocOp>(user);
    });
  }

  /// Fuses `producer` into `consumer`; with `duplicate`, the producer stays
  /// (it writes its output for other launches) and the fused nest computes
  /// its body again without writing it.
  kernel::LaunchOp fuse(kernel::LaunchOp producer, loop::NestOp producerNest,
                        kernel::LaunchOp consumer, loop::NestOp consumerNest,
                        bool duplicate, SymbolTable &symbols) {
    ArrayRef<int64_t> producerDomain = producerNest.getDomain();
    ArrayRef<int64_t> consumerDomain = consumerNest.getDomain();
    if (points(producerDomain) != points(consumerDomain))
      return {};
    unsigned producerInputs = producerNest.getInputs().size();
    // Which producer output each consumer input is, if any.
    ValueRange producerOutputs = producer.getOutputs();
    auto producedAs = [&](unsigned input) -> int {
      auto it = llvm::find(producerOutputs, consumer.getInputs()[input]);
      return it == producerOutputs.end() ? -1 : it - producerOutputs.begin();
    };
    // The producer's outputs and the consumer's reads of them are indexed
    // alike.
    for (unsigned i = 0; i < consumer.getInputs().size(); ++i)
      if (producedAs(i) >= 0 && !isWhole(consumerNest, i))
        return {};
    for (unsigned i = 0; i < producer.getOutputs().size(); ++i)
      if (!isWhole(producerNest, producerInputs + i))
        return {};
    // The domain of the fused nest: the consumer's, unless the producer's
    // differs and the consumer can take it.
    bool sameDomain = producerDomain == consumerDomain;
    bool useProducerDomain = !sameDomain && isReshapable(consumerNest);
    if (!sameDomain && !useProducerDomain && !isReshapable(producerNest))
      return {};
    ArrayRef<int64_t> domain = useProducerDomain ? producerDomain : consumerDomain;
    MLIRContext *context = &getContext();

    // Operands: the producer's inputs, the consumer's other inputs, the
    // producer's outputs other launches read, the consumer's outputs. A
    // nest over the other domain sees its buffers reshaped to the fused
    // domain.
    auto operandOf = [&](loop::NestOp nest, bool ownDomain, unsigned i,
                         Value buffer) {
      return operandIn(nest, i, buffer, domain, ownDomain);
    };
    bool producerOwn = sameDomain || useProducerDomain;
    bool consumerOwn = sameDomain || !useProducerDomain;
    SmallVector<FusedOperand> inputs, outputs;
    // A buffer read alike twice (the same value in both bodies) is one
    // operand; `slots` gives each read's operand, in reading order.
    SmallVector<unsigned> slots;
    auto addInput = [&](FusedOperand operand) {
      auto same = llvm::find_if(inputs, [&](const FusedOperand &other) {
        return other.buffer == operand.buffer && other.type == operand.type &&
               other.map == operand.map;
      });
      slots.push_back(same - inputs.begin());
      if (same == inputs.end())
        inputs.push_back(operand);
    };
    for (auto [i, buffer] : llvm::enumerate(producer.getInputs()))
      addInput(operandOf(producerNest, producerOwn, i, buffer));
    for (auto [i, buffer] : llvm::enumerate(consumer.getInputs()))
      if (producedAs(i) < 0)
        addInput(operandOf(consumerNest, consumerOwn, i, buffer));
    SmallVector<unsigned> kept; // producer outputs the fused launch writes
    for (auto [i, buffer] : llvm::enumerate(producerOutputs))
      if (!duplicate && (!llvm::is_contained(consumer.getInputs(), buffer) ||
                         !buffer.getDefiningOp<kernel::AllocOp>() ||
                         readElsewhere(buffer, producer, consumer))) {
        kept.push_back(i);
        outputs.push_back(
            operandOf(producerNest, producerOwn, producerInputs + i, buffer));
      }
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
                              vectorLanes),
        /*wrapping_inputs=*/nullptr);
    func::ReturnOp::create(b, loc);

    // Body: the producer's, then the consumer's on the producer's value;
    // it yields the kept producer values, then the consumer's.
    Block *body = b.createBlock(&nest.getBody());
    for (Value argument : arguments)
      body->addArgument(
          cast<MemRefType>(argument.getType()).getElementType(), loc);
    IRMapping mapping;
    Block &producerBody = producerNest.getBody().front();
    Block &consumerBody = consumerNest.getBody().front();
    unsigned next = 0;
    for (unsigned i = 0; i < producerInputs; ++i)
      mapping.map(producerBody.getArgument(i),
                  body->getArgument(slots[next++]));
    SmallVector<Value> producedValues = inlineBody(b, producerBody, mapping);
    for (unsigned i = 0; i < consumerNest.getInputs().size(); ++i)
      mapping.map(consumerBody.getArgument(i),
                  producedAs(i) >= 0 ? producedValues[producedAs(i)]
                                     : body->getArgument(slots[next++]));
    SmallVector<Value> results;
    for (unsigned i : kept)
      results.push_back(producedValues[i]);
    llvm::append_range(results, inlineBody(b, consumerBody, mapping));
    loop::YieldOp::create(b, loc, results);

    // The launch that calls it replaces both.
    b.setInsertionPoint(consumer);
    SmallVector<Value> launchInputs, launchOutputs;
    for (const FusedOperand &operand : inputs)
      launchInputs.push_back(operand.buffer);
    for (const FusedOperand &operand : outputs)
      launchOutputs.push_back(operand.buffer);
    auto fused = kernel::LaunchOp::create(
        b, loc, launchInputs, launchOutputs,
        b.getStringAttr(fusedName(producer.getKernel(), consumer.getKernel())),
        b.getDictionaryAttr({}));
    fused.setBackend("generated");
    fused.setCalleeAttr(FlatSymbolRefAttr::get(function));
    SmallVector<Value> intermediates(producerOutputs);
    consumer.erase();
    if (duplicate)
      return fused;
    producer.erase();
    for (Value intermediate : intermediates)
      if (intermediate.use_empty() && intermediate.getDefiningOp())
        intermediate.getDefiningOp()->erase();
    return fused;
  }

  /// A new kernel function, generated_fused(`argumentTypes`), with an empty
  /// entry block, at the end of the module.
  func::FuncOp newKernel(Location loc, ArrayRef<Type> argumentTypes,
                         SymbolTable &symbols) {
    MLIRContext *context = &getContext();
    OpBuilder b(context);
    b.setInsertionPointToEnd(getOperation().getBody());
    auto function =
        func::FuncOp::create(b, loc, "generated_fused",
                             FunctionType::get(context, argumentTypes, {}));
    function.setPrivate();
    function->setAttr(loop::kKernelAttrName, UnitAttr::get(context));
    symbols.insert(function);
    function.addEntryBlock();
    return function;
  }

  /// An elementwise `consumer` launched right after a producer of several
  /// nests (batch norm: its statistics, then the nest that normalizes) that
  /// reads `buffer`, an output the producer writes whole in one elementwise
  /// nest and nowhere else: that nest computes the consumer's body after
  /// its own, and the producer's other nests stay. The intermediate is
  /// still written where other launches read it (a clip's input, which its
  /// gradient reads), and not at all where only the consumer did (a ReLU's,
  /// whose gradient reads the ReLU's output): a batch norm and its ReLU are
  /// one pass over the activations instead of two, writing one of them.
  kernel::LaunchOp fuseIntoWriter(kernel::LaunchOp producer, Value buffer,
                                  kernel::LaunchOp consumer,
                                  loop::NestOp consumerNest,
                                  SymbolTable &symbols) {
    // Nothing runs between the two, so the fused launch may run at either
    // place.
    Operation *between = producer->getNextNode();
    while (between && isa<kernel::AllocOp, kernel::ViewOp>(between))
      between = between->getNextNode();
    if (between != consumer.getOperation() || !producer.getCallee() ||
        llvm::is_contained(producer.getInputs(), buffer) ||
        llvm::count(producer.getOutputs(), buffer) != 1 ||
        llvm::count(consumer->getOperands(), buffer) != 1)
      return {};
    // The consumer's other operands are none of the producer's: the fused
    // nest would read a value it writes at the same point (hardswish's
    // x * clip(x + 3) / 6 reads two of a fused batch norm's outputs).
    for (Value operand : consumer->getOperands())
      if (operand != buffer &&
          llvm::is_contained(producer->getOperands(), operand))
        return {};
    auto function = symbols.lookup<func::FuncOp>(*producer.getCallee());
    if (!function || function->hasAttr(loop::kCheckAttrName))
      return {};
    unsigned numInputs = producer.getInputs().size();
    unsigned numOutputs = producer.getOutputs().size();
    unsigned outputIndex = llvm::find(producer.getOutputs(), buffer) -
                           producer.getOutputs().begin();
    unsigned consumerInput =
        llvm::find(consumer.getInputs(), buffer) - consumer.getInputs().begin();
    if (consumerInput >= consumer.getInputs().size() ||
        !isWhole(consumerNest, consumerInput))
      return {};
    BlockArgument intermediate = function.getArgument(numInputs + outputIndex);

    // The one nest that touches the intermediate: it writes it, whole, at
    // every point of an elementwise domain, without reading it.
    loop::NestOp writer;
    for (loop::NestOp nest : function.getBody().getOps<loop::NestOp>()) {
      if (!llvm::is_contained(nest->getOperands(), Value(intermediate)))
        continue;
      if (writer)
        return {};
      writer = nest;
    }
    if (!writer || writer.getWrappingInputs() ||
        llvm::is_contained(writer.getInputs(), Value(intermediate)) ||
        llvm::count(writer.getOutputs(), Value(intermediate)) != 1 ||
        llvm::any_of(writer.getIterators(), [](Attribute iterator) {
          return cast<StringAttr>(iterator).getValue() != "parallel";
        }))
      return {};
    unsigned writerInputs = writer.getInputs().size();
    unsigned written = llvm::find(writer.getOutputs(), Value(intermediate)) -
                       writer.getOutputs().begin();
    Block &writerBody = writer.getBody().front();
    if (!isWhole(writer, writerInputs + written) ||
        !writerBody.getArgument(writerInputs + written).use_empty())
      return {};
    ArrayRef<int64_t> domain = writer.getDomain();
    bool sameDomain = consumerNest.getDomain() == domain;
    if (points(consumerNest.getDomain()) != points(domain) ||
        (!sameDomain && !isReshapable(consumerNest)))
      return {};
    bool keep = readElsewhere(buffer, producer, consumer);

    // The kernel's arguments: the producer's inputs, the consumer's other
    // inputs, the producer's outputs (the intermediate where it is kept),
    // the consumer's outputs, the producer's scratch; the consumer's
    // buffers seen in the writing nest's domain.
    MLIRContext *context = &getContext();
    SmallVector<FusedOperand> consumerInputs, consumerOutputs;
    for (auto [i, input] : llvm::enumerate(consumer.getInputs()))
      if (i != consumerInput)
        consumerInputs.push_back(
            operandIn(consumerNest, i, input, domain, sameDomain));
    unsigned numConsumerInputs = consumerNest.getInputs().size();
    for (auto [i, output] : llvm::enumerate(consumer.getOutputs()))
      consumerOutputs.push_back(operandIn(consumerNest, numConsumerInputs + i,
                                          output, domain, sameDomain));
    SmallVector<Type> argumentTypes;
    SmallVector<Value> launchInputs(producer.getInputs()), launchOutputs;
    for (unsigned i = 0; i < numInputs; ++i)
      argumentTypes.push_back(function.getArgument(i).getType());
    for (const FusedOperand &operand : consumerInputs) {
      argumentTypes.push_back(operand.type);
      launchInputs.push_back(operand.buffer);
    }
    for (unsigned i = 0; i < numOutputs; ++i)
      if (i != outputIndex || keep) {
        argumentTypes.push_back(function.getArgument(numInputs + i).getType());
        launchOutputs.push_back(producer.getOutputs()[i]);
      }
    for (const FusedOperand &operand : consumerOutputs) {
      argumentTypes.push_back(operand.type);
      launchOutputs.push_back(operand.buffer);
    }
    for (unsigned i = numInputs + numOutputs; i < function.getNumArguments();
         ++i)
      argumentTypes.push_back(function.getArgument(i).getType());

    OpBuilder b(context);
    Location loc = consumer.getLoc();
    func::FuncOp fusedFunction = newKernel(loc, argumentTypes, symbols);
    Block *entry = &fusedFunction.getBody().front();
    ValueRange fusedArguments = entry->getArguments();
    IRMapping arguments;
    unsigned next = 0;
    for (unsigned i = 0; i < numInputs; ++i)
      arguments.map(function.getArgument(i), fusedArguments[next++]);
    ValueRange extraInputs = fusedArguments.slice(next, consumerInputs.size());
    next += consumerInputs.size();
    for (unsigned i = 0; i < numOutputs; ++i)
      if (i != outputIndex || keep)
        arguments.map(function.getArgument(numInputs + i),
                      fusedArguments[next++]);
    ValueRange extraOutputs =
        fusedArguments.slice(next, consumerOutputs.size());
    next += consumerOutputs.size();
    for (unsigned i = numInputs + numOutputs; i < function.getNumArguments();
         ++i)
      arguments.map(function.getArgument(i), fusedArguments[next++]);

    // The nests in order; the writer also takes the consumer's operands
    // and computes its body on the intermediate's value.
    b.setInsertionPointToStart(entry);
    for (Operation &op : function.getBody().front()) {
      if (&op != writer.getOperation()) {
        b.clone(op, arguments);
        continue;
      }
      auto writerMaps = llvm::to_vector(
          writer.getIndexingMaps().getAsValueRange<AffineMapAttr>());
      SmallVector<Value> inputs, outputs;
      SmallVector<AffineMap> maps;
      for (auto [i, input] : llvm::enumerate(writer.getInputs())) {
        inputs.push_back(arguments.lookup(input));
        maps.push_back(writerMaps[i]);
      }
      for (auto [i, operand] : llvm::enumerate(consumerInputs)) {
        inputs.push_back(extraInputs[i]);
        maps.push_back(operand.map);
      }
      for (auto [i, output] : llvm::enumerate(writer.getOutputs()))
        if (i != written || keep) {
          outputs.push_back(arguments.lookup(output));
          maps.push_back(writerMaps[writerInputs + i]);
        }
      for (auto [i, operand] : llvm::enumerate(consumerOutputs)) {
        outputs.push_back(extraOutputs[i]);
        maps.push_back(operand.map);
      }
      auto fused = loop::NestOp::create(
          b, loc, inputs, outputs, writer.getDomainAttr(),
          b.getAffineMapArrayAttr(maps), writer.getIterators(),
          writer.getSchedule(), /*wrapping_inputs=*/nullptr);
      Block *body = b.createBlock(&fused.getBody());
      for (Value value : llvm::concat<Value>(inputs, outputs))
        body->addArgument(cast<MemRefType>(value.getType()).getElementType(),
                          loc);
      // Block arguments: the writer's inputs, the consumer's other inputs,
      // the writer's kept outputs, the consumer's outputs.
      IRMapping mapping;
      for (unsigned i = 0; i < writerInputs; ++i)
        mapping.map(writerBody.getArgument(i), body->getArgument(i));
      unsigned outputArgument = inputs.size();
      for (unsigned i = 0; i < writer.getOutputs().size(); ++i)
        if (i != written || keep)
          mapping.map(writerBody.getArgument(writerInputs + i),
                      body->getArgument(outputArgument++));
      SmallVector<Value> writerValues = inlineBody(b, writerBody, mapping);
      Block &consumerBody = consumerNest.getBody().front();
      for (unsigned i = 0, extra = writerInputs; i < numConsumerInputs; ++i)
        mapping.map(consumerBody.getArgument(i),
                    i == consumerInput ? writerValues[written]
                                       : body->getArgument(extra++));
      for (unsigned i = 0; i < consumerOutputs.size(); ++i)
        mapping.map(consumerBody.getArgument(numConsumerInputs + i),
                    body->getArgument(outputArgument++));
      SmallVector<Value> results;
      for (auto [i, value] : llvm::enumerate(writerValues))
        if (i != written || keep)
          results.push_back(value);
      llvm::append_range(results, inlineBody(b, consumerBody, mapping));
      loop::YieldOp::create(b, loc, results);
      b.setInsertionPointAfter(fused);
    }

    b.setInsertionPoint(consumer);
    auto fused = kernel::LaunchOp::create(
        b, loc, launchInputs, launchOutputs,
        b.getStringAttr(fusedName(producer.getKernel(), consumer.getKernel())),
        producer.getOptions());
    fused.setBackend("generated");
    fused.setCalleeAttr(FlatSymbolRefAttr::get(fusedFunction));
    fused.getScratchMutable().append(producer.getScratch());
    consumer.erase();
    producer.erase();
    if (buffer.use_empty())
      buffer.getDefiningOp()->erase();
    return fused;
  }

  /// A consumer of several nests (a reduction: fill, then reduce) with an
  /// input written by an elementwise producer that nothing else reads: the
  /// one nest reading it computes the producer's body first, and the
  /// intermediate goes. `reduce_sum(g * y)` (softmax's gradient) reads g
  /// and y once instead of writing g * y and reading it back. A widening
  /// cast may have several reading nests, which each widen its input
  /// (softmax reads its input for the maximum and for the exponentials).
  kernel::LaunchOp fuseIntoReader(kernel::LaunchOp consumer,
                                  SymbolTable &symbols) {
    if (!consumer.getCallee())
      return {};
    auto function = symbols.lookup<func::FuncOp>(*consumer.getCallee());
    if (!function || function->hasAttr(loop::kCheckAttrName))
      return {};
    for (auto [index, buffer] : llvm::enumerate(consumer.getInputs())) {
      if (!buffer.getDefiningOp<kernel::AllocOp>() ||
          llvm::count(consumer->getOperands(), buffer) != 1)
        continue;
      kernel::LaunchOp producer = writerOf(buffer);
      if (!producer || !producer->isBeforeInBlock(consumer) ||
          producer.getOutputs().size() != 1 ||
          readElsewhere(buffer, producer, consumer) ||
          writtenBetween(producer.getInputs(), producer, consumer))
        continue;
      loop::NestOp producerNest = elementwiseNest(producer, symbols);
      if (!producerNest)
        continue;
      if (kernel::LaunchOp fused = fuseInto(producer, producerNest, consumer,
                                            function, index, symbols))
        return fused;
    }
    return {};
  }

  /// fuseIntoReader for input `index` of `consumer` (kernel `function`).
  kernel::LaunchOp fuseInto(kernel::LaunchOp producer,
                            loop::NestOp producerNest,
                            kernel::LaunchOp consumer, func::FuncOp function,
                            unsigned index, SymbolTable &symbols) {
    BlockArgument intermediate = function.getArgument(index);
    // The nests that read the intermediate, each as an input indexed by
    // their common whole domain: one, or any for a widening cast.
    llvm::DenseMap<Operation *, unsigned> readAs;
    for (loop::NestOp nest : function.getBody().getOps<loop::NestOp>()) {
      auto operands = llvm::to_vector(nest->getOperands());
      if (!llvm::is_contained(operands, Value(intermediate)))
        continue;
      auto inputs = llvm::to_vector(nest.getInputs());
      auto at = llvm::find(inputs, Value(intermediate));
      // A nest with wrapping inputs is left as it is (its copy below would
      // not list them).
      if (at == inputs.end() || nest.getWrappingInputs() ||
          llvm::count(operands, Value(intermediate)) != 1 ||
          !isWhole(nest, at - inputs.begin()))
        return {};
      readAs[nest] = at - inputs.begin();
    }
    if (readAs.empty() ||
        (readAs.size() > 1 && !isWideningCast(producerNest)) ||
        !isWhole(producerNest, producerNest.getInputs().size()))
      return {};
    ArrayRef<int64_t> domain =
        cast<loop::NestOp>(readAs.begin()->first).getDomain();
    for (auto [nest, _] : readAs)
      if (cast<loop::NestOp>(nest).getDomain() != domain)
        return {};
    bool sameDomain = producerNest.getDomain() == domain;
    if (points(producerNest.getDomain()) != points(domain) ||
        (!sameDomain && !isReshapable(producerNest)))
      return {};

    // The kernel's arguments: the consumer's, the intermediate replaced by
    // the producer's inputs viewed in the reading nest's domain.
    MLIRContext *context = &getContext();
    SmallVector<FusedOperand> producerOperands;
    for (auto [i, buffer] : llvm::enumerate(producer.getInputs()))
      producerOperands.push_back(
          operandIn(producerNest, i, buffer, domain, sameDomain));
    SmallVector<Value> launchInputs;
    SmallVector<Type> argumentTypes;
    for (auto [i, buffer] : llvm::enumerate(consumer.getInputs())) {
      if (i == index) {
        for (const FusedOperand &operand : producerOperands) {
          launchInputs.push_back(operand.buffer);
          argumentTypes.push_back(operand.type);
        }
        continue;
      }
      launchInputs.push_back(buffer);
      argumentTypes.push_back(function.getArgument(i).getType());
    }
    unsigned numInputs = consumer.getInputs().size();
    for (unsigned i = numInputs; i < function.getNumArguments(); ++i)
      argumentTypes.push_back(function.getArgument(i).getType());

    OpBuilder b(context);
    Location loc = consumer.getLoc();
    func::FuncOp fusedFunction = newKernel(loc, argumentTypes, symbols);
    Block *entry = &fusedFunction.getBody().front();
    IRMapping arguments;
    unsigned numProducerInputs = producerOperands.size();
    for (unsigned i = 0, next = 0; i < function.getNumArguments(); ++i) {
      if (i == index) {
        next += numProducerInputs;
        continue;
      }
      arguments.map(function.getArgument(i), entry->getArgument(next++));
    }
    ValueRange producerArguments =
        entry->getArguments().slice(index, numProducerInputs);

    // The nests in order; a reader gets the producer's inputs first and
    // computes the producer's body before its own.
    b.setInsertionPointToStart(entry);
    for (Operation &op : function.getBody().front()) {
      auto reader = dyn_cast<loop::NestOp>(op);
      if (!reader || !readAs.count(reader)) {
        b.clone(op, arguments);
        continue;
      }
      unsigned readerInput = readAs.lookup(reader);
      SmallVector<Value> inputs(producerArguments);
      SmallVector<AffineMap> maps;
      for (const FusedOperand &operand : producerOperands)
        maps.push_back(operand.map);
      auto readerMaps = llvm::to_vector(
          reader.getIndexingMaps().getAsValueRange<AffineMapAttr>());
      for (auto [i, input] : llvm::enumerate(reader.getInputs()))
        if (i != readerInput) {
          inputs.push_back(arguments.lookup(input));
          maps.push_back(readerMaps[i]);
        }
      SmallVector<Value> outputs;
      for (auto [i, output] : llvm::enumerate(reader.getOutputs())) {
        outputs.push_back(arguments.lookup(output));
        maps.push_back(readerMaps[reader.getInputs().size() + i]);
      }
      SmallVector<bool> reduction;
      for (unsigned d = 0; d < domain.size(); ++d)
        reduction.push_back(reader.isReduction(d));
      auto fused = loop::NestOp::create(
          b, loc, inputs, outputs, b.getDenseI64ArrayAttr(domain),
          b.getAffineMapArrayAttr(maps), reader.getIterators(),
          loop::defaultSchedule(context, domain, reduction, maps,
                                outputs.size(), vectorLanes),
          /*wrapping_inputs=*/nullptr);
      Block *body = b.createBlock(&fused.getBody());
      for (Value value : llvm::concat<Value>(inputs, outputs))
        body->addArgument(cast<MemRefType>(value.getType()).getElementType(),
                          loc);
      IRMapping mapping;
      Block &producerBody = producerNest.getBody().front();
      Block &readerBody = reader.getBody().front();
      for (unsigned i = 0; i < numProducerInputs; ++i)
        mapping.map(producerBody.getArgument(i), body->getArgument(i));
      Value produced = inlineBody(b, producerBody, mapping)[0];
      for (unsigned i = 0, next = numProducerInputs;
           i < readerBody.getNumArguments(); ++i)
        mapping.map(readerBody.getArgument(i),
                    i == readerInput ? produced : body->getArgument(next++));
      loop::YieldOp::create(b, loc, inlineBody(b, readerBody, mapping));
      b.setInsertionPointAfter(fused);
    }

    b.setInsertionPoint(consumer);
    auto fused = kernel::LaunchOp::create(
        b, loc, launchInputs, consumer.getOutputs(),
        b.getStringAttr(fusedName(producer.getKernel(), consumer.getKernel())),
        consumer.getOptions());
    fused.setBackend("generated");
    fused.setCalleeAttr(FlatSymbolRefAttr::get(fusedFunction));
    fused.getScratchMutable().append(consumer.getScratch());
    Value buffer = producer.getOutputs()[0];
    consumer.erase();
    producer.erase();
    if (buffer.use_empty())
      buffer.getDefiningOp()->erase();
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
