#include "zoo/zoo.h"

#include "util/error.h"

namespace sa {

std::vector<ZooModelInfo> zoo_models() { return {}; }

Graph build_zoo_model(const ZooOptions& options) {
  throw Error("unknown model '" + options.model + "'");
}

}  // namespace sa
