// Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d (nn/conv.h).
#include "nn/conv.h"

#include <cmath>

#include "autograd/ops/nn_ops.h"

namespace mutagrad::nn {
namespace {

// One value per spatial dim: a one-element list is repeated.
std::vector<int64_t> expand(const std::string& layer, const char* what, std::vector<int64_t> v,
                            int64_t dims, int64_t min) {
  if (v.size() == 1) v.assign(static_cast<size_t>(dims), v[0]);
  if (static_cast<int64_t>(v.size()) != dims) {
    throw ValueError(str(layer, ": ", what, " needs 1 or ", dims, " values, got ", v.size(), " (",
                         IntArrayRef(v), ")"));
  }
  for (int64_t x : v) {
    if (x < min) {
      throw ValueError(
          str(layer, ": every ", what, " value must be >= ", min, ", got ", IntArrayRef(v)));
    }
  }
  return v;
}

// Python's repr of a tuple of ints: (3,) or (3, 3).
std::string tuple_repr(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  for (int64_t e : v) {
    if (e != x) return false;
  }
  return true;
}

}  // namespace

ConvNdBase::ConvNdBase(std::string name, int64_t dims, bool transposed, Geometry g)
    : Module(name), dims_(dims), transposed_(transposed) {
  // torch's _ConvNd checks, in its order, then the sizes' ranks and ranges.
  if (g.groups <= 0) {
    throw ValueError(str(name, ": groups must be a positive integer, got groups=", g.groups));
  }
  if (g.in_channels < 0 || g.out_channels < 0) {
    throw ValueError(str(name, ": in_channels and out_channels must be >= 0, got ", g.in_channels,
                         " and ", g.out_channels));
  }
  if (g.in_channels % g.groups != 0) {
    throw ValueError(str(
        name, ": in_channels must be divisible by groups, got in_channels=", g.in_channels,
        " and groups=", g.groups, "; each group convolves in_channels / groups input channels"));
  }
  if (g.out_channels % g.groups != 0) {
    throw ValueError(
        str(name, ": out_channels must be divisible by groups, got out_channels=", g.out_channels,
            " and groups=", g.groups, "; each group makes out_channels / groups output channels"));
  }
  kernel_size_ = expand(name, "kernel_size", std::move(g.kernel_size), dims, 1);
  stride_ = expand(name, "stride", std::move(g.stride), dims, 1);
  dilation_ = expand(name, "dilation", std::move(g.dilation), dims, 1);
  has_padding_string_ = g.has_padding_mode;
  padding_string_ = g.padding_string;
  if (has_padding_string_) {
    if (transposed) {
      throw ValueError(str(name, ": padding must be sizes, not a string ('valid'/'same' are for ",
                           "convolutions, not transposed ones)"));
    }
    if (padding_string_ == ConvPadding::kSame && !all_equal(stride_, 1)) {
      throw ValueError(str(name, ": padding='same' is not supported for strided convolutions, ",
                           "got stride=", tuple_repr(stride_),
                           "; use stride 1 or explicit padding"));
    }
  } else {
    padding_ = expand(name, "padding", std::move(g.padding), dims, 0);
  }
  output_padding_ = transposed
                        ? expand(name, "output_padding", std::move(g.output_padding), dims, 0)
                        : std::vector<int64_t>(static_cast<size_t>(dims), 0);
  const std::string& mode = g.padding_mode;
  if (mode != "zeros" && mode != "reflect" && mode != "replicate" && mode != "circular") {
    throw ValueError(str(name,
                         ": padding_mode must be one of 'zeros', 'reflect', 'replicate' or "
                         "'circular', but got padding_mode='",
                         mode, "'"));
  }
  if (transposed && mode != "zeros") {
    throw ValueError(
        str("Only \"zeros\" padding mode is supported for ", name, ", got '", mode, "'"));
  }
  in_channels_ = g.in_channels;
  out_channels_ = g.out_channels;
  groups_ = g.groups;
  padding_mode_ = mode;
  // F.pad's pairs, last spatial dim first; "same" puts the odd extra position at the end.
  reversed_padding_repeated_twice_.assign(static_cast<size_t>(2 * dims), 0);
  for (int64_t d = 0; d < dims; ++d) {
    const auto i = static_cast<size_t>(2 * (dims - 1 - d));
    if (!has_padding_string_) {
      reversed_padding_repeated_twice_[i] = reversed_padding_repeated_twice_[i + 1] = padding_[d];
    } else if (padding_string_ == ConvPadding::kSame) {
      const int64_t total = dilation_[d] * (kernel_size_[d] - 1);
      reversed_padding_repeated_twice_[i] = total / 2;
      reversed_padding_repeated_twice_[i + 1] = total - total / 2;
    }
  }

  DimVector wshape;
  wshape.push_back(transposed ? g.in_channels : g.out_channels);
  wshape.push_back((transposed ? g.out_channels : g.in_channels) / g.groups);
  for (int64_t k : kernel_size_) wshape.push_back(k);
  const TensorOptions to = TensorOptions(g.dtype).device(g.device);
  weight = register_parameter("weight", empty(wshape, to));
  if (g.bias) bias = register_parameter("bias", empty({g.out_channels}, to));
  reset_parameters(default_generator(kCPU));
}

void ConvNdBase::reset_parameters(Generator& gen) {
  init::kaiming_uniform_(weight, gen, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
    // torch leaves the bias as allocated when fan_in is 0; we zero it instead of leaving garbage.
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(bias, gen, -bound, bound);
  }
}

Tensor ConvNdBase::conv(const Tensor& input, IntArrayRef output_padding) const {
  const std::vector<int64_t>& st = stride_;
  const std::vector<int64_t>& dl = dilation_;
  if (transposed_) {
    return dims_ == 1
               ? conv_transpose1d(input, weight, bias, st, padding_, output_padding, groups_, dl)
               : conv_transpose2d(input, weight, bias, st, padding_, output_padding, groups_, dl);
  }
  if (padding_mode_ != "zeros") {
    const Tensor padded = pad(input, reversed_padding_repeated_twice_, padding_mode_);
    return dims_ == 1 ? conv1d(padded, weight, bias, st, {0}, dl, groups_)
                      : conv2d(padded, weight, bias, st, {0}, dl, groups_);
  }
  if (has_padding_string_) {
    return dims_ == 1 ? conv1d(input, weight, bias, st, padding_string_, dl, groups_)
                      : conv2d(input, weight, bias, st, padding_string_, dl, groups_);
  }
  return dims_ == 1 ? conv1d(input, weight, bias, st, padding_, dl, groups_)
                    : conv2d(input, weight, bias, st, padding_, dl, groups_);
}

std::string ConvNdBase::extra_repr() const {
  std::string s = str(in_channels_, ", ", out_channels_, ", kernel_size=", tuple_repr(kernel_size_),
                      ", stride=", tuple_repr(stride_));
  if (has_padding_string_) {
    s += padding_string_ == ConvPadding::kSame ? ", padding=same" : ", padding=valid";
  } else if (!all_equal(padding_, 0)) {
    s += ", padding=" + tuple_repr(padding_);
  }
  if (!all_equal(dilation_, 1)) s += ", dilation=" + tuple_repr(dilation_);
  if (!all_equal(output_padding_, 0)) s += ", output_padding=" + tuple_repr(output_padding_);
  if (groups_ != 1) s += str(", groups=", groups_);
  if (!bias.defined()) s += ", bias=False";
  if (padding_mode_ != "zeros") s += ", padding_mode=" + padding_mode_;
  return s;
}

ConvNdBase::Geometry ConvNdBase::geometry(const ConvOptions& o) {
  Geometry g{o.in_channels(),
             o.out_channels(),
             o.kernel_size(),
             o.stride(),
             {},
             o.dilation(),
             {0},
             false,
             ConvPadding::kValid,
             o.groups(),
             o.bias(),
             o.padding_mode(),
             o.dtype(),
             o.device()};
  if (o.padding().is_mode()) {
    g.has_padding_mode = true;
    g.padding_string = o.padding().mode();
  } else {
    g.padding = o.padding().sizes();
  }
  return g;
}

ConvNdBase::Geometry ConvNdBase::geometry(const ConvTransposeOptions& o) {
  return Geometry{o.in_channels(),     o.out_channels(), o.kernel_size(),    o.stride(),
                  o.padding(),         o.dilation(),     o.output_padding(), false,
                  ConvPadding::kValid, o.groups(),       o.bias(),           o.padding_mode(),
                  o.dtype(),           o.device()};
}

Conv1d::Conv1d(const ConvOptions& options) : ConvNdBase("Conv1d", 1, false, geometry(options)) {}
Conv2d::Conv2d(const ConvOptions& options) : ConvNdBase("Conv2d", 2, false, geometry(options)) {}

ConvTransposeNdBase::ConvTransposeNdBase(std::string name, int64_t dims,
                                         const ConvTransposeOptions& options)
    : ConvNdBase(std::move(name), dims, true, geometry(options)) {}

std::vector<int64_t> ConvTransposeNdBase::output_padding_for(const Tensor& input,
                                                             IntArrayRef output_size) const {
  const int64_t non_spatial = input.dim() == dims_ + 2 ? 2 : 1;
  std::vector<int64_t> size(output_size.begin(), output_size.end());
  if (static_cast<int64_t>(size.size()) == non_spatial + dims_) {
    size.erase(size.begin(), size.begin() + non_spatial);
  }
  if (static_cast<int64_t>(size.size()) != dims_ || input.dim() < dims_ + 1) {
    throw ValueError(str(name(), ": for a ", input.dim(), "-D input, output_size must have ", dims_,
                         " or ", non_spatial + dims_, " elements (got ", output_size.size(), ")"));
  }
  std::vector<int64_t> min_sizes, max_sizes, result;
  for (int64_t d = 0; d < dims_; ++d) {
    const int64_t n = (input.size(d + non_spatial) - 1) * stride()[d] - 2 * padding()[d] +
                      dilation()[d] * (kernel_size()[d] - 1) + 1;
    min_sizes.push_back(n);
    max_sizes.push_back(n + stride()[d] - 1);
  }
  for (int64_t d = 0; d < dims_; ++d) {
    if (size[d] < min_sizes[d] || size[d] > max_sizes[d]) {
      throw ValueError(str(name(), ": requested an output size of ", IntArrayRef(size),
                           ", but valid sizes range from ", IntArrayRef(min_sizes), " to ",
                           IntArrayRef(max_sizes), " (for an input of ",
                           IntArrayRef(input.sizes().data() + non_spatial,
                                       static_cast<size_t>(input.dim() - non_spatial)),
                           ")"));
    }
    result.push_back(size[d] - min_sizes[d]);
  }
  return result;
}

}  // namespace mutagrad::nn
