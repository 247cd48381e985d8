//===- FuseActivations.cpp - --trainc-fuse-activations --------------------===//
#include "dialects/kernel/Transforms/LaunchGraph.h"
#include "dialects/kernel/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace trainc::kernel {
#define GEN_PASS_DEF_FUSEACTIVATIONSPASS
#include "dialects/kernel/Transforms/Passes.h.inc"
} // namespace trainc::kernel

using namespace mlir;
using namespace trainc::kernel;

namespace {

bool takesPostOps(LaunchOp launch) {
  StringRef kernel = launch.getKernel();
  return launch.getBackend() == "dnnl" && launch.getOutputs().size() == 1 &&
         (kernel == "graph.conv" || kernel == "graph.gemm" ||
          kernel == "graph.matmul") &&
         !launch.getOptions().get("post_relu");
}

/// A cast of f32 to bf16 or f16: rounding commutes with ReLU exactly,
/// relu(round(y)) == round(relu(y)).
bool isNarrowingCast(LaunchOp launch) {
  if (launch.getKernel() != "graph.cast" || launch.getInputs().size() != 1 ||
      launch.getOutputs().size() != 1)
    return false;
  Type from =
      cast<MemRefType>(launch.getInputs()[0].getType()).getElementType();
  Type to = cast<MemRefType>(launch.getOutputs()[0].getType()).getElementType();
  return from.isF32() && (to.isBF16() || to.isF16());
}

/// Whether `add` adds a vector along the last dim of its other operand
/// `product` (the vector first or second, as [N] or [1, ..., N]) into an
/// output of `product`'s type.
Value biasOf(LaunchOp add, Value product) {
  if (add.getInputs().size() != 2 || add.getOutputs().size() != 1 ||
      add.getOutputs()[0].getType() != product.getType())
    return {};
  Value bias =
      add.getInputs()[0] == product ? add.getInputs()[1] : add.getInputs()[0];
  auto productType = cast<MemRefType>(product.getType());
  auto biasType = cast<MemRefType>(bias.getType());
  if (bias == product ||
      biasType.getElementType() != productType.getElementType() ||
      biasType.getRank() < 1 || biasType.getRank() > productType.getRank() ||
      biasType.getShape().back() != productType.getShape().back())
    return {};
  for (int64_t extent : biasType.getShape().drop_back())
    if (extent != 1)
      return {};
  return bias;
}

struct FuseActivationsPass
    : trainc::kernel::impl::FuseActivationsPassBase<FuseActivationsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<LaunchOp> adds, relus;
    getOperation().walk([&](LaunchOp launch) {
      if (launch.getKernel() == "graph.add")
        adds.push_back(launch);
      else if (launch.getKernel() == "graph.relu")
        relus.push_back(launch);
    });
    // Bias adds first: oneDNN adds the bias before its post-ops.
    for (LaunchOp add : adds)
      fuseBias(add);
    if (this->relus)
      for (LaunchOp relu : relus)
        fuseRelu(relu);
  }

  /// The product writes `reader`'s output in its place.
  static void replace(LaunchOp product, LaunchOp reader, Value intermediate) {
    product.getOutputsMutable()[0].assign(reader.getOutputs()[0]);
    product->moveBefore(reader);
    reader.erase();
    intermediate.getDefiningOp()->erase();
  }

  void setPostRelu(LaunchOp product) {
    NamedAttrList options(product.getOptions());
    options.set("post_relu", BoolAttr::get(&getContext(), true));
    product.setOptionsAttr(options.getDictionary(&getContext()));
  }

  void fuseRelu(LaunchOp relu) {
    Value preActivation = relu.getInputs()[0];
    LaunchOp producer = soleWriter(preActivation, relu);
    if (!producer)
      return;
    if (takesPostOps(producer)) {
      setPostRelu(producer);
      replace(producer, relu, preActivation);
      return;
    }
    // An f32 product rounded to bf16 before its ReLU (--amp bf16 where
    // products compute in f32): the product applies the ReLU, and the
    // rounding, moved to the ReLU's place, writes the ReLU's output.
    if (!isNarrowingCast(producer))
      return;
    Value product = producer.getInputs()[0];
    LaunchOp writer = soleWriter(product, producer);
    if (!writer || !takesPostOps(writer))
      return;
    setPostRelu(writer);
    replace(producer, relu, preActivation);
  }

  void fuseBias(LaunchOp add) {
    for (Value product : add.getInputs()) {
      LaunchOp producer = soleWriter(product, add);
      if (!producer || !takesPostOps(producer) ||
          producer.getKernel() != "graph.matmul" ||
          producer.getInputs().size() != 2 ||
          llvm::any_of(producer.getInputs(), [](Value operand) {
            return cast<MemRefType>(operand.getType()).getRank() < 2;
          }))
        continue;
      Value bias = biasOf(add, product);
      if (!bias)
        continue;
      // The product moves to the add's place, where the bias is read now.
      producer.getInputsMutable().append(bias);
      replace(producer, add, product);
      return;
    }
  }
};

} // namespace
