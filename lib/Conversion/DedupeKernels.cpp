//===- DedupeKernels.cpp - --trainc-dedupe-kernels ------------------------===//
#include "lib/Conversion/Passes.h"

#include "llvm/ADT/StringMap.h"

namespace trainc::conversion {
#define GEN_PASS_DEF_DEDUPEKERNELSPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace trainc::conversion

using namespace mlir;
using namespace trainc;

namespace {

/// The text of `function` with its name left out.
std::string bodyText(func::FuncOp function) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << function.getFunctionType();
  for (NamedAttribute attribute : function->getAttrs())
    if (attribute.getName() != SymbolTable::getSymbolAttrName())
      os << attribute.getName() << "=" << attribute.getValue();
  function.getBody().front().print(os);
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
