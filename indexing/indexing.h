// Indexing: TensorIndex and the x.index / x.set_item_ / x.index_put_ / x[{...}] members.
//
//   #include "indexing/indexing.h"
//   using namespace mutagrad::indexing;     // Slice, None, Ellipsis
//   Tensor y = x.index({Slice(1, None), 0});  // x[1:, 0], a view
//   x[{Slice(), idx}] = 0.0;                 // x[:, idx] = 0, one index_put_
//   x.index_put_({i, j}, v, /*accumulate=*/true);
#pragma once

#include "autograd/ops/indexing_ops.h"
#include "indexing/get_set.h"
#include "indexing/proxy.h"
#include "indexing/slicing.h"
#include "indexing/tensor_index.h"
#include "tensor/native/index_ops.h"
