#include <gtest/gtest.h>

#include "zoo/zoo.h"
#include "util/error.h"

namespace sa {
namespace {

TEST(Zoo, UnknownModelIsAnError) {
  ZooOptions o;
  o.model = "no-such-model";
  o.batch = 1;
  EXPECT_THROW(build_zoo_model(o), Error);
}

}  // namespace
}  // namespace sa
