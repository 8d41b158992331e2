// Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d (torch.nn's options, parameters, init and
// repr) over autograd/ops/convolution_ops.h.
//
//   auto conv = std::make_shared<nn::Conv2d>(1, 16, 3);                  // weight [16, 1, 3, 3]
//   auto same = std::make_shared<nn::Conv2d>(
//       nn::ConvOptions(16, 32, 3).padding("same").padding_mode("reflect").bias(false));
//   auto up = std::make_shared<nn::ConvTranspose2d>(
//       nn::ConvTransposeOptions(32, 16, 3).stride(2).padding(1).output_padding(1));
//   Tensor y = (*up)(x);                       // or up->forward(x, /*output_size=*/{15, 15})
//
// Note [What a convolution layer writes and saves]
// A forward writes nothing. Its node (ConvolutionBackward0) saves the input and the weight, never
// the output (Note [Convolution's three bilinear maps]): an inplace ReLU after a convolution is
// safe, and a write into the input (or the weight: an optimizer step) between the forward and
// the backward is refused at backward with the stale-tensor error naming the write's line.
// padding_mode "reflect" / "replicate" / "circular" pads the input first (F.pad, as torch),
// so the saved input is then the padded copy, which no user code can write.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "autograd/ops/convolution_ops.h"
#include "nn/module.h"
#include "nn/options.h"

namespace mutagrad::nn {

// A convolution's padding: explicit sizes (one per spatial dim, or one for all) or torch's
// strings "valid" / "same" (non-transposed convolutions only).
class ConvPaddingArg {
 public:
  ConvPaddingArg(int p) : sizes_{p} {}                                      // NOLINT: implicit
  ConvPaddingArg(int64_t p) : sizes_{p} {}                                  // NOLINT: implicit
  ConvPaddingArg(std::vector<int64_t> p) : sizes_(std::move(p)) {}          // NOLINT: implicit
  ConvPaddingArg(std::initializer_list<int64_t> p) : sizes_(p) {}           // NOLINT: implicit
  ConvPaddingArg(ConvPadding mode) : is_mode_(true), mode_(mode) {}         // NOLINT: implicit
  ConvPaddingArg(const char* mode) : ConvPaddingArg(parse(mode)) {}         // NOLINT: implicit
  ConvPaddingArg(const std::string& mode) : ConvPaddingArg(parse(mode)) {}  // NOLINT: implicit

  bool is_mode() const { return is_mode_; }
  ConvPadding mode() const { return mode_; }
  const std::vector<int64_t>& sizes() const { return sizes_; }

 private:
  static ConvPadding parse(std::string_view mode) { return conv_padding_mode("Conv", mode); }
  std::vector<int64_t> sizes_;
  bool is_mode_ = false;
  ConvPadding mode_ = ConvPadding::kValid;
};

// kernel_size, stride, dilation: one value per spatial dim, or one for all of them.
struct ConvOptions {
  ConvOptions(int64_t in_channels, int64_t out_channels, std::vector<int64_t> kernel_size)
      : in_channels_(in_channels),
        out_channels_(out_channels),
        kernel_size_(std::move(kernel_size)) {}
  ConvOptions(int64_t in_channels, int64_t out_channels, int64_t kernel_size)
      : ConvOptions(in_channels, out_channels, std::vector<int64_t>{kernel_size}) {}
  MUTAGRAD_ARG(int64_t, in_channels);
  MUTAGRAD_ARG(int64_t, out_channels);
  MUTAGRAD_ARG(std::vector<int64_t>, kernel_size);
  MUTAGRAD_ARG(std::vector<int64_t>, stride) = {1};
  MUTAGRAD_ARG(ConvPaddingArg, padding) = ConvPaddingArg(0);
  MUTAGRAD_ARG(std::vector<int64_t>, dilation) = {1};
  MUTAGRAD_ARG(int64_t, groups) = 1;
  MUTAGRAD_ARG(bool, bias) = true;
  // "zeros", "reflect", "replicate" or "circular".
  MUTAGRAD_ARG(std::string, padding_mode) = "zeros";
  MUTAGRAD_ARG(ScalarType, dtype) = kFloat32;
  MUTAGRAD_ARG(Device, device) = kCPU;
};

// As ConvOptions, with output_padding (each < stride or < dilation); padding_mode "zeros" only.
struct ConvTransposeOptions {
  ConvTransposeOptions(int64_t in_channels, int64_t out_channels, std::vector<int64_t> kernel_size)
      : in_channels_(in_channels),
        out_channels_(out_channels),
        kernel_size_(std::move(kernel_size)) {}
  ConvTransposeOptions(int64_t in_channels, int64_t out_channels, int64_t kernel_size)
      : ConvTransposeOptions(in_channels, out_channels, std::vector<int64_t>{kernel_size}) {}
  MUTAGRAD_ARG(int64_t, in_channels);
  MUTAGRAD_ARG(int64_t, out_channels);
  MUTAGRAD_ARG(std::vector<int64_t>, kernel_size);
  MUTAGRAD_ARG(std::vector<int64_t>, stride) = {1};
  MUTAGRAD_ARG(std::vector<int64_t>, padding) = {0};
  MUTAGRAD_ARG(std::vector<int64_t>, output_padding) = {0};
  MUTAGRAD_ARG(int64_t, groups) = 1;
  MUTAGRAD_ARG(bool, bias) = true;
  MUTAGRAD_ARG(std::vector<int64_t>, dilation) = {1};
  MUTAGRAD_ARG(std::string, padding_mode) = "zeros";
  MUTAGRAD_ARG(ScalarType, dtype) = kFloat32;
  MUTAGRAD_ARG(Device, device) = kCPU;
};

// The shared implementation of the four layers: `dims` spatial dims, transposed or not. The
// constructor validates every option (ValueError naming the option and its value, as torch's
// _ConvNd) before it allocates anything.
class ConvNdBase : public Module {
 public:
  // torch's reset_parameters: weight kaiming_uniform_(a = sqrt(5)), bias uniform in
  // [-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = weight.size(1) * prod(kernel_size); the
  // constructor draws from default_generator(kCPU).
  void reset_parameters(Generator& gen);
  std::string extra_repr() const override;

  int64_t in_channels() const { return in_channels_; }
  int64_t out_channels() const { return out_channels_; }
  const std::vector<int64_t>& kernel_size() const { return kernel_size_; }
  const std::vector<int64_t>& stride() const { return stride_; }
  // The explicit padding (empty with a padding string).
  const std::vector<int64_t>& padding() const { return padding_; }
  const std::vector<int64_t>& dilation() const { return dilation_; }
  const std::vector<int64_t>& output_padding() const { return output_padding_; }
  int64_t groups() const { return groups_; }
  const std::string& padding_mode() const { return padding_mode_; }

  // [out, in / groups, *k], or [in, out / groups, *k] transposed.
  Tensor weight;
  Tensor bias;  // undefined without bias

 protected:
  struct Geometry {
    int64_t in_channels, out_channels;
    std::vector<int64_t> kernel_size, stride, padding, dilation, output_padding;
    bool has_padding_mode;  // padding "valid" / "same"
    ConvPadding padding_string;
    int64_t groups;
    bool bias;
    std::string padding_mode;
    ScalarType dtype;
    Device device;
  };
  ConvNdBase(std::string name, int64_t dims, bool transposed, Geometry g);
  static Geometry geometry(const ConvOptions& options);
  static Geometry geometry(const ConvTransposeOptions& options);

  // The convolution of `input` (padding_mode applied); output_padding for a transposed one.
  Tensor conv(const Tensor& input, IntArrayRef output_padding) const;
  // In a clone (Note [Cloning modules] in nn/module.h): the member handles become the copies.
  void rebind_cloned() {
    weight = cloned(weight);
    bias = cloned(bias);
  }
  template <typename M>
  std::shared_ptr<Module> clone_as(const M& self) const {
    auto copy = copy_module(self);
    copy->rebind_cloned();
    return copy;
  }

  int64_t dims_;
  bool transposed_;

 private:
  int64_t in_channels_, out_channels_;
  std::vector<int64_t> kernel_size_, stride_, padding_, dilation_, output_padding_;
  bool has_padding_string_;
  ConvPadding padding_string_;
  int64_t groups_;
  std::string padding_mode_;
  // F.pad's pairs (last dim first) for a padding_mode other than "zeros".
  std::vector<int64_t> reversed_padding_repeated_twice_;
};

class Conv1d : public ConvNdBase {
 public:
  explicit Conv1d(const ConvOptions& options);
  Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size)
      : Conv1d(ConvOptions(in_channels, out_channels, kernel_size)) {}
  // input [N, C, L] or [C, L].
  Tensor forward(const Tensor& input) override { return conv(input, {}); }

 protected:
  std::shared_ptr<Module> clone_module() const override { return clone_as(*this); }
};

class Conv2d : public ConvNdBase {
 public:
  explicit Conv2d(const ConvOptions& options);
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size)
      : Conv2d(ConvOptions(in_channels, out_channels, kernel_size)) {}
  // input [N, C, H, W] or [C, H, W].
  Tensor forward(const Tensor& input) override { return conv(input, {}); }

 protected:
  std::shared_ptr<Module> clone_module() const override { return clone_as(*this); }
};

// The transposed layers' forward(input, output_size): the output's spatial size (the last
// `dims` values of output_size) picks the output_padding, as torch; ValueError when no
// output_padding in [0, stride) gives it.
class ConvTransposeNdBase : public ConvNdBase {
 public:
  Tensor forward(const Tensor& input) override { return conv(input, output_padding()); }
  Tensor forward(const Tensor& input, IntArrayRef output_size) {
    return conv(input, output_padding_for(input, output_size));
  }

 protected:
  ConvTransposeNdBase(std::string name, int64_t dims, const ConvTransposeOptions& options);

 private:
  std::vector<int64_t> output_padding_for(const Tensor& input, IntArrayRef output_size) const;
};

class ConvTranspose1d : public ConvTransposeNdBase {
 public:
  explicit ConvTranspose1d(const ConvTransposeOptions& options)
      : ConvTransposeNdBase("ConvTranspose1d", 1, options) {}
  ConvTranspose1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size)
      : ConvTranspose1d(ConvTransposeOptions(in_channels, out_channels, kernel_size)) {}

 protected:
  std::shared_ptr<Module> clone_module() const override { return clone_as(*this); }
};

class ConvTranspose2d : public ConvTransposeNdBase {
 public:
  explicit ConvTranspose2d(const ConvTransposeOptions& options)
      : ConvTransposeNdBase("ConvTranspose2d", 2, options) {}
  ConvTranspose2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size)
      : ConvTranspose2d(ConvTransposeOptions(in_channels, out_channels, kernel_size)) {}

 protected:
  std::shared_ptr<Module> clone_module() const override { return clone_as(*this); }
};

}  // namespace mutagrad::nn
