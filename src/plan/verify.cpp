// The plan verifier (Note [Verified rules] in verify.h), in plan/verify/.

#include "plan/verify.h"

#include "plan/verify/verifier.h"

namespace sa {

VerifyResult verify_plan(const Graph& g, const Plan& p) {
  return verifier::Verifier(g, p).run();
}

}  // namespace sa
