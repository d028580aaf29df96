#include "runtime/aten/aten_allowlist.h"

#include <algorithm>
#include <array>

namespace sa::runtime {
namespace {

// Families: why each operator is on the list (Note [ATen allow-list]). Every
// one computes on its tensor arguments only: none opens a file, runs
// Python, reads a tensor's value into the host program, swaps a tensor's
// storage or picks a device (a device argument is decoded as the runtime's
// own device, runtime/aten/aten_kernels.cpp).
constexpr std::string_view kMatmul = "matrix products (nn.Linear, attention, LSTM gates)";
constexpr std::string_view kConv = "convolutions and their gradients";
constexpr std::string_view kNorm = "batch, layer and group normalisation and their gradients";
constexpr std::string_view kActivation = "activations and their gradients";
constexpr std::string_view kLoss = "softmax and losses and their gradients";
constexpr std::string_view kAttention = "fused attention (torch 2.x) and its gradient";
constexpr std::string_view kRnn = "fused recurrent layers (torch 2.x oneDNN LSTM, CUDA LSTM cell)";
constexpr std::string_view kPool = "pooling and its gradients";
constexpr std::string_view kElementwise =
    "elementwise arithmetic: model ops, gradients and optimizer steps (SGD, Adam)";
constexpr std::string_view kReduction = "reductions (means, sums, gradients of broadcasts)";
constexpr std::string_view kMovement =
    "copies, casts (autocast), concatenation, padding, gathers and their gradients";
constexpr std::string_view kCreation =
    "fresh tensors and fills (zeroed optimizer state, gradients' seeds, dropout masks)";
constexpr std::string_view kScaler =
    "FP16 loss scaling (GradScaler): gradients unscaled and checked for inf/NaN, the scale "
    "updated on the device (Note [Skipped steps])";
constexpr std::string_view kRandom =
    "random draws (dropout) from the device's default generator (Note [ATen recompute])";

// Batch norm in training folds the batch's statistics into the running ones,
// which its schema does not mark as written (recorder.py, _UNDECLARED_WRITES).
constexpr std::string_view kRunningStats = "running_mean running_var";

// Sorted by name (a test checks it).
constexpr auto kAllowed = std::to_array<AllowedAtenOp>({
    {"aten::_adaptive_avg_pool2d", kPool},
    {"aten::_adaptive_avg_pool2d_backward", kPool},
    {"aten::_amp_foreach_non_finite_check_and_unscale_", kScaler},
    {"aten::_amp_update_scale_", kScaler},
    {"aten::_batch_norm_with_update", kNorm},
    // torch 2.x's clip_grad_norm_ on the CPU: per-gradient norms and the
    // clipping factor applied to every gradient.
    {"aten::_foreach_mul_", kElementwise},
    {"aten::_foreach_norm", kReduction},
    {"aten::_log_softmax", kLoss},
    {"aten::_log_softmax_backward_data", kLoss},
    {"aten::_native_batch_norm_legit", kNorm},
    // torch 2.5+: softmax giving 0, not NaN, on fully masked rows (the math
    // path of scaled_dot_product_attention); its gradient is _softmax's.
    {"aten::_safe_softmax", kLoss},
    {"aten::_scaled_dot_product_efficient_attention", kAttention},
    {"aten::_scaled_dot_product_efficient_attention_backward", kAttention},
    {"aten::_scaled_dot_product_flash_attention", kAttention},
    {"aten::_scaled_dot_product_flash_attention_backward", kAttention},
    {"aten::_scaled_dot_product_flash_attention_for_cpu", kAttention},
    {"aten::_scaled_dot_product_flash_attention_for_cpu_backward", kAttention},
    {"aten::_softmax", kLoss},
    {"aten::_softmax_backward_data", kLoss},
    {"aten::_thnn_fused_lstm_cell", kRnn},
    {"aten::_thnn_fused_lstm_cell_backward_impl", kRnn},
    {"aten::_to_copy", kMovement},
    {"aten::abs", kElementwise},
    {"aten::add", kElementwise},
    {"aten::add_", kElementwise},
    {"aten::addbmm", kMatmul},
    {"aten::addcdiv", kElementwise},
    {"aten::addcdiv_", kElementwise},
    {"aten::addcmul", kElementwise},
    {"aten::addcmul_", kElementwise},
    {"aten::addmm", kMatmul},
    {"aten::addmv", kMatmul},
    {"aten::amax", kReduction},
    {"aten::amin", kReduction},
    {"aten::arange", kCreation},
    // Changes only its view's geometry; the runtime makes every view afresh.
    {"aten::as_strided_", kMovement},
    {"aten::avg_pool2d", kPool},
    {"aten::avg_pool2d_backward", kPool},
    {"aten::baddbmm", kMatmul},
    {"aten::batch_norm_backward", kNorm},
    {"aten::bernoulli", kRandom},
    {"aten::bernoulli_", kRandom},
    {"aten::bmm", kMatmul},
    {"aten::cat", kMovement},
    {"aten::clamp", kElementwise},
    {"aten::clamp_", kElementwise},
    {"aten::clamp_max", kElementwise},
    {"aten::clamp_max_", kElementwise},
    {"aten::clamp_min", kElementwise},
    {"aten::clamp_min_", kElementwise},
    {"aten::clone", kMovement},
    {"aten::constant_pad_nd", kMovement},
    {"aten::convolution", kConv},
    {"aten::convolution_backward", kConv},
    {"aten::copy_", kMovement},
    {"aten::cudnn_batch_norm", kNorm, kRunningStats, "training"},
    {"aten::cudnn_batch_norm_backward", kNorm},
    {"aten::cumsum", kReduction},
    {"aten::div", kElementwise},
    {"aten::div_", kElementwise},
    {"aten::dot", kMatmul},
    {"aten::elu", kActivation},
    {"aten::elu_", kActivation},
    {"aten::elu_backward", kActivation},
    {"aten::embedding", kMovement},
    {"aten::embedding_dense_backward", kMovement},
    {"aten::empty", kCreation},
    {"aten::empty_like", kCreation},
    {"aten::empty_strided", kCreation},
    {"aten::eq", kElementwise},
    {"aten::erf", kElementwise},
    {"aten::exp", kElementwise},
    {"aten::exp_", kElementwise},
    {"aten::fill_", kCreation},
    {"aten::full", kCreation},
    {"aten::full_like", kCreation},
    {"aten::gather", kMovement},
    {"aten::ge", kElementwise},
    {"aten::gelu", kActivation},
    {"aten::gelu_", kActivation},
    {"aten::gelu_backward", kActivation},
    {"aten::gt", kElementwise},
    {"aten::hardsigmoid", kActivation},
    {"aten::hardsigmoid_", kActivation},
    {"aten::hardsigmoid_backward", kActivation},
    {"aten::hardswish", kActivation},
    {"aten::hardswish_", kActivation},
    {"aten::hardswish_backward", kActivation},
    {"aten::hardtanh", kActivation},
    {"aten::hardtanh_", kActivation},
    {"aten::hardtanh_backward", kActivation},
    {"aten::index", kMovement},
    {"aten::index_select", kMovement},
    {"aten::le", kElementwise},
    {"aten::leaky_relu", kActivation},
    {"aten::leaky_relu_", kActivation},
    {"aten::leaky_relu_backward", kActivation},
    {"aten::lerp", kElementwise},
    {"aten::lerp_", kElementwise},
    {"aten::lift_fresh_copy", kMovement},
    {"aten::linalg_vector_norm", kReduction},
    {"aten::log", kElementwise},
    {"aten::log_", kElementwise},
    {"aten::logsumexp", kReduction},
    {"aten::lt", kElementwise},
    {"aten::masked_fill", kElementwise},
    {"aten::masked_fill_", kElementwise},
    {"aten::max_pool2d_with_indices", kPool},
    {"aten::max_pool2d_with_indices_backward", kPool},
    {"aten::maximum", kElementwise},
    {"aten::mean", kReduction},
    {"aten::minimum", kElementwise},
    // torch 2.x's oneDNN LSTM on the CPU: the backward reuses the forward's
    // workspace as scratch (recorder.py, _UNDECLARED_WRITES).
    {"aten::mkldnn_rnn_layer", kRnn},
    {"aten::mkldnn_rnn_layer_backward", kRnn, "workspace"},
    {"aten::mm", kMatmul},
    {"aten::mse_loss", kLoss},
    {"aten::mse_loss_backward", kLoss},
    {"aten::mul", kElementwise},
    {"aten::mul_", kElementwise},
    {"aten::mv", kMatmul},
    {"aten::native_batch_norm", kNorm, kRunningStats, "training"},
    {"aten::native_batch_norm_backward", kNorm},
    {"aten::native_dropout", kRandom},
    {"aten::native_dropout_backward", kRandom},
    {"aten::native_group_norm", kNorm},
    {"aten::native_group_norm_backward", kNorm},
    {"aten::native_layer_norm", kNorm},
    {"aten::native_layer_norm_backward", kNorm},
    {"aten::ne", kElementwise},
    {"aten::neg", kElementwise},
    {"aten::neg_", kElementwise},
    {"aten::new_empty", kCreation},
    {"aten::new_empty_strided", kCreation},
    {"aten::new_full", kCreation},
    {"aten::new_ones", kCreation},
    {"aten::new_zeros", kCreation},
    {"aten::nll_loss2d_backward", kLoss},
    {"aten::nll_loss2d_forward", kLoss},
    {"aten::nll_loss_backward", kLoss},
    {"aten::nll_loss_forward", kLoss},
    {"aten::norm", kReduction},
    {"aten::normal", kRandom},
    {"aten::normal_", kRandom},
    {"aten::ones", kCreation},
    {"aten::ones_like", kCreation},
    {"aten::pow", kElementwise},
    {"aten::pow_", kElementwise},
    {"aten::rand", kRandom},
    {"aten::rand_like", kRandom},
    {"aten::randint", kRandom},
    {"aten::randint_like", kRandom},
    {"aten::randn", kRandom},
    {"aten::randn_like", kRandom},
    {"aten::reciprocal", kElementwise},
    {"aten::reciprocal_", kElementwise},
    {"aten::relu", kActivation},
    {"aten::relu_", kActivation},
    {"aten::repeat", kMovement},
    {"aten::rsqrt", kElementwise},
    {"aten::rsqrt_", kElementwise},
    {"aten::rsub", kElementwise},
    {"aten::scalar_tensor", kCreation},
    {"aten::select_backward", kMovement},
    {"aten::sigmoid", kActivation},
    {"aten::sigmoid_", kActivation},
    {"aten::sigmoid_backward", kActivation},
    {"aten::sign", kElementwise},
    {"aten::silu", kActivation},
    {"aten::silu_", kActivation},
    {"aten::silu_backward", kActivation},
    {"aten::slice_backward", kMovement},
    {"aten::softplus", kActivation},
    {"aten::softplus_backward", kActivation},
    {"aten::sqrt", kElementwise},
    {"aten::sqrt_", kElementwise},
    {"aten::stack", kMovement},
    {"aten::sub", kElementwise},
    {"aten::sub_", kElementwise},
    {"aten::sum", kReduction},
    {"aten::tanh", kActivation},
    {"aten::tanh_", kActivation},
    {"aten::tanh_backward", kActivation},
    {"aten::threshold", kActivation},
    {"aten::threshold_", kActivation},
    {"aten::threshold_backward", kActivation},
    {"aten::tril", kElementwise},
    {"aten::triu", kElementwise},
    {"aten::uniform_", kRandom},
    {"aten::var", kReduction},
    {"aten::var_mean", kReduction},
    {"aten::where", kElementwise},
    {"aten::zero_", kCreation},
    {"aten::zeros", kCreation},
    {"aten::zeros_like", kCreation},
});

}  // namespace

std::span<const AllowedAtenOp> aten_allowlist() {
  return kAllowed;
}

const AllowedAtenOp* find_allowed_aten_op(std::string_view name) {
  const auto it =
      std::lower_bound(kAllowed.begin(), kAllowed.end(), name,
                       [](const AllowedAtenOp& a, std::string_view n) { return a.name < n; });
  return it != kAllowed.end() && it->name == name ? &*it : nullptr;
}

}  // namespace sa::runtime
