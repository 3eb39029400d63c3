// A packages directory the user named (policy::check_packages_dir): one that cannot be used is an
// error naming the value, never the policy row in silence.
#include "helpers.h"

#include <climits>
#include <string>

using namespace forge;
using namespace forge::policy;
using namespace forge::policy::test;

namespace {

Error unusable(const std::string& value) {
    auto st = check_packages_dir(value, "NVCC_FORGE_PACKAGES_DIR");
    EXPECT_FALSE(st.ok()) << value.substr(0, 200);
    return st.ok() ? Error{} : st.error();
}

} // namespace

TEST(PackagesDir, AUsableDirectoryPasses) {
    EXPECT_TRUE(check_packages_dir(fixtures() + "/packages", "--packages-dir").ok());
}

TEST(PackagesDir, EachUnusableValueIsNamedWithItsOrigin) {
    const std::string dir = fixtures() + "/packages";
    struct Case {
        std::string value;
        std::string says;
    };
    const std::vector<Case> cases{
        {dir + "/no_such_dir", "No such file or directory"},
        {dir + "/lanes/build_matrix.yml", "is not a directory"},
        {dir + "\n", "control character at byte " + std::to_string(dir.size())},
        {"/" + std::string(131 * 1024, 'd'), "longer than a path"},
        {"", "No such file or directory"},
    };
    for (const auto& c : cases) {
        const Error e = unusable(c.value);
        EXPECT_EQ(e.key, "NVCC_FORGE_PACKAGES_DIR");
        EXPECT_EQ(e.exit_code, kExitInput);
        const std::string text = e.to_string();
        EXPECT_NE(text.find(c.says), std::string::npos) << text.substr(0, 400);
        EXPECT_NE(text.find(c.value.substr(0, 20)), std::string::npos) << text.substr(0, 400);
        EXPECT_LT(text.size(), 600u) << "a long value is cut, not repeated";
        EXPECT_EQ(text.find('\n'), std::string::npos) << "one line: " << text;
    }
}
