//===- AssignWeightLayouts.cpp - --trainc-assign-weight-layouts -----------===//
//
// A convolution weight that only oneDNN convolutions and optimizer updates
// touch may live in oneDNN's blocked layout: the convolutions read it (and
// the weight-gradient primitive writes its gradient) without a reorder, and
// the optimizer update is elementwise, so a permutation of all its operands
// does not change it. The layout itself is only known when a session opens
// on a CPU; this pass finds the buffers that may take it and gives them a
// layout group (see the pass description in Passes.td).
//
//===----------------------------------------------------------------------===//
#include "dialects/graph/GraphOps.h"
#include "dialects/kernel/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

#include <map>
#include <set>

namespace trainc::kernel {
#define GEN_PASS_DEF_ASSIGNWEIGHTLAYOUTSPASS
#include "dialects/kernel/Transforms/Passes.h.inc"
} // namespace trainc::kernel

using namespace mlir;
using namespace trainc;
using namespace trainc::kernel;

namespace {

bool isConvReadingWeights(LaunchOp launch) {
  return launch.getBackend() == "dnnl" &&
         (launch.getKernel() == "graph.conv" ||
          launch.getKernel() == "graph.conv_backward_input");
}

bool isConvWritingWeights(LaunchOp launch) {
  return launch.getBackend() == "dnnl" &&
         launch.getKernel() == "graph.conv_backward_weight";
}

/// Launches that treat every non-scalar operand elementwise alike.
bool isElementwiseUpdate(LaunchOp launch) {
  return isOptimizerUpdate(launch) || launch.getKernel() == "runtime.copy";
}

bool isScalar(Value value) {
  return cast<MemRefType>(value.getType()).getRank() == 0;
}

/// The buffers of one function that must share the layout of a parameter:
/// the parameter and everything an optimizer update or copy connects to
/// it (its gradient, the optimizer state, ...).
struct Component {
  llvm::SetVector<Value> buffers;
  SmallVector<LaunchOp> convs; ///< launches to mark
  bool eligible = true;
  SmallVector<std::string> names; ///< names of its function arguments
};

/// Collects the component of parameter `parameter` and checks that nothing
/// but convolutions (in their weight operand) and elementwise updates use
/// it.
Component collect(BlockArgument parameter) {
  Component component;
  component.buffers.insert(parameter);
  auto type = parameter.getType();
  for (size_t next = 0; next < component.buffers.size(); ++next) {
    Value buffer = component.buffers[next];
    if (buffer.getType() != type) {
      component.eligible = false;
      return component;
    }
    if (auto argument = dyn_cast<BlockArgument>(buffer)) {
      auto function = cast<func::FuncOp>(argument.getOwner()->getParentOp());
      unsigned i = argument.getArgNumber();
      auto role = function.getArgAttrOfType<StringAttr>(i, graph::kRoleAttrName);
      auto name = function.getArgAttrOfType<StringAttr>(i, graph::kNameAttrName);
      if (!role || !name ||
          (role.getValue() != "parameter" &&
           role.getValue() != "optimizer_state")) {
        component.eligible = false;
        return component;
      }
      component.names.push_back(name.str());
    } else if (!buffer.getDefiningOp<AllocOp>()) {
      component.eligible = false; // a view or a constant
      return component;
    }
    for (OpOperand &use : buffer.getUses()) {
      auto launch = dyn_cast<LaunchOp>(use.getOwner());
      if (!launch) {
        component.eligible = false;
        return component;
      }
      unsigned index = use.getOperandNumber();
      unsigned numInputs = launch.getInputs().size();
      bool onlyUse = llvm::count(launch->getOperands(), buffer) == 1;
      if (isConvReadingWeights(launch) && index == 1 && onlyUse) {
        component.convs.push_back(launch);
      } else if (isConvWritingWeights(launch) && index == numInputs &&
                 onlyUse) {
        component.convs.push_back(launch);
      } else if (isElementwiseUpdate(launch) && launch.getScratch().empty()) {
        for (Value operand : launch->getOperands())
          if (!isScalar(operand))
            component.buffers.insert(operand);
      } else {
        component.eligible = false;
        return component;
      }
    }
  }
  component.eligible = !component.convs.empty();
  return component;
}

struct AssignWeightLayoutsPass
    : trainc::kernel::impl::AssignWeightLayoutsPassBase<
          AssignWeightLayoutsPass> {
  using Base::Base;

  void runOnOperation() override {
    // Components by function; names joined across functions (the same
    // parameter in @train_step and @eval must share one layout).
    SmallVector<Component> components;
    std::set<std::string> ineligible;
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      if (function.isDeclaration())
        continue;
      for (BlockArgument argument : function.getArguments()) {
        auto role = function.getArgAttrOfType<StringAttr>(
            argument.getArgNumber(), graph::kRoleAttrName);
        if (!role || role.getValue() != "parameter")
          continue;
        Component component = collect(argument);
        for (const std::string &name : component.names) {
          join(component.names.front(), name);
          if (!component.eligible)
            ineligible.insert(name);
        }
        if (!component.names.empty())
          components.push_back(std::move(component));
      }
    }
    // A group is eligible when every component of it is; ids in order of
    // first appearance.
    std::set<std::string> ineligibleGroups;
    for (const std::string &name : ineligible)
      ineligibleGroups.insert(leader(name));
    std::map<std::string, int64_t> ids; // group leader -> id
    for (const Component &component : components) {
      std::string group = leader(component.names.front());
      if (ineligibleGroups.count(group))
        continue;
      auto [it, added] = ids.try_emplace(group, ids.size());
      mark(component, it->second);
    }
  }

  /// Union-find over argument names.
  std::map<std::string, std::string> parents;
  std::string leader(const std::string &name) {
    auto it = parents.try_emplace(name, name).first;
    if (it->second == name)
      return name;
    std::string root = leader(it->second);
    parents[name] = root;
    return root;
  }
  void join(const std::string &a, const std::string &b) {
    std::string rootA = leader(a), rootB = leader(b);
    if (rootA != rootB)
      parents[rootB] = rootA;
  }

  void mark(const Component &component, int64_t id) {
    Builder builder(&getContext());
    auto group = builder.getI64IntegerAttr(id);
    for (LaunchOp conv : component.convs) {
      NamedAttrList options(conv.getOptions());
      options.set(kWeightLayoutOption, group);
      conv.setOptionsAttr(options.getDictionary(&getContext()));
    }
    for (Value buffer : component.buffers)
      if (auto argument = dyn_cast<BlockArgument>(buffer))
        cast<func::FuncOp>(argument.getOwner()->getParentOp())
            .setArgAttr(argument.getArgNumber(), kLayoutAttrName, group);
  }
};

} // namespace
