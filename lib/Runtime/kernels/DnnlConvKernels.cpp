//===- DnnlConvKernels.cpp - convolutions on oneDNN -----------------------===//
//
// Backend "dnnl" of graph.conv, graph.conv_backward_input and
// graph.conv_backward_weight: oneDNN's direct convolution in 1 to 3
// spatial dims, any groups, dilations and asymmetric pads (the graph ops'
// exact semantics; the bias gradient is a separate reduce_sum). Each
// primitive is created with `any` layouts, so oneDNN picks the blocked
// layouts its fastest implementation for this CPU wants, and the kernel
// reorders the dense row-major operands into and out of them, except
// weights of a layout group (option `weight_layout`): those, and the
// weight gradient, are stored in the forward primitive's layout. In bf16
// over small output planes a conv and its gradients run as one oneDNN
// matmul over operands gathered from all images instead (BatchedConv,
// ConvGather.h; batchedConv, batchedWeightGradient).
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/kernels/ConvGather.h"
#include "lib/Runtime/kernels/Dnnl.h"

namespace trainc::rt {
namespace {

using dnnl::memory;

/// Input channels per group below which blocked layouts cost more than
/// they save (measured, see buildConvBackwardInput).
constexpr int64_t kFewChannels = 8;

/// oneDNN's view of a conv: weights [G, M/G, C/G, K...] when grouped (the
/// same bytes as [M, C/G, K...]), dilations counted from 0.
struct DnnlConv {
  Shape weightShape;
  memory::dims strides, dilations, padsBegin, padsEnd;
};

bool describeConv(const Launch &launch, const ConvShape &conv, DnnlConv &geometry,
                  std::string &error) {
  const Window &window = conv.window;
  if (window.rank > 3)
    return fail(launch, error,
                "the dnnl backend runs convolutions of 1 to 3 spatial dims");
  for (const Shape *shape : {&conv.inputShape, &conv.weightShape,
                             &conv.outputShape})
    if (product(*shape) == 0)
      return fail(launch, error, "the dnnl backend runs no empty tensors");
  geometry.weightShape = conv.weightShape;
  if (conv.group > 1) {
    geometry.weightShape[0] = conv.groupOutputs;
    geometry.weightShape.insert(geometry.weightShape.begin(), conv.group);
  }
  geometry.strides = window.strides;
  geometry.padsBegin = window.padsBegin;
  geometry.padsEnd = window.padsEnd;
  for (int64_t dilation : window.dilations)
    geometry.dilations.push_back(dilation - 1);
  return true;
}

/// The forward primitive descriptor (also the hint of both gradients),
/// with `attributes` (post-ops of a fused forward).
dnnl::convolution_forward::primitive_desc
forwardDesc(const ConvShape &conv, const DnnlConv &geometry,
            memory::data_type type, bool withBias, const dnnl::engine &engine,
            const dnnl::primitive_attr &attributes = dnnlAttributes()) {
  memory::desc bias =
      withBias ? plainDesc({conv.outChannels}, type) : memory::desc();
  dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
      anyLayout(conv.inputShape, type), anyLayout(geometry.weightShape, type),
      bias, anyLayout(conv.outputShape, type), geometry.strides,
      geometry.dilations, geometry.padsBegin, geometry.padsEnd);
  return {desc, attributes, engine};
}

/// The layout the weights operand (or the weight gradient) is stored in:
/// dense, or with option `weight_layout` the layout of that group, which
/// is the one the forward convolution prefers when it has no padding.
bool weightLayout(const Launch &launch, DnnlKernel &kernel,
                  const ConvShape &conv, const DnnlConv &geometry,
                  memory::desc &weights, std::string &error) {
  memory::data_type type = dnnlDataType(launch);
  weights = plainDesc(geometry.weightShape, type);
  if (!launch.has("weight_layout"))
    return true;
  memory::desc preferred =
      forwardDesc(conv, geometry, type, false, kernel.engine()).weights_desc();
  std::string why;
  if (!kernel.storedLayout(launch.i64("weight_layout"), weights, preferred,
                           weights, why))
    return fail(launch, error, why);
  return true;
}

/// A BatchedConv (ConvGather.h) and the shape it refers to, owned by the
/// host steps of a kernel.
template <typename Element> struct BatchedPlan {
  ConvShape conv;
  BatchedConv<Element> batched{conv};
  explicit BatchedPlan(const ConvShape &shape) : conv(shape) {}
};

memory::desc matrixDesc(int64_t rows, int64_t columns, memory::data_type type,
                        memory::format_tag tag = memory::format_tag::ab) {
  return memory::desc({rows, columns}, type, tag);
}

/// Whether a forward conv or an input gradient runs as one matmul over
/// all images (buildBatchedForward, buildBatchedInputGradient): bf16, one
/// group, output planes of at most 4 positions (runsBatched). ResNet-18 at
/// batch 32 on a Sapphire Rapids (AMX, 2 threads, `--amp bf16 --profile`),
/// direct against batched, ms: forward, 256 channels at 2x2, 0.42-0.47
/// against 0.24-0.25; 4x4 to 2x2 (stride 2) 0.23 against 0.15; input
/// gradients 0.49-0.51 against 0.35-0.49 and 0.41 against 0.23; the step
/// 23.5-25.0 against 22.5-23.1 ms (4 interleaved rounds). At 4x4 planes
/// (128 channels) oneDNN's direct ones are as fast as its matmul, and the
/// gathers make the batched ones slower (forward 0.17-0.19 against
/// 0.24-0.26, input gradient 0.22-0.26 against 0.44-0.65); f32 gains
/// nothing (the step 33.5 against 34.0 ms). Not measured without AMX (a
/// Zen 4's AVX512-BF16), where the bf16 weight gradient gained the same way
/// (batchedWeightGradient).
bool batchedConv(const ConvShape &conv, memory::data_type type) {
  return type == memory::data_type::bf16 && conv.group == 1 &&
         conv.window.outputPlane <= 4 && runsBatched(conv);
}

/// The forward conv as the matmul y^T [N * plane, M] = cols^T [N * plane,
/// C * live taps] . W^T (+ bias, then the launch's post-ops), cols^T
/// gathered from the input (and W's live taps gathered when some tap reads
/// only padding), y^T scattered into y. The gathers and the scatter only
/// copy elements; the matmul sums in f32 and rounds once.
template <typename Element>
void buildBatchedForward(const Launch &launch, DnnlKernel &kernel,
                         const ConvShape &shape, memory::data_type type,
                         DnnlKernel::Memory x, DnnlKernel::Memory w,
                         DnnlKernel::Memory y, bool withBias) {
  auto plan = std::make_shared<BatchedPlan<Element>>(shape);
  const BatchedConv<Element> &b = plan->batched;
  auto colsT = kernel.temporary(matrixDesc(b.columns, b.inner, type));
  auto rowsT = kernel.temporary(matrixDesc(b.columns, b.mg, type));
  bool compact = b.compactSize() > 0;
  auto live = compact ? kernel.temporary(matrixDesc(b.mg, b.inner, type)) : w;
  kernel.addHost([plan, x, w, colsT, live, compact](const DnnlKernel &k) {
    BatchedConv<Element> &batched = plan->batched;
    batched.cols = static_cast<Element *>(k.data(colsT));
    batched.gatherInputTransposed(static_cast<const Element *>(k.data(x)), 0);
    if (compact) {
      batched.compact = static_cast<Element *>(k.data(live));
      batched.liveWeights(static_cast<const Element *>(k.data(w)), 0);
    }
  });
  auto weightsT = kernel.view(
      live, matrixDesc(b.inner, b.mg, type, memory::format_tag::ba));
  memory::desc biasDesc = withBias ? matrixDesc(1, b.mg, type) : memory::desc();
  dnnl::matmul::desc desc(kernel.desc(colsT), kernel.desc(weightsT), biasDesc,
                          kernel.desc(rowsT));
  dnnl::matmul::primitive_desc primitive(desc, dnnlAttributes(launch),
                                         kernel.engine());
  std::vector<std::pair<int, DnnlKernel::Memory>> arguments = {
      {DNNL_ARG_SRC, colsT},
      {DNNL_ARG_WEIGHTS, weightsT},
      {DNNL_ARG_DST, rowsT}};
  if (withBias)
    arguments.push_back({DNNL_ARG_BIAS, kernel.input(2, biasDesc)});
  kernel.add(dnnl::matmul(primitive), primitive, arguments);
  kernel.addHost([plan, rowsT, y](const DnnlKernel &k) {
    BatchedConv<Element> &batched = plan->batched;
    batched.rows = static_cast<Element *>(k.data(rowsT));
    batched.scatterOutputTransposed(0, static_cast<Element *>(k.data(y)));
  });
}

/// The input gradient as the matmul sums^T [N * plane, C * live taps] =
/// dy^T [N * plane, M] . W (W's live taps), its f32 sums added into the
/// input positions each tap reads (in f32), then rounded once into the
/// gradient's type.
template <typename Element>
void buildBatchedInputGradient(DnnlKernel &kernel, const ConvShape &shape,
                               memory::data_type type,
                               DnnlKernel::Memory gradOutput,
                               DnnlKernel::Memory w,
                               DnnlKernel::Memory gradInput) {
  auto plan = std::make_shared<BatchedPlan<Element>>(shape);
  const BatchedConv<Element> &b = plan->batched;
  constexpr auto f32 = memory::data_type::f32;
  auto rowsT = kernel.temporary(matrixDesc(b.columns, b.mg, type));
  bool compact = b.compactSize() > 0;
  auto live = compact ? kernel.temporary(matrixDesc(b.mg, b.inner, type))
                      : kernel.view(w, matrixDesc(b.mg, b.inner, type));
  auto sumsT = kernel.temporary(matrixDesc(b.columns, b.inner, f32));
  kernel.addHost(
      [plan, gradOutput, w, rowsT, live, compact](const DnnlKernel &k) {
        BatchedConv<Element> &batched = plan->batched;
        batched.rows = static_cast<Element *>(k.data(rowsT));
        batched.gatherOutputTransposed(
            static_cast<const Element *>(k.data(gradOutput)), 0);
        if (compact) {
          batched.compact = static_cast<Element *>(k.data(live));
          batched.liveWeights(static_cast<const Element *>(k.data(w)), 0);
        }
      });
  dnnl::matmul::desc desc(kernel.desc(rowsT), kernel.desc(live),
                          kernel.desc(sumsT));
  dnnl::matmul::primitive_desc primitive(desc, dnnlAttributes(),
                                         kernel.engine());
  kernel.add(
      dnnl::matmul(primitive), primitive,
      {{DNNL_ARG_SRC, rowsT}, {DNNL_ARG_WEIGHTS, live}, {DNNL_ARG_DST, sumsT}});
  auto sums = type == f32 ? gradInput
                          : kernel.temporary(plainDesc(shape.inputShape, f32));
  kernel.addHost([plan, sumsT, sums](const DnnlKernel &k) {
    plan->batched.scatterInputTransposed(
        static_cast<const float *>(k.data(sumsT)), 0,
        static_cast<float *>(k.data(sums)));
  });
  kernel.reorder(sums, gradInput);
}

bool buildConv(const Launch &launch, DnnlKernel &kernel, std::string &error) {
  memory::data_type type = dnnlDataType(launch);
  ConvShape conv;
  DnnlConv geometry;
  if (!checkConv(launch, conv, error) ||
      !describeConv(launch, conv, geometry, error))
    return false;
  bool withBias = launch.inputs.size() == 3;
  memory::desc weights;
  if (!weightLayout(launch, kernel, conv, geometry, weights, error))
    return false;
  if (batchedConv(conv, type)) {
    auto x = kernel.input(0, plainDesc(conv.inputShape, type));
    auto w = kernel.toLayout(kernel.input(1, weights),
                             plainDesc(conv.weightShape, type));
    auto y = kernel.output(0, plainDesc(conv.outputShape, type));
    if (type == memory::data_type::bf16)
      buildBatchedForward<uint16_t>(launch, kernel, conv, type, x, w, y,
                                    withBias);
    else
      buildBatchedForward<uint32_t>(launch, kernel, conv, type, x, w, y,
                                    withBias);
    return true;
  }
  auto desc = forwardDesc(conv, geometry, type, withBias, kernel.engine(),
                          dnnlAttributes(launch));
  auto x = kernel.toLayout(kernel.input(0, plainDesc(conv.inputShape, type)),
                           desc.src_desc());
  auto w = kernel.toLayout(kernel.input(1, weights), desc.weights_desc());
  auto y = kernel.output(0, plainDesc(conv.outputShape, type));
  auto result = kernel.like(y, desc.dst_desc());
  std::vector<std::pair<int, DnnlKernel::Memory>> arguments = {
      {DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, result}};
  if (withBias)
    arguments.push_back(
        {DNNL_ARG_BIAS, kernel.input(2, plainDesc({conv.outChannels}, type))});
  kernel.add(dnnl::convolution_forward(desc), desc, arguments);
  kernel.reorder(result, y);
  return true;
}

bool buildConvBackwardInput(const Launch &launch, DnnlKernel &kernel,
                            std::string &error) {
  memory::data_type type = dnnlDataType(launch);
  ConvShape conv;
  DnnlConv geometry;
  if (!checkConvBackwardInput(launch, conv, error) ||
      !describeConv(launch, conv, geometry, error))
    return false;
  if (batchedConv(conv, type)) {
    memory::desc weights;
    if (!weightLayout(launch, kernel, conv, geometry, weights, error))
      return false;
    auto gradOutput = kernel.input(0, plainDesc(conv.outputShape, type));
    auto w = kernel.toLayout(kernel.input(1, weights),
                             plainDesc(conv.weightShape, type));
    auto gradInput = kernel.output(0, plainDesc(conv.inputShape, type));
    if (type == memory::data_type::bf16)
      buildBatchedInputGradient<uint16_t>(kernel, conv, type, gradOutput, w,
                                          gradInput);
    else
      buildBatchedInputGradient<uint32_t>(kernel, conv, type, gradOutput, w,
                                          gradInput);
    return true;
  }
  // Blocked layouts pad channels to the vector width: with few input
  // channels a dense input gradient is faster (64x1x28x28, 32 3x3 filters:
  // 0.44 ms against 3.6 ms on one thread).
  memory::desc gradInputDesc = conv.groupChannels < kFewChannels
                                   ? plainDesc(conv.inputShape, type)
                                   : anyLayout(conv.inputShape, type);
  dnnl::convolution_backward_data::desc backward(
      dnnl::algorithm::convolution_direct, gradInputDesc,
      anyLayout(geometry.weightShape, type), anyLayout(conv.outputShape, type),
      geometry.strides, geometry.dilations, geometry.padsBegin,
      geometry.padsEnd);
  dnnl::convolution_backward_data::primitive_desc desc(
      backward, dnnlAttributes(), kernel.engine(),
      forwardDesc(conv, geometry, type, false, kernel.engine()));
  memory::desc weights;
  if (!weightLayout(launch, kernel, conv, geometry, weights, error))
    return false;
  auto gradOutput = kernel.toLayout(
      kernel.input(0, plainDesc(conv.outputShape, type)), desc.diff_dst_desc());
  auto w = kernel.toLayout(kernel.input(1, weights), desc.weights_desc());
  auto gradInput = kernel.output(0, plainDesc(conv.inputShape, type));
  auto result = kernel.like(gradInput, desc.diff_src_desc());
  kernel.add(dnnl::convolution_backward_data(desc), desc,
             {{DNNL_ARG_DIFF_DST, gradOutput},
              {DNNL_ARG_WEIGHTS, w},
              {DNNL_ARG_DIFF_SRC, result}});
  kernel.reorder(result, gradInput);
  return true;
}

/// Whether a weight gradient runs as one matmul over all images
/// (buildBatchedWeightGradient): one group, gathered operands under 64 MiB
/// of elements (runsBatched), output planes of at most 16 positions in
/// bf16 and 4 in f32. oneDNN 2.6's direct weight gradients reach a third
/// to half of its matmul's rate there. ResNet-18 at batch 32 on a Zen 4
/// (AVX512-BF16, 2 threads, --profile), direct against batched: bf16, 256
/// channels at 2x2, 1.2 against 0.46 ms; 2x2 from 4x4 (stride 2), 0.82
/// against 0.24 ms; 4x4 from 8x8, 0.47 against 0.29 ms; 128 at 4x4, 0.57
/// against 0.53 ms. f32: 1.2 against 0.82, 0.73 against 0.42, and 128 at
/// 4x4 0.86 against 0.91 ms. Over larger planes the gather costs more
/// than the matmul saves: bf16, 64 channels at 8x8, 0.49 against 0.80 ms;
/// the 7x7 stem at 16x16, 0.54 against 1.8 ms.
bool batchedWeightGradient(const ConvShape &conv, memory::data_type type) {
  int64_t maxPlane = type == memory::data_type::bf16  ? 16
                     : type == memory::data_type::f32 ? 4
                                                      : 0;
  return conv.group == 1 && conv.window.outputPlane <= maxPlane &&
         runsBatched(conv);
}

/// The weight gradient as the matmul dW [M, C * live taps] = rows . cols^T
/// over operands gathered from all images (BatchedConv, ConvGather.h):
/// rows [M, N * plane] from the output gradient, cols^T [N * plane, C *
/// live taps] from the input; then the taps that read only padding are
/// zeroed and the result is reordered into the stored weight layout. The
/// gathers only copy elements (as integers of the element's width); the
/// matmul sums in f32 and rounds once.
template <typename Element>
void buildBatchedWeightGradient(DnnlKernel &kernel, const ConvShape &shape,
                                memory::data_type type,
                                DnnlKernel::Memory gradOutput,
                                DnnlKernel::Memory x,
                                DnnlKernel::Memory gradWeight) {
  auto plan = std::make_shared<BatchedPlan<Element>>(shape);
  const BatchedConv<Element> &b = plan->batched;
  auto matrix = [&](int64_t rows, int64_t columns) {
    return matrixDesc(rows, columns, type);
  };
  auto rows = kernel.temporary(matrix(b.mg, b.columns));
  auto colsT = kernel.temporary(matrix(b.columns, b.inner));
  memory::desc plainWeights = plainDesc(shape.weightShape, type);
  auto plain = kernel.like(gradWeight, plainWeights);
  bool compact = b.compactSize() > 0;
  auto product = compact ? kernel.temporary(matrix(b.mg, b.inner))
                         : kernel.view(plain, matrix(b.mg, b.inner));
  kernel.addHost([plan, rows, colsT, gradOutput, x](const DnnlKernel &k) {
    BatchedConv<Element> &batched = plan->batched;
    batched.rows = static_cast<Element *>(k.data(rows));
    batched.cols = static_cast<Element *>(k.data(colsT));
    batched.gatherOutput(static_cast<const Element *>(k.data(gradOutput)), 0);
    batched.gatherInputTransposed(static_cast<const Element *>(k.data(x)), 0);
  });
  dnnl::matmul::desc desc(kernel.desc(rows), kernel.desc(colsT),
                          kernel.desc(product));
  dnnl::matmul::primitive_desc primitive(desc, dnnlAttributes(),
                                         kernel.engine());
  kernel.add(dnnl::matmul(primitive), primitive,
             {{DNNL_ARG_SRC, rows},
              {DNNL_ARG_WEIGHTS, colsT},
              {DNNL_ARG_DST, product}});
  if (compact)
    kernel.addHost([plan, product, plain](const DnnlKernel &k) {
      BatchedConv<Element> &batched = plan->batched;
      batched.compact = static_cast<Element *>(k.data(product));
      batched.scatterWeight(0, static_cast<Element *>(k.data(plain)));
    });
  kernel.reorder(plain, gradWeight);
}

bool buildConvBackwardWeight(const Launch &launch, DnnlKernel &kernel,
                             std::string &error) {
  memory::data_type type = dnnlDataType(launch);
  ConvShape conv;
  DnnlConv geometry;
  if (!checkConvBackwardWeight(launch, conv, error) ||
      !describeConv(launch, conv, geometry, error))
    return false;
  if (batchedWeightGradient(conv, type)) {
    memory::desc weights;
    if (!weightLayout(launch, kernel, conv, geometry, weights, error))
      return false;
    auto gradOutput = kernel.input(0, plainDesc(conv.outputShape, type));
    auto x = kernel.input(1, plainDesc(conv.inputShape, type));
    auto gradWeight = kernel.output(0, weights);
    if (type == memory::data_type::bf16)
      buildBatchedWeightGradient<uint16_t>(kernel, conv, type, gradOutput, x,
                                           gradWeight);
    else
      buildBatchedWeightGradient<uint32_t>(kernel, conv, type, gradOutput, x,
                                           gradWeight);
    return true;
  }
  auto describe = [&](memory::data_type compute) {
    dnnl::convolution_backward_weights::desc backward(
        dnnl::algorithm::convolution_direct,
        anyLayout(conv.inputShape, compute),
        anyLayout(geometry.weightShape, compute),
        anyLayout(conv.outputShape, compute), geometry.strides,
        geometry.dilations, geometry.padsBegin, geometry.padsEnd);
    return dnnl::convolution_backward_weights::primitive_desc(
        backward, dnnlAttributes(), kernel.engine(),
        forwardDesc(conv, geometry, compute, false, kernel.engine()));
  };
  auto desc = describe(type);
  // oneDNN 2.6's AMX weight gradient over few input channels runs at half
  // the rate of its f32 AVX-512 one: ResNet-18's 7x7 stem (3 channels,
  // 16x16 outputs, batch 32) 1.6 against 0.79 ms on a Sapphire Rapids, 2
  // threads (AVX512-BF16 without AMX there: 1.2 ms). So on AMX the bf16
  // operands are widened by the reorders into the f32 primitive's layouts
  // (exactly), the gradient is summed in f32 and rounded once, as the bf16
  // primitive rounds its f32 sums. Without AMX (a Zen 4's AVX512-BF16)
  // the bf16 primitive is the faster one and stays.
  if (type == memory::data_type::bf16 && conv.groupChannels < kFewChannels &&
      std::string(desc.impl_info_str()).find("amx") != std::string::npos)
    desc = describe(memory::data_type::f32);
  auto gradOutput = kernel.toLayout(
      kernel.input(0, plainDesc(conv.outputShape, type)), desc.diff_dst_desc());
  auto x = kernel.toLayout(kernel.input(1, plainDesc(conv.inputShape, type)),
                           desc.src_desc());
  memory::desc weights;
  if (!weightLayout(launch, kernel, conv, geometry, weights, error))
    return false;
  auto gradWeight = kernel.output(0, weights);
  auto result = kernel.like(gradWeight, desc.diff_weights_desc());
  kernel.add(dnnl::convolution_backward_weights(desc), desc,
             {{DNNL_ARG_DIFF_DST, gradOutput},
              {DNNL_ARG_SRC, x},
              {DNNL_ARG_DIFF_WEIGHTS, result}});
  kernel.reorder(result, gradWeight);
  return true;
}

} // namespace

void registerDnnlConvKernels() {
  TRAINC_RT_REGISTER_DNNL_BF16("graph.conv", buildConv);
  TRAINC_RT_REGISTER_DNNL_BF16("graph.conv_backward_input",
                               buildConvBackwardInput);
  TRAINC_RT_REGISTER_DNNL_BF16("graph.conv_backward_weight",
                               buildConvBackwardWeight);
}

} // namespace trainc::rt
