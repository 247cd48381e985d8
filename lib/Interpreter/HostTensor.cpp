//===- HostTensor.cpp - host tensors, dtypes and MLIR attributes ----------===//
#include "trainc/Interpreter.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/APFloat.h"

#include <cmath>

using namespace mlir;

namespace trainc {

int64_t HostTensor::numElements() const {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

llvm::StringRef dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::I64:
    return "i64";
  case DType::I32:
    return "i32";
  case DType::I16:
    return "i16";
  case DType::I8:
    return "i8";
  case DType::I1:
    return "i1";
  }
  return "?";
}

llvm::Expected<DType> dtypeOf(Type elementType) {
  if (elementType.isF32())
    return DType::F32;
  if (elementType.isF64())
    return DType::F64;
  if (elementType.isF16())
    return DType::F16;
  if (elementType.isBF16())
    return DType::BF16;
  if (auto integer = dyn_cast<IntegerType>(elementType)) {
    if (integer.isSignless() || integer.isSigned()) {
      switch (integer.getWidth()) {
      case 64:
        return DType::I64;
      case 32:
        return DType::I32;
      case 16:
        return DType::I16;
      case 8:
        return DType::I8;
      case 1:
        return DType::I1;
      default:
        break;
      }
    }
  }
  std::string name;
  llvm::raw_string_ostream stream(name);
  elementType.print(stream);
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "element type " + name +
                                     " is not supported by the interpreter");
}

Type elementTypeOf(DType dtype, MLIRContext &context) {
  Builder b(&context);
  switch (dtype) {
  case DType::F32:
    return b.getF32Type();
  case DType::F64:
    return b.getF64Type();
  case DType::F16:
    return b.getF16Type();
  case DType::BF16:
    return b.getBF16Type();
  case DType::I64:
    return b.getI64Type();
  case DType::I32:
    return b.getI32Type();
  case DType::I16:
    return b.getI16Type();
  case DType::I8:
    return b.getI8Type();
  case DType::I1:
    return b.getI1Type();
  }
  return {};
}

/// Rounds to the nearest value of `semantics` (ties to even), as a
/// hardware conversion from double would.
static double roundToFormat(double value, const llvm::fltSemantics &semantics) {
  llvm::APFloat converted(value);
  bool losesInfo = false;
  converted.convert(semantics, llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  converted.convert(llvm::APFloat::IEEEdouble(),
                    llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  return converted.convertToDouble();
}

/// Truncates toward zero into int64, saturating (and mapping NaN to 0), so
/// that no out-of-range conversion is undefined behaviour.
static int64_t truncateToInt64(double value) {
  if (std::isnan(value))
    return 0;
  if (value >= 9223372036854775807.0)
    return INT64_MAX;
  if (value <= -9223372036854775808.0)
    return INT64_MIN;
  return static_cast<int64_t>(value);
}

double roundTo(DType dtype, double value) {
  switch (dtype) {
  case DType::F64:
    return value;
  case DType::F32:
    return static_cast<float>(value);
  case DType::F16:
    return roundToFormat(value, llvm::APFloat::IEEEhalf());
  case DType::BF16:
    return roundToFormat(value, llvm::APFloat::BFloat());
  case DType::I64:
    return static_cast<double>(truncateToInt64(value));
  // Narrow integers wrap (two's complement), as a truncating cast does.
  case DType::I32:
    return static_cast<int32_t>(static_cast<uint32_t>(truncateToInt64(value)));
  case DType::I16:
    return static_cast<int16_t>(static_cast<uint16_t>(truncateToInt64(value)));
  case DType::I8:
    return static_cast<int8_t>(static_cast<uint8_t>(truncateToInt64(value)));
  case DType::I1:
    return value != 0.0 ? 1.0 : 0.0;
  }
  return value;
}

llvm::Expected<HostTensor> hostTensorFromAttr(ElementsAttr attr) {
  auto type = dyn_cast<RankedTensorType>(attr.getShapedType());
  if (!type || !type.hasStaticShape())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "a constant must be a static tensor");
  auto dtype = dtypeOf(type.getElementType());
  if (!dtype)
    return dtype.takeError();
  HostTensor tensor;
  tensor.dtype = *dtype;
  tensor.shape.assign(type.getShape().begin(), type.getShape().end());
  tensor.data.reserve(type.getNumElements());
  if (isa<FloatType>(type.getElementType())) {
    auto values = attr.tryGetValues<llvm::APFloat>();
    if (!values)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "cannot read the constant's floats");
    for (llvm::APFloat value : *values) {
      bool losesInfo = false;
      value.convert(llvm::APFloat::IEEEdouble(),
                    llvm::APFloat::rmNearestTiesToEven, &losesInfo);
      tensor.data.push_back(value.convertToDouble());
    }
  } else {
    auto values = attr.tryGetValues<llvm::APInt>();
    if (!values)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "cannot read the constant's integers");
    bool boolean = *dtype == DType::I1;
    for (const llvm::APInt &value : *values)
      tensor.data.push_back(boolean
                                ? static_cast<double>(value.getZExtValue())
                                : static_cast<double>(value.getSExtValue()));
  }
  return tensor;
}

DenseElementsAttr denseAttrOf(const HostTensor &tensor, MLIRContext &context) {
  Type elementType = elementTypeOf(tensor.dtype, context);
  auto type = RankedTensorType::get(tensor.shape, elementType);
  if (auto floatType = dyn_cast<FloatType>(elementType)) {
    llvm::SmallVector<llvm::APFloat> values;
    for (double value : tensor.data) {
      llvm::APFloat converted(value);
      bool losesInfo = false;
      converted.convert(floatType.getFloatSemantics(),
                        llvm::APFloat::rmNearestTiesToEven, &losesInfo);
      values.push_back(converted);
    }
    return DenseElementsAttr::get(type, values);
  }
  unsigned width = elementType.getIntOrFloatBitWidth();
  llvm::SmallVector<llvm::APInt> values;
  for (double value : tensor.data)
    values.push_back(
        llvm::APInt(width,
                    static_cast<uint64_t>(
                        static_cast<int64_t>(roundTo(tensor.dtype, value))),
                    /*isSigned=*/width > 1, /*implicitTrunc=*/true));
  return DenseElementsAttr::get(type, values);
}

} // namespace trainc
