//===- PlanMemory.cpp - --trainc-plan-memory: the static arena ------------===//
//
// Every kernel.alloc lives from its definition to its last use in launch
// order, through any kernel.view of it (functions are a single block). Buffers are placed first-fit among
// those live at the same time, largest first when several start together;
// offsets are 64-byte aligned so kernels can use aligned vector loads.
//
//===----------------------------------------------------------------------===//
#include "dialects/kernel/Transforms/Passes.h"

#include "llvm/ADT/DenseMap.h"

#include <functional>
#include <map>

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

/// Places the allocs of one function; returns the arena size.
int64_t planFunction(func::FuncOp function) {
  Block &block = function.getBody().front();
  DenseMap<Operation *, int64_t> position;
  int64_t index = 0;
  for (Operation &op : block)
    position[&op] = index++;

  struct Interval {
    AllocOp alloc;
    int64_t start, end, size;
  };
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
  std::stable_sort(intervals.begin(), intervals.end(),
                   [](const Interval &a, const Interval &b) {
                     return a.start != b.start ? a.start < b.start
                                               : a.size > b.size;
                   });

  // Live placements: offset -> (size, end).
  std::multimap<int64_t, std::pair<int64_t, int64_t>> live;
  int64_t arenaSize = 0;
  for (Interval &interval : intervals) {
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
    arenaSize = std::max(arenaSize, offset + interval.size);
    interval.alloc.setOffsetAttr(
        IntegerAttr::get(IntegerType::get(function.getContext(), 64), offset));
  }
  return arenaSize;
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
