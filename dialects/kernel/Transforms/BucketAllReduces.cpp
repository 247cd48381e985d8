//===- BucketAllReduces.cpp - --trainc-bucket-all-reduces -----------------===//
//
// Data-parallel training averages every gradient over the job's processes
// (graph.all_reduce, one launch per gradient). One collective per gradient
// would pay the network's latency hundreds of times a step; one for all of
// them would start only when the backward pass ends. As PyTorch's DDP does,
// this pass groups the gradients into buckets of about `bucket-bytes`, in
// the order the backward pass computes them, and splits each bucket's
// communication in two launches:
//
//   comm.all_reduce_start(g1, ..., gk) -> (staging)   packs the gradients,
//                                        starts a non-blocking all-reduce
//   comm.all_reduce_wait(staging) -> (a1, ..., ak)    waits for it, unpacks
//                                        the means
//
// Unlike a run-time hook, the compiler knows where each gradient is final:
// a bucket starts right after the launch that computes its last gradient;
// its wait comes after the next bucket has started (the backward pass
// computes that bucket while this one is on the network), and the launches
// that read the averaged gradients (the optimizer's updates) follow the
// wait. The launches are list-scheduled by those priorities within the
// buffers' order constraints (LaunchGraph.h), so every launch still reads
// what it read before. The staging buffer lives in the arena from start to
// wait, which is the time the collective owns it. A bucket of one gradient
// that nothing else reads (a large weight's) is reduced in place: the
// gradient is the staging buffer and the mean is written over it, with no
// copy and no buffer of its own.
//
//===----------------------------------------------------------------------===//
#include "dialects/kernel/Transforms/LaunchGraph.h"
#include "dialects/kernel/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

#include <map>
#include <set>

namespace trainc::kernel {
#define GEN_PASS_DEF_BUCKETALLREDUCESPASS
#include "dialects/kernel/Transforms/Passes.h.inc"
} // namespace trainc::kernel

using namespace mlir;
using namespace trainc::kernel;

namespace {

/// One bucket: the all-reduce launches it replaces, in the order their
/// gradients are computed.
struct Bucket {
  SmallVector<LaunchOp> allReduces;
  int64_t bytes = 0;
};

/// Whether `allReduce` is the only launch that reads its gradient's buffer
/// without writing it, and nothing touches the buffer after it (the
/// launches that compute it come before): the bucket may then reduce it in
/// place, the collective writing the buffer while the step goes on. Not
/// for a function argument's buffer.
bool onlyReadByItsAllReduce(LaunchOp allReduce) {
  Value root = viewRoot(allReduce.getInputs().front());
  if (!root.getDefiningOp<AllocOp>())
    return false;
  SmallVector<Value> values = {root};
  for (size_t i = 0; i < values.size(); ++i)
    for (Operation *user : values[i].getUsers()) {
      if (auto view = dyn_cast<ViewOp>(user)) {
        values.push_back(view.getResult());
        continue;
      }
      if (user == allReduce.getOperation())
        continue;
      auto launch = dyn_cast<LaunchOp>(user);
      if (!launch || !launch->isBeforeInBlock(allReduce) ||
          llvm::none_of(launch.getOutputs(),
                        [&](Value output) { return viewRoot(output) == root; }))
        return false;
    }
  return true;
}

struct BucketAllReducesPass
    : trainc::kernel::impl::BucketAllReducesPassBase<BucketAllReducesPass> {
  using Base::Base;

  void runOnOperation() override {
    if (bucketBytes < 1) {
      getOperation().emitError("--trainc-bucket-all-reduces: bucket-bytes "
                               "must be positive, not ")
          << bucketBytes;
      return signalPassFailure();
    }
    for (func::FuncOp function : getOperation().getOps<func::FuncOp>()) {
      if (function.isExternal() || !function.getBody().hasOneBlock())
        continue;
      if (failed(runOnFunction(function)))
        return signalPassFailure();
    }
  }

  LogicalResult runOnFunction(func::FuncOp function) {
    if (llvm::none_of(function.getBody().getOps<LaunchOp>(), [](LaunchOp op) {
          return op.getKernel() == "graph.all_reduce";
        }))
      return success();
    LaunchGraph graph;
    if (failed(graph.build(function)))
      return function.emitError("--trainc-bucket-all-reduces: the function "
                                "holds ops other than kernel launches");
    SmallVector<size_t> allReduces;
    for (auto [i, node] : llvm::enumerate(graph.nodes))
      if (node.launch.getKernel() == "graph.all_reduce")
        allReduces.push_back(i);
    if (allReduces.empty())
      return success();
    StringRef backend = graph.nodes[allReduces.front()].launch.getBackend();
    for (size_t i : allReduces) {
      LaunchOp launch = graph.nodes[i].launch;
      if (launch.getInputs().size() != 1 || launch.getOutputs().size() != 1 ||
          !launch.getScratch().empty() || launch.getBackend() != backend ||
          backend.empty())
        return launch.emitError("an all-reduce launch must have one input, "
                                "one output and the backend of the others");
    }
    std::vector<SmallVector<size_t>> predecessors(graph.nodes.size());
    for (size_t i = 0; i < graph.nodes.size(); ++i)
      for (size_t next : graph.successors[i])
        predecessors[next].push_back(i);

    // Buckets fill in the order the gradients are computed (the launch
    // each all-reduce waits for); one closes when it reaches the size.
    auto producedAt = [&](size_t i) {
      int64_t at = -1;
      for (size_t p : predecessors[i])
        at = std::max(at, static_cast<int64_t>(p));
      return at;
    };
    llvm::stable_sort(allReduces, [&](size_t a, size_t b) {
      return producedAt(a) < producedAt(b);
    });
    SmallVector<Bucket> buckets;
    for (size_t i : allReduces) {
      if (buckets.empty() || buckets.back().bytes >= bucketBytes)
        buckets.emplace_back();
      LaunchOp launch = graph.nodes[i].launch;
      buckets.back().allReduces.push_back(launch);
      buckets.back().bytes +=
          bufferBytes(cast<MemRefType>(launch.getInputs().front().getType()));
    }

    // Each bucket's start and wait (placed by the schedule below).
    OpBuilder b(function.getContext());
    b.setInsertionPoint(graph.nodes[allReduces.front()].launch);
    SmallVector<std::pair<LaunchOp, LaunchOp>> launches;
    DenseMap<Operation *, size_t> bucketOf;
    for (auto [index, bucket] : llvm::enumerate(buckets)) {
      SmallVector<Value> gradients, averaged;
      int64_t elements = 0;
      for (LaunchOp allReduce : bucket.allReduces) {
        bucketOf[allReduce] = index;
        gradients.push_back(allReduce.getInputs().front());
        averaged.push_back(allReduce.getOutputs().front());
        elements +=
            cast<MemRefType>(gradients.back().getType()).getNumElements();
      }
      Location loc = bucket.allReduces.back().getLoc();
      Type element =
          cast<MemRefType>(gradients.front().getType()).getElementType();
      Value staging;
      if (bucket.allReduces.size() == 1 &&
          onlyReadByItsAllReduce(bucket.allReduces.front())) {
        // Reduced where it is: the gradient is its own staging buffer and
        // the mean is written over it (no copies, no buffer of its own).
        LaunchOp allReduce = bucket.allReduces.front();
        staging = gradients.front();
        averaged.front().replaceUsesWithIf(staging, [&](OpOperand &use) {
          return use.getOwner() != allReduce;
        });
        averaged.front() = staging;
      } else {
        staging = AllocOp::create(b, loc, MemRefType::get({elements}, element),
                                  IntegerAttr());
      }
      DictionaryAttr options = b.getDictionaryAttr(
          {b.getNamedAttr("bucket", b.getI64IntegerAttr(index)),
           b.getNamedAttr("reduction", b.getStringAttr("mean"))});
      auto start = LaunchOp::create(b, loc, gradients, ValueRange{staging},
                                    "comm.all_reduce_start", options);
      auto wait = LaunchOp::create(b, loc, ValueRange{staging}, averaged,
                                   "comm.all_reduce_wait", options);
      start.setBackend(backend);
      wait.setBackend(backend);
      launches.push_back({start, wait});
    }

    // The schedule's graph: the launches but the all-reduces, then each
    // bucket's start and wait. What an all-reduce waited for, its bucket's
    // start waits for; what waited for an all-reduce waits for the wait.
    size_t count = graph.nodes.size();
    SmallVector<LaunchOp> ops;
    DenseMap<size_t, size_t> renumbered;
    for (size_t i = 0; i < count; ++i)
      if (!bucketOf.count(graph.nodes[i].launch)) {
        renumbered[i] = ops.size();
        ops.push_back(graph.nodes[i].launch);
      }
    size_t firstBucket = ops.size();
    for (auto &[start, wait] : launches)
      ops.append({start, wait});
    auto startOf = [&](size_t b) { return firstBucket + 2 * b; };
    auto waitOf = [&](size_t b) { return firstBucket + 2 * b + 1; };
    auto source = [&](size_t i) {
      auto it = bucketOf.find(graph.nodes[i].launch);
      return it == bucketOf.end() ? renumbered[i] : waitOf(it->second);
    };
    auto target = [&](size_t i) {
      auto it = bucketOf.find(graph.nodes[i].launch);
      return it == bucketOf.end() ? renumbered[i] : startOf(it->second);
    };
    auto sameBucket = [&](size_t i, size_t j) {
      auto a = bucketOf.find(graph.nodes[i].launch);
      auto b = bucketOf.find(graph.nodes[j].launch);
      return a != bucketOf.end() && b != bucketOf.end() &&
             a->second == b->second;
    };
    std::vector<std::set<size_t>> successors(ops.size());
    for (size_t i = 0; i < count; ++i)
      for (size_t next : graph.successors[i])
        if (!sameBucket(i, next))
          successors[source(i)].insert(target(next));
    for (size_t b = 0; b < launches.size(); ++b)
      successors[startOf(b)].insert(waitOf(b));

    // Priorities (the smallest ready launch runs next): every launch keeps
    // its place (4i), a start goes right after the last launch it depends
    // on, a wait right after the next bucket's start (the last bucket's
    // right after its own start), and what reads the averaged gradients
    // right after the wait.
    std::vector<int64_t> key(ops.size());
    for (size_t i = 0; i < count; ++i)
      if (!bucketOf.count(graph.nodes[i].launch))
        key[renumbered[i]] = 4 * static_cast<int64_t>(i);
    for (size_t i : allReduces) {
      size_t start = startOf(bucketOf[graph.nodes[i].launch]);
      key[start] = std::max(key[start], 4 * producedAt(i) + 1);
    }
    size_t last = launches.size() - 1;
    for (size_t b = 0; b < last; ++b)
      key[waitOf(b)] = key[startOf(b + 1)] + 2;
    // After the updates of the bucket before it, which share that key.
    key[waitOf(last)] = key[startOf(last)] + 3;
    DenseMap<size_t, int64_t> readAfter;
    for (size_t b = 0; b <= last; ++b)
      for (size_t reader : successors[waitOf(b)])
        readAfter[reader] = std::max(readAfter.lookup(reader), key[waitOf(b)]);
    for (auto [reader, after] : readAfter)
      key[reader] = after;

    std::vector<size_t> waiting(ops.size(), 0);
    for (const std::set<size_t> &next : successors)
      for (size_t j : next)
        ++waiting[j];
    std::set<std::pair<int64_t, size_t>> ready;
    for (size_t i = 0; i < ops.size(); ++i)
      if (waiting[i] == 0)
        ready.insert({key[i], i});
    SmallVector<LaunchOp> scheduled;
    while (!ready.empty()) {
      size_t i = ready.begin()->second;
      ready.erase(ready.begin());
      scheduled.push_back(ops[i]);
      for (size_t next : successors[i])
        if (--waiting[next] == 0)
          ready.insert({key[next], next});
    }
    if (scheduled.size() != ops.size())
      return function.emitError("--trainc-bucket-all-reduces: a gradient "
                                "depends on another's average in its bucket");
    for (Bucket &bucket : buckets)
      for (LaunchOp allReduce : bucket.allReduces) {
        Value output = allReduce.getOutputs().front();
        allReduce.erase();
        // The output of an all-reduce reduced in place is not used.
        if (auto alloc = output.getDefiningOp<AllocOp>();
            alloc && alloc->use_empty())
          alloc.erase();
      }
    applyLaunchOrder(function, scheduled);
    return success();
  }
};

} // namespace
