// optim/: in-place optimizers, LR schedulers and gradient clipping over mutagrad tensors
// (torch.optim, torch.optim.lr_scheduler and torch.nn.utils' clip_grad_*). Include this one
// header; Bazel target //optim.
//
//   #include "optim/optim.h"
//   optim::AdamW opt(params, optim::AdamWOptions(1e-3).weight_decay(1e-2));
//   loss.backward();
//   optim::clip_grad_norm_(params, 1.0);
//   opt.step();
//   opt.zero_grad();
#pragma once

#include "optim/adagrad.h"
#include "optim/adam.h"
#include "optim/clip_grad.h"
#include "optim/lr_scheduler.h"
#include "optim/optimizer.h"
#include "optim/rmsprop.h"
#include "optim/sgd.h"
