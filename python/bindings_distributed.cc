// The C++ behind mutagrad.distributed and mutagrad.nn.parallel (the _distributed submodule):
// distributed/'s process group, collectives, Work and DataParallel. Every collective takes the
// Python caller's file and line, which the package passes (sys._getframe(1)), so that a stale
// tensor's error names the .py line of the all_reduce.
//
//   _C._distributed.init_process_group("mpi")
//   work = _C._distributed.all_reduce(t, "sum", True, __file__, 42)   # a Work; None if sync
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "distributed/distributed.h"
#include "python/bindings.h"

namespace mutagrad::python {
namespace {

namespace dist = mutagrad::distributed;

// File names of call sites: interned, since a MutationSite keeps the pointer for good. Guarded
// by the GIL.
CallSite site_of(const std::string& file, int line) {
  static auto* names = new std::unordered_set<std::string>();
  return CallSite{names->insert(file).first->c_str(), line};
}

dist::ReduceOp reduce_op(const std::string& name) {
  if (name == "sum") return dist::ReduceOp::kSum;
  if (name == "avg") return dist::ReduceOp::kAvg;
  if (name == "product") return dist::ReduceOp::kProduct;
  if (name == "min") return dist::ReduceOp::kMin;
  if (name == "max") return dist::ReduceOp::kMax;
  throw ValueError(str("distributed: unknown reduce op '", name,
                       "'; expected ReduceOp.SUM, AVG, PRODUCT, MIN or MAX"));
}

// The collectives block in MPI: Python threads run meanwhile (they touch no Python object).
using release_gil = py::call_guard<py::gil_scoped_release>;

}  // namespace

void bind_distributed(py::module_& m) {
  py::module_ d = m.def_submodule("_distributed", "distributed/: process groups and DataParallel");

  py::class_<dist::Work, std::shared_ptr<dist::Work>>(d, "Work")
      .def("wait", &dist::Work::wait, release_gil())
      .def("is_completed", &dist::Work::is_completed, release_gil());

  d.def("init_process_group",
        [](const std::string& backend) { dist::init_process_group(backend); });
  d.def("is_initialized", &dist::is_initialized);
  d.def("destroy_process_group", &dist::destroy_process_group);
  d.def("get_rank", [] { return dist::default_group().rank(); });
  d.def("get_world_size", [] { return dist::default_group().size(); });
  d.def("get_backend", [] { return std::string(dist::default_group().backend_name()); });
  d.def("set_timeout", [](double seconds) { dist::default_group().set_timeout_seconds(seconds); });
  d.def(
      "barrier",
      [](const std::string& file, int line) { dist::default_group().barrier(site_of(file, line)); },
      release_gil());
  // Each collective: async=True returns the Work, async=False waits and returns None.
  d.def("all_reduce",
        [](const Tensor& t, const std::string& op, bool async, const std::string& file,
           int line) -> std::shared_ptr<dist::Work> {
          const CallSite site = site_of(file, line);
          const dist::ReduceOp rop = reduce_op(op);
          py::gil_scoped_release no_gil;
          if (async) return dist::default_group().all_reduce_async_(t, rop, site);
          dist::default_group().all_reduce_(t, rop, site);
          return nullptr;
        });
  d.def("broadcast",
        [](const Tensor& t, int src, bool async, const std::string& file,
           int line) -> std::shared_ptr<dist::Work> {
          const CallSite site = site_of(file, line);
          py::gil_scoped_release no_gil;
          if (async) return dist::default_group().broadcast_async_(t, src, site);
          dist::default_group().broadcast_(t, src, site);
          return nullptr;
        });
  d.def("all_gather",
        [](const std::vector<Tensor>& out, const Tensor& t, bool async, const std::string& file,
           int line) -> std::shared_ptr<dist::Work> {
          const CallSite site = site_of(file, line);
          py::gil_scoped_release no_gil;
          if (async) return dist::default_group().all_gather_async(out, t, site);
          dist::default_group().all_gather(out, t, site);
          return nullptr;
        });
  d.def("reduce_scatter",
        [](const Tensor& out, const std::vector<Tensor>& inputs, const std::string& op, bool async,
           const std::string& file, int line) -> std::shared_ptr<dist::Work> {
          const CallSite site = site_of(file, line);
          const dist::ReduceOp rop = reduce_op(op);
          py::gil_scoped_release no_gil;
          if (async) return dist::default_group().reduce_scatter_async_(out, inputs, rop, site);
          dist::default_group().reduce_scatter_(out, inputs, rop, site);
          return nullptr;
        });

  py::class_<dist::DataParallel>(d, "DataParallel")
      .def(py::init([](const std::vector<Tensor>& params, int64_t bucket_cap_bytes, bool broadcast,
                       const std::string& file, int line) {
             dist::DataParallelOptions options;
             options.bucket_cap_bytes = bucket_cap_bytes;
             options.broadcast_parameters = broadcast;
             const CallSite site = site_of(file, line);
             py::gil_scoped_release no_gil;
             return std::make_unique<dist::DataParallel>(params, dist::default_group(), options,
                                                         site);
           }),
           py::arg("params"), py::arg("bucket_cap_bytes"), py::arg("broadcast"), py::arg("file"),
           py::arg("line"))
      .def("buckets", &dist::DataParallel::buckets);
}

}  // namespace mutagrad::python
