#pragma once
// What each exec op touches, checked against what its graph op accesses
// before anything runs (Note [ATen access check]).
//
// Note [ATen access check]
// ------------------------
// The runtime gives an op the objects of the tensors its graph op accesses
// and moves, swaps, drops and recomputes tensors by the graph's accesses: a
// tensor the graph's op only reads may share its object with another
// tensor's later, may have been swapped out without a copy back, and stays
// as it was when the op is recomputed. So an exec op must touch exactly as
// the graph says, or the training differs silently (an in-place gelu_ where
// the graph says gelu; an op reading its own output before it is written).
// With the operator's schema (from libtorch, so in the plugin, before the
// first iteration), every exec op is checked:
//   - its arguments match the schema: no more positional ones than the
//     schema has, keyword arguments that name an argument not given
//     positionally, every argument without a default given, tensor views
//     only where the schema takes tensors;
//   - an argument the op writes (`Tensor(a!)` in the schema: in-place and
//     out= overloads; or one the allow-list names as written without the
//     schema saying so, Note [ATen allow-list]) names only tensors the
//     graph's op updates or creates;
//   - an argument it only reads names only tensors the graph's op reads or
//     updates: never one it creates, which holds nothing before the op
//     writes it;
//   - its results fit the schema's returns (a tensor for a Tensor, a list
//     for a Tensor[]), so that every output the graph's op creates is
//     written.
// The graph may say an op updates a tensor its schema does not write (the
// capture's mutation check saw the bytes change): a read of an update is a
// read of a tensor that exists, and the runtime handles it as an update.
// Independent of libtorch: the plugin describes each schema as an AtenSchema.

#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "runtime/aten/aten_program.h"

namespace sa::runtime {

struct AtenSchemaArgument {
  std::string name;
  std::string type;  // for errors: "Tensor(a!)", "int[]"
  bool kwarg_only = false;
  bool has_default = false;
  std::optional<bool> default_bool;  // a bool argument's default
  bool takes_tensors = false;        // Tensor, Tensor?, Tensor[], Tensor?[]
  bool writes = false;               // alias info with a write: Tensor(a!), Tensor(a!)[]
};

enum class AtenReturn { kTensor, kTensorList, kOther };

struct AtenSchema {
  std::string name;  // "aten::add.out"
  std::vector<AtenSchemaArgument> arguments;
  std::vector<AtenReturn> returns;
};

// Throws sa::Error "<exec file>: ops[o] (<op>): <what>" when exec op o does
// not fit its schema or touches what graph op o does not say it touches.
void check_aten_access(const Graph& g, const AtenProgram& p, OpId o, const AtenSchema& s);

}  // namespace sa::runtime
