// TensorImpl: the data model behind a Tensor handle.
//
// A tensor is (storage, sizes, strides, storage offset, dtype) plus the version counter it
// shares with its aliases, the base it views (if any), and an optional slot for autograd
// metadata. tensor/ never looks inside that slot beyond AutogradMetaInterface; autograd/
// attaches its own AutogradMeta there. See docs/notes/layers.md.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tensor/device.h"
#include "tensor/dtype.h"
#include "tensor/pending.h"
#include "tensor/small_vector.h"
#include "tensor/storage.h"
#include "tensor/version_counter.h"

namespace mutagrad {

// What tensor/ may ask of the autograd metadata without depending on autograd/.
class AutogradMetaInterface {
 public:
  virtual ~AutogradMetaInterface() = default;
  virtual bool requires_grad() const = 0;
  // The grad_fn's name ("MulBackward0"), or "" when there is none. Used by printing.
  virtual std::string grad_fn_name() const = 0;
};

class TensorImpl {
 public:
  TensorImpl(Storage storage, DimVector sizes, DimVector strides, int64_t storage_offset,
             ScalarType dtype, VersionCounter version_counter);
  // A fresh contiguous tensor (empty()): the caller computed the strides from the sizes and
  // the element count, so neither is computed again.
  struct Contiguous {
    int64_t numel;
  };
  TensorImpl(Storage storage, DimVector sizes, DimVector strides, Contiguous contiguous,
             ScalarType dtype, VersionCounter version_counter)
      : storage_(std::move(storage)),
        sizes_(std::move(sizes)),
        strides_(std::move(strides)),
        storage_offset_(0),
        numel_(contiguous.numel),
        dtype_(dtype),
        is_contiguous_(true),
        version_counter_(std::move(version_counter)) {}

  IntArrayRef sizes() const { return sizes_; }
  IntArrayRef strides() const { return strides_; }
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  int64_t numel() const { return numel_; }
  int64_t storage_offset() const { return storage_offset_; }
  ScalarType dtype() const { return dtype_; }
  Device device() const { return storage_.device(); }
  const Storage& storage() const { return storage_; }
  bool is_contiguous() const { return is_contiguous_; }
  // Address of element [0, ..., 0]. PendingWriteError while an asynchronous collective still
  // writes the storage's memory, through any alias (Note [Pending collective] in
  // docs/notes/version-counter.md).
  void* data() const {
    check_pending(*this, PendingAccess::kRead, "a read or write of its data");
    return static_cast<char*>(storage_.data()) + storage_offset_ * element_size(dtype_);
  }

  VersionCounter& version_counter() { return version_counter_; }
  const VersionCounter& version_counter() const { return version_counter_; }
  void set_version_counter(VersionCounter vc) { version_counter_ = std::move(vc); }

  // The tensor this one is a view of, always the root (a view of a view records the root base,
  // as PyTorch's ._base); null when this tensor owns its storage.
  const std::shared_ptr<TensorImpl>& view_base() const { return view_base_; }
  void set_view_base(std::shared_ptr<TensorImpl> base) { view_base_ = std::move(base); }

  AutogradMetaInterface* autograd_meta() const { return autograd_meta_.get(); }
  void set_autograd_meta(std::unique_ptr<AutogradMetaInterface> meta) {
    autograd_meta_ = std::move(meta);
  }

  // Replaces the geometry in place (used by as_strided_-style ops, never by views).
  void set_geometry(DimVector sizes, DimVector strides, int64_t storage_offset);
  // Takes other's storage, geometry and dtype (PyTorch's set_data, Python's `x.data = y`),
  // keeping this tensor's identity, version counter and autograd metadata.
  void set_data(const TensorImpl& other);

 private:
  void refresh_numel_and_contiguity();

  Storage storage_;
  DimVector sizes_;
  DimVector strides_;
  int64_t storage_offset_;
  int64_t numel_ = 1;
  ScalarType dtype_;
  bool is_contiguous_ = true;
  VersionCounter version_counter_;
  std::shared_ptr<TensorImpl> view_base_;
  std::unique_ptr<AutogradMetaInterface> autograd_meta_;
};

}  // namespace mutagrad
