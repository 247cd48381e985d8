//===- LoopToGPU.cpp - --trainc-loop-to-gpu -------------------------------===//
//
// The GPU sibling of --trainc-lower-loop-nests: the same loop.nest ops, the
// CPU's schedule ignored, each nest one GPU kernel. A thread computes one
// point of the nest's thread dimensions (gpuThreadDims: the parallel
// dimensions every output indexes on an axis of its own) and loops over
// the others in domain order; an output indexed by thread dimensions only
// is accumulated in a register across those loops. Consecutive threads
// take consecutive points of the innermost thread dimension, so that
// neighbouring threads touch neighbouring elements.
//
//===----------------------------------------------------------------------===//
#include "dialects/loop/Transforms/LoopToGPU.h"
#include "dialects/loop/Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/IRMapping.h"

#include <functional>

namespace trainc::loop {
#define GEN_PASS_DEF_LOOPTOGPUPASS
#include "dialects/loop/Transforms/Passes.h.inc"
} // namespace trainc::loop

using namespace mlir;

namespace trainc::loop {

namespace {

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

} // namespace

SmallVector<unsigned> gpuThreadDims(NestOp nest) {
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

GpuLaunchShape gpuLaunchShape(NestOp nest, int64_t blockSize) {
  if (llvm::is_contained(nest.getDomain(), 0))
    return {};
  int64_t points = 1;
  for (unsigned d : gpuThreadDims(nest))
    points *= nest.getDomain()[d];
  int64_t threads = std::min(points, blockSize);
  return {(points + threads - 1) / threads, threads};
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
  /// Per domain dimension, its value at the current point.
  SmallVector<Value> position;

  Value constant(int64_t value) {
    return arith::ConstantIndexOp::create(b, loc, value);
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

  /// The element of `buffer` at `map`, as the body sees it (`type`).
  Value load(Value buffer, AffineMap map, Type type) {
    Value value = memref::LoadOp::create(b, loc, buffer, indices(map));
    if (value.getType() != type)
      value = arith::TruncIOp::create(b, loc, type, value);
    return value;
  }

  void store(Value value, Value buffer, AffineMap map) {
    Type stored = cast<MemRefType>(buffer.getType()).getElementType();
    if (value.getType() != stored)
      value = arith::ExtUIOp::create(b, loc, stored, value);
    memref::StoreOp::create(b, loc, value, buffer, indices(map));
  }
};

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
  GpuLaunchShape shape = gpuLaunchShape(nest, blockSize);
  Block &entry = function.getBody().front();
  b.setInsertionPointToStart(&entry);
  if (shape.blocks == 0) {
    gpu::ReturnOp::create(b, loc);
    return;
  }
  function.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({static_cast<int32_t>(shape.threads), 1, 1}));
  auto buffer = [&](Value operand) -> Value {
    return entry.getArgument(cast<BlockArgument>(operand).getArgNumber());
  };
  ArrayRef<int64_t> domain = nest.getDomain();
  SmallVector<AffineMap> maps = mapsOf(nest);
  unsigned numInputs = nest.getInputs().size();
  KernelBuilder k{b, loc, nest, SmallVector<Value>(domain.size())};

  // This thread's point of the thread dimensions, innermost fastest.
  SmallVector<unsigned> threadDims = gpuThreadDims(nest);
  int64_t points = 1;
  for (unsigned d : threadDims)
    points *= domain[d];
  Value linear = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc,
                            gpu::BlockIdOp::create(b, loc, gpu::Dimension::x),
                            k.constant(shape.threads)),
      gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x));
  Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                        linear, k.constant(points));
  auto guard = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
  b.setInsertionPointToStart(&guard.getThenRegion().front());
  Value rest = linear;
  for (unsigned d : llvm::reverse(threadDims)) {
    k.position[d] = arith::RemUIOp::create(b, loc, rest, k.constant(domain[d]));
    rest = arith::DivUIOp::create(b, loc, rest, k.constant(domain[d]));
  }

  // Outputs indexed by thread dimensions only live in registers across the
  // loops (unless their buffer is also an input or another output).
  SmallVector<unsigned> loopDims;
  for (unsigned d = 0; d < domain.size(); ++d)
    if (!llvm::is_contained(threadDims, d))
      loopDims.push_back(d);
  SmallVector<unsigned> carried;
  for (auto [i, output] : llvm::enumerate(nest.getOutputs())) {
    bool threadOnly =
        llvm::all_of(formsOf(maps[numInputs + i]), [&](const AffineForm &form) {
          return llvm::all_of(
              loopDims, [&](unsigned d) { return form.coefficients[d] == 0; });
        });
    bool aliased = llvm::count(nest->getOperands(), output) > 1;
    if (!loopDims.empty() && threadOnly && !aliased)
      carried.push_back(i);
  }
  Block &body = nest.getBody().front();
  auto outputType = [&](unsigned i) {
    return body.getArgument(numInputs + i).getType();
  };
  SmallVector<Value> initial;
  for (unsigned i : carried)
    initial.push_back(k.load(buffer(nest.getOutputs()[i]), maps[numInputs + i],
                             outputType(i)));

  // One point: load, the body, store (carried outputs flow as values).
  auto computePoint = [&](ValueRange carriedValues) {
    IRMapping mapping;
    for (unsigned j = 0; j < numInputs; ++j)
      mapping.map(body.getArgument(j),
                  k.load(buffer(nest.getInputs()[j]), maps[j],
                         body.getArgument(j).getType()));
    for (unsigned i = 0; i < nest.getOutputs().size(); ++i) {
      auto at = llvm::find(carried, i);
      mapping.map(body.getArgument(numInputs + i),
                  at != carried.end()
                      ? carriedValues[at - carried.begin()]
                      : k.load(buffer(nest.getOutputs()[i]),
                               maps[numInputs + i], outputType(i)));
    }
    for (Operation &op : body.without_terminator()) {
      if (auto index = dyn_cast<IndexOp>(op))
        mapping.map(index.getResult(), k.position[index.getDim()]);
      else
        b.clone(op, mapping);
    }
    auto yield = cast<YieldOp>(body.getTerminator());
    SmallVector<Value> next;
    for (auto [i, value] : llvm::enumerate(yield.getValues())) {
      Value result = mapping.lookupOrDefault(value);
      if (llvm::is_contained(carried, i))
        next.push_back(result);
      else
        k.store(result, buffer(nest.getOutputs()[i]), maps[numInputs + i]);
    }
    return next;
  };

  // The loops over the other dimensions, outermost first.
  std::function<SmallVector<Value>(unsigned, ValueRange)> loops =
      [&](unsigned level, ValueRange carriedValues) -> SmallVector<Value> {
    if (level == loopDims.size())
      return computePoint(carriedValues);
    unsigned d = loopDims[level];
    auto loop = scf::ForOp::create(b, loc, k.constant(0), k.constant(domain[d]),
                                   k.constant(1), carriedValues);
    OpBuilder::InsertionGuard inside(b);
    // Without loop-carried values scf.for has its terminator already.
    Block *loopBody = loop.getBody();
    bool terminated = carriedValues.empty();
    if (terminated)
      b.setInsertionPoint(loopBody->getTerminator());
    else
      b.setInsertionPointToEnd(loopBody);
    k.position[d] = loop.getInductionVar();
    SmallVector<Value> next = loops(level + 1, loop.getRegionIterArgs());
    if (!terminated)
      scf::YieldOp::create(b, loc, next);
    return SmallVector<Value>(loop.getResults());
  };
  SmallVector<Value> final = loops(0, initial);
  for (auto [value, i] : llvm::zip(final, carried))
    k.store(value, buffer(nest.getOutputs()[i]), maps[numInputs + i]);
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
