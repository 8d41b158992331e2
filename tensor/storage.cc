#include "tensor/storage.h"

#include "tensor/backend.h"
#include "tensor/small_object_pool.h"

namespace mutagrad {

Storage Storage::allocate(Device device, size_t nbytes) {
  Backend& backend = backend_for(device);
  backend.check_device(device);
  std::shared_ptr<void> mem = backend.allocator().allocate(nbytes);
  void* data = mem.get();
  return Storage(make_pooled<Impl>(Impl{std::move(mem), data, nbytes, device}));
}

Storage Storage::from_blob(void* data, size_t nbytes, Device device, std::shared_ptr<void> owner) {
  return Storage(make_pooled<Impl>(Impl{std::move(owner), data, nbytes, device, false}));
}

}  // namespace mutagrad
