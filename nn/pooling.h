// Pooling and im2col layers: MaxPool1d/2d, AvgPool1d/2d, AdaptiveAvgPool1d/2d, AdaptiveMaxPool2d,
// Unfold, Fold (torch.nn's options and repr) over autograd/ops/pooling_ops.h.
//
//   auto pool = std::make_shared<nn::MaxPool2d>(nn::MaxPoolOptions(3).stride(2).padding(1));
//   auto [y, idx] = pool->forward_with_indices(x);               // torch's return_indices=True
//   auto gap = std::make_shared<nn::AdaptiveAvgPool2d>(1);        // global average pooling
//   auto cols = std::make_shared<nn::Unfold>(nn::UnfoldOptions({2, 3}).padding(1));
//
// None of them has parameters or buffers or writes anything. What each op's node saves:
// pooling_ops.h (max pooling: the indices; average pooling, im2col, col2im: no tensor).
// A one-element size list means one value for every spatial dim and prints as an int, as torch
// prints an int argument; an empty stride is the kernel size.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "autograd/ops/pooling_ops.h"
#include "nn/module.h"
#include "nn/options.h"

namespace mutagrad::nn {

struct MaxPoolOptions {
  MaxPoolOptions(std::vector<int64_t> kernel_size)  // NOLINT: implicit, as libtorch's
      : kernel_size_(std::move(kernel_size)) {}
  MaxPoolOptions(int64_t kernel_size)  // NOLINT: implicit
      : MaxPoolOptions(std::vector<int64_t>{kernel_size}) {}
  MaxPoolOptions(std::initializer_list<int64_t> kernel_size)  // NOLINT: implicit
      : MaxPoolOptions(std::vector<int64_t>(kernel_size)) {}
  MUTAGRAD_ARG(std::vector<int64_t>, kernel_size);
  MUTAGRAD_ARG(std::vector<int64_t>, stride) = {};  // empty: kernel_size
  MUTAGRAD_ARG(std::vector<int64_t>, padding) = {0};
  MUTAGRAD_ARG(std::vector<int64_t>, dilation) = {1};
  MUTAGRAD_ARG(bool, ceil_mode) = false;
};

// The maximum of each window along L: [N, C, L] or [C, L].
class MaxPool1d : public Module {
 public:
  explicit MaxPool1d(MaxPoolOptions options) : Module("MaxPool1d"), options_(std::move(options)) {}
  Tensor forward(const Tensor& input) override;
  // (values, positions along L).
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  std::string extra_repr() const override;
  const MaxPoolOptions& options() const { return options_; }

 private:
  MaxPoolOptions options_;

 protected:
  std::shared_ptr<Module> clone_module() const override { return copy_module(*this); }
};

// The maximum of each window of the [H, W] plane: [N, C, H, W] or [C, H, W].
class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(MaxPoolOptions options) : Module("MaxPool2d"), options_(std::move(options)) {}
  Tensor forward(const Tensor& input) override;
  // (values, flat positions in each [H, W] plane).
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  std::string extra_repr() const override;
  const MaxPoolOptions& options() const { return options_; }

 private:
  MaxPoolOptions options_;

 protected:
  std::shared_ptr<Module> clone_module() const override { return copy_module(*this); }
};

struct AvgPoolOptions {
  AvgPoolOptions(std::vector<int64_t> kernel_size)  // NOLINT: implicit
      : kernel_size_(std::move(kernel_size)) {}
  AvgPoolOptions(int64_t kernel_size)  // NOLINT: implicit
      : AvgPoolOptions(std::vector<int64_t>{kernel_size}) {}
  AvgPoolOptions(std::initializer_list<int64_t> kernel_size)  // NOLINT: implicit
      : AvgPoolOptions(std::vector<int64_t>(kernel_size)) {}
  MUTAGRAD_ARG(std::vector<int64_t>, kernel_size);
  MUTAGRAD_ARG(std::vector<int64_t>, stride) = {};  // empty: kernel_size
  MUTAGRAD_ARG(std::vector<int64_t>, padding) = {0};
  MUTAGRAD_ARG(bool, ceil_mode) = false;
  MUTAGRAD_ARG(bool, count_include_pad) = true;
  MUTAGRAD_ARG(std::optional<int64_t>, divisor_override) = std::nullopt;  // AvgPool2d only
};

// The mean of each window along L. (torch's AvgPool1d has no divisor_override: ValueError.)
class AvgPool1d : public Module {
 public:
  explicit AvgPool1d(AvgPoolOptions options);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  const AvgPoolOptions& options() const { return options_; }

 private:
  AvgPoolOptions options_;

 protected:
  std::shared_ptr<Module> clone_module() const override { return copy_module(*this); }
};

// The mean of each window of the [H, W] plane.
class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(AvgPoolOptions options) : Module("AvgPool2d"), options_(std::move(options)) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  const AvgPoolOptions& options() const { return options_; }

 private:
  AvgPoolOptions options_;

 protected:
  std::shared_ptr<Module> clone_module() const override { return copy_module(*this); }
};

// output_size of AdaptiveAvgPool1d: one value.
class AdaptiveAvgPool1d : public Module {
 public:
  explicit AdaptiveAvgPool1d(int64_t output_size)
      : Module("AdaptiveAvgPool1d"), output_size_(output_size) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

 private:
  int64_t output_size_;

 protected:
  std::shared_ptr<Module> clone_module() const override { return copy_module(*this); }
};

// A 2-d adaptive output size: one value for both dims, or two, each a size or std::nullopt (the
// input's size in that dim, torch's None).
class AdaptiveSize2d {
 public:
  AdaptiveSize2d(int64_t size) : sizes_{size} {}                       // NOLINT: implicit
  AdaptiveSize2d(std::initializer_list<std::optional<int64_t>> sizes)  // NOLINT: implicit
      : sizes_(sizes) {}
  // The sizes for an input of sizes `input` (its last two dims replace nullopt).
  std::vector<int64_t> resolve(IntArrayRef input) const;
  std::string repr() const;  // "7", "(None, 3)"

 private:
  std::vector<std::optional<int64_t>> sizes_;
};

class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(AdaptiveSize2d output_size)
      : Module("AdaptiveAvgPool2d"), output_size_(std::move(output_size)) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override { return "output_size=" + output_size_.repr(); }

 private:
  AdaptiveSize2d output_size_;

 protected:
  std::shared_ptr<Module> clone_module() const override { return copy_module(*this); }
};

class AdaptiveMaxPool2d : public Module {
 public:
  explicit AdaptiveMaxPool2d(AdaptiveSize2d output_size)
      : Module("AdaptiveMaxPool2d"), output_size_(std::move(output_size)) {}
  Tensor forward(const Tensor& input) override;
  // (values, flat positions in each [H, W] plane).
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  std::string extra_repr() const override { return "output_size=" + output_size_.repr(); }

 private:
  AdaptiveSize2d output_size_;

 protected:
  std::shared_ptr<Module> clone_module() const override { return copy_module(*this); }
};

struct UnfoldOptions {
  UnfoldOptions(std::vector<int64_t> kernel_size)  // NOLINT: implicit
      : kernel_size_(std::move(kernel_size)) {}
  UnfoldOptions(int64_t kernel_size)  // NOLINT: implicit
      : UnfoldOptions(std::vector<int64_t>{kernel_size}) {}
  UnfoldOptions(std::initializer_list<int64_t> kernel_size)  // NOLINT: implicit
      : UnfoldOptions(std::vector<int64_t>(kernel_size)) {}
  MUTAGRAD_ARG(std::vector<int64_t>, kernel_size);
  MUTAGRAD_ARG(std::vector<int64_t>, dilation) = {1};
  MUTAGRAD_ARG(std::vector<int64_t>, padding) = {0};
  MUTAGRAD_ARG(std::vector<int64_t>, stride) = {1};
};

// im2col: [N, C, H, W] -> [N, C kh kw, L].
class Unfold : public Module {
 public:
  explicit Unfold(UnfoldOptions options) : Module("Unfold"), options_(std::move(options)) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

 private:
  UnfoldOptions options_;

 protected:
  std::shared_ptr<Module> clone_module() const override { return copy_module(*this); }
};

struct FoldOptions {
  FoldOptions(std::vector<int64_t> output_size, std::vector<int64_t> kernel_size)
      : output_size_(std::move(output_size)), kernel_size_(std::move(kernel_size)) {}
  MUTAGRAD_ARG(std::vector<int64_t>, output_size);
  MUTAGRAD_ARG(std::vector<int64_t>, kernel_size);
  MUTAGRAD_ARG(std::vector<int64_t>, dilation) = {1};
  MUTAGRAD_ARG(std::vector<int64_t>, padding) = {0};
  MUTAGRAD_ARG(std::vector<int64_t>, stride) = {1};
};

// col2im, Unfold's adjoint: [N, C kh kw, L] -> [N, C, *output_size], overlaps summed.
class Fold : public Module {
 public:
  explicit Fold(FoldOptions options) : Module("Fold"), options_(std::move(options)) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

 private:
  FoldOptions options_;

 protected:
  std::shared_ptr<Module> clone_module() const override { return copy_module(*this); }
};

}  // namespace mutagrad::nn
