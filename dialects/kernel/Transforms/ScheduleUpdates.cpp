//===- ScheduleUpdates.cpp - --trainc-schedule-updates --------------------===//
//
// The training graph computes every gradient, then updates every
// parameter. Each optimizer update launch moves up to the earliest place
// its buffers allow: right after the last launch that writes what it reads
// or reads or writes what it writes (through views). The gradient is then
// still in the cache when the update reads it, and its buffer dies early.
//
//===----------------------------------------------------------------------===//
#include "dialects/kernel/Transforms/Passes.h"

#include "llvm/ADT/SmallPtrSet.h"

namespace trainc::kernel {
#define GEN_PASS_DEF_SCHEDULEUPDATESPASS
#include "dialects/kernel/Transforms/Passes.h.inc"
} // namespace trainc::kernel

using namespace mlir;
using namespace trainc::kernel;

namespace {

/// Whether `op` must stay before `update`: it writes a buffer the update
/// uses, reads a buffer the update writes, defines a value the update uses,
/// or is not a kernel op this pass understands.
bool mustPrecede(Operation *op, LaunchOp update,
                 const llvm::SmallPtrSetImpl<Value> &used,
                 const llvm::SmallPtrSetImpl<Value> &written) {
  if (llvm::any_of(op->getResults(),
                   [&](Value result) { return llvm::is_contained(update->getOperands(), result); }))
    return true;
  if (isa<AllocOp, ViewOp, ConstantOp>(op))
    return false;
  auto launch = dyn_cast<LaunchOp>(op);
  if (!launch)
    return true;
  for (Value output : launch.getOutputs())
    if (used.contains(viewRoot(output)))
      return true;
  for (Value scratch : launch.getScratch())
    if (used.contains(viewRoot(scratch)))
      return true;
  for (Value input : launch.getInputs())
    if (written.contains(viewRoot(input)))
      return true;
  return false;
}

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
    llvm::SmallPtrSet<Value, 8> used, written;
    for (Value operand : update->getOperands())
      used.insert(viewRoot(operand));
    for (Value output : update.getOutputs())
      written.insert(viewRoot(output));
    for (Value scratch : update.getScratch())
      written.insert(viewRoot(scratch));
    Operation *after = update->getPrevNode();
    while (after && !mustPrecede(after, update, used, written))
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
