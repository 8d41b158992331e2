// mutagrad._C graph inspection (issue 14): the dry run of backward (autograd/check_backward.h).
// mutagrad/autograd/graph.py wraps these in check().
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "autograd/history.h"
#include "python/bindings.h"
#include "python/call_site.h"

namespace mutagrad::python {
namespace {

// Anomaly mode's forward site: the innermost Python frame (nodes may be made without the GIL).
CallSite python_forward_site() {
  py::gil_scoped_acquire gil;
  return python_call_site();
}

}  // namespace

void bind_inspect(py::module_& m) {
  using autograd::BackwardProblem;
  py::class_<BackwardProblem>(m, "_BackwardProblem")
      .def_property_readonly("kind",
                             [](const BackwardProblem& p) {
                               switch (p.kind) {
                                 case BackwardProblem::Kind::kStale:
                                   return "stale";
                                 case BackwardProblem::Kind::kReleased:
                                   return "released";
                                 case BackwardProblem::Kind::kView:
                                   return "view";
                               }
                               return "?";
                             })
      .def_readonly("node", &BackwardProblem::node)
      .def_readonly("wrapper", &BackwardProblem::wrapper)
      .def_readonly("field", &BackwardProblem::field)
      .def_readonly("order", &BackwardProblem::order)
      .def_property_readonly("shape", [](const BackwardProblem& p) { return make_size(p.shape); })
      .def_property_readonly("dtype", [](const BackwardProblem& p) { return dtype_name(p.dtype); })
      .def_readonly("saved_version", &BackwardProblem::saved_version)
      .def_readonly("current_version", &BackwardProblem::current_version)
      .def_readonly("packed", &BackwardProblem::packed)
      .def_property_readonly("write_op",
                             [](const BackwardProblem& p) -> py::object {
                               if (!p.write || p.write->op == nullptr) return py::none();
                               return py::str(p.write->op);
                             })
      .def_property_readonly("write_file",
                             [](const BackwardProblem& p) -> py::object {
                               if (!p.write || p.write->file == nullptr) return py::none();
                               return py::str(p.write->file);
                             })
      .def_property_readonly("write_line",
                             [](const BackwardProblem& p) -> py::object {
                               if (!p.write || p.write->file == nullptr) return py::none();
                               return py::int_(p.write->line);
                             })
      .def("message", &BackwardProblem::message)
      .def("__repr__", &BackwardProblem::message);
  using autograd::MutationLog;
  using autograd::MutationRecord;
  py::class_<MutationLog>(m, "_MutationLog")
      .def(py::init<>())
      .def("stop", &MutationLog::stop)
      .def_property_readonly("active", &MutationLog::active)
      .def("watch",
           [](MutationLog& log, const py::list& roots) {
             std::vector<Tensor> tensors;
             for (py::handle h : roots) tensors.push_back(h.cast<Tensor>());
             log.watch(tensors);
           })
      .def("records",
           [](const MutationLog& log) {
             py::list out;
             for (const MutationRecord& r : log.records()) {
               py::dict d;
               d["index"] = r.index;
               d["op"] = r.op;
               d["file"] = r.file;
               d["line"] = r.line;
               d["shape"] = py::cast(r.shape);  // a list, as in the JSON
               d["dtype"] = r.dtype;
               d["index_expression"] = r.index_expression.empty()
                                           ? py::object(py::none())
                                           : py::object(py::str(r.index_expression));
               d["storage"] = r.storage;
               d["version_before"] = r.version_before;
               d["version_after"] = r.version_after;
               d["saved_by"] = r.saved_by;
               d["snapshot_bytes"] = r.snapshot_bytes;
               out.append(d);
             }
             return out;
           })
      .def_property_readonly("num_writes", &MutationLog::num_writes)
      .def_property_readonly("num_hits", &MutationLog::num_hits)
      .def_property_readonly("snapshot_bytes", &MutationLog::snapshot_bytes)
      .def("summary", &MutationLog::summary)
      .def("to_jsonl", &MutationLog::to_jsonl)
      .def("write_jsonl", &MutationLog::write_jsonl, py::arg("path"));
  m.def("_to_dot", [](const py::list& roots) {
    std::vector<Tensor> tensors;
    for (py::handle h : roots) tensors.push_back(h.cast<Tensor>());
    return autograd::to_dot(tensors);
  });
  // Rendered bytes (SVG text is UTF-8).
  m.def(
      "_render_dot",
      [](const std::string& dot, const std::string& format) {
        std::string data;
        {
          py::gil_scoped_release release;
          data = autograd::render_dot(dot, format);
        }
        return py::bytes(data);
      },
      py::arg("dot"), py::arg("format"));
  m.def(
      "_set_detect_anomaly",
      [](bool enabled) {
        autograd::set_forward_site_provider(&python_forward_site);
        autograd::set_detect_anomaly(enabled);
      },
      py::arg("enabled"));
  m.def("_is_anomaly_enabled", &autograd::is_anomaly_enabled);
  // allow_mutation_on_saved_tensors' scope (Note [Snapshot scopes] in autograd/mutation_policy.h).
  using autograd::SnapshotScope;
  py::class_<SnapshotScope, std::shared_ptr<SnapshotScope>>(m, "_SnapshotScope")
      .def_property_readonly("is_open", &SnapshotScope::is_open);
  m.def("_enter_snapshot_scope", [] {
    auto scope = std::make_shared<SnapshotScope>();
    autograd::set_snapshot_scope(scope);
    return scope;
  });
  m.def("_exit_snapshot_scope", [](const std::shared_ptr<SnapshotScope>& scope) {
    scope->close();
    autograd::set_snapshot_scope(nullptr);
  });
  m.def("_in_snapshot_scope", [] { return autograd::current_snapshot_scope() != nullptr; });
  // autograd.graph.increment_version(t): one tracked bump (a later stale error names the line).
  m.def(
      "_increment_version",
      [](const Tensor& t) { autograd::bump_version(t, "increment_version", python_call_site()); },
      py::arg("tensor"));
  // autograd.graph.get_gradient_edge(t): (node, output_nr); a leaf's AccumulateGrad is made.
  m.def(
      "_gradient_edge",
      [](const Tensor& t) {
        const autograd::Edge edge = autograd::gradient_edge(t);
        return py::make_tuple(edge.function ? py::cast(edge.function) : py::none(), edge.input_nr);
      },
      py::arg("tensor"));
  // (problems, nodes checked, saved tensors checked, report text)
  m.def("_check_backward", [](const py::list& roots) {
    std::vector<Tensor> tensors;
    for (py::handle h : roots) tensors.push_back(h.cast<Tensor>());
    autograd::BackwardCheck check = autograd::check_backward(tensors);
    const std::string text = autograd::to_string(check);
    return py::make_tuple(check.problems, check.nodes_checked, check.saved_checked, text);
  });
}

}  // namespace mutagrad::python
