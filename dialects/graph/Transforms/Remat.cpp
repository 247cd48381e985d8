//===- Remat.cpp - --trainc-remat: recomputation under a memory budget ----===//
//
// The values the backward pass reads from the forward one live across the
// boundary between them, where the arena peaks. This pass lowers that peak
// to a target by recomputing some of them in the backward pass, choosing
// greedily (as RAF and DTR do) the value that frees the most bytes per
// recomputed flop:
//
//   1. Liveness over the function's op order (the order the kernels run
//      in): a value lives from its op to its last reader; a reshape is a
//      view of its input, which lives as long as the view; a returned
//      gradient dies where it is made (its optimizer update runs right
//      after it: --trainc-schedule-updates); arguments and constants take
//      no arena space.
//   2. The peak: the op where the live bytes are largest.
//   3. Candidates: values live across the peak and not read by its op.
//      Each is recomputed right before its first reader after the peak,
//      from operands that are there anyway (arguments, constants, values
//      read at or after that point) or are themselves recomputed there: a
//      chain, such as a convolution, its batch norm and its ReLU,
//      recomputed from the block's input. Every value of the chain that
//      is live across the peak frees its bytes there.
//   4. The candidate with the most bytes freed per flop (CostOpInterface)
//      is applied: the chain is cloned before that reader, which, and every
//      later reader of a chain value, reads the clones.
//
// until the peak is at most the target or no candidate frees anything.
// The clones compute what the originals did, with the same kernels: the
// results are the same bit for bit. The model is the graph's; the kernel
// pipeline fuses elementwise chains (their intermediates take no space)
// and pads buffers, so `trainc compile --memory-budget` checks the planned
// arena and runs this pass again with a lower target where it is over.
//
// `solver=ilp` plans by an integer program instead (RematIlp.cpp), and
// `solver=best`, the default, runs both on copies of the function and
// keeps the plan that meets the target with fewer flops (else the lower
// peak); the function's `graph.remat` attribute records both.
//
//===----------------------------------------------------------------------===//
#include "dialects/graph/Transforms/Passes.h"
#include "dialects/graph/Transforms/RematModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <map>

namespace trainc::graph {
#define GEN_PASS_DEF_REMATPASS
#include "dialects/graph/Transforms/Passes.h.inc"
} // namespace trainc::graph

using namespace mlir;
using namespace trainc::graph;
using namespace trainc::graph::remat;

namespace {

/// One way to take a value out of the peak: the ops to recompute before
/// `at`, the bytes that frees at the peak, their flops.
struct Plan {
  Operation *at = nullptr;
  llvm::SetVector<Operation *> chain;
  int64_t freed = 0;
  double flops = 0;
};

/// Adds to `plan` what recomputing `value` before `plan.at` needs; false
/// if something it needs cannot be recomputed.
bool addChain(const Liveness &live, const DenseSet<Operation *> &forward,
              Value value, Plan &plan, int64_t peak) {
  Operation *def = value.getDefiningOp();
  if (!def || matchPattern(def, m_Constant()))
    return true;
  // Recomputed already, or read there anyway (kept, at no cost).
  if (plan.chain.contains(def) || live.endOf(value) >= live.positionOf(plan.at))
    return true;
  if (!recomputable(def, forward) || plan.chain.size() >= kMaxChain)
    return false;
  for (Value operand : def->getOperands())
    if (!addChain(live, forward, operand, plan, peak))
      return false;
  plan.chain.insert(def);
  plan.flops += flopsOf(def);
  for (Value result : def->getResults())
    if (live.positionOf(def) < peak && live.endOf(result) > peak)
      plan.freed += live.sizeOf(result);
  return true;
}

/// The plan that recomputes `value` before its first reader after the
/// peak; the chain's values live across the peak move to the clones too
/// and free their bytes.
std::optional<Plan> planFor(const Liveness &live,
                            const DenseSet<Operation *> &forward, Value value,
                            int64_t peak) {
  Plan plan;
  plan.at = live.firstReaderAfter(value, peak);
  if (!plan.at || !recomputable(value.getDefiningOp(), forward))
    return std::nullopt;
  Operation *def = value.getDefiningOp();
  for (Value operand : def->getOperands())
    if (!addChain(live, forward, operand, plan, peak))
      return std::nullopt;
  plan.chain.insert(def);
  plan.flops += flopsOf(def);
  for (Value result : def->getResults())
    if (live.endOf(result) > peak)
      plan.freed += live.sizeOf(result);
  if (plan.freed <= 0)
    return std::nullopt;
  return plan;
}

/// What `apply` changed, to take it back.
struct Applied {
  SmallVector<Operation *> clones;
  SmallVector<std::pair<OpOperand *, Value>> uses; // use, original value
};

/// Clones the plan's chain before `plan.at`; the readers at or after it
/// read the clones.
Applied apply(const Liveness &live, const Plan &plan) {
  Applied applied;
  OpBuilder builder(plan.at);
  IRMapping mapping;
  SmallVector<Operation *> chain(plan.chain.begin(), plan.chain.end());
  llvm::sort(chain, [&](Operation *a, Operation *b) {
    return live.positionOf(a) < live.positionOf(b);
  });
  for (Operation *op : chain) {
    Operation *copy = builder.clone(*op, mapping);
    applied.clones.push_back(copy);
    for (auto [original, clone] :
         llvm::zip(op->getResults(), copy->getResults()))
      for (OpOperand &use : llvm::make_early_inc_range(original.getUses())) {
        Operation *user = use.getOwner();
        if (isa<func::ReturnOp>(user) || user == copy ||
            !(user == plan.at || plan.at->isBeforeInBlock(user)))
          continue;
        applied.uses.push_back({&use, original});
        use.set(clone);
      }
  }
  return applied;
}

void undo(Applied &applied) {
  for (auto [use, original] : llvm::reverse(applied.uses))
    use->set(original);
  for (Operation *clone : llvm::reverse(applied.clones))
    clone->erase();
}

/// What one solver did.
struct Outcome {
  int64_t peak = 0, recomputedOps = 0;
  double flops = 0;
};

/// The greedy: recompute the plan that frees the most bytes per flop at
/// the peak, until the peak is at most `target` or no plan lowers it.
Outcome greedy(func::FuncOp function, int64_t target, int64_t maxSteps) {
  Outcome outcome;
  DenseSet<Operation *> forward = forwardOps(function);
  for (int64_t step = 0; step < maxSteps; ++step) {
    Liveness live(function);
    Liveness::Peak now = live.peak();
    if (now.bytes <= target)
      break;
    SmallVector<Plan> plans;
    for (Value value : live.liveAcross(now.at))
      if (std::optional<Plan> plan = planFor(live, forward, value, now.at))
        plans.push_back(std::move(*plan));
    // Most bytes freed per flop first; ties: the larger saving.
    auto score = [](const Plan &p) { return p.freed / (p.flops + 1.0); };
    llvm::stable_sort(plans, [&](const Plan &a, const Plan &b) {
      return score(a) != score(b) ? score(a) > score(b) : a.freed > b.freed;
    });
    // The best plan that lowers the peak (the recomputed chain needs its
    // own bytes where it runs, which may make a new peak as high).
    bool lowered = false;
    for (const Plan &plan : plans) {
      Applied applied = apply(live, plan);
      if (Liveness(function).peak() < now) {
        outcome.recomputedOps += plan.chain.size();
        outcome.flops += plan.flops;
        lowered = true;
        break;
      }
      undo(applied);
    }
    if (!lowered)
      break;
  }
  outcome.peak = Liveness(function).peak().bytes;
  return outcome;
}

/// Better for `target`: meets it with fewer flops; where neither meets
/// it, the lower peak.
bool better(const Outcome &a, const Outcome &b, int64_t target) {
  bool aMeets = a.peak <= target, bMeets = b.peak <= target;
  if (aMeets != bMeets)
    return aMeets;
  if (!aMeets && a.peak != b.peak)
    return a.peak < b.peak;
  return a.flops != b.flops ? a.flops < b.flops : a.peak < b.peak;
}

struct RematPass : trainc::graph::impl::RematPassBase<RematPass> {
  using Base::Base;

  void runOnOperation() override {
    auto function = getOperation().lookupSymbol<func::FuncOp>(functionName);
    if (!function || function.isExternal())
      return;
    if (solver != "greedy" && solver != "ilp" && solver != "best") {
      function.emitError("--trainc-remat: solver must be greedy, ilp or "
                         "best, got '")
          << solver << "'";
      return signalPassFailure();
    }
    Builder b(&getContext());
    SmallVector<NamedAttribute> record;
    auto note = [&](StringRef name, Attribute value) {
      record.push_back(b.getNamedAttr(name, value));
    };
    int64_t before = Liveness(function).peak().bytes;
    // The target as the solvers compare against it (0: as low as can be).
    int64_t goal = target > 0 ? target : 0;
    Outcome kept;
    StringRef used = "greedy";
    if (solver == "greedy") {
      kept = greedy(function, goal, maxSteps);
    } else {
      // The greedy on a copy, to compare (or to fall back to).
      std::optional<Outcome> fromGreedy;
      func::FuncOp copy;
      if (solver == "best") {
        copy = function.clone();
        fromGreedy = greedy(copy, goal, maxSteps);
        note("greedy_peak", b.getI64IntegerAttr(fromGreedy->peak));
        note("greedy_flops", b.getF64FloatAttr(fromGreedy->flops));
      }
      bool timedOut = false;
      std::optional<IlpOutcome> exact =
          rematByIlp(function, goal, IlpLimits{nodes, seconds}, timedOut);
      // Where CBC's time limit bound, the plan (the integer program's or,
      // where it found none, the greedy's) depends on the machine's speed.
      note("ilp_timed_out", b.getBoolAttr(timedOut));
      if (exact) {
        kept = {Liveness(function).peak().bytes, exact->recomputedOps,
                exact->flops};
        used = "ilp";
        note("ilp_peak", b.getI64IntegerAttr(kept.peak));
        note("ilp_model_peak", b.getI64IntegerAttr(exact->modelPeak));
        note("ilp_flops", b.getF64FloatAttr(kept.flops));
        note("ilp_optimal", b.getBoolAttr(exact->optimal));
        note("ilp_seconds", b.getF64FloatAttr(exact->seconds));
        note("ilp_nodes", b.getI64IntegerAttr(exact->nodes));
      }
      if (fromGreedy && (!exact || better(*fromGreedy, kept, goal))) {
        function.getBody().takeBody(copy.getBody());
        kept = *fromGreedy;
        used = "greedy";
      } else if (!exact) {
        // No solution in time: the greedy.
        kept = greedy(function, goal, maxSteps);
      }
      if (copy)
        copy->erase();
    }
    // What was done, for `trainc compile --stats`.
    note("target", b.getI64IntegerAttr(target));
    note("solver", b.getStringAttr(used));
    note("peak_before", b.getI64IntegerAttr(before));
    note("peak_after", b.getI64IntegerAttr(kept.peak));
    note("recomputed_ops", b.getI64IntegerAttr(kept.recomputedOps));
    note("recomputed_flops", b.getF64FloatAttr(kept.flops));
    function->setAttr("graph.remat", b.getDictionaryAttr(record));
  }
};

} // namespace
