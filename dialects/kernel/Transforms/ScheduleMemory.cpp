//===- ScheduleMemory.cpp - --trainc-schedule-memory ----------------------===//
//
// Reorders each function's launches to lower the peak of live arena bytes,
// without recomputing anything. A launch may move past another unless
// they touch the same buffer (through views) and one of them writes it.
// List scheduling: among the launches whose predecessors have all run, the
// one that adds the fewest bytes (buffers it starts, minus buffers whose
// last use it is) runs next; ties go to the earlier launch in the original
// order, so independent chains keep their order. Two orders are built: one
// where launches move as far as their dependencies allow, one where a
// launch moves at most 4 places ahead of the earliest unscheduled launch
// (local swaps, which keep recomputed copies beside their readers). The
// one with the lowest peak of live bytes is kept if that peak is lower
// than the original order's.
//
// The typical win is in the backward pass: a weight gradient whose buffer
// is large (a padded convolution's) waits until the activations saved for
// the layers behind it are freed, instead of peaking on top of them.
//
//===----------------------------------------------------------------------===//
#include "dialects/kernel/Transforms/Passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <functional>
#include <limits>
#include <numeric>
#include <set>

namespace trainc::kernel {
#define GEN_PASS_DEF_SCHEDULEMEMORYPASS
#include "dialects/kernel/Transforms/Passes.h.inc"
} // namespace trainc::kernel

using namespace mlir;
using namespace trainc::kernel;

namespace {

/// One launch, with the buffers it reads and writes (roots, deduplicated).
struct Node {
  LaunchOp launch;
  llvm::SmallSetVector<Value, 4> reads, writes;
  /// The arena buffers (kernel.alloc roots) it touches.
  llvm::SmallSetVector<Value, 4> arena;
};

/// The launches of one function and the order constraints between them.
class Schedule {
public:
  /// Fails if the function holds an op this pass does not understand, or
  /// a buffer is used by something other than launches and views.
  LogicalResult build(func::FuncOp function);

  /// Peak of the sum of live arena bytes over `order` (indices into
  /// nodes): a buffer lives from its first launch to its last.
  int64_t peak(ArrayRef<size_t> order) const;

  /// The greedy memory-aware order; with a `window`, a launch may only
  /// run before the earliest launch not yet scheduled if it comes at most
  /// `window` launches after it in the original order.
  SmallVector<size_t> greedy(size_t window) const;

  /// Moves the function's ops into `order`: constants first, then each
  /// launch preceded by the allocs and views it is the first to use.
  void apply(func::FuncOp function, ArrayRef<size_t> order) const;

  size_t size() const { return nodes.size(); }

private:
  std::vector<Node> nodes;
  std::vector<SmallVector<size_t>> successors;
  std::vector<size_t> predecessorCount;
  DenseMap<Value, int64_t> bytes;    // arena buffer -> its size
  DenseMap<Value, size_t> userCount; // arena buffer -> launches using it
};

LogicalResult Schedule::build(func::FuncOp function) {
  Block &block = function.getBody().front();
  for (Operation &op : block) {
    if (isa<ConstantOp, AllocOp, ViewOp>(op) ||
        op.hasTrait<OpTrait::IsTerminator>())
      continue;
    auto launch = dyn_cast<LaunchOp>(op);
    if (!launch)
      return failure();
    Node node;
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

int64_t Schedule::peak(ArrayRef<size_t> order) const {
  DenseMap<Value, size_t> remaining = userCount;
  llvm::DenseSet<Value> started;
  int64_t live = 0, peakBytes = 0;
  for (size_t i : order) {
    for (Value root : nodes[i].arena)
      if (started.insert(root).second)
        live += bytes.lookup(root);
    peakBytes = std::max(peakBytes, live);
    for (Value root : nodes[i].arena)
      if (--remaining[root] == 0)
        live -= bytes.lookup(root);
  }
  return peakBytes;
}

SmallVector<size_t> Schedule::greedy(size_t window) const {
  DenseMap<Value, size_t> remaining = userCount;
  llvm::DenseSet<Value> started;
  std::vector<size_t> waiting = predecessorCount;
  // Ready launches, kept sorted by original index for the tie-break.
  std::set<size_t> ready;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (waiting[i] == 0)
      ready.insert(i);
  auto added = [&](size_t i) {
    int64_t delta = 0;
    for (Value root : nodes[i].arena) {
      if (!started.contains(root))
        delta += bytes.lookup(root);
      if (remaining.lookup(root) == 1)
        delta -= bytes.lookup(root);
    }
    return delta;
  };
  SmallVector<size_t> order;
  order.reserve(nodes.size());
  while (!ready.empty()) {
    // The earliest launch not yet scheduled is always ready (everything
    // before it has run), so it is the smallest ready index.
    size_t best = *ready.begin();
    int64_t bestDelta = added(best);
    for (size_t candidate : ready) {
      if (candidate - *ready.begin() > window)
        break;
      int64_t delta = added(candidate);
      if (delta < bestDelta) {
        best = candidate;
        bestDelta = delta;
      }
    }
    ready.erase(best);
    order.push_back(best);
    for (Value root : nodes[best].arena) {
      started.insert(root);
      --remaining[root];
    }
    for (size_t next : successors[best])
      if (--waiting[next] == 0)
        ready.insert(next);
  }
  return order;
}

void Schedule::apply(func::FuncOp function, ArrayRef<size_t> order) const {
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
  for (size_t i : order) {
    for (Value operand : nodes[i].launch->getOperands())
      define(operand);
    place(nodes[i].launch);
  }
  // Buffers no launch uses keep their relative order, at the end.
  for (Operation *buffer : buffers)
    if (!placed.contains(buffer))
      define(buffer->getResult(0));
}

struct ScheduleMemoryPass
    : trainc::kernel::impl::ScheduleMemoryPassBase<ScheduleMemoryPass> {
  using Base::Base;

  void runOnOperation() override {
    for (func::FuncOp function : getOperation().getOps<func::FuncOp>()) {
      if (function.isExternal() || !function.getBody().hasOneBlock() ||
          function.getBody().getOps<LaunchOp>().empty())
        continue;
      Schedule schedule;
      if (failed(schedule.build(function)))
        continue;
      SmallVector<size_t> original(schedule.size());
      std::iota(original.begin(), original.end(), 0);
      // Unbounded, launches move as far as their dependencies allow; a
      // window of a few launches makes local swaps only, which keeps
      // recomputed copies next to their readers.
      int64_t best = schedule.peak(original);
      SmallVector<size_t> chosen;
      for (size_t window : {std::numeric_limits<size_t>::max(), size_t(4)}) {
        SmallVector<size_t> reordered = schedule.greedy(window);
        int64_t peak = schedule.peak(reordered);
        if (peak < best) {
          best = peak;
          chosen = std::move(reordered);
        }
      }
      if (!chosen.empty())
        schedule.apply(function, chosen);
    }
  }
};

} // namespace
