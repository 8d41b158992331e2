// Every differentiable op of mutagrad, as free functions and operators (namespace mutagrad).
// The same ops are Tensor members (x.sum(), x.select(0, 1), x.add_(y)).
//
//   Tensor x = mutagrad::randn({4, 3}, gen, kFloat64).requires_grad_();
//   Tensor loss = mutagrad::sum(mutagrad::relu(x.matmul(w)) * 2.0);
//   loss.backward();   // x.grad(), w.grad()
#pragma once

#include "autograd/ops/activation_ops.h"
#include "autograd/ops/binary_ops.h"
#include "autograd/ops/clamp_ops.h"
#include "autograd/ops/composite_ops.h"
#include "autograd/ops/convolution_ops.h"
#include "autograd/ops/copy_ops.h"
#include "autograd/ops/init_ops.h"
#include "autograd/ops/join_ops.h"
#include "autograd/ops/linalg_ops.h"
#include "autograd/ops/loss_ops.h"
#include "autograd/ops/nn_ops.h"
#include "autograd/ops/out_ops.h"
#include "autograd/ops/pooling_ops.h"
#include "autograd/ops/products_ops.h"
#include "autograd/ops/random_ops.h"
#include "autograd/ops/reduce_ops.h"
#include "autograd/ops/scatter_ops.h"
#include "autograd/ops/shape_ops.h"
#include "autograd/ops/sort_ops.h"
#include "autograd/ops/statistics_ops.h"
#include "autograd/ops/take_put_ops.h"
#include "autograd/ops/ternary_ops.h"
#include "autograd/ops/unary_ops.h"
#include "autograd/ops/view_ops.h"
