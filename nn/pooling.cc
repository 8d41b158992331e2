// Pooling and im2col layers: see pooling.h.
#include "nn/pooling.h"

#include <sstream>

namespace mutagrad::nn {
namespace {

// torch's repr of an int (one value) or a tuple.
std::string sizes_repr(const std::vector<int64_t>& v) {
  if (v.size() == 1) return std::to_string(v[0]);
  std::ostringstream out;
  out << "(";
  for (size_t i = 0; i < v.size(); ++i) out << (i ? ", " : "") << v[i];
  out << (v.size() == 1 ? ",)" : ")");
  return out.str();
}

// A 1-element tuple, as torch's _single keeps AvgPool1d's sizes: "(3,)".
std::string single_repr(const std::vector<int64_t>& v) {
  return v.size() == 1 ? "(" + std::to_string(v[0]) + ",)" : sizes_repr(v);
}

const char* py_bool(bool b) { return b ? "True" : "False"; }

template <typename O>
const std::vector<int64_t>& stride_of(const O& o) {
  return o.stride().empty() ? o.kernel_size() : o.stride();
}

std::string max_pool_repr(const MaxPoolOptions& o) {
  return "kernel_size=" + sizes_repr(o.kernel_size()) + ", stride=" + sizes_repr(stride_of(o)) +
         ", padding=" + sizes_repr(o.padding()) + ", dilation=" + sizes_repr(o.dilation()) +
         ", ceil_mode=" + py_bool(o.ceil_mode());
}

}  // namespace

Tensor MaxPool1d::forward(const Tensor& input) { return std::get<0>(forward_with_indices(input)); }

std::tuple<Tensor, Tensor> MaxPool1d::forward_with_indices(const Tensor& input) {
  const MaxPoolOptions& o = options_;
  return max_pool1d_with_indices(input, o.kernel_size(), o.stride(), o.padding(), o.dilation(),
                                 o.ceil_mode());
}

std::string MaxPool1d::extra_repr() const { return max_pool_repr(options_); }

Tensor MaxPool2d::forward(const Tensor& input) { return std::get<0>(forward_with_indices(input)); }

std::tuple<Tensor, Tensor> MaxPool2d::forward_with_indices(const Tensor& input) {
  const MaxPoolOptions& o = options_;
  return max_pool2d_with_indices(input, o.kernel_size(), o.stride(), o.padding(), o.dilation(),
                                 o.ceil_mode());
}

std::string MaxPool2d::extra_repr() const { return max_pool_repr(options_); }

AvgPool1d::AvgPool1d(AvgPoolOptions options) : Module("AvgPool1d"), options_(std::move(options)) {
  if (options_.divisor_override()) {
    throw ValueError(
        "AvgPool1d: divisor_override is not an option of AvgPool1d (torch's has "
        "none); use AvgPool2d on the input unsqueezed at -2");
  }
}

Tensor AvgPool1d::forward(const Tensor& input) {
  const AvgPoolOptions& o = options_;
  return avg_pool1d(input, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(),
                    o.count_include_pad());
}

std::string AvgPool1d::extra_repr() const {
  return "kernel_size=" + single_repr(options_.kernel_size()) +
         ", stride=" + single_repr(stride_of(options_)) +
         ", padding=" + single_repr(options_.padding());
}

Tensor AvgPool2d::forward(const Tensor& input) {
  const AvgPoolOptions& o = options_;
  return avg_pool2d(input, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(),
                    o.count_include_pad(), o.divisor_override());
}

std::string AvgPool2d::extra_repr() const {
  return "kernel_size=" + sizes_repr(options_.kernel_size()) +
         ", stride=" + sizes_repr(stride_of(options_)) +
         ", padding=" + sizes_repr(options_.padding());
}

Tensor AdaptiveAvgPool1d::forward(const Tensor& input) {
  return adaptive_avg_pool1d(input, {output_size_});
}

std::string AdaptiveAvgPool1d::extra_repr() const {
  return "output_size=" + std::to_string(output_size_);
}

std::vector<int64_t> AdaptiveSize2d::resolve(IntArrayRef input) const {
  std::vector<int64_t> out;
  for (size_t i = 0; i < sizes_.size(); ++i) {
    if (sizes_[i]) {
      out.push_back(*sizes_[i]);
    } else if (sizes_.size() == 2 && input.size() >= 2) {
      out.push_back(input[input.size() - 2 + i]);
    } else {
      throw ValueError(
          "adaptive pooling: a None output size needs two sizes and an input of at "
          "least 2 dims");
    }
  }
  return out;
}

std::string AdaptiveSize2d::repr() const {
  if (sizes_.size() == 1 && sizes_[0]) return std::to_string(*sizes_[0]);
  std::string out = "(";
  for (size_t i = 0; i < sizes_.size(); ++i) {
    out += (i ? ", " : "") + (sizes_[i] ? std::to_string(*sizes_[i]) : std::string("None"));
  }
  return out + (sizes_.size() == 1 ? ",)" : ")");
}

Tensor AdaptiveAvgPool2d::forward(const Tensor& input) {
  return adaptive_avg_pool2d(input, output_size_.resolve(input.sizes()));
}

Tensor AdaptiveMaxPool2d::forward(const Tensor& input) {
  return std::get<0>(forward_with_indices(input));
}

std::tuple<Tensor, Tensor> AdaptiveMaxPool2d::forward_with_indices(const Tensor& input) {
  return adaptive_max_pool2d(input, output_size_.resolve(input.sizes()));
}

Tensor Unfold::forward(const Tensor& input) {
  const UnfoldOptions& o = options_;
  return im2col(input, o.kernel_size(), o.dilation(), o.padding(), o.stride());
}

std::string Unfold::extra_repr() const {
  const UnfoldOptions& o = options_;
  return "kernel_size=" + sizes_repr(o.kernel_size()) + ", dilation=" + sizes_repr(o.dilation()) +
         ", padding=" + sizes_repr(o.padding()) + ", stride=" + sizes_repr(o.stride());
}

Tensor Fold::forward(const Tensor& input) {
  const FoldOptions& o = options_;
  return col2im(input, o.output_size(), o.kernel_size(), o.dilation(), o.padding(), o.stride());
}

std::string Fold::extra_repr() const {
  const FoldOptions& o = options_;
  return "output_size=" + sizes_repr(o.output_size()) +
         ", kernel_size=" + sizes_repr(o.kernel_size()) + ", dilation=" + sizes_repr(o.dilation()) +
         ", padding=" + sizes_repr(o.padding()) + ", stride=" + sizes_repr(o.stride());
}

}  // namespace mutagrad::nn
