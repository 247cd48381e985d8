//===- MemoryBudget.cpp - --memory-budget: remat to a planned arena -------===//
//
// --trainc-remat lowers the peak of live bytes the graph shows; the arena
// the kernel pipeline plans differs (fused elementwise chains store no
// intermediates, buffers are padded, updates are scheduled early). So the
// budget is met by measurement: once it binds, recompute the elementwise
// functions the backward pass reads (GELU's erf) in its fused kernels, and
// the copies of parameters it reads (a weight's live-tap slice, its bf16
// copy), which the graph's liveness does not see at the arena's peak;
// if that is not enough, plan recomputation on that graph: lower with a
// graph target, read the planned arena, and lower the target by what the
// arena is over, until it fits or recomputation can do no more; then try
// the cheaper plans of a sweep of targets, and keep the fitting plan with
// the fewest flops. If none fits, the same search once more with the
// plans made on the graph as it was (the copies recomputed after).
//
//===----------------------------------------------------------------------===//
#include "tools/trainc/MemoryBudget.h"

#include "dialects/graph/Transforms/Passes.h"
#include "dialects/kernel/KernelOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <vector>

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

/// What a recomputation plan is: a hash of @gradients' body as printed
/// after --trainc-remat (not of its attributes, which name the target).
/// Two targets often reach the same plan, which need not be lowered
/// twice; but plans alike in flops, ops and graph peak can differ (the
/// Transformer's layers are interchangeable, and recomputing in one or
/// another plans arenas 0.2 MB apart), so those are no key.
uint64_t planFingerprint(mlir::ModuleOp rematted) {
  auto gradients = rematted.lookupSymbol<mlir::func::FuncOp>("gradients");
  if (!gradients || gradients.getBody().empty())
    return 0;
  std::string text;
  llvm::raw_string_ostream stream(text);
  mlir::AsmState names(gradients);
  for (mlir::Operation &op : gradients.getBody().front()) {
    op.print(stream, names);
    stream << '\n';
  }
  return llvm::xxh3_64bits(text);
}

using Lowering =
    llvm::function_ref<void(mlir::OpPassManager &, bool scheduleMemory)>;

/// The first lever: --trainc-remat-elementwise functions=true
/// parameters=true (the elementwise functions and the parameter copies the
/// backward pass reads, recomputed where it reads them).
void addFirstLever(mlir::OpPassManager &pm) {
  graph::RematElementwisePassOptions elementwise;
  elementwise.functions = true;
  elementwise.parameters = true;
  pm.addPass(graph::createRematElementwisePass(elementwise));
}

/// `module` lowered, the elementwise functions and parameter copies first
/// recomputed where the backward pass reads them
/// (--trainc-remat-elementwise functions=true parameters=true) if
/// `functions`; null if the pipeline failed.
mlir::OwningOpRef<mlir::ModuleOp> lowered(mlir::ModuleOp module, Lowering lower,
                                          bool scheduleMemory, bool functions) {
  mlir::OwningOpRef<mlir::ModuleOp> copy = module.clone();
  mlir::PassManager pm(module.getContext());
  if (functions)
    addFirstLever(pm);
  lower(pm, scheduleMemory);
  if (mlir::failed(pm.run(*copy)))
    return nullptr;
  return copy;
}

/// `module` with the elementwise functions and the parameter copies the
/// backward pass reads recomputed where it reads them
/// (--trainc-remat-elementwise functions=true parameters=true); null if
/// the pass failed.
mlir::OwningOpRef<mlir::ModuleOp> cheaplyRecomputed(mlir::ModuleOp module) {
  mlir::OwningOpRef<mlir::ModuleOp> copy = module.clone();
  mlir::PassManager pm(module.getContext());
  addFirstLever(pm);
  if (mlir::failed(pm.run(*copy)))
    return nullptr;
  return copy;
}

/// `module` after recomputation, lowered with and (if allowed) without
/// --trainc-schedule-memory: the smaller arena. The launch order the
/// graph's recomputation plan assumes is autodiff's; reordering helps it
/// at some targets and undoes it at others (a copy moved up to where its
/// operands are ready lives as long as the value it replaced).
mlir::OwningOpRef<mlir::ModuleOp> loweredRecomputed(mlir::ModuleOp module,
                                                    Lowering lower,
                                                    bool scheduleMemory,
                                                    bool functions) {
  mlir::OwningOpRef<mlir::ModuleOp> inOrder =
      lowered(module, lower, false, functions);
  if (!scheduleMemory || !inOrder)
    return inOrder;
  mlir::OwningOpRef<mlir::ModuleOp> reordered =
      lowered(module, lower, true, functions);
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
  auto timedOut = done.getAs<mlir::BoolAttr>("ilp_timed_out");
  record.timedOutPlans = timedOut && timedOut.getValue() ? 1 : 0;
  return copy;
}

} // namespace

mlir::LogicalResult lowerWithinBudget(mlir::ModuleOp module,
                                      const MemoryBudget &budget,
                                      Lowering lower, BudgetReport &report,
                                      std::string &error) {
  mlir::OwningOpRef<mlir::ModuleOp> plain =
      lowered(module, lower, budget.scheduleMemory, false);
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
  // The budget binds. First lever, in every plan below: the elementwise
  // functions the backward pass reads (GELU's erf, sigmoid, tanh) are
  // recomputed in its fused kernels rather than stored, a little
  // arithmetic for a full-size buffer each (the Transformer at batch 16:
  // arena 24.1 -> 19.9 MB, step time within noise on a Sapphire Rapids),
  // and so are the copies of parameters it reads (ResNet-18's live-tap
  // slices of its last stage's weights: 5 MB at the arena's peak).
  mlir::OwningOpRef<mlir::ModuleOp> levered = cheaplyRecomputed(module);
  if (!levered) {
    error = "--trainc-remat-elementwise failed";
    return mlir::failure();
  }
  mlir::OwningOpRef<mlir::ModuleOp> withFunctions =
      lowered(*levered, lower, budget.scheduleMemory, false);
  if (!withFunctions) {
    error = "the kernel pipeline failed";
    return mlir::failure();
  }
  report.functionsRecomputed = true;
  report.withFunctions = trainStepArena(*withFunctions);
  if (report.withFunctions <= report.budget) {
    adopt(withFunctions);
    return mlir::success();
  }
  // A plan: recomputation to a graph target, what it recorded, and the
  // module after it (not yet lowered).
  struct Plan {
    BudgetReport record;
    mlir::OwningOpRef<mlir::ModuleOp> rematted;
  };
  // Plans already lowered (the same recomputation reached from two
  // targets) are known by their fingerprint.
  int64_t smallest = std::min(report.unconstrained, report.withFunctions);
  std::set<uint64_t> loweredPlans;
  auto seen = [&](const Plan &candidate) {
    return !loweredPlans.insert(planFingerprint(*candidate.rematted)).second;
  };
  // The fitting plan with the fewest recomputed flops so far.
  std::optional<BudgetReport> best;
  mlir::OwningOpRef<mlir::ModuleOp> bestModule;
  auto consider = [&](const BudgetReport &record,
                      mlir::OwningOpRef<mlir::ModuleOp> &result) {
    if (best && best->recomputedFlops <= record.recomputedFlops)
      return;
    best = record;
    bestModule = std::move(result);
  };

  // Once a plan's integer program stops at CBC's time limit (a graph as
  // large as RegNetY-400MF: its root node alone takes longer), the plans
  // for that target and lower ones (tighter, harder programs) are the
  // greedy's: each solve would spend the same 30 s for nothing, up to 18
  // times. Higher targets still try the integer program.
  std::optional<int64_t> timedOutTarget;
  // The plans of --trainc-remat on `base`, lowered with the first lever
  // applied after recomputation if `leverAfter` (else `base` has it);
  // the fitting one with the fewest flops goes to `best`. Fails (with
  // `error`) only if a pass fails.
  auto search = [&](mlir::ModuleOp base,
                    bool leverAfter) -> mlir::LogicalResult {
    // A plan's fingerprint is @gradients' text; the first lever changes
    // more than @gradients, so the two searches' plans are told apart.
    loweredPlans.clear();
    auto plan = [&](int64_t target, Plan &result) {
      bool greedyOnly = budget.solver != "greedy" && timedOutTarget &&
                        target <= *timedOutTarget;
      result.rematted = rematerialized(
          base, target, greedyOnly ? "greedy" : budget.solver, result.record);
      report.greedyAfterTimeout |= greedyOnly;
      report.timedOutPlans += result.record.timedOutPlans;
      if (result.record.timedOutPlans)
        timedOutTarget = std::max(timedOutTarget.value_or(target), target);
      if (!result.rematted)
        error = "--trainc-remat failed";
      return static_cast<bool>(result.rematted);
    };
    // The plan lowered: its planned arena, or -1 if the pipeline failed.
    auto lowerPlan = [&](Plan &candidate,
                         mlir::OwningOpRef<mlir::ModuleOp> &result) {
      ++report.attempts;
      seen(candidate);
      result = loweredRecomputed(*candidate.rematted, lower,
                                 budget.scheduleMemory, leverAfter);
      if (!result) {
        error = "the kernel pipeline failed after --trainc-remat";
        return int64_t(-1);
      }
      int64_t arena = trainStepArena(*result);
      smallest = std::min(smallest, arena);
      return arena;
    };

    // First: the graph's peak less what the arena is over, lowered by
    // what each planned arena is still over, until one fits.
    Plan unbounded;
    if (!plan(std::numeric_limits<int64_t>::max(), unbounded))
      return mlir::failure();
    int64_t peak = unbounded.record.graphPeakBefore;
    int64_t target = peak - (report.withFunctions - report.budget);
    constexpr int kAttempts = 8;
    for (int i = 0; i < kAttempts && target > 0; ++i) {
      Plan candidate;
      if (!plan(target, candidate))
        return mlir::failure();
      mlir::OwningOpRef<mlir::ModuleOp> result;
      int64_t arena = lowerPlan(candidate, result);
      if (arena < 0)
        return mlir::failure();
      if (arena <= report.budget) {
        consider(candidate.record, result);
        break;
      }
      // Recomputation is at its limit where the graph's peak stayed
      // above the target.
      if (candidate.record.graphPeakAfter > target)
        break;
      target -= arena - report.budget;
    }

    // The planned arena is neither monotone in the graph's target nor in
    // the flops (copies need their own bytes where they run; reordering
    // helps at some targets; the solvers' choices differ from target to
    // target): so also recomputation's limit (target 0) and targets at
    // tenths of the way from the graph's peak to that limit. Planning is
    // cheap, lowering is not: only plans with fewer flops than the best
    // fit are lowered, the fewest first, until one fits. (Most flops
    // first, stopping at a plan that does not fit, misses ResNet-18's
    // 157 MFLOP plan behind a 167 MFLOP one that does not fit.)
    std::vector<Plan> candidates(1);
    if (!plan(0, candidates.front()))
      return mlir::failure();
    int64_t limit = candidates.front().record.graphPeakAfter;
    for (int tenths = 9; tenths >= 1 && peak > limit; --tenths) {
      Plan candidate;
      if (!plan(limit + (peak - limit) / 10 * tenths, candidate))
        return mlir::failure();
      candidates.push_back(std::move(candidate));
    }
    llvm::stable_sort(candidates, [](const Plan &a, const Plan &b) {
      return a.record.recomputedFlops < b.record.recomputedFlops;
    });
    for (Plan &candidate : candidates) {
      const BudgetReport &record = candidate.record;
      if (best && record.recomputedFlops >= best->recomputedFlops)
        break;
      if (seen(candidate))
        continue;
      mlir::OwningOpRef<mlir::ModuleOp> result;
      int64_t arena = lowerPlan(candidate, result);
      if (arena < 0)
        return mlir::failure();
      if (arena <= report.budget) {
        consider(record, result);
        break;
      }
    }
    return mlir::success();
  };

  // Plans are made on the graph with the copies already recomputed, so
  // that its liveness sees them gone (ResNet-18 at batch 32: smallest
  // arena 13.78 -> 11.29 MB). Some plans fit only with the copies
  // recomputed after planning (the Transformer's smallest arena is 10.51
  // MB that way, 11.04 MB the other): those are searched when no plan
  // fits the first way.
  if (mlir::failed(search(*levered, false)))
    return mlir::failure();
  if (!best && mlir::failed(search(module, true)))
    return mlir::failure();
  if (best) {
    report.graphPeakBefore = best->graphPeakBefore;
    report.graphPeakAfter = best->graphPeakAfter;
    report.recomputedOps = best->recomputedOps;
    report.recomputedFlops = best->recomputedFlops;
    report.solver = best->solver;
    adopt(bestModule);
    return mlir::success();
  }
  error = llvm::formatv("--memory-budget: the planned arena of @train_step "
                        "cannot be made {0} bytes or less: {1} bytes without "
                        "recomputation, {2} bytes at least with it",
                        report.budget, report.unconstrained, smallest)
              .str();
  return mlir::failure();
}

} // namespace trainc
