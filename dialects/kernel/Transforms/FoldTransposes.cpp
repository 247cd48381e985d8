//===- FoldTransposes.cpp - --trainc-fold-transposes ----------------------===//
#include "dialects/kernel/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace trainc::kernel {
#define GEN_PASS_DEF_FOLDTRANSPOSESPASS
#include "dialects/kernel/Transforms/Passes.h.inc"
} // namespace trainc::kernel

using namespace mlir;
using namespace trainc::kernel;

namespace {

/// The launch that writes `buffer`, if it is a transpose writing nothing
/// else.
LaunchOp transposeWriting(Value buffer) {
  for (Operation *user : buffer.getUsers()) {
    auto launch = dyn_cast<LaunchOp>(user);
    if (launch && llvm::is_contained(launch.getOutputs(), buffer))
      return launch.getKernel() == "graph.transpose" &&
                     launch.getOutputs().size() == 1
                 ? launch
                 : LaunchOp();
  }
  return LaunchOp();
}

/// Whether a launch strictly between `from` and `to` writes `buffer` (or
/// the buffer it is a view of: in-place updates write the viewed one).
bool writtenBetween(Value buffer, Operation *from, Operation *to) {
  while (auto view = buffer.getDefiningOp<ViewOp>())
    buffer = view.getSource();
  for (Operation *op = from->getNextNode(); op && op != to;
       op = op->getNextNode())
    if (auto launch = dyn_cast<LaunchOp>(op))
      if (llvm::is_contained(launch.getOutputs(), buffer))
        return true;
  return false;
}

/// Whether `perm` swaps the last two dims and keeps the others.
bool swapsLastTwo(ArrayRef<int64_t> perm) {
  size_t rank = perm.size();
  if (rank < 2 || perm[rank - 2] != int64_t(rank - 1) ||
      perm[rank - 1] != int64_t(rank - 2))
    return false;
  for (size_t d = 0; d + 2 < rank; ++d)
    if (perm[d] != int64_t(d))
      return false;
  return true;
}

struct FoldTransposesPass
    : trainc::kernel::impl::FoldTransposesPassBase<FoldTransposesPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<LaunchOp> matmuls;
    getOperation().walk([&](LaunchOp launch) {
      if (launch.getKernel() == "graph.matmul" &&
          (launch.getBackend() == "dnnl" || launch.getBackend() == "openblas"))
        matmuls.push_back(launch);
    });
    for (LaunchOp matmul : matmuls)
      for (auto [index, option] : {std::pair<unsigned, StringRef>{0, "lhs_perm"},
                                   {1, "rhs_perm"}})
        fold(matmul, index, option);
  }

  void fold(LaunchOp matmul, unsigned index, StringRef option) {
    Value transposed = matmul.getInputs()[index];
    LaunchOp transpose = transposeWriting(transposed);
    if (!transpose || !transpose->isBeforeInBlock(matmul))
      return;
    Value source = transpose.getInputs()[0];
    if (writtenBetween(source, transpose, matmul))
      return;
    auto perm = transpose.getOptions().getAs<DenseI64ArrayAttr>("perm");
    if (!perm)
      return;
    // OpenBLAS reads an operand transposed, not permuted otherwise.
    if (matmul.getBackend() == "openblas" && !swapsLastTwo(perm.asArrayRef()))
      return;
    NamedAttrList options(matmul.getOptions());
    options.set(option, perm);
    matmul.setOptionsAttr(options.getDictionary(&getContext()));
    matmul.getInputsMutable()[index].assign(source);
    // The transpose is dead once no launch reads its result.
    if (llvm::all_of(transposed.getUsers(),
                     [&](Operation *user) { return user == transpose; })) {
      transpose.erase();
      if (auto alloc = transposed.getDefiningOp<AllocOp>())
        alloc.erase();
    }
  }
};

} // namespace
