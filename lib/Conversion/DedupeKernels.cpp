//===- DedupeKernels.cpp - --trainc-dedupe-kernels ------------------------===//
#include "lib/Conversion/Passes.h"

#include "mlir/IR/AsmState.h"
#include "llvm/ADT/StringMap.h"

namespace trainc::conversion {
#define GEN_PASS_DEF_DEDUPEKERNELSPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace trainc::conversion

using namespace mlir;
using namespace trainc;

namespace {

/// The text of `function` with its name left out. Values are numbered
/// within the function (an AsmState of the function, not of the module:
/// `Block::print` builds one for the whole module, which made this pass
/// quadratic in the number of kernels: 77 s on DenseNet-121's 1,700).
std::string bodyText(func::FuncOp function) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << function.getFunctionType();
  for (NamedAttribute attribute : function->getAttrs())
    if (attribute.getName() != SymbolTable::getSymbolAttrName())
      os << attribute.getName() << "=" << attribute.getValue();
  AsmState state(function, OpPrintingFlags().useLocalScope());
  for (Operation &op : function.getBody().front()) {
    op.print(os, state);
    os << "\n";
  }
  return text;
}

struct DedupeKernelsPass
    : trainc::conversion::impl::DedupeKernelsPassBase<DedupeKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringMap<func::FuncOp> first;       // body text -> kept kernel
    llvm::StringMap<FlatSymbolRefAttr> keeper; // kernel name -> kept one
    SmallVector<func::FuncOp> duplicates;
    for (auto function : module.getOps<func::FuncOp>()) {
      if (!function->hasAttr(loop::kKernelAttrName))
        continue;
      auto [it, inserted] = first.try_emplace(bodyText(function), function);
      if (inserted)
        continue;
      keeper[function.getSymName()] = FlatSymbolRefAttr::get(it->second);
      duplicates.push_back(function);
    }
    module.walk([&](kernel::LaunchOp launch) {
      if (auto callee = launch.getCallee())
        if (FlatSymbolRefAttr kept = keeper.lookup(*callee))
          launch.setCalleeAttr(kept);
    });
    for (func::FuncOp function : duplicates)
      function.erase();
  }
};

} // namespace
