#include "tensor/tensor_impl.h"

#include "tensor/shape.h"

namespace mutagrad {

TensorImpl::TensorImpl(Storage storage, DimVector sizes, DimVector strides, int64_t storage_offset,
                       ScalarType dtype, VersionCounter version_counter)
    : storage_(std::move(storage)),
      sizes_(std::move(sizes)),
      strides_(std::move(strides)),
      storage_offset_(storage_offset),
      dtype_(dtype),
      version_counter_(std::move(version_counter)) {
  MG_INTERNAL_ASSERT(sizes_.size() == strides_.size(), "sizes ", IntArrayRef(sizes_),
                     " and strides ", IntArrayRef(strides_), " differ in length");
  refresh_numel_and_contiguity();
}

void TensorImpl::set_geometry(DimVector sizes, DimVector strides, int64_t storage_offset) {
  sizes_ = std::move(sizes);
  strides_ = std::move(strides);
  storage_offset_ = storage_offset;
  refresh_numel_and_contiguity();
}

void TensorImpl::set_data(const TensorImpl& other) {
  storage_ = other.storage_;
  sizes_ = other.sizes_;
  strides_ = other.strides_;
  storage_offset_ = other.storage_offset_;
  dtype_ = other.dtype_;
  refresh_numel_and_contiguity();
}

void TensorImpl::refresh_numel_and_contiguity() {
  numel_ = compute_numel(sizes_);
  is_contiguous_ = compute_is_contiguous(sizes_, strides_);
}

}  // namespace mutagrad
