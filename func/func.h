// Functionalization and capture (issue 41): include "func/func.h", link //func.
//   func::capture(f, inputs)      -> Graph: the program's ops, views and writes, as code
//   func::functionalize(graph)    -> Graph: the same program without in-place ops
//   func::functionalize(f)        -> a program: capture, functionalize, run
// See docs/functionalization.md.
#pragma once

#include "func/capture.h"
#include "func/functionalize.h"
#include "func/graph.h"
