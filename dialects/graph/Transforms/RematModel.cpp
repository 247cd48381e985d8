//===- RematModel.cpp - The memory model --trainc-remat plans with --------===//
#include "dialects/graph/Transforms/RematModel.h"

#include "dialects/graph/GraphOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace trainc::graph::remat {

int64_t bytesOf(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape())
    return 0;
  int64_t bits = type.getElementType().getIntOrFloatBitWidth();
  // The runtime stores a boolean in a byte.
  return type.getNumElements() * std::max<int64_t>(8, bits) / 8;
}

bool isView(Operation *op) { return isa<ReshapeOp>(op); }

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

Liveness::Liveness(func::FuncOp function) {
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

int64_t Liveness::endOf(Value value) const {
  auto it = ends.find(value);
  return it == ends.end() ? 0 : it->second;
}

std::vector<int64_t> Liveness::liveBytes() const {
  std::vector<int64_t> live(ops.size() + 1, 0);
  for (auto [value, size] : sizes) {
    if (!size)
      continue;
    live[position.lookup(value.getDefiningOp())] += size;
    live[ends.lookup(value) + 1] -= size;
  }
  for (size_t i = 1; i < live.size(); ++i)
    live[i] += live[i - 1];
  live.pop_back();
  return live;
}

Liveness::Peak Liveness::peak() const {
  Peak peak;
  std::vector<int64_t> live = liveBytes();
  for (size_t i = 0; i < live.size(); ++i) {
    if (live[i] > peak.bytes)
      peak = {static_cast<int64_t>(i), live[i], 1};
    else if (live[i] == peak.bytes)
      ++peak.count;
  }
  return peak;
}

SmallVector<Value> Liveness::liveAcross(int64_t at) const {
  SmallVector<Value> values;
  for (auto [value, size] : sizes)
    if (size && position.lookup(value.getDefiningOp()) < at &&
        ends.lookup(value) > at &&
        !llvm::is_contained(ops[at]->getOperands(), value))
      values.push_back(value);
  // Program order, results in order: deterministic (DenseMap's order is
  // not).
  llvm::sort(values, [&](Value a, Value b) {
    auto key = [&](Value v) {
      return std::make_pair(position.lookup(v.getDefiningOp()),
                            cast<OpResult>(v).getResultNumber());
    };
    return key(a) < key(b);
  });
  return values;
}

Operation *Liveness::firstReaderAfter(Value value, int64_t at) const {
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

} // namespace trainc::graph::remat
