//===- ElementwiseNests.cpp - generated elementwise kernels ---------------===//
#include "lib/Conversion/ElementwiseNests.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace trainc::conversion {

loop::NestOp elementwiseNest(kernel::LaunchOp launch, SymbolTable &symbols) {
  if (!launch.getCallee() || !launch.getScratch().empty())
    return {};
  auto function = symbols.lookup<func::FuncOp>(*launch.getCallee());
  if (!function || function->hasAttr(loop::kCheckAttrName))
    return {};
  auto nests = function.getBody().getOps<loop::NestOp>();
  if (!llvm::hasSingleElement(nests))
    return {};
  loop::NestOp nest = *nests.begin();
  if (llvm::any_of(nest.getIterators(), [](Attribute iterator) {
        return cast<StringAttr>(iterator).getValue() != "parallel";
      }))
    return {};
  for (auto [i, operand] : llvm::enumerate(nest->getOperands())) {
    auto argument = dyn_cast<BlockArgument>(operand);
    if (!argument || argument.getArgNumber() != i)
      return {};
  }
  Block &body = nest.getBody().front();
  for (BlockArgument output :
       body.getArguments().drop_front(nest.getInputs().size()))
    if (!output.use_empty())
      return {};
  if (!body.getOps<loop::IndexOp>().empty())
    return {};
  return nest;
}

bool isWhole(loop::NestOp nest, unsigned i) {
  AffineMap map = cast<AffineMapAttr>(nest.getIndexingMaps()[i]).getValue();
  auto type = cast<MemRefType>(nest->getOperand(i).getType());
  return map.isIdentity() && type.getShape() == nest.getDomain();
}

} // namespace trainc::conversion
