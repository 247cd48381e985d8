//===- MaskedBf16AsI16.cpp - --trainc-masked-bf16-as-i16 ------------------===//
#include "dialects/loop/Transforms/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

namespace trainc::loop {
#define GEN_PASS_DEF_MASKEDBF16ASI16PASS
#include "dialects/loop/Transforms/Passes.h.inc"
} // namespace trainc::loop

using namespace mlir;

namespace {

/// `type` with i16 elements if it is a vector of bf16, else null.
VectorType asI16(Type type) {
  auto vector = dyn_cast<VectorType>(type);
  if (!vector || !vector.getElementType().isBF16())
    return {};
  return vector.clone(IntegerType::get(type.getContext(), 16));
}

struct MaskedBf16AsI16Pass
    : trainc::loop::impl::MaskedBf16AsI16PassBase<MaskedBf16AsI16Pass> {
  using Base::Base;

  void runOnOperation() override {
    getOperation().walk([](LLVM::MaskedStoreOp store) {
      VectorType bits = asI16(store.getValue().getType());
      if (!bits)
        return;
      OpBuilder b(store);
      Value cast = LLVM::BitcastOp::create(b, store.getLoc(), bits,
                                           store.getValue());
      store.getValueMutable().assign(cast);
    });
    getOperation().walk([](LLVM::MaskedLoadOp load) {
      VectorType bits = asI16(load.getType());
      if (!bits)
        return;
      OpBuilder b(load);
      SmallVector<Value> operands = {load.getData(), load.getMask()};
      if (Value passThru = load.getPassThru())
        operands.push_back(
            LLVM::BitcastOp::create(b, load.getLoc(), bits, passThru));
      auto wide = LLVM::MaskedLoadOp::create(b, load.getLoc(), TypeRange{bits},
                                             operands, load->getAttrs());
      Value back = LLVM::BitcastOp::create(b, load.getLoc(), load.getType(),
                                           wide.getResult());
      load.getResult().replaceAllUsesWith(back);
      load.erase();
    });
  }
};

} // namespace
