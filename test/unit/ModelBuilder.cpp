//===- ModelBuilder.cpp - small ONNX models built in C++ for tests --------===//
#include "ModelBuilder.h"

namespace trainc::test {

ModelBuilder::ModelBuilder(int64_t opset) {
  model_.set_ir_version(8);
  model_.set_producer_name("trainc-unit-tests");
  auto *entry = model_.add_opset_import();
  entry->set_domain("");
  entry->set_version(opset);
  model_.mutable_graph()->set_name("test");
}

static void setShape(onnx::ValueInfoProto &info, const std::string &name,
                     const std::vector<int64_t> &shape) {
  info.set_name(name);
  auto *tensor = info.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  auto *proto = tensor->mutable_shape();
  for (int64_t d : shape) {
    if (d < 0)
      proto->add_dim()->set_dim_param("batch");
    else
      proto->add_dim()->set_dim_value(d);
  }
}

ModelBuilder &ModelBuilder::input(const std::string &name,
                                  std::vector<int64_t> shape) {
  setShape(*model_.mutable_graph()->add_input(), name, shape);
  return *this;
}

ModelBuilder &ModelBuilder::output(const std::string &name,
                                   std::vector<int64_t> shape) {
  auto *info = model_.mutable_graph()->add_output();
  if (shape.empty())
    info->set_name(name);
  else
    setShape(*info, name, shape);
  return *this;
}

ModelBuilder &ModelBuilder::floatInitializer(const std::string &name,
                                             std::vector<int64_t> shape,
                                             float value) {
  auto *tensor = model_.mutable_graph()->add_initializer();
  tensor->set_name(name);
  tensor->set_data_type(onnx::TensorProto::FLOAT);
  int64_t count = 1;
  for (int64_t d : shape) {
    tensor->add_dims(d);
    count *= d;
  }
  for (int64_t i = 0; i < count; ++i)
    tensor->add_float_data(value);
  return *this;
}

ModelBuilder &ModelBuilder::intInitializer(const std::string &name,
                                           std::vector<int64_t> values) {
  auto *tensor = model_.mutable_graph()->add_initializer();
  tensor->set_name(name);
  tensor->set_data_type(onnx::TensorProto::INT64);
  tensor->add_dims(values.size());
  for (int64_t v : values)
    tensor->add_int64_data(v);
  return *this;
}

onnx::NodeProto &ModelBuilder::node(const std::string &opType,
                                    const std::string &name,
                                    std::vector<std::string> inputs,
                                    std::vector<std::string> outputs) {
  auto *node = model_.mutable_graph()->add_node();
  node->set_op_type(opType);
  node->set_name(name);
  for (auto &input : inputs)
    node->add_input(input);
  for (auto &output : outputs)
    node->add_output(output);
  return *node;
}

std::string ModelBuilder::bytes() const { return model_.SerializeAsString(); }

void setIntAttribute(onnx::NodeProto &node, const std::string &name,
                     int64_t value) {
  auto *attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INT);
  attr->set_i(value);
}

} // namespace trainc::test
