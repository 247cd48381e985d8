//===- ScheduleUpdates.cpp - --trainc-schedule-updates --------------------===//
//
// The training graph computes every gradient, then updates every
// parameter. Each optimizer update launch moves up to the earliest place
// its buffers allow: right after the last launch that writes what it reads
// or reads or writes what it writes (through views). The gradient is then
// still in the cache when the update reads it, and its buffer dies early.
//
//===----------------------------------------------------------------------===//
#include "dialects/kernel/Transforms/LaunchGraph.h"
#include "dialects/kernel/Transforms/Passes.h"

#include "llvm/ADT/SmallPtrSet.h"

namespace trainc::kernel {
#define GEN_PASS_DEF_SCHEDULEUPDATESPASS
#include "dialects/kernel/Transforms/Passes.h.inc"
} // namespace trainc::kernel

using namespace mlir;
using namespace trainc::kernel;

namespace {

struct ScheduleUpdatesPass
    : trainc::kernel::impl::ScheduleUpdatesPassBase<ScheduleUpdatesPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<LaunchOp> updates;
    getOperation().walk([&](LaunchOp launch) {
      if (isOptimizerUpdate(launch))
        updates.push_back(launch);
    });
    for (LaunchOp update : updates)
      hoist(update);
  }

  void hoist(LaunchOp update) {
    MovedLaunch moved(update);
    Operation *after = update->getPrevNode();
    while (after && !moved.isOrderedWith(after))
      after = after->getPrevNode();
    if (after == update->getPrevNode())
      return;
    if (after)
      update->moveAfter(after);
    else
      update->moveBefore(&update->getBlock()->front());
  }
};

} // namespace
