// The pooling ops' shared argument checks and geometry (pooling_ops.cc, avg_pooling_ops.cc,
// im2col_ops.cc); not a public header.
//
//   PoolGeometry g = pool_geometry("avg_pool2d", x, 2, {3}, {}, {1}, {1}, /*ceil_mode=*/true);
//   g.out  // the output's spatial sizes
//
// A window i along a spatial dim reads the padded positions i stride + j dilation, j < kernel;
// output sizes follow torch's pooling_output_shape (ceil_mode drops a last window that would
// start in the right padding).
#pragma once

#include <vector>

#include "tensor/backend.h"
#include "tensor/tensor.h"

namespace mutagrad::pooling {

struct PoolGeometry {
  DimVector kernel, stride, padding, dilation, out;  // one per spatial dim
  DimVector in;                                      // the input's spatial sizes
};

// `v` as `dims` values: one value for every dim, or one per dim (ValueError otherwise, naming op
// and what).
DimVector per_dim(const char* op, const char* what, IntArrayRef v, int64_t dims);

// torch's pooling_output_shape for one dim (may be < 1; the caller checks). ValueError naming
// the values when a step of it would overflow int64.
int64_t pool_output_size(const char* op, int64_t in, int64_t kernel, int64_t pad, int64_t stride,
                         int64_t dilation, bool ceil_mode);

// The windows along one spatial dim clipped to the input (Note [Pooling windows clipped to the
// input] in pooling_ops.h), the backends' PoolWindows (tensor/backend.h): window i reads
// first[i] + j step for j < count[i]; the builders below also set its ranges.
using DimWindows = PoolWindows;

// The windows of spatial dim `i` of g (stride, padding, dilation): [start, start + (kernel - 1)
// dilation] with start = o stride - padding, stepped to the input.
DimWindows pool_windows(const PoolGeometry& g, int64_t i);

// torch's adaptive windows of a dim of size `in` into `out`: [floor(o in / out),
// ceil((o + 1) in / out)).
DimWindows adaptive_windows(int64_t in, int64_t out);

// What a pooling's gradient nodes share: the node names, the windows and the sizes of pooling
// input [*, H, W] over windows rows x cols into [*, oh, ow].
struct PoolRecord {
  PoolRecord(const char* name, const char* backward_name, const Tensor& input, DimWindows rows,
             DimWindows cols);
  const char* name;           // the pooling's node (MaxPool2DWithIndicesBackward0, ...)
  const char* backward_name;  // its backward's node (...BackwardBackward0)
  DimWindows rows, cols;
  DimVector input_sizes, output_sizes;
  int64_t planes;  // the product of *
  int64_t h() const { return input_sizes[input_sizes.size() - 2]; }
  int64_t w() const { return input_sizes.back(); }
  int64_t oh() const { return output_sizes[output_sizes.size() - 2]; }
  int64_t ow() const { return output_sizes.back(); }
};

// Checks a max/avg pooling call over `dims` spatial dims and returns its geometry: input of
// dims + 1 or dims + 2 dims, each but the batch dim nonzero (ShapeError), floating (DTypeError),
// kernel/stride/dilation > 0 and 0 <= padding <= kernel / 2 (ValueError), every output size >= 1
// (ShapeError). An empty stride is the kernel's.
PoolGeometry pool_geometry(const char* op, const Tensor& input, int64_t dims,
                           IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                           IntArrayRef dilation, bool ceil_mode);

// A 1-d geometry as the 2-d one of the input unsqueezed at -2 (a [1] row of kernel 1).
PoolGeometry as_2d(const PoolGeometry& g);

// DTypeError unless input is floating ("<op>" not implemented for 'Long').
void check_floating(const char* op, const Tensor& input);

}  // namespace mutagrad::pooling
