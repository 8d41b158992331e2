// Loss modules: CrossEntropyLoss, NLLLoss, MSELoss, BCEWithLogitsLoss, L1Loss, SmoothL1Loss,
// HuberLoss, BCELoss, KLDivLoss,
// with torch.nn's options; each calls its functional form (autograd/ops/loss_ops.h).
//
//   nn::CrossEntropyLoss criterion(nn::CrossEntropyLossOptions().label_smoothing(0.1));
//   Tensor loss = criterion(logits, labels);
//
// A loss's constant tensors (class weight, pos_weight), when given, are persistent buffers as in
// torch: to() moves them and state_dict() lists them ("weight", "pos_weight").
#pragma once

#include <string>

#include "nn/module.h"
#include "nn/options.h"

namespace mutagrad::nn {

// A loss: forward(input, target); operator() runs the forward hooks with the input.
class Loss : public Module {
 public:
  using Module::Module;
  virtual Tensor forward(const Tensor& input, const Tensor& target) = 0;
  Tensor operator()(const Tensor& input, const Tensor& target);
  using Module::forward;
};

struct CrossEntropyLossOptions {
  MUTAGRAD_ARG(Tensor, weight);
  MUTAGRAD_ARG(int64_t, ignore_index) = -100;
  MUTAGRAD_ARG(std::string, reduction) = "mean";
  MUTAGRAD_ARG(double, label_smoothing) = 0.0;
};

class CrossEntropyLoss : public Loss {
 public:
  explicit CrossEntropyLoss(CrossEntropyLossOptions options = {});
  Tensor forward(const Tensor& input, const Tensor& target) override;
  Tensor weight;  // a buffer when given

 private:
  CrossEntropyLossOptions options_;

 protected:
  std::shared_ptr<Module> clone_module() const override;
};

struct NLLLossOptions {
  MUTAGRAD_ARG(Tensor, weight);
  MUTAGRAD_ARG(int64_t, ignore_index) = -100;
  MUTAGRAD_ARG(std::string, reduction) = "mean";
};

class NLLLoss : public Loss {
 public:
  explicit NLLLoss(NLLLossOptions options = {});
  Tensor forward(const Tensor& input, const Tensor& target) override;
  Tensor weight;

 private:
  NLLLossOptions options_;

 protected:
  std::shared_ptr<Module> clone_module() const override;
};

class MSELoss : public Loss {
 public:
  explicit MSELoss(std::string reduction = "mean")
      : Loss("MSELoss"), reduction_(std::move(reduction)) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;

 private:
  std::string reduction_;

 protected:
  std::shared_ptr<Module> clone_module() const override { return copy_module(*this); }
};

struct BCEWithLogitsLossOptions {
  MUTAGRAD_ARG(Tensor, weight);
  MUTAGRAD_ARG(std::string, reduction) = "mean";
  MUTAGRAD_ARG(Tensor, pos_weight);
};

class BCEWithLogitsLoss : public Loss {
 public:
  explicit BCEWithLogitsLoss(BCEWithLogitsLossOptions options = {});
  Tensor forward(const Tensor& input, const Tensor& target) override;
  Tensor weight, pos_weight;

 private:
  BCEWithLogitsLossOptions options_;

 protected:
  std::shared_ptr<Module> clone_module() const override;
};

class L1Loss : public Loss {
 public:
  explicit L1Loss(std::string reduction = "mean")
      : Loss("L1Loss"), reduction_(std::move(reduction)) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;

 private:
  std::string reduction_;

 protected:
  std::shared_ptr<Module> clone_module() const override { return copy_module(*this); }
};

class SmoothL1Loss : public Loss {
 public:
  explicit SmoothL1Loss(std::string reduction = "mean", double beta = 1.0)
      : Loss("SmoothL1Loss"), reduction_(std::move(reduction)), beta_(beta) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;

 private:
  std::string reduction_;
  double beta_;

 protected:
  std::shared_ptr<Module> clone_module() const override { return copy_module(*this); }
};

class HuberLoss : public Loss {
 public:
  explicit HuberLoss(std::string reduction = "mean", double delta = 1.0)
      : Loss("HuberLoss"), reduction_(std::move(reduction)), delta_(delta) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;

 private:
  std::string reduction_;
  double delta_;

 protected:
  std::shared_ptr<Module> clone_module() const override { return copy_module(*this); }
};

// Binary cross entropy of probabilities; weight (a buffer when given) rescales each element.
class BCELoss : public Loss {
 public:
  explicit BCELoss(const Tensor& weight = Tensor(), std::string reduction = "mean");
  Tensor forward(const Tensor& input, const Tensor& target) override;
  Tensor weight;

 private:
  std::string reduction_;

 protected:
  std::shared_ptr<Module> clone_module() const override;
};

// input holds log-probabilities; reduction "batchmean" divides the sum by the batch size.
class KLDivLoss : public Loss {
 public:
  explicit KLDivLoss(std::string reduction = "mean", bool log_target = false)
      : Loss("KLDivLoss"), reduction_(std::move(reduction)), log_target_(log_target) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;

 private:
  std::string reduction_;
  bool log_target_;

 protected:
  std::shared_ptr<Module> clone_module() const override { return copy_module(*this); }
};

}  // namespace mutagrad::nn
