//===- KeepWeightCopies.cpp - --trainc-keep-weight-copies -----------------===//
//
// Under --amp bf16 (or fp16) the products read a low-precision copy of
// each weight, cast from the f32 master weight at the start of every
// step: ResNet-18 reads its 45 MB of f32 weights and writes 22 MB of bf16
// for that alone, after the optimizer read and wrote the same f32 weights
// at the end of the previous step. Here the copy becomes persistent state
// of @train_step, written by the update that changes its master:
//
//  1. the casts of a parameter in @train_step are replaced by a new
//     argument (role `weight_copy`, attribute `graph.copy_of` naming the
//     master), and their buffers go;
//  2. one cast of the master into that argument runs right after the
//     parameter's last writer (its optimizer update) and after the last
//     launch that reads the copy (a backward product still reads this
//     step's copy after the update); the update moves down to it when
//     nothing in between forbids it, so that --trainc-fuse-elementwise
//     makes both one pass over the weight;
//  3. @refresh_weight_copies casts every master into its copy: the
//     runtime runs it before a step whenever the masters changed from
//     outside (a session opened, a checkpoint loaded, a parameter set).
//
// The values are the same, bit for bit: the copy a step reads is the cast
// of the master as the step starts, by the same generated kernel.
//
//===----------------------------------------------------------------------===//
#include "dialects/graph/GraphOps.h"
#include "dialects/kernel/Transforms/LaunchGraph.h"
#include "dialects/kernel/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace trainc::kernel {
#define GEN_PASS_DEF_KEEPWEIGHTCOPIESPASS
#include "dialects/kernel/Transforms/Passes.h.inc"
} // namespace trainc::kernel

using namespace mlir;
using namespace trainc;
using namespace trainc::kernel;

namespace {

/// Every launch that uses `buffer` or a view of it (once), appended to
/// `users`.
void launchesUsing(Value buffer, SmallVectorImpl<LaunchOp> &users) {
  for (Operation *user : buffer.getUsers()) {
    if (auto view = dyn_cast<ViewOp>(user))
      launchesUsing(view.getResult(), users);
    else if (auto launch = dyn_cast<LaunchOp>(user);
             launch && !llvm::is_contained(users, launch))
      users.push_back(launch);
  }
}

/// Whether `launch` writes `buffer` (through a view or not).
bool writes(LaunchOp launch, Value buffer) {
  return llvm::any_of(launch.getOutputs(),
                      [&](Value out) { return viewRoot(out) == buffer; });
}

/// Whether `update` may move to right after `target` (later in the same
/// block): nothing in between (`target` included) must stay ordered with
/// it.
bool canSink(LaunchOp update, Operation *target) {
  MovedLaunch moved(update);
  for (Operation *op = update->getNextNode(); op; op = op->getNextNode()) {
    if (moved.isOrderedWith(op))
      return false;
    if (op == target)
      return true;
  }
  return false;
}

/// A parameter of @train_step with low-precision casts to keep.
struct Candidate {
  BlockArgument master;
  SmallVector<LaunchOp> casts;
  LaunchOp update;
  MemRefType copyType;
};

/// The casts of `master` to one low-precision type, all before its one
/// writer; nullopt if it has none or another use is in the way.
std::optional<Candidate> candidateFor(BlockArgument master) {
  Candidate candidate{master, {}, {}, {}};
  SmallVector<LaunchOp> users;
  launchesUsing(master, users);
  for (LaunchOp launch : users) {
    if (writes(launch, master)) {
      if (candidate.update)
        return std::nullopt; // written twice: keep it simple
      candidate.update = launch;
      continue;
    }
    if (launch.getKernel() != "graph.cast" || launch.getInputs().size() != 1 ||
        launch.getInputs()[0] != master || launch.getOutputs().size() != 1 ||
        !launch.getOutputs()[0].getDefiningOp<AllocOp>())
      continue;
    auto type = cast<MemRefType>(launch.getOutputs()[0].getType());
    if (!type.getElementType().isBF16() && !type.getElementType().isF16())
      continue;
    if (candidate.copyType && candidate.copyType != type)
      return std::nullopt;
    candidate.copyType = type;
    candidate.casts.push_back(launch);
  }
  if (candidate.casts.empty() || !candidate.update)
    return std::nullopt;
  for (LaunchOp cast : candidate.casts) {
    if (!cast->isBeforeInBlock(candidate.update))
      return std::nullopt; // a cast of the updated weight: not this step's
    // The cast's buffer is only read.
    SmallVector<LaunchOp> readers;
    launchesUsing(cast.getOutputs()[0], readers);
    for (LaunchOp reader : readers)
      if (reader != cast &&
          (writes(reader, cast.getOutputs()[0]) ||
           llvm::is_contained(reader.getScratch(), cast.getOutputs()[0])))
        return std::nullopt;
  }
  return candidate;
}

/// "bf16" or "f16".
StringRef typeName(MemRefType type) {
  return type.getElementType().isBF16() ? "bf16" : "f16";
}

struct KeepWeightCopiesPass
    : trainc::kernel::impl::KeepWeightCopiesPassBase<KeepWeightCopiesPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = module.lookupSymbol<func::FuncOp>("train_step");
    if (!step || module.lookupSymbol("refresh_weight_copies"))
      return;
    SmallVector<Candidate> candidates;
    for (BlockArgument argument : step.getArguments()) {
      auto role = step.getArgAttrOfType<StringAttr>(argument.getArgNumber(),
                                                    graph::kRoleAttrName);
      if (!role || role.getValue() != graph::kRoleParameter)
        continue;
      if (std::optional<Candidate> candidate = candidateFor(argument))
        candidates.push_back(std::move(*candidate));
    }
    if (candidates.empty())
      return;

    MLIRContext *context = &getContext();
    OpBuilder b(context);
    SmallVector<std::pair<BlockArgument, BlockArgument>> pairs;
    SmallVector<LaunchOp> refreshCasts; // a template per pair
    for (Candidate &candidate : candidates) {
      BlockArgument master = candidate.master;
      auto name = step.getArgAttrOfType<StringAttr>(master.getArgNumber(),
                                                    graph::kNameAttrName);
      if (!name) {
        step.emitError("a parameter without graph.name");
        return signalPassFailure();
      }
      DictionaryAttr attributes = b.getDictionaryAttr(
          {b.getNamedAttr(graph::kNameAttrName,
                          b.getStringAttr(name.getValue() + "." +
                                          typeName(candidate.copyType))),
           b.getNamedAttr(graph::kRoleAttrName,
                          b.getStringAttr(graph::kRoleWeightCopy)),
           b.getNamedAttr(graph::kCopyOfAttrName, name)});
      unsigned index = step.getNumArguments();
      if (failed(step.insertArgument(index, candidate.copyType, attributes,
                                     master.getLoc())))
        return signalPassFailure();
      BlockArgument copy = step.getArgument(index);

      // The last launch reading this step's copy.
      LaunchOp castTemplate = candidate.casts.front();
      Operation *lastReader = nullptr;
      for (LaunchOp cast : candidate.casts) {
        SmallVector<LaunchOp> readers;
        launchesUsing(cast.getOutputs()[0], readers);
        for (LaunchOp reader : readers)
          if (reader != cast &&
              (!lastReader || lastReader->isBeforeInBlock(reader)))
            lastReader = reader;
      }
      // The copy is written after the update and after that reader; the
      // update moves there when it may, so that the two fuse.
      Operation *after = candidate.update;
      if (lastReader && candidate.update->isBeforeInBlock(lastReader)) {
        if (canSink(candidate.update, lastReader))
          candidate.update->moveAfter(lastReader);
        else
          after = lastReader;
      }
      b.setInsertionPointAfter(after);
      auto write = LaunchOp::create(
          b, castTemplate.getLoc(), ValueRange{master}, ValueRange{copy},
          castTemplate.getKernel(), castTemplate.getOptions());
      write.setBackend(castTemplate.getBackend());
      refreshCasts.push_back(write);
      pairs.push_back({master, copy});

      for (LaunchOp cast : candidate.casts) {
        Value buffer = cast.getOutputs()[0];
        cast.erase();
        buffer.replaceAllUsesWith(copy);
        buffer.getDefiningOp()->erase();
      }
    }
    buildRefresh(module, step, pairs, refreshCasts);
  }

  /// @refresh_weight_copies(masters..., copies...): one cast each.
  void buildRefresh(ModuleOp module, func::FuncOp step,
                    ArrayRef<std::pair<BlockArgument, BlockArgument>> pairs,
                    ArrayRef<LaunchOp> casts) {
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointAfter(step);
    SmallVector<Type> types;
    SmallVector<DictionaryAttr> attributes;
    for (bool copies : {false, true})
      for (auto [master, copy] : pairs) {
        BlockArgument argument = copies ? copy : master;
        types.push_back(argument.getType());
        attributes.push_back(step.getArgAttrDict(argument.getArgNumber()));
      }
    Location loc = step.getLoc();
    auto refresh =
        func::FuncOp::create(b, loc, "refresh_weight_copies",
                             FunctionType::get(b.getContext(), types, {}));
    refresh.setAllArgAttrs(attributes);
    if (auto from = step->getAttr(kLoweredFromAttrName))
      refresh->setAttr(kLoweredFromAttrName, from);
    Block *entry = refresh.addEntryBlock();
    b.setInsertionPointToStart(entry);
    for (auto [i, constCast] : llvm::enumerate(casts)) {
      LaunchOp cast = constCast;
      auto launch =
          LaunchOp::create(b, cast.getLoc(), ValueRange{entry->getArgument(i)},
                           ValueRange{entry->getArgument(pairs.size() + i)},
                           cast.getKernel(), cast.getOptions());
      launch.setBackend(cast.getBackend());
    }
    func::ReturnOp::create(b, loc);
  }
};

} // namespace
