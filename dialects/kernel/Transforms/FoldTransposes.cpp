//===- FoldTransposes.cpp - --trainc-fold-transposes ----------------------===//
//
// Matrix libraries read a matrix transposed for free, but a permutation
// that moves a batch dim makes them fall back to slow paths (oneDNN 2.6
// runs its reference-like gemm:jit batch loop, 3-5x slower on the
// Transformer's heads), and a generated transpose whose innermost output
// dim is strided in its input transposes tiles in registers, several
// times slower than a copy keeping that dim. So around each
// oneDNN / OpenBLAS matmul:
//
//  1. an operand transposed in its last two dims only is read in place
//     (`lhs_perm` / `rhs_perm`);
//  2. an operand permuted otherwise, whose last two dims are swapped by
//     the permutation, is made by a transpose that keeps the innermost
//     dim (a vectorized copy) and read with its last two dims swapped;
//  3. a product read only by a transpose that makes the product's rows
//     its innermost dim is computed transposed (b^T a^T), so that the
//     transpose keeps the innermost dim, or goes;
//  4. a transpose that an earlier one already made (rule 2 turns the
//     forward pass's key transpose into the one its gradient reads) is
//     not made again.
//
//===----------------------------------------------------------------------===//
#include "dialects/kernel/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
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

/// Whether a launch strictly between `from` and `to` writes `buffer`, or,
/// with `orReads`, reads it.
bool usedBetween(Value buffer, Operation *from, Operation *to,
                 bool orReads = false) {
  buffer = viewRoot(buffer);
  for (Operation *op = from->getNextNode(); op && op != to;
       op = op->getNextNode())
    if (auto launch = dyn_cast<LaunchOp>(op)) {
      auto touches = [&](ValueRange buffers) {
        return llvm::any_of(buffers,
                            [&](Value b) { return viewRoot(b) == buffer; });
      };
      if (touches(launch.getOutputs()) ||
          (orReads && touches(launch.getInputs())))
        return true;
    }
  return false;
}

/// The permutation of rank `rank` that swaps the last two dims.
SmallVector<int64_t> lastTwoSwapped(size_t rank) {
  SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(perm[rank - 2], perm[rank - 1]);
  return perm;
}

/// Whether `perm` swaps the last two dims and keeps the others.
bool swapsLastTwo(ArrayRef<int64_t> perm) {
  return perm.size() >= 2 && perm == ArrayRef(lastTwoSwapped(perm.size()));
}

bool isIdentity(ArrayRef<int64_t> perm) {
  return llvm::equal(perm, llvm::seq<int64_t>(0, perm.size()));
}

/// `perm` followed by a swap of the last two dims:
/// swap(transpose(x, perm)) == transpose(x, result).
SmallVector<int64_t> thenSwap(ArrayRef<int64_t> perm) {
  SmallVector<int64_t> result(perm);
  std::swap(result[perm.size() - 2], result[perm.size() - 1]);
  return result;
}

MemRefType permuted(MemRefType type, ArrayRef<int64_t> perm) {
  SmallVector<int64_t> shape;
  for (int64_t source : perm)
    shape.push_back(type.getDimSize(source));
  return MemRefType::get(shape, type.getElementType());
}

/// Replaces `alloc` by a buffer of type `type`.
Value retype(AllocOp alloc, MemRefType type) {
  OpBuilder b(alloc);
  auto replacement = AllocOp::create(b, alloc.getLoc(), type, IntegerAttr());
  alloc.getBuffer().replaceAllUsesWith(replacement.getBuffer());
  alloc.erase();
  return replacement.getBuffer();
}

/// Sets a matmul's operand permutation `option` (none when the identity)
/// or a transpose's "perm" (always: an identity one is a copy).
void setPerm(LaunchOp launch, StringRef option, ArrayRef<int64_t> perm) {
  NamedAttrList options(launch.getOptions());
  bool transpose = launch.getKernel() == "graph.transpose";
  if (!transpose && (perm.empty() || isIdentity(perm)))
    options.erase(option);
  else
    options.set(option, DenseI64ArrayAttr::get(launch.getContext(), perm));
  launch.setOptionsAttr(options.getDictionary(launch.getContext()));
}

SmallVector<int64_t> permOf(LaunchOp launch, StringRef option) {
  auto perm = launch.getOptions().getAs<DenseI64ArrayAttr>(option);
  return perm ? SmallVector<int64_t>(perm.asArrayRef())
              : SmallVector<int64_t>();
}

struct FoldTransposesPass
    : trainc::kernel::impl::FoldTransposesPassBase<FoldTransposesPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<LaunchOp> matmuls;
    getOperation().walk([&](LaunchOp launch) {
      if (launch.getKernel() == "graph.matmul" &&
          (launch.getBackend() == "dnnl" || launch.getBackend() == "openblas" ||
           launch.getBackend() == "cublas"))
        matmuls.push_back(launch);
    });
    for (LaunchOp matmul : matmuls) {
      for (auto [index, option] : {std::pair<unsigned, StringRef>{0, "lhs_perm"},
                                   {1, "rhs_perm"}})
        foldOperand(matmul, index, option);
      transposeProduct(matmul);
    }
    getOperation().walk(
        [&](func::FuncOp function) { reuseTransposes(function); });
  }

  /// Rule 4: a transpose of the buffer an earlier transpose read, with the
  /// same permutation, its input unchanged in between, reads the earlier
  /// one's result instead (each result written by its transpose alone).
  void reuseTransposes(func::FuncOp function) {
    SmallVector<LaunchOp> made; // transposes so far, in launch order
    for (LaunchOp launch : llvm::to_vector(function.getOps<LaunchOp>())) {
      if (launch.getKernel() != "graph.transpose" ||
          launch.getInputs().size() != 1 || !writtenOnlyBy(launch))
        continue;
      Value input = launch.getInputs()[0];
      LaunchOp earlier;
      for (LaunchOp other : made)
        if (viewRoot(other.getInputs()[0]) == viewRoot(input) &&
            other.getInputs()[0].getType() == input.getType() &&
            other.getBackend() == launch.getBackend() &&
            other.getOptions() == launch.getOptions() &&
            !usedBetween(input, other, launch))
          earlier = other;
      if (!earlier) {
        made.push_back(launch);
        continue;
      }
      Value result = launch.getOutputs()[0];
      result.replaceAllUsesWith(earlier.getOutputs()[0]);
      launch.erase();
      result.getDefiningOp()->erase();
    }
  }

  /// Whether `transpose` writes one allocation that no other launch
  /// writes (through a view or not).
  static bool writtenOnlyBy(LaunchOp transpose) {
    if (transpose.getOutputs().size() != 1)
      return false;
    Value result = transpose.getOutputs()[0];
    if (!result.getDefiningOp<AllocOp>())
      return false;
    bool alone = true;
    transpose->getParentOp()->walk([&](LaunchOp launch) {
      if (launch != transpose &&
          llvm::any_of(launch.getOutputs(),
                       [&](Value b) { return viewRoot(b) == result; }))
        alone = false;
    });
    return alone;
  }

  /// Rules 1 and 2 for operand `index` of `matmul`.
  void foldOperand(LaunchOp matmul, unsigned index, StringRef option) {
    Value transposed = matmul.getInputs()[index];
    LaunchOp transpose = transposeWriting(transposed);
    if (!transpose || !transpose->isBeforeInBlock(matmul) ||
        matmul.getOptions().get(option))
      return;
    SmallVector<int64_t> perm = permOf(transpose, "perm");
    size_t rank = perm.size();
    if (rank < 2)
      return;
    bool onlyReader = llvm::all_of(transposed.getUsers(), [&](Operation *user) {
      return user == transpose ||
             (user == matmul && llvm::count(matmul.getInputs(), transposed) == 1);
    });
    Value source = transpose.getInputs()[0];
    if (swapsLastTwo(perm)) {
      if (usedBetween(source, transpose, matmul))
        return;
      setPerm(matmul, option, perm);
      matmul.getInputsMutable()[index].assign(source);
      // The transpose is dead once no launch reads its result.
      if (onlyReader) {
        transpose.erase();
        if (auto alloc = transposed.getDefiningOp<AllocOp>())
          alloc.erase();
      }
      return;
    }
    // Rule 2: transpose(x, perm) == swap(transpose(x, inner)).
    SmallVector<int64_t> inner = thenSwap(perm);
    auto alloc = transposed.getDefiningOp<AllocOp>();
    if (inner.back() != int64_t(rank - 1) || !onlyReader || !alloc)
      return;
    auto type = permuted(cast<MemRefType>(source.getType()), inner);
    retype(alloc, type);
    setPerm(transpose, "perm", inner);
    setPerm(matmul, option, lastTwoSwapped(rank));
  }

  /// Rule 3: (a b)^T = b^T a^T.
  void transposeProduct(LaunchOp matmul) {
    Value product = matmul.getOutputs()[0];
    auto alloc = product.getDefiningOp<AllocOp>();
    if (!alloc || matmul.getOutputs().size() != 1)
      return;
    LaunchOp transpose;
    for (Operation *user : product.getUsers()) {
      auto launch = dyn_cast<LaunchOp>(user);
      if (user == alloc.getOperation() || user == matmul.getOperation())
        continue;
      if (!launch || transpose || launch.getKernel() != "graph.transpose" ||
          launch.getInputs().size() != 1 || launch.getInputs()[0] != product)
        return;
      transpose = launch;
    }
    if (!transpose || llvm::is_contained(matmul.getInputs(), product))
      return;
    SmallVector<int64_t> perm = permOf(transpose, "perm");
    size_t rank = perm.size();
    auto lhsType = cast<MemRefType>(matmul.getInputs()[0].getType());
    auto rhsType = cast<MemRefType>(matmul.getInputs()[1].getType());
    if (rank < 2 || perm.back() != int64_t(rank - 2) ||
        lhsType.getRank() < 2 || rhsType.getRank() < 2 ||
        llvm::any_of(matmul.getOptions(), [](NamedAttribute option) {
          return option.getName() != "lhs_perm" &&
                 option.getName() != "rhs_perm";
        }))
      return;
    // Operand x read with permutation p is read swapped as x with
    // thenSwap(p) (the swap alone when it had none).
    auto swapped = [](SmallVector<int64_t> p, int64_t rank) {
      if (p.empty())
        p = llvm::to_vector(llvm::seq<int64_t>(0, rank));
      return thenSwap(p);
    };
    SmallVector<int64_t> lhsPerm = swapped(permOf(matmul, "lhs_perm"),
                                           lhsType.getRank());
    SmallVector<int64_t> rhsPerm = swapped(permOf(matmul, "rhs_perm"),
                                           rhsType.getRank());
    Value lhs = matmul.getInputs()[0], rhs = matmul.getInputs()[1];
    matmul.getInputsMutable()[0].assign(rhs);
    matmul.getInputsMutable()[1].assign(lhs);
    setPerm(matmul, "lhs_perm", rhsPerm);
    setPerm(matmul, "rhs_perm", lhsPerm);
    Value transposed = retype(alloc, permuted(cast<MemRefType>(product.getType()),
                                              lastTwoSwapped(rank)));
    // The transpose now reads the product with its last two dims swapped.
    SmallVector<int64_t> rest = llvm::map_to_vector(perm, [&](int64_t d) {
      return d >= int64_t(rank - 2) ? int64_t(2 * rank - 3 - d) : d;
    });
    Value result = transpose.getOutputs()[0];
    // The product goes where the transpose wrote if nothing is left to
    // permute and the matmul may write there: the buffer is defined before
    // it, or is an allocation that can move there (a model output's buffer
    // is allocated right before its last writer, after the matmul).
    Operation *definition = result.getDefiningOp();
    bool definedBefore =
        !definition || (definition->getBlock() == matmul->getBlock() &&
                        definition->isBeforeInBlock(matmul));
    if (!isIdentity(rest) || usedBetween(result, matmul, transpose, true) ||
        (!definedBefore && (!isa<AllocOp>(definition) ||
                            definition->getBlock() != matmul->getBlock()))) {
      setPerm(transpose, "perm", rest);
      return;
    }
    if (!definedBefore)
      definition->moveBefore(matmul);
    matmul.getOutputsMutable()[0].assign(result);
    transpose.erase();
    transposed.getDefiningOp()->erase();
  }
};

} // namespace
