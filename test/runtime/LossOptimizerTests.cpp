//===- LossOptimizerTests.cpp - losses and optimizer updates --------------===//
#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

using namespace trainc;
using namespace trainc::rttest;

TEST_CASE("softmax_cross_entropy and nll_loss with every option", "[loss]") {
  for (DType dtype : {DType::F32, DType::F64})
    for (DType labelType : {DType::I64, DType::I32})
      for (const Shape &shape :
           {Shape{8, 10}, Shape{4, 5, 3, 2}, Shape{512, 100}, Shape{1, 3}})
        for (const char *reduction : {"mean", "sum", "none"})
          for (std::optional<int64_t> ignore :
               {std::optional<int64_t>(), std::optional<int64_t>(-100),
                std::optional<int64_t>(2)}) {
            Shape labelsShape = labelShape(shape);
            HostTensor y =
                classLabels(labelType, labelsShape, shape[1], ignore);
            HostTensor logits = randomTensor(dtype, shape, -6.0, 6.0);
            Shape lossShape =
                std::string(reduction) == "none" ? labelsShape : Shape();
            HostTensor gradLoss = randomTensor(dtype, lossShape, 0.5, 2.0);
            std::vector<Attr> common = {string("reduction", reduction)};
            if (ignore)
              common.push_back(integer("ignore_index", *ignore));
            INFO(formatShape(shape)
                 << " " << reduction << " ignore " << (ignore ? *ignore : 999));
            for (double smoothing : {0.0, 0.1}) {
              std::vector<Attr> attributes = common;
              if (smoothing != 0.0)
                attributes.push_back(real("label_smoothing", smoothing));
              checkOp({"graph.softmax_cross_entropy",
                       {logits, y},
                       {{dtype, lossShape}},
                       attributes});
              checkOp({"graph.softmax_cross_entropy_backward",
                       {gradLoss, logits, y},
                       {{dtype, shape}},
                       attributes});
            }
            checkOp(
                {"graph.nll_loss", {logits, y}, {{dtype, lossShape}}, common});
            checkOp({"graph.nll_loss_backward",
                     {gradLoss, logits, y},
                     {{dtype, shape}},
                     common});
          }
  // The default reduction (mean) when the attribute is absent.
  HostTensor logits = randomTensor(DType::F32, {6, 4});
  HostTensor y = classLabels(DType::I64, {6}, 4, std::nullopt);
  checkOp({"graph.softmax_cross_entropy", {logits, y}, {{DType::F32, {}}}, {}});
  checkOp({"graph.nll_loss", {logits, y}, {{DType::F32, {}}}, {}});
}

TEST_CASE("mse, l1 and bce-with-logits losses", "[loss]") {
  for (DType dtype : {DType::F32, DType::F64})
    for (const Shape &shape : {Shape{7}, Shape{4, 5, 6}, Shape{300, 300}})
      for (const char *op : {"mse_loss", "l1_loss", "bce_with_logits_loss"}) {
        HostTensor prediction = randomTensor(dtype, shape, -4.0, 4.0);
        HostTensor target = randomTensor(dtype, shape, 0.0, 1.0);
        std::string name = std::string("graph.") + op;
        checkOp({name, {prediction, target}, {{dtype, {}}}, {}});
        checkOp({name,
                 {prediction, target},
                 {{dtype, {}}},
                 {string("reduction", "sum")}});
        checkOp({name,
                 {prediction, target},
                 {{dtype, shape}},
                 {string("reduction", "none")}});
      }
}

TEST_CASE("sgd_update with momentum, dampening, nesterov and decay",
          "[optimizer]") {
  for (DType dtype : {DType::F32, DType::F64})
    for (int64_t step : {0, 3})
      for (const Shape &shape : {Shape{5, 4}, Shape{256, 300}}) {
        HostTensor param = randomTensor(dtype, shape);
        HostTensor grad = randomTensor(dtype, shape);
        HostTensor buffer = randomTensor(dtype, shape);
        HostTensor lr = tensor(dtype, {}, {roundTo(dtype, 0.05)});
        HostTensor t = tensor(DType::I64, {}, {double(step)});
        checkOp(
            {"graph.sgd_update", {param, grad, lr, t}, {{dtype, shape}}, {}});
        checkOp({"graph.sgd_update",
                 {param, grad, lr, t},
                 {{dtype, shape}},
                 {real("weight_decay", 0.01)}});
        for (bool nesterov : {false, true})
          checkOp({"graph.sgd_update",
                   {param, grad, lr, t, buffer},
                   {{dtype, shape}, {dtype, shape}},
                   {real("momentum", 0.9), real("dampening", 0.1),
                    flag("nesterov", nesterov), real("weight_decay", 1e-3)}});
      }
}

TEST_CASE("adam_update in PyTorch and ONNX conventions, Adam and AdamW",
          "[optimizer]") {
  for (DType dtype : {DType::F32, DType::F64})
    for (int64_t step : {0, 1, 5})
      for (bool decoupled : {false, true})
        for (bool onnx : {false, true}) {
          Shape shape = {6, 7};
          HostTensor param = randomTensor(dtype, shape);
          HostTensor grad = randomTensor(dtype, shape);
          HostTensor m = randomTensor(dtype, shape, -0.1, 0.1);
          HostTensor v = randomTensor(dtype, shape, 0.0, 0.01);
          HostTensor lr = tensor(DType::F32, {}, {roundTo(DType::F32, 1e-3)});
          HostTensor t = tensor(DType::I64, {}, {double(step)});
          std::vector<Attr> attributes = {flag("decoupled", decoupled),
                                          flag("onnx_convention", onnx),
                                          real("weight_decay", 0.01)};
          if (step == 5)
            attributes.insert(attributes.end(),
                              {real("beta1", 0.8), real("beta2", 0.99),
                               real("epsilon", 1e-6)});
          checkOp({"graph.adam_update",
                   {param, grad, m, v, lr, t},
                   {{dtype, shape}, {dtype, shape}, {dtype, shape}},
                   attributes});
        }
}

TEST_CASE("adagrad_update", "[optimizer]") {
  for (DType dtype : {DType::F32, DType::F64})
    for (int64_t step : {0, 4}) {
      Shape shape = {300, 200};
      HostTensor param = randomTensor(dtype, shape);
      HostTensor grad = randomTensor(dtype, shape);
      HostTensor sum = randomTensor(dtype, shape, 0.0, 1.0);
      HostTensor lr = tensor(dtype, {}, {roundTo(dtype, 0.1)});
      HostTensor t = tensor(DType::I64, {}, {double(step)});
      checkOp({"graph.adagrad_update",
               {param, grad, sum, lr, t},
               {{dtype, shape}, {dtype, shape}},
               {}});
      checkOp({"graph.adagrad_update",
               {param, grad, sum, lr, t},
               {{dtype, shape}, {dtype, shape}},
               {real("lr_decay", 0.01), real("epsilon", 1e-6),
                real("weight_decay", 0.1)}});
    }
}

TEST_CASE("updates and elementwise ops may write over their inputs",
          "[optimizer][aliasing]") {
  // Parameters, optimizer state and running statistics are donated: the
  // new value is written into the old one's buffer.
  Shape shape = {300, 200};
  HostTensor param = randomTensor(DType::F32, shape);
  HostTensor grad = randomTensor(DType::F32, shape);
  HostTensor state = randomTensor(DType::F32, shape, 0.0, 0.01);
  HostTensor lr = tensor(DType::F32, {}, {roundTo(DType::F32, 0.01)});
  HostTensor step = tensor(DType::I64, {}, {2});
  HostTensor c4 = randomTensor(DType::F32, {4}, 0.5, 1.5);
  struct Aliased {
    OpCase op;
    std::vector<std::pair<size_t, size_t>> aliases;
  };
  std::vector<Aliased> cases = {
      {{"graph.sgd_update",
        {param, grad, lr, step, state},
        {{DType::F32, shape}, {DType::F32, shape}},
        {real("momentum", 0.9), flag("nesterov", true)}},
       {{0, 0}, {1, 4}}},
      {{"graph.adam_update",
        {param, grad, state, state, lr, step},
        {{DType::F32, shape}, {DType::F32, shape}, {DType::F32, shape}},
        {flag("decoupled", true), real("weight_decay", 0.01)}},
       {{0, 0}, {1, 2}, {2, 3}}},
      {{"graph.adagrad_update",
        {param, grad, state, lr, step},
        {{DType::F32, shape}, {DType::F32, shape}},
        {}},
       {{0, 0}, {1, 2}}},
      {{"graph.batch_norm_training",
        {randomTensor(DType::F32, {8, 4, 5, 5}), c4, c4, c4, c4},
        {{DType::F32, {8, 4, 5, 5}}, {DType::F32, {4}}, {DType::F32, {4}}},
        {real("epsilon", 1e-5), real("momentum", 0.9)}},
       {{1, 3}, {2, 4}}},
      {{"graph.relu", {param}, {{DType::F32, shape}}, {}}, {{0, 0}}},
      {{"graph.add", {param, grad}, {{DType::F32, shape}}, {}}, {{0, 1}}},
      {{"graph.mul", {param, randomTensor(DType::F32, {200})},
        {{DType::F32, shape}}, {}},
       {{0, 0}}},
      {{"graph.cast", {param}, {{DType::F32, shape}}, {type("to", DType::F32)}},
       {{0, 0}}},
  };
  for (const Aliased &c : cases) {
    INFO(descriptor(c.op, "reference"));
    RuntimeRun separate = runKernel(c.op, "reference");
    RuntimeRun inPlace = runInPlace(c.op, "reference", c.aliases);
    REQUIRE(separate.ok);
    REQUIRE(inPlace.ok);
    for (size_t i = 0; i < separate.bytes.size(); ++i)
      CHECK(separate.bytes[i] == inPlace.bytes[i]);
  }
}
