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
//===----------------------------------------------------------------------===//
#include "dialects/graph/Transforms/Passes.h"

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

namespace {

/// How many ops a recomputed chain may have (16 against 8: the
/// Transformer's smallest arena at batch 16, 14.99 -> 14.68 MB; 32 gains
/// nothing more there and 3 % on ResNet-18).
constexpr int kMaxChain = 16;

int64_t bytesOf(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape())
    return 0;
  int64_t bits = type.getElementType().getIntOrFloatBitWidth();
  // The runtime stores a boolean in a byte.
  return type.getNumElements() * std::max<int64_t>(8, bits) / 8;
}

/// A reshape only views its input's buffer.
bool isView(Operation *op) { return isa<ReshapeOp>(op); }

/// The forward pass: the ops the loss depends on (the function's result
/// whose role is "loss"; every op where there is none).
DenseSet<Operation *> forwardOps(func::FuncOp function) {
  DenseSet<Operation *> forward;
  auto ret = cast<func::ReturnOp>(function.getBody().front().getTerminator());
  SmallVector<Value> work;
  for (unsigned i = 0; i < function.getNumResults(); ++i) {
    auto role = function.getResultAttrOfType<StringAttr>(i, "graph.role");
    if (role && role.getValue() == "loss")
      work.push_back(ret.getOperand(i));
  }
  if (work.empty()) {
    for (Operation &op : function.getBody().front().without_terminator())
      forward.insert(&op);
    return forward;
  }
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (def && forward.insert(def).second)
      llvm::append_range(work, def->getOperands());
  }
  return forward;
}

/// Ops a chain may recompute: forward graph ops without side effects or
/// regions that declare a cost.
bool recomputable(Operation *op, const DenseSet<Operation *> &forward) {
  return op && forward.contains(op) && isa<GraphDialect>(op->getDialect()) &&
         op->getNumRegions() == 0 && isMemoryEffectFree(op) &&
         !matchPattern(op, m_Constant()) && isa<CostOpInterface>(op);
}

double flopsOf(Operation *op) {
  std::optional<Cost> cost =
      estimateCost(op->getName(), op->getOperandTypes(), op->getResultTypes(),
                   op->getAttrDictionary());
  return cost ? cost->flops : 0;
}

/// Liveness of one function's values in op order.
class Liveness {
public:
  explicit Liveness(func::FuncOp function) {
    Block &block = function.getBody().front();
    for (Operation &op : block)
      position[&op] = static_cast<int64_t>(ops.size()), ops.push_back(&op);
    // Views last as long as their last view (ops are in order, so a view's
    // end is known before its source's is taken).
    for (Operation *op : llvm::reverse(ops))
      for (Value result : op->getResults()) {
        int64_t end = position[op];
        for (OpOperand &use : result.getUses()) {
          Operation *user = use.getOwner();
          // A returned gradient's update reads it right away.
          if (isa<func::ReturnOp>(user))
            continue;
          end = std::max(end, isView(user) ? endOf(user->getResult(0))
                                           : position[user]);
        }
        ends[result] = end;
        sizes[result] =
            isView(op) || matchPattern(op, m_Constant()) ? 0 : bytesOf(result);
      }
  }

  int64_t endOf(Value value) const {
    auto it = ends.find(value);
    return it == ends.end() ? 0 : it->second;
  }
  int64_t positionOf(Operation *op) const { return position.lookup(op); }
  int64_t sizeOf(Value value) const { return sizes.lookup(value); }

  /// The first op where the live bytes peak, those bytes, and at how many
  /// ops they are reached.
  struct Peak {
    int64_t at = 0, bytes = 0, count = 0;
    /// Lower: fewer bytes, or as many at fewer ops.
    bool operator<(const Peak &other) const {
      return bytes != other.bytes ? bytes < other.bytes : count < other.count;
    }
  };
  Peak peak() const {
    std::vector<int64_t> delta(ops.size() + 1, 0);
    for (auto [value, size] : sizes) {
      if (!size)
        continue;
      int64_t start = position.lookup(value.getDefiningOp());
      delta[start] += size;
      delta[ends.lookup(value) + 1] -= size;
    }
    Peak peak;
    int64_t live = 0;
    for (size_t i = 0; i < ops.size(); ++i) {
      live += delta[i];
      if (live > peak.bytes)
        peak = {static_cast<int64_t>(i), live, 1};
      else if (live == peak.bytes)
        ++peak.count;
    }
    return peak;
  }

  /// The values live across op `at` (made before it, read after it) and
  /// not read by it.
  SmallVector<Value> liveAcross(int64_t at) const {
    SmallVector<Value> values;
    for (auto [value, size] : sizes)
      if (size && position.lookup(value.getDefiningOp()) < at &&
          ends.lookup(value) > at &&
          !llvm::is_contained(ops[at]->getOperands(), value))
        values.push_back(value);
    // Program order, results in order: deterministic (DenseMap's order
    // is not).
    llvm::sort(values, [&](Value a, Value b) {
      auto key = [&](Value v) {
        return std::make_pair(position.lookup(v.getDefiningOp()),
                              cast<OpResult>(v).getResultNumber());
      };
      return key(a) < key(b);
    });
    return values;
  }

  /// The first reader of `value` after op `at` (a value read after the
  /// peak only through a view made before it has none: not recomputed).
  Operation *firstReaderAfter(Value value, int64_t at) const {
    Operation *first = nullptr;
    for (Operation *user : value.getUsers()) {
      if (isa<func::ReturnOp>(user))
        continue;
      int64_t p = position.lookup(user);
      if (p > at && (!first || p < position.lookup(first)))
        first = user;
    }
    return first;
  }

  std::vector<Operation *> ops;

private:
  DenseMap<Operation *, int64_t> position;
  DenseMap<Value, int64_t> ends;
  DenseMap<Value, int64_t> sizes;
};

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

struct RematPass : trainc::graph::impl::RematPassBase<RematPass> {
  using Base::Base;

  void runOnOperation() override {
    auto function = getOperation().lookupSymbol<func::FuncOp>(functionName);
    if (!function || function.isExternal())
      return;
    int64_t before = Liveness(function).peak().bytes, after = before;
    int64_t recomputed = 0;
    double flops = 0;
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
          recomputed += plan.chain.size();
          flops += plan.flops;
          lowered = true;
          break;
        }
        undo(applied);
      }
      if (!lowered)
        break;
    }
    after = Liveness(function).peak().bytes;
    // What was done, for `trainc compile --stats`.
    Builder b(&getContext());
    function->setAttr(
        "graph.remat",
        b.getDictionaryAttr(
            {b.getNamedAttr("target", b.getI64IntegerAttr(target)),
             b.getNamedAttr("peak_before", b.getI64IntegerAttr(before)),
             b.getNamedAttr("peak_after", b.getI64IntegerAttr(after)),
             b.getNamedAttr("recomputed_ops", b.getI64IntegerAttr(recomputed)),
             b.getNamedAttr("recomputed_flops", b.getF64FloatAttr(flops))}));
  }
};

} // namespace
