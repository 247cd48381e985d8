//===- Stats.cpp - trainc compile --stats ---------------------------------===//
//
// What the memory plan and dispatch decided for a lowered module: arenas,
// persistent bytes, and per function each kernel's backend, launches and
// estimated flops and bytes.
//
//===----------------------------------------------------------------------===//
#include "tools/trainc/Stats.h"

#include "dialects/kernel/KernelCost.h"
#include "dialects/kernel/KernelOps.h"
#include "dialects/kernel/Transforms/Passes.h"
#include "dialects/loop/LoopOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

namespace trainc::cli {

std::map<std::string, int64_t> arenaSizes(mlir::ModuleOp module) {
  std::map<std::string, int64_t> sizes;
  for (auto function : module.getOps<mlir::func::FuncOp>())
    if (auto arena = function->getAttrOfType<mlir::IntegerAttr>(
            kernel::kArenaSizeAttrName))
      sizes[function.getSymName().str()] = arena.getInt();
  return sizes;
}

void printStats(mlir::ModuleOp module, const ImportedModel &imported,
                const PrecisionStats &precision) {
  size_t weights = 0;
  for (const auto &[name, weight] : imported.weights)
    weights += weight.bytes.size();
  // Persistent storage: every argument of the step the session owns.
  std::map<std::string, int64_t> persistent;
  struct Row {
    int launches = 0;
    double flops = 0, bytes = 0;
  };
  llvm::outs() << "trainc compile --stats\n";
  std::string kernelTables;
  llvm::raw_string_ostream tables(kernelTables);
  for (auto function : module.getOps<mlir::func::FuncOp>()) {
    if (function->hasAttr(loop::kKernelAttrName))
      continue; // a generated kernel, counted at its launch
    auto arena =
        function->getAttrOfType<mlir::IntegerAttr>(kernel::kArenaSizeAttrName);
    llvm::outs() << "  @" << function.getSymName() << ": arena "
                 << (arena ? arena.getInt() : 0) << " bytes";
    auto f32Arena = precision.f32Arenas.find(function.getSymName().str());
    if (arena && f32Arena != precision.f32Arenas.end() && f32Arena->second > 0)
      llvm::outs() << llvm::formatv(
          " (f32: {0} bytes; --amp {1} saves {2:F1}%)", f32Arena->second,
          precision.amp,
          100.0 * (f32Arena->second - arena.getInt()) / f32Arena->second);
    llvm::outs() << "\n";
    if (precision.amp != "off") {
      // Casts run alone (graph.cast) or inside the fused kernel that reads
      // or writes their values (fused(cast,sgd_update)).
      int alone = 0, fused = 0;
      function.walk([&](kernel::LaunchOp launch) {
        llvm::StringRef name = launch.getKernel();
        if (name == "graph.cast")
          ++alone;
        else if (name.starts_with("fused(")) {
          llvm::SmallVector<llvm::StringRef> parts;
          name.drop_front(6).drop_back().split(parts, ',');
          fused += llvm::count(parts, "cast");
        }
      });
      llvm::outs() << "    casts (--amp " << precision.amp << "): " << alone
                   << " launches, " << fused << " fused into other kernels\n";
    }
    std::map<std::pair<std::string, std::string>, Row> rows;
    Row total;
    function.walk([&](kernel::LaunchOp launch) {
      kernel::KernelCost cost = kernel::estimateCost(launch);
      for (Row *row :
           {&rows[{launch.getKernel().str(), launch.getBackend().str()}],
            &total}) {
        ++row->launches;
        row->flops += cost.flops;
        row->bytes += cost.bytes;
      }
    });
    tables << "  kernels of @" << function.getSymName()
           << " (estimated per call; flops: multiply-adds count 2):\n"
           << llvm::formatv("    {0,-40} {1,-10} {2,8} {3,10} {4,10}\n",
                            "kernel", "backend", "launches", "MFLOP", "MB");
    auto print = [&](llvm::StringRef kernelName, llvm::StringRef backend,
                     const Row &row) {
      tables << llvm::formatv("    {0,-40} {1,-10} {2,8} {3,10:F1} {4,10:F2}\n",
                              kernelName, backend, row.launches,
                              row.flops / 1e6, row.bytes / 1e6);
    };
    for (const auto &[key, row] : rows)
      print(key.first, key.second, row);
    print("total", "", total);
    for (unsigned i = 0; i < function.getNumArguments(); ++i) {
      auto role = function.getArgAttrOfType<mlir::StringAttr>(i, "graph.role");
      auto name = function.getArgAttrOfType<mlir::StringAttr>(i, "graph.name");
      if (!role || !name)
        continue;
      llvm::StringRef r = role.getValue();
      if (r == "input" || r == "labels" || r == "output" || r == "loss")
        continue;
      persistent[name.str()] = kernel::bufferBytes(
          llvm::cast<mlir::MemRefType>(function.getArgumentTypes()[i]));
    }
  }
  int64_t persistentBytes = 0;
  for (const auto &[name, bytes] : persistent)
    persistentBytes += bytes;
  llvm::outs()
      << "  persistent (parameters, state, optimizer state, weight copies): "
      << persistentBytes << " bytes in " << persistent.size() << " tensors\n"
      << "  initial weights: " << weights << " bytes\n"
      << kernelTables;
  llvm::outs().flush();
}

} // namespace trainc::cli
