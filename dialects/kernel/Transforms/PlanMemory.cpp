//===- PlanMemory.cpp - --trainc-plan-memory: the static arena ------------===//
//
// Every kernel.alloc lives from its definition to its last use in launch
// order, through any kernel.view of it (functions are a single block).
// Two placements are computed and the smaller arena kept: first-fit in
// launch order, and largest buffer first into the smallest gap between
// the buffers live with it. Offsets are 64-byte aligned so kernels can use
// aligned vector loads.
//
//===----------------------------------------------------------------------===//
#include "dialects/kernel/Transforms/Passes.h"

#include "llvm/ADT/DenseMap.h"

#include <functional>
#include <map>
#include <numeric>

namespace trainc::kernel {
#define GEN_PASS_DEF_PLANMEMORYPASS
#include "dialects/kernel/Transforms/Passes.h.inc"
} // namespace trainc::kernel

using namespace mlir;
using namespace trainc::kernel;

namespace {

constexpr int64_t kAlignment = 64;

int64_t alignUp(int64_t value) {
  return (value + kAlignment - 1) / kAlignment * kAlignment;
}

struct Interval {
  AllocOp alloc;
  int64_t start, end, size;
};

/// Whether two buffers are live at a common launch (one read at the
/// launch that writes the other counts: a kernel may read and write).
bool overlap(const Interval &a, const Interval &b) {
  return !(a.end < b.start || b.end < a.start);
}

/// One placement: an offset per interval and the arena size.
struct Placement {
  std::vector<int64_t> offsets;
  int64_t size = 0;
};

/// In launch order, each buffer at the lowest offset free among those
/// live at its definition (largest first when several start together).
Placement firstFitInOrder(const std::vector<Interval> &intervals) {
  std::vector<size_t> order(intervals.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Interval &x = intervals[a], &y = intervals[b];
    return x.start != y.start ? x.start < y.start : x.size > y.size;
  });
  Placement placement;
  placement.offsets.resize(intervals.size());
  // Live placements: offset -> (size, end).
  std::multimap<int64_t, std::pair<int64_t, int64_t>> live;
  for (size_t i : order) {
    const Interval &interval = intervals[i];
    // Buffers whose last use came before this definition free their space.
    for (auto it = live.begin(); it != live.end();)
      it = it->second.second < interval.start ? live.erase(it) : std::next(it);
    int64_t offset = 0;
    for (const auto &[start, placed] : live) {
      if (start - offset >= interval.size)
        break;
      offset = std::max(offset, start + placed.first);
    }
    live.insert({offset, {interval.size, interval.end}});
    placement.offsets[i] = offset;
    placement.size = std::max(placement.size, offset + interval.size);
  }
  return placement;
}

/// Largest buffer first, each in the smallest gap left between the
/// already placed buffers it overlaps in time (TFLite's "greedy by size"
/// planner, Pisarchyk and Lee 2020): long-lived large buffers no longer
/// strand the holes that launch order leaves.
Placement greedyBySize(const std::vector<Interval> &intervals) {
  std::vector<size_t> order(intervals.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Interval &x = intervals[a], &y = intervals[b];
    return x.size != y.size ? x.size > y.size : x.start < y.start;
  });
  Placement placement;
  placement.offsets.assign(intervals.size(), -1);
  std::vector<size_t> placed;
  for (size_t i : order) {
    const Interval &interval = intervals[i];
    // (offset, size) of the placed buffers live at the same time.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (size_t j : placed)
      if (overlap(interval, intervals[j]))
        busy.push_back({placement.offsets[j], intervals[j].size});
    llvm::sort(busy);
    int64_t best = -1, bestGap = 0, top = 0;
    for (const auto &[offset, size] : busy) {
      int64_t gap = offset - top;
      if (gap >= interval.size && (best < 0 || gap < bestGap)) {
        best = top;
        bestGap = gap;
      }
      top = std::max(top, offset + size);
    }
    placement.offsets[i] = best >= 0 ? best : top;
    placement.size =
        std::max(placement.size, placement.offsets[i] + interval.size);
    placed.push_back(i);
  }
  return placement;
}

/// Places the allocs of one function; returns the arena size.
int64_t planFunction(func::FuncOp function) {
  Block &block = function.getBody().front();
  DenseMap<Operation *, int64_t> position;
  int64_t index = 0;
  for (Operation &op : block)
    position[&op] = index++;

  std::vector<Interval> intervals;
  // The last use of `buffer` or of a view of it.
  std::function<int64_t(Value)> lastUse = [&](Value buffer) {
    int64_t end = 0;
    for (Operation *user : buffer.getUsers())
      end = std::max(end, isa<ViewOp>(user) ? lastUse(user->getResult(0))
                                            : position[user]);
    return end;
  };
  for (AllocOp alloc : block.getOps<AllocOp>()) {
    int64_t end = std::max(position[alloc], lastUse(alloc));
    intervals.push_back({alloc, position[alloc], end,
                         alignUp(bufferBytes(alloc.getType()))});
  }
  // Neither heuristic wins everywhere: keep the smaller arena (ties: the
  // launch-order one, whose reuse is the closest in time).
  Placement inOrder = firstFitInOrder(intervals);
  Placement bySize = greedyBySize(intervals);
  const Placement &best = bySize.size < inOrder.size ? bySize : inOrder;
  for (auto [interval, offset] : llvm::zip(intervals, best.offsets))
    interval.alloc.setOffsetAttr(
        IntegerAttr::get(IntegerType::get(function.getContext(), 64), offset));
  return best.size;
}

struct PlanMemoryPass
    : trainc::kernel::impl::PlanMemoryPassBase<PlanMemoryPass> {
  using Base::Base;

  void runOnOperation() override {
    for (func::FuncOp function : getOperation().getOps<func::FuncOp>()) {
      // Generated kernels (loop nests) work in their callers' buffers.
      if (function.getBody().getOps<LaunchOp>().empty())
        continue;
      int64_t size = planFunction(function);
      function->setAttr(kArenaSizeAttrName,
                        IntegerAttr::get(IntegerType::get(&getContext(), 64),
                                         size));
    }
  }
};

} // namespace
