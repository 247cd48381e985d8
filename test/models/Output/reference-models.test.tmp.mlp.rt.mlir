module attributes {graph.batch_size = 64 : i64, graph.opset = 17 : i64, graph.producer = "pytorch 1.13.0"} {
  func.func @forward(%arg0: tensor<64x1x28x28xf32> {graph.name = "image", graph.role = "input"}, %arg1: tensor<256x784xf32> {graph.name = "fc1.weight", graph.role = "parameter"}, %arg2: tensor<256xf32> {graph.name = "fc1.bias", graph.role = "parameter"}, %arg3: tensor<128x256xf32> {graph.name = "fc2.weight", graph.role = "parameter"}, %arg4: tensor<128xf32> {graph.name = "fc2.bias", graph.role = "parameter"}, %arg5: tensor<10x128xf32> {graph.name = "fc3.weight", graph.role = "parameter"}, %arg6: tensor<10xf32> {graph.name = "fc3.bias", graph.role = "parameter"}) -> (tensor<64x10xf32> {graph.name = "logits"}) {
    %0 = graph.reshape %arg0 {shape = array<i64: 0, 784>} : (tensor<64x1x28x28xf32>) -> tensor<64x784xf32>
    %1 = graph.gemm %0, %arg1, %arg2 {trans_b = true} : (tensor<64x784xf32>, tensor<256x784xf32>, tensor<256xf32>) -> tensor<64x256xf32>
    %2 = graph.relu %1 : tensor<64x256xf32>
    %3 = graph.gemm %2, %arg3, %arg4 {trans_b = true} : (tensor<64x256xf32>, tensor<128x256xf32>, tensor<128xf32>) -> tensor<64x128xf32>
    %4 = graph.relu %3 : tensor<64x128xf32>
    %5 = graph.gemm %4, %arg5, %arg6 {trans_b = true} : (tensor<64x128xf32>, tensor<10x128xf32>, tensor<10xf32>) -> tensor<64x10xf32>
    return %5 : tensor<64x10xf32>
  }
}

