//===- OnnxNodeTests.cpp - ONNX backend node tests in the interpreter -----===//
//
// ONNX's own operator tests (Debian's libonnx-testdata) imported with
// trainc's importer and run by the reference interpreter, compared with
// ONNX's expected outputs (1e-5 absolute + relative). Every node test whose
// model uses only ops the importer supports is listed either in kCases or
// in kExcluded with the reason; OnnxTestData.cpp describes how a model is
// adapted before import.
//
//===----------------------------------------------------------------------===//
#include "OnnxTestData.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <iostream>
#include <map>

using namespace trainc::test;

namespace {

const std::string kNodeTests = TRAINC_ONNX_NODE_TESTS_DIR;

struct Case {
  const char *name;
  const char *family;
};

// clang-format off
const Case kCases[] = {
    {"test_nllloss_NC_expanded", "reduction"},
    {"test_nllloss_NCd1_expanded", "reduction"},
    {"test_nllloss_NCd1_ii_expanded", "reduction"},
    {"test_nllloss_NCd1_mean_weight_negative_ii_expanded", "reduction"},
    {"test_nllloss_NCd1_weight_expanded", "reduction"},
    {"test_nllloss_NCd1_weight_ii_expanded", "reduction"},
    {"test_nllloss_NCd1d2_expanded", "reduction"},
    {"test_nllloss_NCd1d2_no_weight_reduction_mean_ii_expanded", "reduction"},
    {"test_nllloss_NCd1d2_reduction_mean_expanded", "reduction"},
    {"test_nllloss_NCd1d2_reduction_sum_expanded", "reduction"},
    {"test_nllloss_NCd1d2_with_weight_expanded", "reduction"},
    {"test_nllloss_NCd1d2_with_weight_reduction_mean_expanded", "reduction"},
    {"test_nllloss_NCd1d2_with_weight_reduction_sum_expanded", "reduction"},
    {"test_nllloss_NCd1d2_with_weight_reduction_sum_ii_expanded", "reduction"},
    {"test_nllloss_NCd1d2d3_none_no_weight_negative_ii_expanded", "reduction"},
    {"test_nllloss_NCd1d2d3_sum_weight_high_ii_expanded", "reduction"},
    {"test_nllloss_NCd1d2d3d4d5_mean_weight_expanded", "reduction"},
    {"test_nllloss_NCd1d2d3d4d5_none_no_weight_expanded", "reduction"},
    {"test_resize_downsample_scales_cubic", "data movement"},
    {"test_resize_downsample_scales_cubic_A_n0p5_exclude_outside", "data movement"},
    {"test_resize_downsample_scales_cubic_align_corners", "data movement"},
    {"test_resize_downsample_scales_linear", "data movement"},
    {"test_resize_downsample_scales_linear_align_corners", "data movement"},
    {"test_resize_downsample_scales_nearest", "data movement"},
    {"test_resize_downsample_sizes_cubic", "data movement"},
    {"test_resize_downsample_sizes_linear_pytorch_half_pixel", "data movement"},
    {"test_resize_downsample_sizes_nearest", "data movement"},
    {"test_resize_downsample_sizes_nearest_tf_half_pixel_for_nn", "data movement"},
    {"test_resize_upsample_scales_cubic", "data movement"},
    {"test_resize_upsample_scales_cubic_A_n0p5_exclude_outside", "data movement"},
    {"test_resize_upsample_scales_cubic_align_corners", "data movement"},
    {"test_resize_upsample_scales_cubic_asymmetric", "data movement"},
    {"test_resize_upsample_scales_linear", "data movement"},
    {"test_resize_upsample_scales_linear_align_corners", "data movement"},
    {"test_resize_upsample_scales_nearest", "data movement"},
    {"test_resize_upsample_sizes_cubic", "data movement"},
    {"test_resize_upsample_sizes_nearest", "data movement"},
    {"test_resize_upsample_sizes_nearest_ceil_half_pixel", "data movement"},
    {"test_resize_upsample_sizes_nearest_floor_align_corners", "data movement"},
    {"test_resize_upsample_sizes_nearest_round_prefer_ceil_asymmetric", "data movement"},
    {"test_convtranspose", "neural"},
    {"test_convtranspose_1d", "neural"},
    {"test_convtranspose_3d", "neural"},
    {"test_convtranspose_autopad_same", "neural"},
    {"test_convtranspose_dilations", "neural"},
    {"test_convtranspose_kernel_shape", "neural"},
    {"test_convtranspose_output_shape", "neural"},
    {"test_convtranspose_pad", "neural"},
    {"test_convtranspose_pads", "neural"},
    {"test_convtranspose_with_kernel", "neural"},
    {"test_max_example", "elementwise"},
    {"test_min_example", "elementwise"},
    {"test_max_float16", "elementwise"},
    {"test_min_float16", "elementwise"},
    {"test_max_float32", "elementwise"},
    {"test_min_float32", "elementwise"},
    {"test_max_float64", "elementwise"},
    {"test_min_float64", "elementwise"},
    {"test_max_int16", "elementwise"},
    {"test_min_int16", "elementwise"},
    {"test_max_int32", "elementwise"},
    {"test_min_int32", "elementwise"},
    {"test_max_int64", "elementwise"},
    {"test_min_int64", "elementwise"},
    {"test_max_int8", "elementwise"},
    {"test_min_int8", "elementwise"},
    {"test_max_one_input", "elementwise"},
    {"test_min_one_input", "elementwise"},
    {"test_max_two_inputs", "elementwise"},
    {"test_min_two_inputs", "elementwise"},
                                    {"test_cumsum_1d", "reduction"},
    {"test_cumsum_1d_exclusive", "reduction"},
    {"test_cumsum_1d_reverse", "reduction"},
    {"test_cumsum_1d_reverse_exclusive", "reduction"},
    {"test_cumsum_2d_axis_0", "reduction"},
    {"test_cumsum_2d_axis_1", "reduction"},
    {"test_cumsum_2d_negative_axis", "reduction"},
    {"test_abs", "elementwise"},
    {"test_add", "elementwise"},
    {"test_add_bcast", "elementwise"},
    {"test_averagepool_1d_default", "neural"},
    {"test_averagepool_2d_ceil", "neural"},
    {"test_averagepool_2d_default", "neural"},
    {"test_averagepool_2d_pads", "neural"},
    {"test_averagepool_2d_pads_count_include_pad", "neural"},
    {"test_averagepool_2d_precomputed_pads", "neural"},
    {"test_averagepool_2d_precomputed_pads_count_include_pad", "neural"},
    {"test_averagepool_2d_precomputed_same_upper", "neural"},
    {"test_averagepool_2d_precomputed_strides", "neural"},
    {"test_averagepool_2d_same_lower", "neural"},
    {"test_averagepool_2d_same_upper", "neural"},
    {"test_averagepool_2d_strides", "neural"},
    {"test_averagepool_3d_default", "neural"},
    {"test_basic_conv_with_padding", "neural"},
    {"test_basic_conv_without_padding", "neural"},
    {"test_batchnorm_epsilon", "neural"},
    {"test_batchnorm_epsilon_training_mode", "neural"},
    {"test_batchnorm_example", "neural"},
    {"test_batchnorm_example_training_mode", "neural"},
    {"test_cast_BFLOAT16_to_FLOAT", "elementwise"},
    {"test_cast_DOUBLE_to_FLOAT", "elementwise"},
    {"test_cast_DOUBLE_to_FLOAT16", "elementwise"},
    {"test_cast_FLOAT16_to_DOUBLE", "elementwise"},
    {"test_cast_FLOAT16_to_FLOAT", "elementwise"},
    {"test_cast_FLOAT_to_DOUBLE", "elementwise"},
    {"test_cast_FLOAT_to_FLOAT16", "elementwise"},
    {"test_castlike_DOUBLE_to_FLOAT16_expanded", "elementwise"},
    {"test_castlike_DOUBLE_to_FLOAT_expanded", "elementwise"},
    {"test_castlike_FLOAT16_to_DOUBLE_expanded", "elementwise"},
    {"test_castlike_FLOAT16_to_FLOAT_expanded", "elementwise"},
    {"test_castlike_FLOAT_to_DOUBLE_expanded", "elementwise"},
    {"test_castlike_FLOAT_to_FLOAT16_expanded", "elementwise"},
    {"test_castlike_DOUBLE_to_FLOAT", "elementwise"},
    {"test_castlike_DOUBLE_to_FLOAT16", "elementwise"},
    {"test_castlike_FLOAT16_to_DOUBLE", "elementwise"},
    {"test_castlike_FLOAT16_to_FLOAT", "elementwise"},
    {"test_castlike_FLOAT_to_DOUBLE", "elementwise"},
    {"test_castlike_FLOAT_to_FLOAT16", "elementwise"},
    {"test_clip", "elementwise"},
    {"test_clip_default_inbounds", "elementwise"},
    {"test_clip_default_max", "elementwise"},
    {"test_clip_default_min", "elementwise"},
    {"test_clip_example", "elementwise"},
    {"test_clip_inbounds", "elementwise"},
    {"test_clip_outbounds", "elementwise"},
    {"test_clip_splitbounds", "elementwise"},
    {"test_concat_1d_axis_0", "data movement"},
    {"test_concat_1d_axis_negative_1", "data movement"},
    {"test_concat_2d_axis_0", "data movement"},
    {"test_concat_2d_axis_1", "data movement"},
    {"test_concat_2d_axis_negative_1", "data movement"},
    {"test_concat_2d_axis_negative_2", "data movement"},
    {"test_concat_3d_axis_0", "data movement"},
    {"test_concat_3d_axis_1", "data movement"},
    {"test_concat_3d_axis_2", "data movement"},
    {"test_concat_3d_axis_negative_1", "data movement"},
    {"test_concat_3d_axis_negative_2", "data movement"},
    {"test_concat_3d_axis_negative_3", "data movement"},
    {"test_constant", "elementwise"},
    {"test_constant_pad", "data movement"},
    {"test_constantofshape_float_ones", "data movement"},
    {"test_constantofshape_int_shape_zero", "data movement"},
    {"test_constantofshape_int_zeros", "data movement"},
    {"test_conv_with_autopad_same", "neural"},
    {"test_conv_with_strides_and_asymmetric_padding", "neural"},
    {"test_conv_with_strides_no_padding", "neural"},
    {"test_conv_with_strides_padding", "neural"},
    {"test_div", "elementwise"},
    {"test_div_bcast", "elementwise"},
    {"test_div_example", "elementwise"},
    {"test_dropout_default", "elementwise"},
    {"test_dropout_default_old", "elementwise"},
    {"test_dropout_default_ratio", "elementwise"},
    {"test_dropout_random_old", "elementwise"},
    {"test_edge_pad", "data movement"},
    {"test_equal", "elementwise"},
    {"test_equal_bcast", "elementwise"},
    {"test_einsum_batch_matmul", "neural"},
    {"test_einsum_inner_prod", "neural"},
    {"test_einsum_sum", "neural"},
    {"test_einsum_transpose", "neural"},
    {"test_erf", "elementwise"},
    {"test_sin", "elementwise"},
    {"test_sin_example", "elementwise"},
    {"test_cos", "elementwise"},
    {"test_cos_example", "elementwise"},
    {"test_softplus", "elementwise"},
    {"test_softplus_example", "elementwise"},
    {"test_exp", "elementwise"},
    {"test_exp_example", "elementwise"},
    {"test_expand_dim_changed", "data movement"},
    {"test_expand_dim_unchanged", "data movement"},
    {"test_flatten_axis0", "data movement"},
    {"test_flatten_axis1", "data movement"},
    {"test_flatten_axis2", "data movement"},
    {"test_flatten_axis3", "data movement"},
    {"test_flatten_default_axis", "data movement"},
    {"test_flatten_negative_axis1", "data movement"},
    {"test_flatten_negative_axis2", "data movement"},
    {"test_flatten_negative_axis3", "data movement"},
    {"test_flatten_negative_axis4", "data movement"},
    {"test_gather_elements_0", "data movement"},
    {"test_gather_elements_1", "data movement"},
    {"test_gather_elements_negative_indices", "data movement"},
    {"test_gather_0", "data movement"},
    {"test_gather_1", "data movement"},
    {"test_gather_2d_indices", "data movement"},
    {"test_gather_negative_indices", "data movement"},
    {"test_gathernd_example_float32", "data movement"},
    {"test_gathernd_example_int32", "data movement"},
    {"test_gemm_all_attributes", "neural"},
    {"test_gemm_alpha", "neural"},
    {"test_gemm_beta", "neural"},
    {"test_gemm_default_matrix_bias", "neural"},
    {"test_gemm_default_no_bias", "neural"},
    {"test_gemm_default_scalar_bias", "neural"},
    {"test_gemm_default_single_elem_vector_bias", "neural"},
    {"test_gemm_default_vector_bias", "neural"},
    {"test_gemm_default_zero_bias", "neural"},
    {"test_gemm_transposeA", "neural"},
    {"test_gemm_transposeB", "neural"},
    {"test_globalaveragepool", "neural"},
    {"test_globalaveragepool_precomputed", "neural"},
    {"test_greater", "elementwise"},
    {"test_greater_bcast", "elementwise"},
    {"test_greater_equal", "elementwise"},
    {"test_greater_equal_bcast", "elementwise"},
    {"test_hardsigmoid", "elementwise"},
    {"test_hardsigmoid_default", "elementwise"},
    {"test_hardsigmoid_example", "elementwise"},
    {"test_hardswish", "elementwise"},
    {"test_hardswish_expanded", "elementwise"},
    {"test_identity", "elementwise"},
    {"test_instancenorm_epsilon", "neural"},
    {"test_instancenorm_example", "neural"},
    {"test_layer_normalization_2d_axis0", "neural"},
    {"test_layer_normalization_2d_axis1", "neural"},
    {"test_layer_normalization_2d_axis_negative_1", "neural"},
    {"test_layer_normalization_2d_axis_negative_2", "neural"},
    {"test_layer_normalization_3d_axis0_epsilon", "neural"},
    {"test_layer_normalization_3d_axis1_epsilon", "neural"},
    {"test_layer_normalization_3d_axis2_epsilon", "neural"},
    {"test_layer_normalization_3d_axis_negative_1_epsilon", "neural"},
    {"test_layer_normalization_3d_axis_negative_2_epsilon", "neural"},
    {"test_layer_normalization_3d_axis_negative_3_epsilon", "neural"},
    {"test_layer_normalization_4d_axis0", "neural"},
    {"test_layer_normalization_4d_axis1", "neural"},
    {"test_layer_normalization_4d_axis2", "neural"},
    {"test_layer_normalization_4d_axis3", "neural"},
    {"test_layer_normalization_4d_axis_negative_1", "neural"},
    {"test_layer_normalization_4d_axis_negative_2", "neural"},
    {"test_layer_normalization_4d_axis_negative_3", "neural"},
    {"test_layer_normalization_4d_axis_negative_4", "neural"},
    {"test_layer_normalization_default_axis", "neural"},
    {"test_leakyrelu", "elementwise"},
    {"test_leakyrelu_default", "elementwise"},
    {"test_leakyrelu_example", "elementwise"},
    {"test_less", "elementwise"},
    {"test_less_bcast", "elementwise"},
    {"test_less_equal", "elementwise"},
    {"test_less_equal_bcast", "elementwise"},
    {"test_log", "elementwise"},
    {"test_log_example", "elementwise"},
    {"test_logsoftmax_axis_0", "reduction"},
    {"test_logsoftmax_axis_0_expanded", "reduction"},
    {"test_logsoftmax_axis_1", "reduction"},
    {"test_logsoftmax_axis_1_expanded", "reduction"},
    {"test_logsoftmax_axis_2", "reduction"},
    {"test_logsoftmax_axis_2_expanded", "reduction"},
    {"test_logsoftmax_default_axis", "reduction"},
    {"test_logsoftmax_default_axis_expanded", "reduction"},
    {"test_logsoftmax_example_1", "reduction"},
    {"test_logsoftmax_example_1_expanded", "reduction"},
    {"test_logsoftmax_large_number", "reduction"},
    {"test_logsoftmax_large_number_expanded", "reduction"},
    {"test_logsoftmax_negative_axis", "reduction"},
    {"test_logsoftmax_negative_axis_expanded", "reduction"},
    {"test_matmul_2d", "neural"},
    {"test_matmul_3d", "neural"},
    {"test_matmul_4d", "neural"},
    {"test_maxpool_1d_default", "neural"},
    {"test_maxpool_2d_ceil", "neural"},
    {"test_maxpool_2d_default", "neural"},
    {"test_maxpool_2d_dilations", "neural"},
    {"test_maxpool_2d_pads", "neural"},
    {"test_maxpool_2d_precomputed_pads", "neural"},
    {"test_maxpool_2d_precomputed_same_upper", "neural"},
    {"test_maxpool_2d_precomputed_strides", "neural"},
    {"test_maxpool_2d_same_lower", "neural"},
    {"test_maxpool_2d_same_upper", "neural"},
    {"test_maxpool_2d_strides", "neural"},
    {"test_maxpool_3d_default", "neural"},
    {"test_mean_example", "elementwise"},
    {"test_mean_one_input", "elementwise"},
    {"test_mean_two_inputs", "elementwise"},
    {"test_mul", "elementwise"},
    {"test_mul_bcast", "elementwise"},
    {"test_mul_example", "elementwise"},
    {"test_mvn_expanded", "reduction"},
    {"test_neg", "elementwise"},
    {"test_neg_example", "elementwise"},
    {"test_and2d", "elementwise"},
    {"test_and3d", "elementwise"},
    {"test_and4d", "elementwise"},
    {"test_and_bcast3v1d", "elementwise"},
    {"test_and_bcast3v2d", "elementwise"},
    {"test_and_bcast4v2d", "elementwise"},
    {"test_and_bcast4v3d", "elementwise"},
    {"test_and_bcast4v4d", "elementwise"},
    {"test_isnan", "elementwise"},
    {"test_not_2d", "elementwise"},
    {"test_not_3d", "elementwise"},
    {"test_not_4d", "elementwise"},
    {"test_pow", "elementwise"},
    {"test_pow_bcast_array", "elementwise"},
    {"test_pow_bcast_scalar", "elementwise"},
    {"test_pow_example", "elementwise"},
    {"test_pow_types_float", "elementwise"},
    {"test_pow_types_float32_int32", "elementwise"},
    {"test_pow_types_float32_int64", "elementwise"},
    {"test_pow_types_int", "elementwise"},
    {"test_pow_types_int32_float32", "elementwise"},
    {"test_pow_types_int32_int32", "elementwise"},
    {"test_pow_types_int64_float32", "elementwise"},
    {"test_pow_types_int64_int64", "elementwise"},
    {"test_mod_broadcast", "elementwise"},
    {"test_mod_int64_fmod", "elementwise"},
    {"test_mod_mixed_sign_int16", "elementwise"},
    {"test_mod_mixed_sign_int32", "elementwise"},
    {"test_mod_mixed_sign_int64", "elementwise"},
    {"test_mod_mixed_sign_int8", "elementwise"},
    {"test_range_float_type_positive_delta", "data movement"},
    {"test_range_int32_type_negative_delta", "data movement"},
    {"test_reciprocal", "elementwise"},
    {"test_reciprocal_example", "elementwise"},
    {"test_argmax_default_axis_example", "reduction"},
    {"test_argmax_default_axis_example_select_last_index", "reduction"},
    {"test_argmax_default_axis_random", "reduction"},
    {"test_argmax_default_axis_random_select_last_index", "reduction"},
    {"test_argmax_keepdims_example", "reduction"},
    {"test_argmax_keepdims_example_select_last_index", "reduction"},
    {"test_argmax_keepdims_random", "reduction"},
    {"test_argmax_keepdims_random_select_last_index", "reduction"},
    {"test_argmax_negative_axis_keepdims_example", "reduction"},
    {"test_argmax_negative_axis_keepdims_example_select_last_index", "reduction"},
    {"test_argmax_negative_axis_keepdims_random", "reduction"},
    {"test_argmax_negative_axis_keepdims_random_select_last_index", "reduction"},
    {"test_argmax_no_keepdims_example", "reduction"},
    {"test_argmax_no_keepdims_example_select_last_index", "reduction"},
    {"test_argmax_no_keepdims_random", "reduction"},
    {"test_argmax_no_keepdims_random_select_last_index", "reduction"},
    {"test_reduce_l2_default_axes_keepdims_example", "reduction"},
    {"test_reduce_l2_default_axes_keepdims_random", "reduction"},
    {"test_reduce_l2_do_not_keepdims_example", "reduction"},
    {"test_reduce_l2_do_not_keepdims_random", "reduction"},
    {"test_reduce_l2_keep_dims_example", "reduction"},
    {"test_reduce_l2_keep_dims_random", "reduction"},
    {"test_reduce_l2_negative_axes_keep_dims_example", "reduction"},
    {"test_reduce_l2_negative_axes_keep_dims_random", "reduction"},
    {"test_reduce_min_default_axes_keepdims_example", "reduction"},
    {"test_reduce_min_default_axes_keepdims_random", "reduction"},
    {"test_reduce_min_do_not_keepdims_example", "reduction"},
    {"test_reduce_min_do_not_keepdims_random", "reduction"},
    {"test_reduce_min_keepdims_example", "reduction"},
    {"test_reduce_min_keepdims_random", "reduction"},
    {"test_reduce_min_negative_axes_keepdims_example", "reduction"},
    {"test_reduce_min_negative_axes_keepdims_random", "reduction"},
    {"test_reduce_max_default_axes_keepdim_example", "reduction"},
    {"test_reduce_max_default_axes_keepdims_random", "reduction"},
    {"test_reduce_max_do_not_keepdims_example", "reduction"},
    {"test_reduce_max_do_not_keepdims_random", "reduction"},
    {"test_reduce_max_keepdims_example", "reduction"},
    {"test_reduce_max_keepdims_random", "reduction"},
    {"test_reduce_max_negative_axes_keepdims_example", "reduction"},
    {"test_reduce_max_negative_axes_keepdims_random", "reduction"},
    {"test_reduce_mean_default_axes_keepdims_example", "reduction"},
    {"test_reduce_mean_default_axes_keepdims_random", "reduction"},
    {"test_reduce_mean_do_not_keepdims_example", "reduction"},
    {"test_reduce_mean_do_not_keepdims_random", "reduction"},
    {"test_reduce_mean_keepdims_example", "reduction"},
    {"test_reduce_mean_keepdims_random", "reduction"},
    {"test_reduce_mean_negative_axes_keepdims_example", "reduction"},
    {"test_reduce_mean_negative_axes_keepdims_random", "reduction"},
    {"test_reduce_sum_default_axes_keepdims_example", "reduction"},
    {"test_reduce_sum_default_axes_keepdims_random", "reduction"},
    {"test_reduce_sum_do_not_keepdims_example", "reduction"},
    {"test_reduce_sum_do_not_keepdims_random", "reduction"},
    {"test_reduce_sum_empty_axes_input_noop_example", "reduction"},
    {"test_reduce_sum_empty_axes_input_noop_random", "reduction"},
    {"test_reduce_sum_keepdims_example", "reduction"},
    {"test_reduce_sum_keepdims_random", "reduction"},
    {"test_reduce_sum_negative_axes_keepdims_example", "reduction"},
    {"test_reduce_sum_negative_axes_keepdims_random", "reduction"},
    {"test_reflect_pad", "data movement"},
    {"test_relu", "elementwise"},
    {"test_reshape_extended_dims", "data movement"},
    {"test_reshape_negative_dim", "data movement"},
    {"test_reshape_negative_extended_dims", "data movement"},
    {"test_reshape_one_dim", "data movement"},
    {"test_reshape_reduced_dims", "data movement"},
    {"test_reshape_reordered_all_dims", "data movement"},
    {"test_reshape_reordered_last_dims", "data movement"},
    {"test_reshape_zero_and_negative_dim", "data movement"},
    {"test_reshape_zero_dim", "data movement"},
    {"test_shape", "data movement"},
    {"test_shape_clip_end", "data movement"},
    {"test_shape_clip_start", "data movement"},
    {"test_shape_end_1", "data movement"},
    {"test_shape_end_negative_1", "data movement"},
    {"test_shape_example", "data movement"},
    {"test_shape_start_1", "data movement"},
    {"test_shape_start_1_end_2", "data movement"},
    {"test_shape_start_1_end_negative_1", "data movement"},
    {"test_shape_start_negative_1", "data movement"},
    {"test_sigmoid", "elementwise"},
    {"test_sigmoid_example", "elementwise"},
    {"test_slice", "data movement"},
    {"test_slice_default_axes", "data movement"},
    {"test_slice_default_steps", "data movement"},
    {"test_slice_end_out_of_bounds", "data movement"},
    {"test_slice_neg", "data movement"},
    {"test_slice_neg_steps", "data movement"},
    {"test_slice_negative_axes", "data movement"},
    {"test_slice_start_out_of_bounds", "data movement"},
    {"test_softmax_axis_0", "reduction"},
    {"test_softmax_axis_0_expanded", "reduction"},
    {"test_softmax_axis_1", "reduction"},
    {"test_softmax_axis_1_expanded", "reduction"},
    {"test_softmax_axis_2", "reduction"},
    {"test_softmax_axis_2_expanded", "reduction"},
    {"test_softmax_default_axis", "reduction"},
    {"test_softmax_default_axis_expanded", "reduction"},
    {"test_softmax_example", "reduction"},
    {"test_softmax_example_expanded", "reduction"},
    {"test_softmax_large_number", "reduction"},
    {"test_softmax_large_number_expanded", "reduction"},
    {"test_softmax_negative_axis", "reduction"},
    {"test_softmax_negative_axis_expanded", "reduction"},
    {"test_split_equal_parts_1d", "data movement"},
    {"test_split_equal_parts_2d", "data movement"},
    {"test_split_equal_parts_default_axis", "data movement"},
    {"test_split_variable_parts_1d", "data movement"},
    {"test_split_variable_parts_2d", "data movement"},
    {"test_split_variable_parts_default_axis", "data movement"},
    {"test_sqrt", "elementwise"},
    {"test_sqrt_example", "elementwise"},
    {"test_squeeze", "data movement"},
    {"test_squeeze_negative_axes", "data movement"},
    {"test_sub", "elementwise"},
    {"test_sub_bcast", "elementwise"},
    {"test_sub_example", "elementwise"},
    {"test_sum_example", "elementwise"},
    {"test_sum_one_input", "elementwise"},
    {"test_sum_two_inputs", "elementwise"},
    {"test_tanh", "elementwise"},
    {"test_tanh_example", "elementwise"},
    {"test_tile", "data movement"},
    {"test_tile_precomputed", "data movement"},
    {"test_training_dropout_zero_ratio", "elementwise"},
    {"test_transpose_all_permutations_0", "data movement"},
    {"test_transpose_all_permutations_1", "data movement"},
    {"test_transpose_all_permutations_2", "data movement"},
    {"test_transpose_all_permutations_3", "data movement"},
    {"test_transpose_all_permutations_4", "data movement"},
    {"test_transpose_all_permutations_5", "data movement"},
    {"test_transpose_default", "data movement"},
    {"test_tril", "data movement"},
    {"test_tril_neg", "data movement"},
    {"test_tril_one_row_neg", "data movement"},
    {"test_tril_out_neg", "data movement"},
    {"test_tril_out_pos", "data movement"},
    {"test_tril_pos", "data movement"},
    {"test_tril_square", "data movement"},
    {"test_tril_square_neg", "data movement"},
    {"test_triu", "data movement"},
    {"test_triu_neg", "data movement"},
    {"test_triu_one_row", "data movement"},
    {"test_triu_out_neg_out", "data movement"},
    {"test_triu_out_pos", "data movement"},
    {"test_triu_pos", "data movement"},
    {"test_triu_square", "data movement"},
    {"test_triu_square_neg", "data movement"},
    {"test_unsqueeze_axis_0", "data movement"},
    {"test_unsqueeze_axis_1", "data movement"},
    {"test_unsqueeze_axis_2", "data movement"},
    {"test_unsqueeze_axis_3", "data movement"},
    {"test_unsqueeze_negative_axes", "data movement"},
    {"test_unsqueeze_three_axes", "data movement"},
    {"test_unsqueeze_two_axes", "data movement"},
    {"test_unsqueeze_unsorted_axes", "data movement"},
    {"test_where_example", "elementwise"},
    {"test_where_long_example", "elementwise"},
};

// Why node tests of supported op families are not run.
constexpr const char *kUnsigned =
    "unsigned integer tensors (trainc has no unsigned dtypes)";
constexpr const char *kStrings = "string tensors";
constexpr const char *kDropoutMask =
    "uses Dropout's mask output (not supported by the importer)";
constexpr const char *kRandomMask =
    "a random mask drawn by numpy; trainc's masks come from its own Philox "
    "stream (graph.random_mask)";
constexpr const char *kMaxPoolIndices =
    "uses MaxPool's indices output (not supported by the importer)";
constexpr const char *kIntegerClip =
    "Clip of an integer tensor (graph.clip takes floats)";
constexpr const char *kTruncatedBfloat16 =
    "ONNX 1.12 expects bfloat16 values truncated from the float; trainc "
    "(like PyTorch and MLIR's arith.truncf) rounds to nearest even";

constexpr const char *kRunTimeMod =
    "Mod of floats (trainc evaluates Mod at import time, on known integers "
    "only; float test inputs become parameters)";
constexpr const char *kRunTimeScatter =
    "ScatterND of float data (evaluated at import time, on known tensors "
    "only; float test inputs become parameters)";

constexpr const char *kZeroSize =
    "a tensor with a dimension of size 0 (trainc's dimensions are positive)";

/// Node tests of supported op families that are not run, and why.
const std::map<std::string, std::string> kExcluded = {
    {"test_gathernd_example_int32_batch_dim1",
     "GatherND with batch_dims 1: refused with an error (only 0)"},
    {"test_einsum_batch_diagonal",
     "Einsum with an index repeated in one operand (a diagonal): not "
     "supported yet"},
    {"test_mod_mixed_sign_float16", kRunTimeMod},
    {"test_mod_mixed_sign_float32", kRunTimeMod},
    {"test_mod_mixed_sign_float64", kRunTimeMod},
    {"test_mod_uint8", kUnsigned},
    {"test_mod_uint16", kUnsigned},
    {"test_mod_uint32", kUnsigned},
    {"test_mod_uint64", kUnsigned},
    {"test_scatternd", kRunTimeScatter},
    {"test_scatternd_add", kRunTimeScatter},
    {"test_scatternd_multiply", kRunTimeScatter},
    {"test_split_zero_size_splits", kZeroSize},
    {"test_tril_zero", kZeroSize},
    {"test_triu_zero", kZeroSize},
    {"test_max_uint8", kUnsigned},
    {"test_max_uint16", kUnsigned},
    {"test_max_uint32", kUnsigned},
    {"test_max_uint64", kUnsigned},
    {"test_min_uint8", kUnsigned},
    {"test_min_uint16", kUnsigned},
    {"test_min_uint32", kUnsigned},
    {"test_min_uint64", kUnsigned},
    {"test_resize_tf_crop_and_resize",
     "Resize with coordinate_transformation_mode tf_crop_and_resize: not "
     "supported yet"},
    {"test_add_uint8", kUnsigned},
    {"test_sub_uint8", kUnsigned},
    {"test_mul_uint8", kUnsigned},
    {"test_div_uint8", kUnsigned},
    {"test_maxpool_2d_uint8", kUnsigned},
    {"test_pow_types_float32_uint32", kUnsigned},
    {"test_pow_types_float32_uint64", kUnsigned},
    {"test_cast_FLOAT_to_STRING", kStrings},
    {"test_cast_STRING_to_FLOAT", kStrings},
    {"test_castlike_FLOAT_to_STRING_expanded", kStrings},
    {"test_castlike_STRING_to_FLOAT_expanded", kStrings},
    {"test_castlike_FLOAT_to_STRING", kStrings},
    {"test_castlike_STRING_to_FLOAT", kStrings},
    {"test_castlike_FLOAT_to_BFLOAT16", kTruncatedBfloat16},
    {"test_castlike_BFLOAT16_to_FLOAT",
     "the data of input 'like' is [1] while the model declares [3, 4]"},
    {"test_cast_FLOAT_to_BFLOAT16", kTruncatedBfloat16},
    {"test_castlike_FLOAT_to_BFLOAT16_expanded", kTruncatedBfloat16},
    {"test_castlike_BFLOAT16_to_FLOAT_expanded",
     "the data of input 'like' is [1] while the model declares [3, 4]"},
    {"test_clip_default_int8_inbounds", kIntegerClip},
    {"test_clip_default_int8_max", kIntegerClip},
    {"test_clip_default_int8_min", kIntegerClip},
    {"test_dropout_default_mask", kDropoutMask},
    {"test_dropout_default_mask_ratio", kDropoutMask},
    {"test_training_dropout_default_mask", kDropoutMask},
    {"test_training_dropout_mask", kDropoutMask},
    {"test_training_dropout_zero_ratio_mask", kDropoutMask},
    {"test_training_dropout", kRandomMask},
    {"test_training_dropout_default", kRandomMask},
    {"test_maxpool_with_argmax_2d_precomputed_pads", kMaxPoolIndices},
    {"test_maxpool_with_argmax_2d_precomputed_strides", kMaxPoolIndices},
    {"test_identity_opt", "optional types"},
    {"test_identity_sequence", "sequence types"},
    {"test_reshape_allowzero_reordered",
     "Reshape with allowzero = 1 of a zero-size input (neither supported by "
     "the importer)"},
};

/// Outputs not compared, and why.
const std::map<std::string, std::pair<std::set<int>, std::string>>
    kIgnoredOutputs = {
    {"test_batchnorm_epsilon_training_mode",
     {{2}, "ONNX's running variance takes the biased batch variance; trainc, "
           "like PyTorch, the unbiased one (docs/ARCHITECTURE.md)"}},
    {"test_batchnorm_example_training_mode",
     {{2}, "ONNX's running variance takes the biased batch variance; trainc, "
           "like PyTorch, the unbiased one (docs/ARCHITECTURE.md)"}},
};
// clang-format on

/// The ONNX ops the importer supports (docs/ONNX.md).
// clang-format off
const std::set<std::string> kSupportedOps = {
    "Add", "Sub", "Mul", "Div", "Pow", "Neg", "Abs", "Sqrt", "Exp", "Log",
    "Tanh", "Sigmoid", "Relu", "LeakyRelu", "Erf", "Sin", "Cos", "Softplus", "Reciprocal", "Gelu",
    "Clip", "Not", "And", "IsNaN", "Cast", "CastLike", "Identity", "Equal", "Less", "Greater",
    "LessOrEqual", "GreaterOrEqual", "Where", "ReduceSum", "ReduceMean",
    "ReduceMax", "ReduceMin", "ReduceL2", "ArgMax", "Softmax", "LogSoftmax", "Reshape", "Flatten", "Squeeze",
    "Unsqueeze", "Transpose", "Expand", "Concat", "Slice", "Gather",
    "GatherElements", "GatherND",
    "Constant", "ConstantOfShape", "Shape", "MatMul", "Gemm", "Conv",
    "MaxPool", "AveragePool", "GlobalAveragePool", "BatchNormalization",
    "LayerNormalization", "InstanceNormalization", "Dropout", "Einsum", "Mod", "ScatterND", "Max", "Min", "CumSum", "ConvTranspose", "Resize"};
// clang-format on

/// Runs every case of `family`, printing one line per case. At least
/// `minimumPassed` must pass (the rest are skipped for their opset), so a
/// missing data directory cannot pass unnoticed.
void runFamily(const std::string &family, size_t minimumPassed) {
  size_t passed = 0, skipped = 0;
  std::vector<std::string> failures;
  for (const Case &testCase : kCases) {
    if (testCase.family != family)
      continue;
    NodeTestOptions options;
    auto ignored = kIgnoredOutputs.find(testCase.name);
    if (ignored != kIgnoredOutputs.end())
      options.ignoredOutputs = ignored->second.first;
    NodeTestResult result =
        runNodeTest(kNodeTests + "/" + testCase.name, options);
    if (ignored != kIgnoredOutputs.end())
      result.message += (result.message.empty() ? "" : "; ") +
                        std::string("some outputs not compared: ") +
                        ignored->second.second;
    const char *label = result.outcome == Outcome::Passed    ? "PASS"
                        : result.outcome == Outcome::Skipped ? "SKIP"
                                                             : "FAIL";
    std::cout << "  " << label << " " << testCase.name
              << (result.message.empty() ? "" : ": " + result.message) << "\n";
    if (result.outcome == Outcome::Passed)
      ++passed;
    else if (result.outcome == Outcome::Skipped)
      ++skipped;
    else
      failures.push_back(std::string(testCase.name) + ": " + result.message);
  }
  std::cout << "ONNX node tests (" << family << "): " << passed << " passed, "
            << failures.size() << " failed, " << skipped << " skipped\n";
  for (const std::string &failure : failures)
    FAIL_CHECK(failure);
  CHECK(passed >= minimumPassed);
}

} // namespace

TEST_CASE("ONNX node tests: elementwise", "[onnx]") {
  runFamily("elementwise", 128);
}

TEST_CASE("ONNX node tests: reductions and softmax", "[onnx]") {
  runFamily("reduction", 112);
}

TEST_CASE("ONNX node tests: data movement", "[onnx]") {
  runFamily("data movement", 128);
}

TEST_CASE("ONNX node tests: neural network ops", "[onnx]") {
  runFamily("neural", 83);
}

TEST_CASE("every ONNX node test of a supported op is listed", "[onnx]") {
  std::set<std::string> listed;
  for (const Case &testCase : kCases)
    listed.insert(testCase.name);
  for (const auto &[name, reason] : kExcluded) {
    INFO(name);
    CHECK(!listed.count(name));
    CHECK(!reason.empty());
    listed.insert(name);
  }
  size_t unlisted = 0;
  for (const auto &entry : std::filesystem::directory_iterator(kNodeTests)) {
    std::string name = entry.path().filename().string();
    std::set<std::string> ops =
        opTypesOf(entry.path().string() + "/model.onnx");
    bool supported = !ops.empty();
    for (const std::string &op : ops)
      supported &= kSupportedOps.count(op) > 0;
    // A newer libonnx-testdata may add cases: they are reported, not failed.
    if (supported && !listed.count(name)) {
      WARN("node test " << name << " is neither run nor excluded");
      ++unlisted;
    }
  }
  std::cout << "ONNX node tests: " << std::size(kCases) << " run, "
            << kExcluded.size() << " excluded, " << unlisted << " unlisted\n";
}
