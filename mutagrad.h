// mutagrad: tensors with an autograd-aware mutation engine. The one header users include.
//
//   #include "mutagrad.h"
//   using namespace mutagrad;
//   Tensor x = arange(6, kFloat64).view({2, 3});
//   x.select(0, 1).fill_(7);     // writes through a view: x sees it, x.version() == 1
//   if (cuda::is_available()) x = x.cuda();   // docs/cuda.md
#pragma once

#include "autograd/anomaly_mode.h"
#include "autograd/check_backward.h"
#include "autograd/custom_function.h"
#include "autograd/engine.h"
#include "autograd/errors.h"
#include "autograd/forward_ad.h"
#include "autograd/functional.h"
#include "autograd/grad_mode.h"
#include "autograd/gradcheck.h"
#include "autograd/graph_export.h"
#include "autograd/hooks.h"
#include "autograd/mutation_log.h"
#include "autograd/mutation_policy.h"
#include "autograd/ops.h"
#include "autograd/render.h"
#include "autograd/saved_tensor_hooks.h"
#include "cuda/cuda.h"
#include "indexing/indexing.h"
#include "tensor/backend.h"
#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/native/linalg.h"
#include "tensor/native/pointwise.h"
#include "tensor/native/random.h"
#include "tensor/native/reduce.h"
#include "tensor/native/views.h"
#include "tensor/print_options.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"
#include "version.h"
