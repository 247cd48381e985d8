//===- CompactWindowUpdates.cpp - --trainc-compact-window-updates ---------===//
//
// --trainc-keep-weight-copies leaves a convolution weight whose taps read
// only padding with a persistent copy of its live taps (`NAME.window`),
// which its windowed update writes (`window_copy`). The update still reads
// and writes the whole weight and the whole optimizer state, 9 elements
// for each live one at ResNet-18's last stage on 32 px images (3 x 9.4 MB
// of weight and as much momentum, 3.2 ms of a 32 ms step on a Zen 4), and
// at a stride of 9 floats no cache line is spared.
//
// Where the update leaves an element of zero gradient as it is when its
// optimizer state is zero (no weight decay: SGD with any momentum,
// dampening or Nesterov, Adam, AdamW, Adagrad), the dead taps never
// change: their gradient is zero every step and their state stays zero
// from the first one. Here such an update runs on the window alone:
//
//  1. the update reads and writes the copy, not the parameter, and
//     optimizer state of the window's shape: its state arguments (used by
//     this update only) shrink to the window;
//  2. @eval reads the copy too, where it only sliced that window of the
//     parameter;
//  3. the copy gets `graph.window_starts`: the parameter argument keeps
//     the dead taps, the copy the live ones, and the runtime puts the two
//     together wherever it reads the parameter (trainc_get_parameter,
//     checkpoints, ONNX export) and refreshes the copy from the parameter
//     (@refresh_weight_copies) when the parameter is set from outside.
//
// The same values, bit for bit: the update computes each live element as
// before, and leaves each dead one as it would have.
//
//===----------------------------------------------------------------------===//
#include "dialects/graph/GraphOps.h"
#include "dialects/kernel/Transforms/LaunchGraph.h"
#include "dialects/kernel/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace trainc::kernel {
#define GEN_PASS_DEF_COMPACTWINDOWUPDATESPASS
#include "dialects/kernel/Transforms/Passes.h.inc"
} // namespace trainc::kernel

using namespace mlir;
using namespace trainc;
using namespace trainc::kernel;

namespace {

/// The gradient operand of every optimizer update (param, grad, ...).
constexpr unsigned kGradientInput = 1;

/// Whether `update` leaves an element whose gradient and optimizer state
/// are zero as it is: no weight decay (the kernels of
/// GeneratedOptimizerKernels.cpp; their other options keep it).
bool leavesZeroGradients(LaunchOp update) {
  auto decay = update.getOptions().getAs<FloatAttr>("weight_decay");
  return !decay || decay.getValueAsDouble() == 0.0;
}

/// The launches that use `value` (directly; not through views), or
/// nullopt if something else does.
std::optional<SmallVector<LaunchOp>> launchUsers(Value value) {
  SmallVector<LaunchOp> users;
  for (Operation *user : value.getUsers()) {
    auto launch = dyn_cast<LaunchOp>(user);
    if (!launch)
      return std::nullopt;
    if (!llvm::is_contained(users, launch))
      users.push_back(launch);
  }
  return users;
}

StringAttr argumentName(func::FuncOp function, BlockArgument argument) {
  return function.getArgAttrOfType<StringAttr>(argument.getArgNumber(),
                                               graph::kNameAttrName);
}

/// The argument of `function` named `name`, or null.
BlockArgument argumentNamed(func::FuncOp function, StringRef name) {
  for (BlockArgument argument : function.getArguments())
    if (StringAttr named = argumentName(function, argument);
        named && named.getValue() == name)
      return argument;
  return {};
}

/// Whether `launch` is a generated slice of `full` that takes `window` at
/// `starts` with unit steps.
bool slicesWindow(LaunchOp launch, Value full, MemRefType window,
                  DenseI64ArrayAttr starts) {
  auto steps = launch.getOptions().getAs<DenseI64ArrayAttr>("steps");
  return launch.getKernel() == "graph.slice" &&
         launch.getBackend() == "generated" && launch.getInputs().size() == 1 &&
         launch.getInputs()[0] == full && launch.getOutputs().size() == 1 &&
         launch.getOutputs()[0].getType() == window &&
         launch.getOutputs()[0].getDefiningOp<AllocOp>() &&
         launch.getOptions().get("starts") == starts &&
         (!steps || llvm::all_of(steps.asArrayRef(),
                                 [](int64_t step) { return step == 1; }));
}

struct CompactWindowUpdatesPass
    : trainc::kernel::impl::CompactWindowUpdatesPassBase<
          CompactWindowUpdatesPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = module.lookupSymbol<func::FuncOp>("train_step");
    if (!step)
      return;
    auto eval = module.lookupSymbol<func::FuncOp>("eval");
    SmallVector<LaunchOp> updates;
    step.walk([&](LaunchOp launch) {
      if (isOptimizerUpdate(launch) && launch.getBackend() == "generated")
        if (auto copy = launch.getOptions().getAs<BoolAttr>("window_copy");
            copy && copy.getValue() && leavesZeroGradients(launch))
          updates.push_back(launch);
    });
    for (LaunchOp update : updates)
      compact(step, eval, update);
  }

  /// Runs `update` on the window alone when its parameter and state are
  /// used by nothing else in @train_step, and @eval reads only the window.
  void compact(func::FuncOp step, func::FuncOp eval, LaunchOp update) {
    auto master = dyn_cast<BlockArgument>(update.getInputs()[0]);
    auto copy = dyn_cast<BlockArgument>(update.getOutputs().back());
    auto starts =
        update.getOptions().getAs<DenseI64ArrayAttr>("gradient_starts");
    if (!master || !copy || !starts || master.getOwner() != &step.front() ||
        copy.getOwner() != &step.front() || update.getOutputs()[0] != master)
      return;
    auto fullType = cast<MemRefType>(master.getType());
    auto windowType = cast<MemRefType>(copy.getType());
    auto users = launchUsers(master);
    if (!users || users->size() != 1)
      return; // something else reads or writes the parameter
    // The state: every other input of the parameter's shape, an argument
    // of role optimizer_state that only this update reads and writes.
    SmallVector<BlockArgument> states;
    for (auto [i, input] : llvm::enumerate(update.getInputs())) {
      if (i == 0 || i == kGradientInput || input.getType() != fullType)
        continue;
      auto state = dyn_cast<BlockArgument>(input);
      auto role = state ? step.getArgAttrOfType<StringAttr>(
                              state.getArgNumber(), graph::kRoleAttrName)
                        : StringAttr();
      auto stateUsers = state ? launchUsers(state) : std::nullopt;
      if (!role || role.getValue() != graph::kRoleOptimizerState ||
          !stateUsers || stateUsers->size() != 1 ||
          !llvm::is_contained(update.getOutputs(), input))
        return;
      states.push_back(state);
    }
    // @eval may only slice the same window of the parameter.
    SmallVector<LaunchOp> evalSlices;
    BlockArgument evalMaster;
    if (eval) {
      StringAttr name = argumentName(step, master);
      evalMaster =
          name ? argumentNamed(eval, name.getValue()) : BlockArgument();
      if (evalMaster) {
        auto evalUsers = launchUsers(evalMaster);
        if (!evalUsers)
          return;
        for (LaunchOp user : *evalUsers)
          if (!slicesWindow(user, evalMaster, windowType, starts))
            return;
        evalSlices = *evalUsers;
      }
    }

    // The update of the window: the copy and the state in place.
    for (BlockArgument state : states)
      state.setType(windowType);
    SmallVector<Value> outputs(update.getOutputs().drop_back());
    outputs[0] = copy;
    update.getOutputsMutable().assign(outputs);
    update.getInputsMutable()[0].assign(copy);
    NamedAttrList options(update.getOptions());
    options.erase("gradient_starts");
    options.erase("window_copy");
    update.setOptionsAttr(options.getDictionary(&getContext()));
    step.setType(
        FunctionType::get(&getContext(), step.front().getArgumentTypes(), {}));
    step.setArgAttr(copy.getArgNumber(), graph::kWindowStartsAttrName, starts);
    StringAttr copyName = argumentName(step, copy);
    if (auto refresh =
            step->getParentOfType<ModuleOp>().lookupSymbol<func::FuncOp>(
                "refresh_weight_copies"))
      if (BlockArgument refreshCopy =
              copyName ? argumentNamed(refresh, copyName.getValue())
                       : BlockArgument())
        refresh.setArgAttr(refreshCopy.getArgNumber(),
                           graph::kWindowStartsAttrName, starts);

    // @eval reads the copy (the same argument attributes: one persistent
    // tensor).
    if (!evalSlices.empty()) {
      unsigned index = eval.getNumArguments();
      if (failed(eval.insertArgument(index, windowType,
                                     step.getArgAttrDict(copy.getArgNumber()),
                                     copy.getLoc())))
        return signalPassFailure();
      BlockArgument evalCopy = eval.getArgument(index);
      for (LaunchOp slice : evalSlices) {
        Value buffer = slice.getOutputs()[0];
        slice.erase();
        buffer.replaceAllUsesWith(evalCopy);
        buffer.getDefiningOp()->erase();
      }
    }
  }
};

} // namespace
