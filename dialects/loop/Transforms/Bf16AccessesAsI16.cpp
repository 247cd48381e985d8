//===- Bf16AccessesAsI16.cpp - --trainc-bf16-accesses-as-i16 --------------===//
#include "dialects/loop/Transforms/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

namespace trainc::loop {
#define GEN_PASS_DEF_BF16ACCESSESASI16PASS
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

/// A store (plain or masked) of a bf16 vector stores its bits as i16.
template <typename StoreOp> void storeBits(StoreOp store) {
  VectorType bits = asI16(store.getValue().getType());
  if (!bits)
    return;
  OpBuilder b(store);
  Value cast =
      LLVM::BitcastOp::create(b, store.getLoc(), bits, store.getValue());
  store.getValueMutable().assign(cast);
}

/// A load (plain or masked) of a bf16 vector loads i16 bits, bitcast
/// back; `operands` are its operands with i16 bits for any bf16 vector.
template <typename LoadOp>
void loadBits(LoadOp load, VectorType bits, ArrayRef<Value> operands) {
  OpBuilder b(load);
  auto wide = LoadOp::create(b, load.getLoc(), TypeRange{bits}, operands,
                             load->getAttrs());
  Value back = LLVM::BitcastOp::create(b, load.getLoc(), load.getType(),
                                       wide.getResult());
  load.getResult().replaceAllUsesWith(back);
  load.erase();
}

struct Bf16AccessesAsI16Pass
    : trainc::loop::impl::Bf16AccessesAsI16PassBase<Bf16AccessesAsI16Pass> {
  using Base::Base;

  void runOnOperation() override {
    getOperation().walk([](LLVM::StoreOp store) { storeBits(store); });
    getOperation().walk([](LLVM::MaskedStoreOp store) { storeBits(store); });
    getOperation().walk([](LLVM::LoadOp load) {
      if (VectorType bits = asI16(load.getType()))
        loadBits(load, bits, llvm::to_vector(load->getOperands()));
    });
    getOperation().walk([](LLVM::MaskedLoadOp load) {
      VectorType bits = asI16(load.getType());
      if (!bits)
        return;
      SmallVector<Value> operands = {load.getData(), load.getMask()};
      if (Value passThru = load.getPassThru()) {
        OpBuilder b(load);
        operands.push_back(
            LLVM::BitcastOp::create(b, load.getLoc(), bits, passThru));
      }
      loadBits(load, bits, operands);
    });
  }
};

} // namespace
