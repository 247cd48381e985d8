//===- LoopToGPU.cpp - --trainc-loop-to-gpu -------------------------------===//
//
// The GPU sibling of --trainc-lower-loop-nests: the same loop.nest ops, the
// CPU's schedule ignored, each nest one GPU kernel (gpuSchedule in
// LoopToGPU.h decides how). A thread computes one point of the nest's
// thread dimensions and loops over the others in domain order; an output
// indexed by thread dimensions only is accumulated in a register across
// those loops. Consecutive threads take consecutive points of the
// innermost thread dimension, so that neighbouring threads touch
// neighbouring elements. A nest with few points and a long reduction is a
// block reduction instead: a block per point, its threads strided over
// the loop domain, their partial results combined by gpu.all_reduce.
//
//===----------------------------------------------------------------------===//
#include "dialects/loop/Transforms/LoopToGPU.h"
#include "dialects/loop/Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"

#include <functional>

namespace trainc::loop {
#define GEN_PASS_DEF_LOOPTOGPUPASS
#include "dialects/loop/Transforms/Passes.h.inc"
} // namespace trainc::loop

using namespace mlir;

namespace trainc::loop {

namespace {

/// Fewer points than this make a long reduction a block reduction: a
/// thread per point would leave most of a large GPU idle.
constexpr int64_t kFewPoints = 16384;
/// ... when each point loops over at least this many others.
constexpr int64_t kLongReduction = 64;

/// The forms of a map's results (the verifier guarantees they are linear).
SmallVector<AffineForm> formsOf(AffineMap map) {
  SmallVector<AffineForm> forms;
  for (AffineExpr expr : map.getResults())
    forms.push_back(*getAffineForm(expr, map.getNumDims()));
  return forms;
}

SmallVector<AffineMap> mapsOf(NestOp nest) {
  return llvm::to_vector(
      nest.getIndexingMaps().getAsValueRange<AffineMapAttr>());
}

SmallVector<unsigned> threadDimsOf(NestOp nest) {
  SmallVector<AffineMap> maps = mapsOf(nest);
  unsigned numInputs = nest.getInputs().size();
  // An output read through another operand's map: the thread that writes
  // an element may not be the one that reads it.
  for (auto [i, output] : llvm::enumerate(nest.getOutputs()))
    for (auto [j, operand] : llvm::enumerate(nest->getOperands()))
      if (operand == output && j != numInputs + i &&
          maps[j] != maps[numInputs + i])
        return {};
  SmallVector<unsigned> dims;
  for (unsigned d = 0; d < nest.getDomain().size(); ++d) {
    if (nest.isReduction(d))
      continue;
    bool everyOutput = true;
    for (AffineMap map : ArrayRef(maps).drop_front(numInputs))
      everyOutput &= llvm::any_of(formsOf(map), [&](const AffineForm &form) {
        return form.singleDim() == d;
      });
    if (everyOutput)
      dims.push_back(d);
  }
  return dims;
}

/// Whether output `i`'s map reads none of `loopDims`.
bool indexedByThreadsOnly(NestOp nest, unsigned i,
                          ArrayRef<unsigned> loopDims) {
  AffineMap map = mapsOf(nest)[nest.getInputs().size() + i];
  return llvm::all_of(formsOf(map), [&](const AffineForm &form) {
    return llvm::all_of(loopDims,
                        [&](unsigned d) { return form.coefficients[d] == 0; });
  });
}

/// How output `i` accumulates, if the body yields `combine(current, x)`
/// with the current element used there alone, for a combine gpu.all_reduce
/// knows.
std::optional<gpu::AllReduceOperation> accumulation(NestOp nest, unsigned i) {
  Block &body = nest.getBody().front();
  BlockArgument current = body.getArgument(nest.getInputs().size() + i);
  Value yielded = cast<YieldOp>(body.getTerminator()).getValues()[i];
  Operation *op = yielded.getDefiningOp();
  if (!op || op->getNumOperands() != 2 || !current.hasOneUse() ||
      !llvm::is_contained(op->getOperands(), current) ||
      op->getOperand(0) == op->getOperand(1))
    return std::nullopt;
  using Kind = gpu::AllReduceOperation;
  return TypeSwitch<Operation *, std::optional<Kind>>(op)
      .Case<arith::AddFOp, arith::AddIOp>([](auto) { return Kind::ADD; })
      .Case<arith::MaximumFOp>([](auto) { return Kind::MAXIMUMF; })
      .Case<arith::MaxNumFOp>([](auto) { return Kind::MAXNUMF; })
      .Case<arith::MinimumFOp>([](auto) { return Kind::MINIMUMF; })
      .Case<arith::MinNumFOp>([](auto) { return Kind::MINNUMF; })
      .Default([](Operation *) { return std::nullopt; });
}

/// The neutral element of `kind` in `type`.
Value neutral(OpBuilder &b, Location loc, gpu::AllReduceOperation kind,
              Type type) {
  using Kind = gpu::AllReduceOperation;
  if (auto floatType = dyn_cast<FloatType>(type)) {
    const llvm::fltSemantics &semantics = floatType.getFloatSemantics();
    // -0, not +0: x + -0 is x for every x (and folds away).
    APFloat value = kind == Kind::ADD ? APFloat::getZero(semantics, true)
                    : kind == Kind::MAXIMUMF || kind == Kind::MAXNUMF
                        ? APFloat::getInf(semantics, /*Negative=*/true)
                        : APFloat::getInf(semantics);
    return arith::ConstantFloatOp::create(b, loc, floatType, value);
  }
  return arith::ConstantIntOp::create(b, loc, type, 0);
}

/// `a` combined with `b` by `kind`.
Value combine(OpBuilder &b, Location loc, gpu::AllReduceOperation kind,
              Value lhs, Value rhs) {
  using Kind = gpu::AllReduceOperation;
  switch (kind) {
  case Kind::ADD:
    return isa<FloatType>(lhs.getType())
               ? arith::AddFOp::create(b, loc, lhs, rhs).getResult()
               : arith::AddIOp::create(b, loc, lhs, rhs).getResult();
  case Kind::MAXIMUMF:
    return arith::MaximumFOp::create(b, loc, lhs, rhs);
  case Kind::MAXNUMF:
    return arith::MaxNumFOp::create(b, loc, lhs, rhs);
  case Kind::MINIMUMF:
    return arith::MinimumFOp::create(b, loc, lhs, rhs);
  default:
    return arith::MinNumFOp::create(b, loc, lhs, rhs);
  }
}

} // namespace

GpuSchedule gpuSchedule(NestOp nest, int64_t blockSize) {
  GpuSchedule schedule;
  ArrayRef<int64_t> domain = nest.getDomain();
  schedule.threadDims = threadDimsOf(nest);
  int64_t points = 1, loopPoints = 1;
  for (unsigned d = 0; d < domain.size(); ++d) {
    if (llvm::is_contained(schedule.threadDims, d)) {
      points *= domain[d];
    } else {
      schedule.loopDims.push_back(d);
      loopPoints *= domain[d];
    }
  }
  if (llvm::is_contained(domain, 0))
    return schedule;
  bool reducible = points < kFewPoints && loopPoints >= kLongReduction;
  for (unsigned i = 0; reducible && i < nest.getOutputs().size(); ++i)
    reducible = llvm::count(nest->getOperands(), nest.getOutputs()[i]) == 1 &&
                indexedByThreadsOnly(nest, i, schedule.loopDims) &&
                accumulation(nest, i).has_value();
  if (reducible) {
    // A block per point, of the warps the loop domain fills.
    schedule.blockReduction = true;
    schedule.blocks = points;
    schedule.threads = 32;
    while (schedule.threads < blockSize && schedule.threads * 2 <= loopPoints)
      schedule.threads *= 2;
    return schedule;
  }
  schedule.threads = std::min(points, blockSize);
  schedule.blocks = (points + schedule.threads - 1) / schedule.threads;
  return schedule;
}

namespace {

/// A buffer's type in the kernel: i1 stored as one byte.
MemRefType storageType(Type type) {
  auto memref = cast<MemRefType>(type);
  Type element = memref.getElementType();
  if (element.isInteger(1))
    element = IntegerType::get(type.getContext(), 8);
  // The bare-pointer convention refuses an extent of 0 (such a buffer is
  // only indexed by nests over empty domains, which do nothing).
  if (memref.getNumElements() == 0)
    return MemRefType::get({1}, element);
  return MemRefType::get(memref.getShape(), element);
}

struct KernelBuilder {
  OpBuilder &b;
  Location loc;
  NestOp nest;
  Block &entry; ///< the gpu.func's, whose arguments are the buffers
  /// Per domain dimension, its value at the current point.
  SmallVector<Value> position;

  Value constant(int64_t value) {
    return arith::ConstantIndexOp::create(b, loc, value);
  }

  Value buffer(Value operand) {
    return entry.getArgument(cast<BlockArgument>(operand).getArgNumber());
  }

  /// Sets the position of `dims` (innermost fastest) from `linear`.
  void delinearize(Value linear, ArrayRef<unsigned> dims) {
    for (unsigned d : llvm::reverse(dims)) {
      int64_t extent = nest.getDomain()[d];
      position[d] = arith::RemUIOp::create(b, loc, linear, constant(extent));
      linear = arith::DivUIOp::create(b, loc, linear, constant(extent));
    }
  }

  /// sum(c_d * position[d]) + k.
  Value evaluate(const AffineForm &form) {
    Value sum;
    for (auto [d, c] : llvm::enumerate(form.coefficients)) {
      if (c == 0)
        continue;
      Value term = position[d];
      if (c != 1)
        term = arith::MulIOp::create(b, loc, term, constant(c));
      sum = sum ? arith::AddIOp::create(b, loc, sum, term).getResult() : term;
    }
    if (!sum)
      return constant(form.constant);
    if (form.constant)
      sum = arith::AddIOp::create(b, loc, sum, constant(form.constant));
    return sum;
  }

  SmallVector<Value> indices(AffineMap map) {
    SmallVector<Value> result;
    for (const AffineForm &form : formsOf(map))
      result.push_back(evaluate(form));
    return result;
  }

  /// The element of `operand`'s buffer at `map`, as the body sees it
  /// (`type`).
  Value load(Value operand, AffineMap map, Type type) {
    Value value = memref::LoadOp::create(b, loc, buffer(operand), indices(map));
    if (value.getType() != type)
      value = arith::TruncIOp::create(b, loc, type, value);
    return value;
  }

  /// A wrapping input's element (NestOp's `wrapping_inputs`), which may
  /// lie outside an axis: read at its row-major offset in the buffer seen
  /// flat.
  Value loadFlat(Value operand, AffineMap map, Type type) {
    Value stored = buffer(operand);
    auto memref = cast<MemRefType>(stored.getType());
    SmallVector<ReassociationIndices> all(1);
    for (int64_t axis = 0; axis < memref.getRank(); ++axis)
      all.front().push_back(axis);
    if (memref.getRank() == 0)
      return load(operand, map, type);
    Value flat =
        memref.getRank() == 1
            ? stored
            : memref::CollapseShapeOp::create(b, loc, stored, all).getResult();
    Value value = memref::LoadOp::create(b, loc, flat,
                                         evaluate(*getFlatForm(map, memref)));
    if (value.getType() != type)
      value = arith::TruncIOp::create(b, loc, type, value);
    return value;
  }

  void store(Value value, Value operand, AffineMap map) {
    Value stored = buffer(operand);
    Type element = cast<MemRefType>(stored.getType()).getElementType();
    if (value.getType() != element)
      value = arith::ExtUIOp::create(b, loc, element, value);
    memref::StoreOp::create(b, loc, value, stored, indices(map));
  }

  /// The body at the current point: inputs loaded, output `i` given
  /// `given[i]` where set and loaded otherwise. Returns the yielded values.
  SmallVector<Value> body(ArrayRef<Value> given) {
    Block &body = nest.getBody().front();
    SmallVector<AffineMap> maps = mapsOf(nest);
    unsigned numInputs = nest.getInputs().size();
    IRMapping mapping;
    for (auto [j, input] : llvm::enumerate(nest.getInputs()))
      mapping.map(body.getArgument(j),
                  nest.isWrapping(j)
                      ? loadFlat(input, maps[j], body.getArgument(j).getType())
                      : load(input, maps[j], body.getArgument(j).getType()));
    for (auto [i, output] : llvm::enumerate(nest.getOutputs())) {
      BlockArgument argument = body.getArgument(numInputs + i);
      mapping.map(argument, given[i] ? given[i]
                                     : load(output, maps[numInputs + i],
                                            argument.getType()));
    }
    for (Operation &op : body.without_terminator()) {
      if (auto index = dyn_cast<IndexOp>(op))
        mapping.map(index.getResult(), position[index.getDim()]);
      else
        b.clone(op, mapping);
    }
    return llvm::map_to_vector(
        cast<YieldOp>(body.getTerminator()).getValues(),
        [&](Value value) { return mapping.lookupOrDefault(value); });
  }
};

/// scf.for over [begin, end) by `step`, carrying `initial`; `body(iv,
/// carried)` builds the loop's body and returns the values carried on.
SmallVector<Value>
buildFor(OpBuilder &b, Location loc, Value begin, Value end, Value step,
         ValueRange initial,
         function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  auto loop = scf::ForOp::create(b, loc, begin, end, step, initial);
  OpBuilder::InsertionGuard inside(b);
  // Without loop-carried values scf.for has its terminator already.
  Block *loopBody = loop.getBody();
  bool terminated = initial.empty();
  if (terminated)
    b.setInsertionPoint(loopBody->getTerminator());
  else
    b.setInsertionPointToEnd(loopBody);
  SmallVector<Value> next =
      body(loop.getInductionVar(), loop.getRegionIterArgs());
  if (!terminated)
    scf::YieldOp::create(b, loc, next);
  return SmallVector<Value>(loop.getResults());
}

/// A thread per point: its outputs indexed by thread dimensions only live
/// in registers across the loops (unless their buffer is also an input or
/// another output).
void buildThreadPerPoint(KernelBuilder &k, const GpuSchedule &schedule) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  NestOp nest = k.nest;
  SmallVector<AffineMap> maps = mapsOf(nest);
  unsigned numInputs = nest.getInputs().size();
  int64_t points = 1;
  for (unsigned d : schedule.threadDims)
    points *= nest.getDomain()[d];
  Value linear = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc,
                            gpu::BlockIdOp::create(b, loc, gpu::Dimension::x),
                            k.constant(schedule.threads)),
      gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x));
  Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                        linear, k.constant(points));
  auto guard = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
  b.setInsertionPointToStart(&guard.getThenRegion().front());
  k.delinearize(linear, schedule.threadDims);

  SmallVector<unsigned> carried;
  for (auto [i, output] : llvm::enumerate(nest.getOutputs()))
    if (!schedule.loopDims.empty() &&
        indexedByThreadsOnly(nest, i, schedule.loopDims) &&
        llvm::count(nest->getOperands(), output) == 1)
      carried.push_back(i);
  Block &body = nest.getBody().front();
  SmallVector<Value> initial;
  for (unsigned i : carried)
    initial.push_back(k.load(nest.getOutputs()[i], maps[numInputs + i],
                             body.getArgument(numInputs + i).getType()));

  // One point: the body, with carried outputs flowing as values.
  auto computePoint = [&](ValueRange carriedValues) {
    SmallVector<Value> given(nest.getOutputs().size());
    for (auto [slot, i] : llvm::enumerate(carried))
      given[i] = carriedValues[slot];
    SmallVector<Value> results = k.body(given);
    SmallVector<Value> next;
    for (auto [i, result] : llvm::enumerate(results)) {
      if (llvm::is_contained(carried, i))
        next.push_back(result);
      else
        k.store(result, nest.getOutputs()[i], maps[numInputs + i]);
    }
    return next;
  };
  std::function<SmallVector<Value>(unsigned, ValueRange)> loops =
      [&](unsigned level, ValueRange carriedValues) -> SmallVector<Value> {
    if (level == schedule.loopDims.size())
      return computePoint(carriedValues);
    unsigned d = schedule.loopDims[level];
    return buildFor(b, loc, k.constant(0), k.constant(nest.getDomain()[d]),
                    k.constant(1), carriedValues,
                    [&](Value iv, ValueRange inner) {
                      k.position[d] = iv;
                      return loops(level + 1, inner);
                    });
  };
  SmallVector<Value> final = loops(0, initial);
  for (auto [value, i] : llvm::zip(final, carried))
    k.store(value, nest.getOutputs()[i], maps[numInputs + i]);
}

/// A block per point: thread t takes the points t, t + threads, ... of the
/// loop domain (linearized, innermost fastest), accumulating from the
/// neutral element; gpu.all_reduce combines the threads' partial results
/// and thread 0 adds them to the outputs.
void buildBlockReduction(KernelBuilder &k, const GpuSchedule &schedule) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  NestOp nest = k.nest;
  SmallVector<AffineMap> maps = mapsOf(nest);
  unsigned numInputs = nest.getInputs().size();
  Block &body = nest.getBody().front();
  k.delinearize(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x),
                schedule.threadDims);
  Value thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  int64_t loopPoints = 1;
  for (unsigned d : schedule.loopDims)
    loopPoints *= nest.getDomain()[d];
  SmallVector<gpu::AllReduceOperation> kinds;
  SmallVector<Value> neutrals;
  for (unsigned i = 0; i < nest.getOutputs().size(); ++i) {
    kinds.push_back(*accumulation(nest, i));
    neutrals.push_back(neutral(b, loc, kinds.back(),
                               body.getArgument(numInputs + i).getType()));
  }
  SmallVector<Value> partial = buildFor(
      b, loc, thread, k.constant(loopPoints), k.constant(schedule.threads),
      neutrals, [&](Value iv, ValueRange accumulated) {
        k.delinearize(iv, schedule.loopDims);
        // The body with each output's current value the neutral element
        // yields the point's contribution alone.
        SmallVector<Value> contributions = k.body(neutrals);
        SmallVector<Value> next;
        for (auto [kind, sum, x] : llvm::zip(kinds, accumulated, contributions))
          next.push_back(combine(b, loc, kind, sum, x));
        return next;
      });
  SmallVector<Value> totals;
  for (auto [kind, value] : llvm::zip(kinds, partial))
    totals.push_back(gpu::AllReduceOp::create(
        b, loc, value, gpu::AllReduceOperationAttr::get(b.getContext(), kind),
        /*uniform=*/true));
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, thread,
                                      k.constant(0));
  auto guard = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
  b.setInsertionPointToStart(&guard.getThenRegion().front());
  for (auto [i, output] : llvm::enumerate(nest.getOutputs())) {
    Value current = k.load(output, maps[numInputs + i],
                           body.getArgument(numInputs + i).getType());
    k.store(combine(b, loc, kinds[i], current, totals[i]), output,
            maps[numInputs + i]);
  }
}

/// Builds gpu.func @NAME for `nest` of `kernel` in `gpuModule`.
void buildKernel(gpu::GPUModuleOp gpuModule, func::FuncOp kernel, NestOp nest,
                 StringRef name, int64_t blockSize) {
  MLIRContext *context = kernel.getContext();
  Location loc = nest.getLoc();
  SmallVector<Type> argumentTypes;
  for (Type type : kernel.getArgumentTypes())
    argumentTypes.push_back(storageType(type));
  OpBuilder b(context);
  b.setInsertionPointToEnd(gpuModule.getBody());
  auto function = gpu::GPUFuncOp::create(
      b, loc, name, FunctionType::get(context, argumentTypes, {}));
  function->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  GpuSchedule schedule = gpuSchedule(nest, blockSize);
  Block &entry = function.getBody().front();
  b.setInsertionPointToStart(&entry);
  if (schedule.blocks > 0) {
    function.setKnownBlockSizeAttr(
        b.getDenseI32ArrayAttr({static_cast<int32_t>(schedule.threads), 1, 1}));
    KernelBuilder k{b, loc, nest, entry,
                    SmallVector<Value>(nest.getDomain().size())};
    if (schedule.blockReduction)
      buildBlockReduction(k, schedule);
    else
      buildThreadPerPoint(k, schedule);
  }
  b.setInsertionPointToEnd(&entry);
  gpu::ReturnOp::create(b, loc);
}

struct LoopToGPUPass : impl::LoopToGPUPassBase<LoopToGPUPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> kernels;
    for (auto function : module.getOps<func::FuncOp>())
      if (function->hasAttr(kKernelAttrName))
        kernels.push_back(function);
    if (kernels.empty())
      return;
    OpBuilder b(module.getContext());
    b.setInsertionPointToEnd(module.getBody());
    auto gpuModule =
        gpu::GPUModuleOp::create(b, module.getLoc(), kGpuModuleName);
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    b.getUnitAttr());
    for (func::FuncOp kernel : kernels) {
      unsigned index = 0;
      for (NestOp nest : kernel.getBody().getOps<NestOp>())
        buildKernel(gpuModule, kernel, nest,
                    nestFunctionName(kernel.getSymName(), index++), blockSize);
      kernel.erase();
    }
  }
};

} // namespace
} // namespace trainc::loop
