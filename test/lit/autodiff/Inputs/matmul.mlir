func.func @forward(%x: tensor<2x3xf32> {graph.name = "x", graph.role = "input"},
                   %w: tensor<3x5xf32> {graph.name = "w", graph.role = "parameter"}) -> tensor<2x5xf32> {
  %0 = graph.matmul %x, %w : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}
