//===- LaunchGraph.cpp - the order constraints between launches -----------===//
#include "dialects/kernel/Transforms/LaunchGraph.h"

#include "dialects/kernel/Transforms/Passes.h"

#include "llvm/ADT/SmallPtrSet.h"

#include <functional>

using namespace mlir;

namespace trainc::kernel {

LogicalResult LaunchGraph::build(func::FuncOp function) {
  Block &block = function.getBody().front();
  for (Operation &op : block) {
    if (isa<ConstantOp, AllocOp, ViewOp>(op) ||
        op.hasTrait<OpTrait::IsTerminator>())
      continue;
    auto launch = dyn_cast<LaunchOp>(op);
    if (!launch)
      return failure();
    LaunchNode node;
    node.launch = launch;
    for (Value input : launch.getInputs())
      node.reads.insert(viewRoot(input));
    for (Value output : launch.getOutputs())
      node.writes.insert(viewRoot(output));
    for (Value scratch : launch.getScratch())
      node.writes.insert(viewRoot(scratch));
    for (const auto *roots : {&node.reads, &node.writes})
      for (Value root : *roots)
        if (auto alloc = root.getDefiningOp<AllocOp>()) {
          node.arena.insert(root);
          // As the arena places it: 64-byte aligned.
          bytes[root] = (bufferBytes(alloc.getType()) + 63) / 64 * 64;
        }
    nodes.push_back(std::move(node));
  }
  // Allocs and views may only feed launches, views and the terminator
  // (which takes no buffer in the functions built here).
  for (Operation &op : block)
    if (isa<AllocOp, ViewOp>(op))
      for (Operation *user : op.getUsers())
        if (!isa<LaunchOp, ViewOp>(user))
          return failure();

  // Dependencies: read after write, write after read, write after write.
  successors.assign(nodes.size(), {});
  predecessorCount.assign(nodes.size(), 0);
  DenseMap<Value, size_t> lastWriter;
  DenseMap<Value, SmallVector<size_t>> readersSinceWrite;
  for (size_t i = 0; i < nodes.size(); ++i) {
    llvm::SmallSetVector<size_t, 8> before;
    for (Value root : nodes[i].reads)
      if (auto it = lastWriter.find(root); it != lastWriter.end())
        before.insert(it->second);
    for (Value root : nodes[i].writes) {
      if (auto it = lastWriter.find(root); it != lastWriter.end())
        before.insert(it->second);
      for (size_t reader : readersSinceWrite.lookup(root))
        before.insert(reader);
    }
    before.remove(i);
    for (size_t j : before)
      successors[j].push_back(i);
    predecessorCount[i] = before.size();
    for (Value root : nodes[i].reads)
      if (!nodes[i].writes.contains(root))
        readersSinceWrite[root].push_back(i);
    for (Value root : nodes[i].writes) {
      lastWriter[root] = i;
      readersSinceWrite[root].clear();
    }
    for (Value root : nodes[i].arena)
      ++userCount[root];
  }
  return success();
}

void applyLaunchOrder(func::FuncOp function, ArrayRef<LaunchOp> order) {
  Block &block = function.getBody().front();
  Operation *terminator = block.getTerminator();
  SmallVector<Operation *> constants, buffers;
  for (Operation &op : block) {
    if (isa<ConstantOp>(op))
      constants.push_back(&op);
    else if (isa<AllocOp, ViewOp>(op))
      buffers.push_back(&op);
  }
  llvm::SmallPtrSet<Operation *, 32> placed;
  auto place = [&](Operation *op) {
    if (placed.insert(op).second)
      op->moveBefore(terminator);
  };
  // A view's source is placed before the view.
  std::function<void(Value)> define = [&](Value value) {
    Operation *op = value.getDefiningOp();
    if (!op || !isa<AllocOp, ViewOp>(op) || placed.contains(op))
      return;
    if (auto view = dyn_cast<ViewOp>(op))
      define(view.getSource());
    place(op);
  };
  for (Operation *constant : constants)
    place(constant);
  for (LaunchOp launch : order) {
    for (Value operand : launch->getOperands())
      define(operand);
    place(launch);
  }
  // Buffers no launch uses keep their relative order, at the end.
  for (Operation *buffer : buffers)
    if (!placed.contains(buffer))
      define(buffer->getResult(0));
}

void LaunchGraph::apply(func::FuncOp function, ArrayRef<size_t> order) const {
  SmallVector<LaunchOp> launches;
  for (size_t i : order)
    launches.push_back(nodes[i].launch);
  applyLaunchOrder(function, launches);
}

LaunchOp soleWriter(Value intermediate, LaunchOp reader) {
  if (!intermediate.getDefiningOp<AllocOp>())
    return {};
  LaunchOp writer;
  for (Operation *user : intermediate.getUsers()) {
    if (user == reader.getOperation())
      continue;
    auto launch = dyn_cast<LaunchOp>(user);
    if (!launch || writer || launch.getOutputs().size() != 1 ||
        launch.getOutputs()[0] != intermediate ||
        llvm::is_contained(launch.getInputs(), intermediate))
      return {};
    writer = launch;
  }
  if (!writer || llvm::count(reader->getOperands(), intermediate) != 1 ||
      !writer->isBeforeInBlock(reader))
    return {};
  for (Operation *op = writer->getNextNode(); op != reader;
       op = op->getNextNode())
    if (auto launch = dyn_cast<LaunchOp>(op))
      for (Value written : launch.getOutputs())
        if (llvm::any_of(writer.getInputs(), [&](Value input) {
              return viewRoot(input) == viewRoot(written);
            }))
          return {};
  return writer;
}

MovedLaunch::MovedLaunch(LaunchOp launch) : launch(launch) {
  for (Value operand : launch->getOperands())
    used.insert(viewRoot(operand));
  for (Value output : launch.getOutputs())
    written.insert(viewRoot(output));
  for (Value scratch : launch.getScratch())
    written.insert(viewRoot(scratch));
}

bool MovedLaunch::isOrderedWith(Operation *op) const {
  if (llvm::any_of(op->getResults(), [&](Value result) {
        return llvm::is_contained(launch->getOperands(), result);
      }))
    return true;
  if (isa<AllocOp, ViewOp, ConstantOp>(op))
    return false;
  auto other = dyn_cast<LaunchOp>(op);
  if (!other)
    return true;
  for (Value output : other.getOutputs())
    if (used.contains(viewRoot(output)))
      return true;
  for (Value scratch : other.getScratch())
    if (used.contains(viewRoot(scratch)))
      return true;
  for (Value input : other.getInputs())
    if (written.contains(viewRoot(input)))
      return true;
  return false;
}

} // namespace trainc::kernel
