//===- Descriptor.cpp - kernel launch descriptors -------------------------===//
#include "lib/Codegen/Descriptor.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <cstdio>

using namespace mlir;

namespace trainc::codegen {

llvm::Expected<std::string> dtypeName(Type type) {
  if (type.isF32())
    return "f32";
  if (type.isF64())
    return "f64";
  if (type.isF16())
    return "f16";
  if (type.isBF16())
    return "bf16";
  for (unsigned width : {64u, 32u, 16u, 8u, 1u})
    if (type.isInteger(width))
      return "i" + std::to_string(width);
  std::string text;
  llvm::raw_string_ostream stream(text);
  stream << type;
  return llvm::createStringError("no runtime dtype for " + text);
}

static llvm::Error appendOperands(std::string &out, const char *key,
                                  ValueRange buffers) {
  out += std::string(";") + key + "=";
  for (auto [i, buffer] : llvm::enumerate(buffers)) {
    auto type = cast<MemRefType>(buffer.getType());
    auto dtype = dtypeName(type.getElementType());
    if (!dtype)
      return dtype.takeError();
    out += (i ? "|" : "") + *dtype + ":";
    for (auto [d, size] : llvm::enumerate(type.getShape()))
      out += (d ? "x" : "") + std::to_string(size);
  }
  return llvm::Error::success();
}

/// An attribute's value in the descriptor's text form.
static llvm::Expected<std::string> attributeText(Attribute attr) {
  if (auto boolean = dyn_cast<BoolAttr>(attr))
    return std::string(boolean.getValue() ? "1" : "0");
  if (auto integer = dyn_cast<IntegerAttr>(attr))
    return std::to_string(integer.getInt());
  if (auto real = dyn_cast<FloatAttr>(attr)) {
    char buffer[40];
    std::snprintf(buffer, sizeof(buffer), "%.17g", real.getValueAsDouble());
    return std::string(buffer);
  }
  if (auto array = dyn_cast<DenseI64ArrayAttr>(attr)) {
    std::string text;
    for (auto [i, value] : llvm::enumerate(array.asArrayRef()))
      text += (i ? "," : "") + std::to_string(value);
    return text;
  }
  if (auto string = dyn_cast<StringAttr>(attr))
    return string.str();
  if (auto type = dyn_cast<TypeAttr>(attr))
    return dtypeName(type.getValue());
  std::string text;
  llvm::raw_string_ostream stream(text);
  stream << attr;
  return llvm::createStringError("cannot describe attribute " + text);
}

llvm::Expected<std::string> launchDescriptor(kernel::LaunchOp launch) {
  std::string out = launch.getKernel().str() + ";backend=" +
                    launch.getBackend().str();
  if (auto error = appendOperands(out, "in", launch.getInputs()))
    return std::move(error);
  if (auto error = appendOperands(out, "out", launch.getOutputs()))
    return std::move(error);
  for (NamedAttribute attr : launch.getOptions()) {
    auto text = attributeText(attr.getValue());
    if (!text)
      return text.takeError();
    if (text->find(';') != std::string::npos)
      return llvm::createStringError("attribute " + attr.getName().str() +
                                     " contains ';'");
    out += ";" + attr.getName().str() + "=" + *text;
  }
  return out;
}

} // namespace trainc::codegen
