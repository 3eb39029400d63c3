// The inject-mode fallback's judgement (frontend/wrapper.h, failure_is_the_calls_own): after the
// rewritten call failed and the caller's own call ran, was it the injected targets' failure or
// the call's own (an unwritable -o, a broken source)?
#include "frontend/wrapper.h"

#include <gtest/gtest.h>

using namespace forge;
using namespace forge::frontend;

namespace {

ProcessOutcome exited(int code, std::string err = {}) {
    ProcessOutcome o;
    o.exit_code = code;
    o.err = std::move(err);
    return o;
}

std::vector<arch::Target> targets(const std::string& list) {
    auto l = arch::ArchList::parse(list, "test");
    EXPECT_TRUE(l.ok());
    return l->targets();
}

} // namespace

TEST(Fallback, TheCallsOwnFailureNamesNoInjectedTargetAndFailsAsGivenTheSameWay) {
    const auto injected = targets("8.0 9.0+PTX"); // sm_80 sm_90 compute_90
    const ProcessOutcome unwritable =
        exited(1, "nvcc fatal   : Could not open output file '/ro/k.o'\n");
    EXPECT_TRUE(failure_is_the_calls_own(unwritable, unwritable, injected));
    const ProcessOutcome broken =
        exited(1, "k.cu(3): error: identifier \"undeclared_symbol\" is undefined\n");
    EXPECT_TRUE(failure_is_the_calls_own(broken, broken, injected));
    // What the rewritten call said need not be the caller's word for word (two targets, two
    // copies of an error).
    EXPECT_TRUE(failure_is_the_calls_own(exited(1, broken.err + broken.err), broken, injected));
}

TEST(Fallback, AnInjectionFailureIsAnyOtherOutcome) {
    const auto injected = targets("8.0");
    const ProcessOutcome names_sm80 = exited(1, "ptxas error   : Feature not supported on sm_80\n");
    // The caller's call builds: the injection is to blame, whatever its message names.
    EXPECT_FALSE(
        failure_is_the_calls_own(exited(1, "#error needs sm_90 or newer\n"), exited(0), injected));
    // The message names an injected target.
    EXPECT_FALSE(failure_is_the_calls_own(names_sm80, exited(1, "other\n"), injected));
    // It fails otherwise as given.
    EXPECT_FALSE(failure_is_the_calls_own(exited(2, "x\n"), exited(1, "x\n"), injected));
    // Ended by a signal, or told to stop: nobody's failure to judge.
    ProcessOutcome killed;
    killed.signal = 9;
    EXPECT_FALSE(failure_is_the_calls_own(exited(137), killed, injected));
    ProcessOutcome told = exited(255);
    told.forwarded_signal = 15;
    EXPECT_FALSE(failure_is_the_calls_own(exited(255), told, injected));
}

TEST(Fallback, ATargetIsNamedOnlyAsAWordOfItsOwn) {
    const auto injected = targets("8.0");
    // sm_800 and xsm_80 are not sm_80.
    const ProcessOutcome other = exited(1, "error: unknown arch sm_800 in xsm_80.cu\n");
    EXPECT_TRUE(failure_is_the_calls_own(other, other, injected));
    const ProcessOutcome quoted = exited(1, "nvcc fatal : Value 'sm_80' is not defined\n");
    EXPECT_FALSE(failure_is_the_calls_own(quoted, quoted, injected));
}
