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
// (local swaps, which keep recomputed copies beside their readers). Each
// of them, and the original order, is also tried with every launch that
// frees nothing sunk to just before its first reader (Schedule::sink):
// the greedy choice runs a launch that adds few bytes early even when its
// result is read much later (ResNet-18's bf16 -> f32 widenings for the
// weight gradients ran during the forward pass and were live at its
// peak). The order with the lowest peak of live bytes is kept if that
// peak is lower than the original order's.
//
// The typical win is in the backward pass: a weight gradient whose buffer
// is large (a padded convolution's) waits until the activations saved for
// the layers behind it are freed, instead of peaking on top of them.
//
//===----------------------------------------------------------------------===//
#include "dialects/kernel/Transforms/LaunchGraph.h"
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

/// The launches of one function, their order constraints, and the peak
/// of live arena bytes of an order.
class Schedule {
public:
  LogicalResult build(func::FuncOp function) { return graph.build(function); }

  /// Peak of the sum of live arena bytes over `order` (indices into
  /// nodes): a buffer lives from its first launch to its last.
  int64_t peak(ArrayRef<size_t> order) const;

  /// The greedy memory-aware order; with a `window`, a launch may only
  /// run before the earliest launch not yet scheduled if it comes at most
  /// `window` launches after it in the original order.
  SmallVector<size_t> greedy(size_t window) const;

  /// `order` with launches moved later where that frees nothing later:
  /// from the last to the first, a launch that is not the last user of
  /// any buffer moves down to just before the first launch that must
  /// follow it, or that uses one of its buffers last. What it starts then
  /// starts later, and no buffer lives longer.
  SmallVector<size_t> sink(ArrayRef<size_t> order) const;

  void apply(func::FuncOp function, ArrayRef<size_t> order) const {
    graph.apply(function, order);
  }

  size_t size() const { return graph.nodes.size(); }

private:
  LaunchGraph graph;
};

int64_t Schedule::peak(ArrayRef<size_t> order) const {
  DenseMap<Value, size_t> remaining = graph.userCount;
  llvm::DenseSet<Value> started;
  int64_t live = 0, peakBytes = 0;
  for (size_t i : order) {
    for (Value root : graph.nodes[i].arena)
      if (started.insert(root).second)
        live += graph.bytes.lookup(root);
    peakBytes = std::max(peakBytes, live);
    for (Value root : graph.nodes[i].arena)
      if (--remaining[root] == 0)
        live -= graph.bytes.lookup(root);
  }
  return peakBytes;
}

SmallVector<size_t> Schedule::greedy(size_t window) const {
  DenseMap<Value, size_t> remaining = graph.userCount;
  llvm::DenseSet<Value> started;
  std::vector<size_t> waiting = graph.predecessorCount;
  // Ready launches, kept sorted by original index for the tie-break.
  std::set<size_t> ready;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (waiting[i] == 0)
      ready.insert(i);
  auto added = [&](size_t i) {
    int64_t delta = 0;
    for (Value root : graph.nodes[i].arena) {
      if (!started.contains(root))
        delta += graph.bytes.lookup(root);
      if (remaining.lookup(root) == 1)
        delta -= graph.bytes.lookup(root);
    }
    return delta;
  };
  SmallVector<size_t> order;
  order.reserve(graph.nodes.size());
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
    for (Value root : graph.nodes[best].arena) {
      started.insert(root);
      --remaining[root];
    }
    for (size_t next : graph.successors[best])
      if (--waiting[next] == 0)
        ready.insert(next);
  }
  return order;
}

SmallVector<size_t> Schedule::sink(ArrayRef<size_t> order) const {
  size_t n = order.size();
  DenseMap<Value, SmallVector<size_t>> users;
  for (size_t i = 0; i < n; ++i)
    for (Value root : graph.nodes[i].arena)
      users[root].push_back(i);
  SmallVector<size_t> result(order);
  std::vector<size_t> position(n);
  for (size_t at = n; at-- > 0;) {
    for (size_t p = 0; p < n; ++p)
      position[result[p]] = p;
    size_t launch = result[at];
    size_t target = n; // the position it moves to just before
    for (size_t successor : graph.successors[launch])
      target = std::min(target, position[successor]);
    bool frees = false;
    for (Value root : graph.nodes[launch].arena) {
      size_t first = n, last = 0;
      for (size_t user : users.lookup(root))
        if (user != launch) {
          first = std::min(first, position[user]);
          last = std::max(last, position[user]);
        }
      if (first < at) { // started before: it must keep a later user
        frees |= first == n || last < at;
        target = std::min(target, last);
      }
    }
    if (frees || target <= at + 1)
      continue;
    result.erase(result.begin() + at);
    result.insert(result.begin() + target - 1, launch);
  }
  return result;
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
      auto consider = [&](SmallVector<size_t> reordered) {
        int64_t peak = schedule.peak(reordered);
        if (peak < best) {
          best = peak;
          chosen = std::move(reordered);
        }
      };
      consider(schedule.sink(original));
      for (size_t window : {std::numeric_limits<size_t>::max(), size_t(4)}) {
        SmallVector<size_t> reordered = schedule.greedy(window);
        consider(schedule.sink(reordered));
        consider(std::move(reordered));
      }
      if (!chosen.empty())
        schedule.apply(function, chosen);
    }
  }
};

} // namespace
