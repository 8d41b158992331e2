// Functionalization and capture (issue 41): include "func/func.h", link //func.
//   func::capture(f, inputs)      -> Graph: the program's ops, views and writes, as code
//   func::functionalize(graph)    -> Graph: the same program without in-place ops
//   func::functionalize(f)        -> a program: capture, functionalize, run
//   func::verify(f, inputs)       -> VerifyResult: eager, replayed, functionalized agree?
//   func::alias_report(graph)     -> AliasReport: mutated inputs, writes, aliases, regenerations
//   func::side_by_side_dot(g, fg) -> DOT text of both programs; render_side_by_side draws it
// See docs/functionalization.md.
#pragma once

#include "func/capture.h"
#include "func/functionalize.h"
#include "func/graph.h"
#include "func/render.h"
#include "func/report.h"
#include "func/verify.h"
