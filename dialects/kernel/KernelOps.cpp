//===- KernelOps.cpp - the operator dialect -------------------------------===//
#include "dialects/kernel/KernelOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace trainc::kernel;

#include "dialects/kernel/KernelDialect.cpp.inc"

void KernelDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/kernel/KernelOps.cpp.inc"
      >();
}

LogicalResult ConstantOp::verify() {
  auto type = getBuffer().getType();
  auto valueType = cast<ShapedType>(getValue().getType());
  if (type.getShape() != valueType.getShape() ||
      type.getElementType() != valueType.getElementType())
    return emitOpError("value type ") << valueType << " does not match " << type;
  return success();
}

LogicalResult ViewOp::verify() {
  auto source = cast<MemRefType>(getSource().getType());
  auto result = cast<MemRefType>(getResult().getType());
  if (source.getElementType() != result.getElementType() ||
      source.getNumElements() != result.getNumElements())
    return emitOpError("views ") << source << " as " << result
                                 << ": element type and count must match";
  if (!source.getLayout().isIdentity() || !result.getLayout().isIdentity())
    return emitOpError("buffers must have the identity layout");
  return success();
}

LogicalResult LaunchOp::verify() {
  if (getOutputs().empty())
    return emitOpError("writes no output");
  for (Value buffer : getOperands())
    if (!cast<MemRefType>(buffer.getType()).getLayout().isIdentity())
      return emitOpError("buffers must have the identity layout");
  if (getCallee() && getBackend() != "generated")
    return emitOpError("only a launch of the generated backend calls a "
                       "loop kernel");
  if (!getScratch().empty() && !getCallee())
    return emitOpError("scratch buffers need a generated kernel");
  return success();
}

#define GET_OP_CLASSES
#include "dialects/kernel/KernelOps.cpp.inc"
