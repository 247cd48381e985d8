//===- MemoryBudget.h - --memory-budget: remat to a planned arena -*- C++
//-*-===//
#ifndef TRAINC_TOOLS_TRAINC_MEMORYBUDGET_H
#define TRAINC_TOOLS_TRAINC_MEMORYBUDGET_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstdint>
#include <optional>
#include <string>

namespace trainc {

/// `--memory-budget BYTES|N%`: bytes, or a share of the arena the model
/// plans without recomputation.
struct MemoryBudget {
  int64_t bytes = 0;
  double percent = 0;
  /// --remat-solver: greedy, ilp or best (--trainc-remat's solver option).
  std::string solver = "best";
  /// --schedule memory: the kernel pipeline may reorder launches
  /// (--trainc-schedule-memory), and each recomputation plan is lowered
  /// both with and without the reordering, the smaller arena kept.
  bool scheduleMemory = true;
};

/// Parses "123456", "64MiB"-less plain bytes, or "N%" (0 < N <= 100);
/// nullopt and `error` otherwise.
std::optional<MemoryBudget> parseMemoryBudget(const std::string &text,
                                              std::string &error);

/// What meeting the budget took (`--stats`).
struct BudgetReport {
  int64_t budget = 0;        // bytes
  int64_t unconstrained = 0; // @train_step's arena without recomputation
  int64_t arena = 0;         // the arena planned within the budget
  int64_t graphPeakBefore = 0, graphPeakAfter = 0;
  int64_t recomputedOps = 0;
  double recomputedFlops = 0;
  std::string solver; // the one whose plan was kept
  /// Plans whose integer program stopped at CBC's time limit (not its node
  /// limit): the search's answer may differ on a slower or busier machine.
  int timedOutPlans = 0;
  /// Whether plans were made by the greedy alone because the integer
  /// program had run out of time at their target or a higher one.
  bool greedyAfterTimeout = false;
  int attempts = 0;
  /// Whether the elementwise functions and the parameter copies (a
  /// weight's live-tap slice, its bf16 copy) the backward pass reads are
  /// recomputed (in every plan once the budget binds), and the arena that
  /// alone plans.
  bool functionsRecomputed = false;
  int64_t withFunctions = 0;
};

/// Lowers `module` (after the training pipeline) with `lower` (the kernel
/// pipeline, with or without --trainc-schedule-memory) so that
/// @train_step's planned arena is at most the budget: without
/// recomputation if it fits, else with the elementwise functions and the
/// parameter copies the backward pass reads recomputed
/// (--trainc-remat-elementwise functions=true parameters=true) if that
/// fits, else, those recomputed too, the fitting
/// plan with the fewest recomputed flops among: --trainc-remat on @gradients
/// with a target lowered by what each planned arena is over, recomputation's
/// limit, and targets at tenths between the graph's peak and that limit
/// (planned after the first lever; if none fits, planned before it). Fails
/// with `error` naming the smallest arena recomputation reaches when even that
/// does not fit; `module` is then unchanged.
mlir::LogicalResult lowerWithinBudget(
    mlir::ModuleOp module, const MemoryBudget &budget,
    llvm::function_ref<void(mlir::OpPassManager &, bool scheduleMemory)> lower,
    BudgetReport &report, std::string &error);

} // namespace trainc

#endif
