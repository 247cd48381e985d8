//===- ModelBuilder.h - small ONNX models built in C++ for tests -*- C++ -*-===//
#ifndef TRAINC_TEST_UNIT_MODELBUILDER_H
#define TRAINC_TEST_UNIT_MODELBUILDER_H

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

namespace trainc::test {

/// Builds a ModelProto node by node; the defaults make a valid opset-17
/// model, so each test changes only what it is about.
class ModelBuilder {
public:
  explicit ModelBuilder(int64_t opset = 17);

  /// A float graph input ("batch" marks a symbolic dimension with -1).
  ModelBuilder &input(const std::string &name, std::vector<int64_t> shape);
  ModelBuilder &output(const std::string &name, std::vector<int64_t> shape = {});
  ModelBuilder &floatInitializer(const std::string &name,
                                 std::vector<int64_t> shape, float value = 0.5f);
  ModelBuilder &intInitializer(const std::string &name,
                               std::vector<int64_t> values);
  onnx::NodeProto &node(const std::string &opType, const std::string &name,
                        std::vector<std::string> inputs,
                        std::vector<std::string> outputs);

  onnx::ModelProto &model() { return model_; }
  std::string bytes() const;

private:
  onnx::ModelProto model_;
};

void setIntAttribute(onnx::NodeProto &node, const std::string &name,
                     int64_t value);

} // namespace trainc::test

#endif
