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
// The same holds for the live taps of a convolution weight whose other
// taps read only padding (--trainc-drop-dead-taps slices them at the
// start of every step: ResNet-18 at 32 px reads 33 MB of its last stage's
// weights for 5.2 MB of taps, 1.5 ms of a 35 ms step on a Zen 4). When the
// parameter's update is windowed (--trainc-window-updates: its gradient is
// those taps), the copy (`.window`) is written by the update itself, a
// chunk of rows at a time while the chunk is in the cache (option
// `window_copy`, GeneratedOptimizerKernels.cpp); otherwise by a slice
// launch after the update, as a cast would be.
//
// The values are the same, bit for bit: the copy a step reads is the cast
// (or the slice) of the master as the step starts.
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

/// Whether `launch` derives a whole tensor from `master` alone.
bool derivesFrom(LaunchOp launch, BlockArgument master) {
  return launch.getInputs().size() == 1 && launch.getInputs()[0] == master &&
         launch.getOutputs().size() == 1 &&
         launch.getOutputs()[0].getDefiningOp<AllocOp>();
}

/// Whether `slice` (of the update's parameter) takes the window that
/// `update` reads its gradient of (`gradient_starts`), so that the update
/// may write it (`window_copy`): generated, in place, unit steps.
bool isUpdateWindow(LaunchOp slice, LaunchOp update) {
  auto starts = update.getOptions().getAs<DenseI64ArrayAttr>("gradient_starts");
  auto sliceStarts = slice.getOptions().getAs<DenseI64ArrayAttr>("starts");
  auto steps = slice.getOptions().getAs<DenseI64ArrayAttr>("steps");
  if (slice.getKernel() != "graph.slice" || slice.getBackend() != "generated" ||
      update.getBackend() != "generated" || !starts || !sliceStarts ||
      starts != sliceStarts || update.getOptions().get("window_copy") ||
      update.getOutputs()[0] != update.getInputs()[0] ||
      (steps && llvm::any_of(steps.asArrayRef(),
                             [](int64_t step) { return step != 1; })))
    return false;
  return slice.getOutputs()[0].getType() == update.getInputs()[1].getType();
}

/// A parameter of @train_step with derived tensors to keep: its casts to
/// one low-precision type or, without casts, the window its update reads
/// the gradient of.
struct Candidate {
  BlockArgument master;
  SmallVector<LaunchOp> derived;
  LaunchOp update;
  MemRefType copyType;
  /// Slices of the update's window, not casts.
  bool window = false;
};

/// The casts (or window slices) of `master`, all before its one writer;
/// nullopt if it has none or another use is in the way.
std::optional<Candidate> candidateFor(BlockArgument master) {
  Candidate candidate{master, {}, {}, {}};
  SmallVector<LaunchOp> users, slices;
  launchesUsing(master, users);
  for (LaunchOp launch : users) {
    if (writes(launch, master)) {
      if (candidate.update)
        return std::nullopt; // written twice: keep it simple
      candidate.update = launch;
      continue;
    }
    if (!derivesFrom(launch, master))
      continue;
    if (launch.getKernel() == "graph.slice") {
      slices.push_back(launch);
      continue;
    }
    if (launch.getKernel() != "graph.cast")
      continue;
    auto type = cast<MemRefType>(launch.getOutputs()[0].getType());
    if (!type.getElementType().isBF16() && !type.getElementType().isF16())
      continue;
    if (candidate.copyType && candidate.copyType != type)
      return std::nullopt;
    candidate.copyType = type;
    candidate.derived.push_back(launch);
  }
  if (!candidate.update)
    return std::nullopt;
  if (candidate.derived.empty() && isOptimizerUpdate(candidate.update)) {
    for (LaunchOp slice : slices)
      if (isUpdateWindow(slice, candidate.update))
        candidate.derived.push_back(slice);
    candidate.window = true;
    if (!candidate.derived.empty())
      candidate.copyType =
          cast<MemRefType>(candidate.derived.front().getOutputs()[0].getType());
  }
  if (candidate.derived.empty())
    return std::nullopt;
  for (LaunchOp derived : candidate.derived) {
    if (!derived->isBeforeInBlock(candidate.update))
      return std::nullopt; // made from the updated weight: not this step's
    // The derived buffer is only read.
    SmallVector<LaunchOp> readers;
    launchesUsing(derived.getOutputs()[0], readers);
    for (LaunchOp reader : readers)
      if (reader != derived &&
          (writes(reader, derived.getOutputs()[0]) ||
           llvm::is_contained(reader.getScratch(), derived.getOutputs()[0])))
        return std::nullopt;
  }
  return candidate;
}

/// The copy's name after its master's: "bf16", "f16" or "window".
StringRef copySuffix(const Candidate &candidate) {
  if (candidate.window)
    return "window";
  return candidate.copyType.getElementType().isBF16() ? "bf16" : "f16";
}

/// A launch that makes a copy from its master, for @refresh_weight_copies.
struct CopyLaunch {
  Location loc;
  StringRef kernel;
  DictionaryAttr options;
  StringRef backend;
};

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
    SmallVector<CopyLaunch> refreshLaunches; // one per pair
    for (Candidate &candidate : candidates) {
      BlockArgument master = candidate.master;
      auto name = step.getArgAttrOfType<StringAttr>(master.getArgNumber(),
                                                    graph::kNameAttrName);
      if (!name) {
        step.emitError("a parameter without graph.name");
        return signalPassFailure();
      }
      DictionaryAttr attributes = b.getDictionaryAttr(
          {b.getNamedAttr(
               graph::kNameAttrName,
               b.getStringAttr(name.getValue() + "." + copySuffix(candidate))),
           b.getNamedAttr(graph::kRoleAttrName,
                          b.getStringAttr(graph::kRoleWeightCopy)),
           b.getNamedAttr(graph::kCopyOfAttrName, name)});
      unsigned index = step.getNumArguments();
      if (failed(step.insertArgument(index, candidate.copyType, attributes,
                                     master.getLoc())))
        return signalPassFailure();
      BlockArgument copy = step.getArgument(index);

      // The last launch reading this step's copy.
      LaunchOp derivedTemplate = candidate.derived.front();
      CopyLaunch copyLaunch{
          derivedTemplate.getLoc(), derivedTemplate.getKernel(),
          derivedTemplate.getOptions(), derivedTemplate.getBackend()};
      Operation *lastReader = nullptr;
      for (LaunchOp derived : candidate.derived) {
        SmallVector<LaunchOp> readers;
        launchesUsing(derived.getOutputs()[0], readers);
        for (LaunchOp reader : readers)
          if (reader != derived &&
              (!lastReader || lastReader->isBeforeInBlock(reader)))
            lastReader = reader;
      }
      // The copy is written after the update and after that reader; the
      // update moves there when it may, so that the two fuse (a cast by
      // --trainc-fuse-elementwise, a window by the update itself).
      Operation *after = candidate.update;
      if (lastReader && candidate.update->isBeforeInBlock(lastReader)) {
        if (canSink(candidate.update, lastReader))
          candidate.update->moveAfter(lastReader);
        else
          after = lastReader;
      }
      if (candidate.window && after == candidate.update) {
        LaunchOp update = candidate.update;
        update.getOutputsMutable().append(copy);
        NamedAttrList options(update.getOptions());
        options.set("window_copy", b.getBoolAttr(true));
        update.setOptionsAttr(options.getDictionary(context));
      } else {
        b.setInsertionPointAfter(after);
        auto write = LaunchOp::create(b, copyLaunch.loc, ValueRange{master},
                                      ValueRange{copy}, copyLaunch.kernel,
                                      copyLaunch.options);
        write.setBackend(copyLaunch.backend);
      }
      refreshLaunches.push_back(copyLaunch);
      pairs.push_back({master, copy});

      for (LaunchOp derived : candidate.derived) {
        Value buffer = derived.getOutputs()[0];
        derived.erase();
        buffer.replaceAllUsesWith(copy);
        buffer.getDefiningOp()->erase();
      }
    }
    buildRefresh(module, step, pairs, refreshLaunches);
  }

  /// @refresh_weight_copies(masters..., copies...): one launch each.
  void buildRefresh(ModuleOp module, func::FuncOp step,
                    ArrayRef<std::pair<BlockArgument, BlockArgument>> pairs,
                    ArrayRef<CopyLaunch> launches) {
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
    for (auto [i, copy] : llvm::enumerate(launches)) {
      auto launch =
          LaunchOp::create(b, copy.loc, ValueRange{entry->getArgument(i)},
                           ValueRange{entry->getArgument(pairs.size() + i)},
                           copy.kernel, copy.options);
      launch.setBackend(copy.backend);
    }
    func::ReturnOp::create(b, loc);
  }
};

} // namespace
