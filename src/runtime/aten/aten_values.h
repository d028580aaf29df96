#pragma once
// The ATen kernel plugin's decoding of exec-file values into libtorch's
// (dtypes, memory formats, numbers), its error text, and libtorch schemas
// read for the access check (Note [ATen access check]). Plugin-internal:
// includes libtorch headers, so only runtime/aten/aten_kernels.cpp and
// runtime/aten/aten_values.cpp include it.

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/function_schema.h>
#include <c10/core/MemoryFormat.h>
#include <c10/core/Scalar.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>
#include <nlohmann/json.hpp>

#include "runtime/aten/aten_access.h"

namespace sa::runtime::aten_values {

using nlohmann::json;

c10::ScalarType scalar_type(const std::string& d);
c10::MemoryFormat memory_format(const std::string& m);
std::vector<int64_t> ints(const json& j);
std::string excerpt(const json& v);
std::string torch_message(const c10::Error& e);
double decode_float(const json& v);
c10::Scalar number(const json& v);
bool takes_tensors(const c10::TypePtr& t);
bool writes(const c10::AliasInfo* a);
AtenReturn return_kind(const c10::TypePtr& t);
AtenSchema describe_schema(const c10::FunctionSchema& fs);

}  // namespace sa::runtime::aten_values
