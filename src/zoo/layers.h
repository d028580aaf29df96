#pragma once
// Layer helpers for the zoo: each emits its forward op(s) and registers the
// backward closure that emits the matching backward op(s), with flop and
// byte estimates. Names are module paths ("layer1.0.conv1"); parameters get
// PyTorch state_dict names ("layer1.0.conv1.weight").
//
// Which tensors a backward op reads is what keeps activations alive, so each
// helper reads what the PyTorch kernel saves for backward: convolution its
// input and weight, batch norm its input and saved statistics, relu/softmax/
// tanh/sigmoid their output, gelu/max-pool/avg-pool their input, dropout its
// mask. Conventions: images NCHW, sequences [..., features].

#include <string>
#include <vector>

#include "zoo/builder.h"

namespace sa::zoo {

// An element or byte count as the double the cost formulas take.
inline double d(int64_t v) {
  return static_cast<double>(v);
}

struct ConvSpec {
  int64_t out_channels = 0;
  int kh = 1, kw = 1;
  int sh = 1, sw = 1;
  int ph = 0, pw = 0;
  int64_t groups = 1;
  bool bias = false;
};
// A square kernel k with stride s and padding p.
ConvSpec conv_spec(int64_t out_channels, int k, int s = 1, int p = 0);

Var conv2d(Builder& b, const std::string& name, const Var& x, const ConvSpec& c);
// Training-mode batch norm; updates running_mean/running_var in place.
Var batch_norm(Builder& b, const std::string& name, const Var& x);
Var relu(Builder& b, const Var& x);   // out of place
Var relu_(Builder& b, const Var& x);  // in place: a new version of x's tensor
Var max_pool2d(Builder& b, const Var& x, int k, int s, int p);
Var avg_pool2d(Builder& b, const Var& x, int k, int s, int p);
Var global_avg_pool(Builder& b, const Var& x);  // [N, C, H, W] -> [N, C]

// y = x W^T + bias over the last dimension, with weight [out, in] (nn.Linear).
Var linear(Builder& b, const std::string& name, const Var& x, int64_t out, bool bias = true);
// The same with given parameters (tied weights, GPT-2's Conv1D layout): the
// weight holds in*out elements whatever its layout; bias may be undefined.
Var linear_with(Builder& b, const std::string& name, const Var& x, const Var& weight,
                const Var& bias, int64_t out);

Var add(Builder& b, const Var& x, const Var& y);   // out of place, same shapes
Var add_(Builder& b, const Var& x, const Var& y);  // x += y in place
Var mul(Builder& b, const Var& x, const Var& y);   // elementwise, same shapes
Var scale(Builder& b, const Var& x);               // x * constant (attention scaling)
Var tanh(Builder& b, const Var& x);
Var gelu(Builder& b, const Var& x);
Var softmax(Builder& b, const Var& x);  // over the last dimension
Var dropout(Builder& b, const Var& x);
Var layer_norm(Builder& b, const std::string& name, const Var& x);

// Batched matrix product: a [..., M, K] times b [..., K, N] (either may be a
// transposed view; only the shapes matter): out [..., M, N].
Var matmul(Builder& b, const Var& a, const Var& bm, Shape out_shape, int64_t k);

// Concatenation (a new tensor; its backward splits the gradient with one op)
// and split (views, no op; its backward concatenates the parts' gradients).
Var cat(Builder& b, const std::vector<Var>& xs, int dim, const std::string& name = {});
std::vector<Var> split(Builder& b, const Var& x, int dim, const std::vector<int64_t>& sizes);
// A view with another shape (reshape, transpose, permute); gradients pass through.
Var reshape(Builder& b, const Var& x, Shape shape);
// A copy with another shape (permute + contiguous, a shifting pad); gradients
// pass through.
Var copy(Builder& b, const Var& x, Shape shape, const std::string& type = "aten::clone");

Var embedding(Builder& b, const std::string& name, const Var& weight, const Var& ids);
// Mean cross entropy of logits [M, C] against int64 labels [M]: log_softmax +
// nll_loss, as PyTorch does. Returns the scalar loss.
Var cross_entropy(Builder& b, const std::string& name, const Var& logits, const Var& labels);

// Output size of a convolution or pooling window along one dimension.
int64_t conv_out(int64_t in, int k, int s, int p);

}  // namespace sa::zoo
