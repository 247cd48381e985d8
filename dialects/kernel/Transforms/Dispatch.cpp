//===- Dispatch.cpp - --trainc-dispatch: a backend for every launch -------===//
#include "dialects/kernel/BackendRegistry.h"
#include "dialects/kernel/Transforms/Passes.h"

#include "llvm/ADT/StringSet.h"

namespace trainc::kernel {
#define GEN_PASS_DEF_DISPATCHPASS
#include "dialects/kernel/Transforms/Passes.h.inc"
} // namespace trainc::kernel

using namespace mlir;
using namespace trainc::kernel;

namespace {

struct DispatchPass : trainc::kernel::impl::DispatchPassBase<DispatchPass> {
  using Base::Base;

  void runOnOperation() override {
    // KERNEL=BACKEND overrides; "conv" is short for "graph.conv", and
    // "*=BACKEND" asks for BACKEND wherever it can run a launch.
    llvm::StringMap<std::string> requested;
    for (const std::string &entry : overrides) {
      size_t equal = entry.find('=');
      if (equal == std::string::npos || equal == 0 || equal + 1 == entry.size()) {
        getOperation().emitError("--dispatch expects KERNEL=BACKEND, got '")
            << entry << "'";
        return signalPassFailure();
      }
      std::string kernel = entry.substr(0, equal);
      if (kernel.find('.') == std::string::npos && kernel != "*")
        kernel = "graph." + kernel;
      requested[kernel] = entry.substr(equal + 1);
    }
    getOperation()->setAttr(
        kVectorLanesAttrName,
        IntegerAttr::get(IntegerType::get(&getContext(), 64), vectorLanes));
    if (target != "cpu" && target != "cuda") {
      getOperation().emitError("--trainc-dispatch: unknown target '")
          << target << "' (cpu or cuda)";
      return signalPassFailure();
    }
    if (target == "cuda")
      getOperation()->setAttr(kTargetAttrName,
                              StringAttr::get(&getContext(), target));
    llvm::StringSet<> used;
    WalkResult result = getOperation().walk([&](LaunchOp launch) {
      auto it = requested.find(launch.getKernel());
      StringRef wanted = it == requested.end() ? StringRef() : it->second;
      if (it != requested.end())
        used.insert(it->first());
      std::string error;
      FailureOr<StringRef> backend = failure();
      auto everywhere = requested.find("*");
      if (wanted.empty() && everywhere != requested.end()) {
        backend = chooseBackend(launch, everywhere->second, error);
        if (succeeded(backend))
          used.insert("*");
      }
      if (failed(backend))
        backend = chooseBackend(launch, wanted, error);
      if (failed(backend)) {
        launch.emitError(error);
        return WalkResult::interrupt();
      }
      launch.setBackend(*backend);
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return signalPassFailure();
    for (const auto &entry : requested)
      if (!used.contains(entry.first()))
        getOperation().emitWarning("--dispatch ")
            << entry.first() << "=" << entry.second
            << ": the model has no such kernel";
  }
};

} // namespace
