//===- GraphDialect.cpp - graph dialect registration ---------------------===//
#include "dialects/graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Transforms/InliningUtils.h"

using namespace mlir;
using namespace trainc::graph;

#include "dialects/graph/CostInterface.cpp.inc"
#include "dialects/graph/GradientInterface.cpp.inc"
#include "dialects/graph/GraphDialect.cpp.inc"

namespace {
/// Graph ops have no side effects on anything but their results, so any of
/// them may be inlined (@train_step inlines @gradients before lowering).
struct GraphInlinerInterface : public DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final {
    return true;
  }
};
} // namespace

void GraphDialect::initialize() {
  registerGraphDialectOperations(this); // defined in GraphOpsShard0.cpp
  addInterfaces<GraphInlinerInterface>();
}

Operation *GraphDialect::materializeConstant(OpBuilder &builder,
                                             Attribute value, Type type,
                                             Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}

std::optional<CastClass> trainc::graph::getCastClass(Operation *op) {
  if (op->hasTrait<OpTrait::CastLow>())
    return CastClass::Low;
  if (op->hasTrait<OpTrait::CastFp32>())
    return CastClass::Fp32;
  if (op->hasTrait<OpTrait::CastFollow>())
    return CastClass::Follow;
  if (op->hasTrait<OpTrait::CastActivations>())
    return CastClass::Activations;
  if (op->hasTrait<OpTrait::CastFixed>())
    return CastClass::Fixed;
  return std::nullopt;
}
