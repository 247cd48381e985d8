//===- TensorData.cpp - decoding ONNX TensorProto values ------------------===//
//
// ONNX stores tensor data either as `raw_data` (little-endian bytes) or in
// typed repeated fields (float_data, int32_data, int64_data, ...). This file
// turns both into the importer's KnownTensor and the WeightStore's bytes.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/ImportState.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <cstring>

using namespace mlir;

namespace trainc::import {

using onnx::TensorProto;

Type elementTypeFor(int32_t onnxType, MLIRContext &context) {
  Builder b(&context);
  switch (onnxType) {
  case TensorProto::FLOAT:
    return b.getF32Type();
  case TensorProto::DOUBLE:
    return b.getF64Type();
  case TensorProto::FLOAT16:
    return b.getF16Type();
  case TensorProto::BFLOAT16:
    return b.getBF16Type();
  case TensorProto::INT64:
    return b.getI64Type();
  case TensorProto::INT32:
    return b.getI32Type();
  case TensorProto::INT16:
    return b.getI16Type();
  case TensorProto::INT8:
  case TensorProto::UINT8:
    return b.getI8Type();
  case TensorProto::BOOL:
    return b.getI1Type();
  default:
    return {};
  }
}

std::string onnxTypeName(int32_t onnxType) {
  if (TensorProto::DataType_IsValid(onnxType))
    return TensorProto::DataType_Name(
        static_cast<TensorProto::DataType>(onnxType));
  return "type " + std::to_string(onnxType);
}

size_t elementBytes(int32_t onnxType) {
  switch (onnxType) {
  case TensorProto::DOUBLE:
  case TensorProto::INT64:
    return 8;
  case TensorProto::FLOAT:
  case TensorProto::INT32:
    return 4;
  case TensorProto::FLOAT16:
  case TensorProto::BFLOAT16:
  case TensorProto::INT16:
    return 2;
  case TensorProto::INT8:
  case TensorProto::UINT8:
  case TensorProto::BOOL:
    return 1;
  default:
    return 0;
  }
}

static const char *dtypeName(int32_t onnxType) {
  switch (onnxType) {
  case TensorProto::FLOAT:
    return "f32";
  case TensorProto::DOUBLE:
    return "f64";
  case TensorProto::FLOAT16:
    return "f16";
  case TensorProto::BFLOAT16:
    return "bf16";
  case TensorProto::INT64:
    return "i64";
  case TensorProto::INT32:
    return "i32";
  case TensorProto::INT16:
    return "i16";
  case TensorProto::INT8:
    return "i8";
  case TensorProto::UINT8:
    return "u8";
  case TensorProto::BOOL:
    return "bool";
  default:
    return "?";
  }
}

std::string checkShape(ArrayRef<int64_t> dims, int64_t width, int64_t minDim) {
  int64_t bytes = width;
  for (int64_t dim : dims) {
    if (dim < minDim)
      return "dimension " + std::to_string(dim) + " (dimensions must be " +
             (minDim > 0 ? "positive" : "non-negative") + ")";
    if (__builtin_mul_overflow(bytes, dim, &bytes) || bytes > kMaxTensorBytes)
      return "more than " + std::to_string(kMaxTensorBytes >> 40) +
             " TiB in one tensor";
  }
  return "";
}

FailureOr<WeightTensor> decodeWeight(const TensorProto &tensor,
                                     std::string &error) {
  WeightTensor weight;
  weight.dtype = dtypeName(tensor.data_type());
  size_t width = elementBytes(tensor.data_type());
  if (width == 0) {
    error = "initializer '" + tensor.name() + "' has unsupported data type " +
            onnxTypeName(tensor.data_type());
    return failure();
  }
  if (tensor.data_location() == TensorProto::EXTERNAL) {
    // loadExternalData has read every external tensor of a model file.
    error = "initializer '" + tensor.name() +
            "' keeps its data in an external file, read only when the model "
            "is read from a file";
    return failure();
  }
  weight.shape.assign(tensor.dims().begin(), tensor.dims().end());
  if (std::string bad = checkShape(weight.shape, width); !bad.empty()) {
    error = "initializer '" + tensor.name() + "' has " + bad;
    return failure();
  }
  int64_t count = 1;
  for (int64_t dim : weight.shape)
    count *= dim;
  size_t expectedBytes = static_cast<size_t>(count) * width;
  auto &bytes = weight.bytes;
  if (tensor.has_raw_data()) {
    bytes.assign(tensor.raw_data().begin(), tensor.raw_data().end());
  } else {
    // Typed fields: append each element in its storage width.
    auto append = [&](const void *data, size_t size) {
      const char *begin = static_cast<const char *>(data);
      bytes.insert(bytes.end(), begin, begin + size);
    };
    switch (tensor.data_type()) {
    case TensorProto::FLOAT:
      for (float v : tensor.float_data())
        append(&v, 4);
      break;
    case TensorProto::DOUBLE:
      for (double v : tensor.double_data())
        append(&v, 8);
      break;
    case TensorProto::INT64:
      for (int64_t v : tensor.int64_data())
        append(&v, 8);
      break;
    default: // int32_data holds every narrower type, one element per entry.
      for (int32_t v : tensor.int32_data())
        append(&v, width);
      break;
    }
  }
  if (bytes.size() != expectedBytes) {
    error = "initializer '" + tensor.name() + "' holds " +
            std::to_string(bytes.size()) + " bytes but its shape needs " +
            std::to_string(expectedBytes);
    return failure();
  }
  return weight;
}

int64_t KnownTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n))
      return -1;
  return n;
}

DenseElementsAttr KnownTensor::toAttr() const {
  auto type = RankedTensorType::get(shape, elementType);
  if (isFloat()) {
    SmallVector<APFloat> values;
    for (double v : floats) {
      APFloat value(v);
      bool lost;
      value.convert(cast<FloatType>(elementType).getFloatSemantics(),
                    APFloat::rmNearestTiesToEven, &lost);
      values.push_back(value);
    }
    return DenseElementsAttr::get(type, values);
  }
  unsigned width = elementType.getIntOrFloatBitWidth();
  SmallVector<APInt> values;
  for (int64_t v : ints)
    values.push_back(APInt(width, static_cast<uint64_t>(v), /*isSigned=*/true,
                           /*implicitTrunc=*/true));
  return DenseElementsAttr::get(type, values);
}

KnownTensor KnownTensor::ofInts(Type elementType, ArrayRef<int64_t> shape,
                                ArrayRef<int64_t> values) {
  KnownTensor tensor;
  tensor.elementType = elementType;
  tensor.shape.assign(shape.begin(), shape.end());
  tensor.ints.assign(values.begin(), values.end());
  return tensor;
}

FailureOr<KnownTensor> decodeKnown(const TensorProto &tensor,
                                   MLIRContext &context, std::string &error) {
  Type elementType = elementTypeFor(tensor.data_type(), context);
  if (!elementType) {
    error = "tensor '" + tensor.name() + "' has unsupported data type " +
            onnxTypeName(tensor.data_type());
    return failure();
  }
  auto weight = decodeWeight(tensor, error);
  if (failed(weight))
    return failure();
  KnownTensor known;
  known.elementType = elementType;
  known.shape.assign(weight->shape.begin(), weight->shape.end());
  const char *data = weight->bytes.data();
  int64_t n = known.numElements();
  for (int64_t i = 0; i < n; ++i) {
    switch (tensor.data_type()) {
    case TensorProto::FLOAT: {
      float v;
      std::memcpy(&v, data + 4 * i, 4);
      known.floats.push_back(v);
      break;
    }
    case TensorProto::DOUBLE: {
      double v;
      std::memcpy(&v, data + 8 * i, 8);
      known.floats.push_back(v);
      break;
    }
    case TensorProto::INT64: {
      int64_t v;
      std::memcpy(&v, data + 8 * i, 8);
      known.ints.push_back(v);
      break;
    }
    case TensorProto::INT32: {
      int32_t v;
      std::memcpy(&v, data + 4 * i, 4);
      known.ints.push_back(v);
      break;
    }
    case TensorProto::INT16: {
      int16_t v;
      std::memcpy(&v, data + 2 * i, 2);
      known.ints.push_back(v);
      break;
    }
    case TensorProto::INT8:
      known.ints.push_back(static_cast<int8_t>(data[i]));
      break;
    case TensorProto::UINT8:
    case TensorProto::BOOL:
      known.ints.push_back(static_cast<uint8_t>(data[i]));
      break;
    default:
      error = "tensor '" + tensor.name() + "' of type " +
              onnxTypeName(tensor.data_type()) +
              " cannot be used as a constant value";
      return failure();
    }
  }
  return known;
}

} // namespace trainc::import
