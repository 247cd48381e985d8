//===- MemoryBudget.cpp - --memory-budget: remat to a planned arena -------===//
//
// --trainc-remat lowers the peak of live bytes the graph shows; the arena
// the kernel pipeline plans differs (fused elementwise chains store no
// intermediates, buffers are padded, updates are scheduled early). So the
// budget is met by measurement: lower with a graph target, read the
// planned arena, and lower the target by what the arena is over, until it
// fits or recomputation can do no more.
//
//===----------------------------------------------------------------------===//
#include "tools/trainc/MemoryBudget.h"

#include "dialects/graph/Transforms/Passes.h"
#include "dialects/kernel/KernelOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <limits>

namespace trainc {

std::optional<MemoryBudget> parseMemoryBudget(const std::string &text,
                                              std::string &error) {
  llvm::StringRef value(text);
  MemoryBudget budget;
  if (value.consume_back("%")) {
    if (value.getAsDouble(budget.percent) || !(budget.percent > 0) ||
        budget.percent > 100) {
      error = "--memory-budget: a share must be N% with 0 < N <= 100, got '" +
              text + "'";
      return std::nullopt;
    }
    return budget;
  }
  if (value.getAsInteger(10, budget.bytes) || budget.bytes <= 0) {
    error = "--memory-budget: expected bytes (a positive integer) or N%, "
            "got '" +
            text + "'";
    return std::nullopt;
  }
  return budget;
}

namespace {

int64_t trainStepArena(mlir::ModuleOp module) {
  auto step = module.lookupSymbol<mlir::func::FuncOp>("train_step");
  auto size =
      step ? step->getAttrOfType<mlir::IntegerAttr>(kernel::kArenaSizeAttrName)
           : nullptr;
  return size ? size.getInt() : 0;
}

using Lowering =
    llvm::function_ref<void(mlir::OpPassManager &, bool scheduleMemory)>;

/// `module` lowered; null if the pipeline failed.
mlir::OwningOpRef<mlir::ModuleOp> lowered(mlir::ModuleOp module, Lowering lower,
                                          bool scheduleMemory) {
  mlir::OwningOpRef<mlir::ModuleOp> copy = module.clone();
  mlir::PassManager pm(module.getContext());
  lower(pm, scheduleMemory);
  if (mlir::failed(pm.run(*copy)))
    return nullptr;
  return copy;
}

/// `module` after recomputation, lowered with and (if allowed) without
/// --trainc-schedule-memory: the smaller arena. The launch order the
/// graph's recomputation plan assumes is autodiff's; reordering helps it
/// at some targets and undoes it at others (a copy moved up to where its
/// operands are ready lives as long as the value it replaced).
mlir::OwningOpRef<mlir::ModuleOp>
loweredRecomputed(mlir::ModuleOp module, Lowering lower, bool scheduleMemory) {
  mlir::OwningOpRef<mlir::ModuleOp> inOrder = lowered(module, lower, false);
  if (!scheduleMemory || !inOrder)
    return inOrder;
  mlir::OwningOpRef<mlir::ModuleOp> reordered = lowered(module, lower, true);
  if (reordered && trainStepArena(*reordered) < trainStepArena(*inOrder))
    return reordered;
  return inOrder;
}

/// `module` after --trainc-remat to `target`, with what the pass recorded
/// on @gradients (read here: lowering inlines @gradients); null if the
/// pass failed.
mlir::OwningOpRef<mlir::ModuleOp> rematerialized(mlir::ModuleOp module,
                                                 int64_t target,
                                                 const std::string &solver,
                                                 BudgetReport &record) {
  mlir::OwningOpRef<mlir::ModuleOp> copy = module.clone();
  mlir::PassManager pm(module.getContext());
  graph::RematPassOptions remat;
  remat.target = target;
  remat.solver = solver;
  pm.addPass(graph::createRematPass(remat));
  if (mlir::failed(pm.run(*copy)))
    return nullptr;
  auto gradients = copy->lookupSymbol<mlir::func::FuncOp>("gradients");
  auto done =
      gradients ? gradients->getAttrOfType<mlir::DictionaryAttr>("graph.remat")
                : nullptr;
  if (!done)
    return copy;
  auto integer = [&](llvm::StringRef name) {
    auto attr = done.getAs<mlir::IntegerAttr>(name);
    return attr ? attr.getInt() : 0;
  };
  record.graphPeakBefore = integer("peak_before");
  record.graphPeakAfter = integer("peak_after");
  record.recomputedOps = integer("recomputed_ops");
  auto flops = done.getAs<mlir::FloatAttr>("recomputed_flops");
  record.recomputedFlops = flops ? flops.getValueAsDouble() : 0;
  auto used = done.getAs<mlir::StringAttr>("solver");
  record.solver = used ? used.str() : "";
  return copy;
}

} // namespace

mlir::LogicalResult lowerWithinBudget(mlir::ModuleOp module,
                                      const MemoryBudget &budget,
                                      Lowering lower, BudgetReport &report,
                                      std::string &error) {
  mlir::OwningOpRef<mlir::ModuleOp> plain =
      lowered(module, lower, budget.scheduleMemory);
  if (!plain) {
    error = "the kernel pipeline failed";
    return mlir::failure();
  }
  report.unconstrained = trainStepArena(*plain);
  report.budget = budget.percent > 0
                      ? static_cast<int64_t>(std::floor(report.unconstrained *
                                                        budget.percent / 100))
                      : budget.bytes;
  auto adopt = [&](mlir::OwningOpRef<mlir::ModuleOp> &result) {
    module.getBodyRegion().takeBody(result->getBodyRegion());
    report.arena = trainStepArena(module);
  };
  if (report.unconstrained <= report.budget) {
    adopt(plain);
    return mlir::success();
  }
  // One try: recompute to a graph target, lower, read the planned arena.
  int64_t smallest = report.unconstrained;
  auto attempt = [&](int64_t target, BudgetReport &record,
                     mlir::OwningOpRef<mlir::ModuleOp> &result) {
    ++report.attempts;
    mlir::OwningOpRef<mlir::ModuleOp> rematted =
        rematerialized(module, target, budget.solver, record);
    result = rematted
                 ? loweredRecomputed(*rematted, lower, budget.scheduleMemory)
                 : nullptr;
    if (!result)
      return int64_t(-1);
    int64_t arena = trainStepArena(*result);
    smallest = std::min(smallest, arena);
    return arena;
  };
  auto accept = [&](const BudgetReport &record,
                    mlir::OwningOpRef<mlir::ModuleOp> &result) {
    report.graphPeakBefore = record.graphPeakBefore;
    report.graphPeakAfter = record.graphPeakAfter;
    report.recomputedOps = record.recomputedOps;
    report.recomputedFlops = record.recomputedFlops;
    report.solver = record.solver;
    adopt(result);
    return mlir::success();
  };
  // The first target: the graph's peak less what the arena is over.
  BudgetReport record;
  if (!rematerialized(module, std::numeric_limits<int64_t>::max(), "greedy",
                      record)) {
    error = "--trainc-remat failed";
    return mlir::failure();
  }
  int64_t target =
      record.graphPeakBefore - (report.unconstrained - report.budget);
  constexpr int kAttempts = 8;
  for (int i = 0; i < kAttempts && target > 0; ++i) {
    mlir::OwningOpRef<mlir::ModuleOp> result;
    int64_t arena = attempt(target, record, result);
    if (arena < 0) {
      error = "the kernel pipeline failed after --trainc-remat";
      return mlir::failure();
    }
    if (arena <= report.budget)
      return accept(record, result);
    // Recomputation is at its limit where the graph's peak stayed above
    // the target.
    if (record.graphPeakAfter > target)
      break;
    target -= arena - report.budget;
  }
  // As much recomputation as the pass finds: the graph's limit.
  mlir::OwningOpRef<mlir::ModuleOp> result;
  int64_t arena = attempt(0, record, result);
  if (arena < 0) {
    error = "the kernel pipeline failed after --trainc-remat";
    return mlir::failure();
  }
  if (arena <= report.budget)
    return accept(record, result);
  // The planned arena is not monotone in the graph's target (copies need
  // their own bytes where they run; reordering helps at some targets):
  // targets at tenths of the way from the graph's peak to its limit, the
  // highest first (the fewest recomputed flops) until one fits.
  int64_t limit = record.graphPeakAfter, peak = record.graphPeakBefore;
  for (int tenths = 9; tenths >= 1 && peak > limit; --tenths) {
    int64_t sweepTarget = limit + (peak - limit) / 10 * tenths;
    mlir::OwningOpRef<mlir::ModuleOp> swept;
    BudgetReport sweepRecord;
    int64_t sweptArena = attempt(sweepTarget, sweepRecord, swept);
    if (sweptArena < 0) {
      error = "the kernel pipeline failed after --trainc-remat";
      return mlir::failure();
    }
    if (sweptArena <= report.budget)
      return accept(sweepRecord, swept);
  }
  error = llvm::formatv("--memory-budget: the planned arena of @train_step "
                        "cannot be made {0} bytes or less: {1} bytes without "
                        "recomputation, {2} bytes at least with it",
                        report.budget, report.unconstrained, smallest)
              .str();
  return mlir::failure();
}

} // namespace trainc
