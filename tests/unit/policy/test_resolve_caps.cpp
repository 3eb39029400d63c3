// resolve() without --cuda: the caller's probed caps decide the release and what can be emitted.
#include "helpers.h"

using namespace forge;
using namespace forge::policy;
using namespace forge::policy::test;

TEST(ToolkitProbe, ResolveWithoutCudaUsesTheProbedToolkit) {
    ResolveRequest req;
    req.platform = "linux_x86_64"; // the x86 lane on any host (the default is the host's)
    toolkit::ToolkitCaps tk;
    tk.nvcc = "/fake/nvcc";
    tk.version = toolkit::CudaVersion{13, 0, 88};
    // a toolkit that cannot emit sm_75: the probe, not the table, clamps
    for (int sm : {80, 86, 90, 100, 120})
        for (auto k : {arch::Kind::Sass, arch::Kind::Ptx})
            tk.emittable.insert(arch::Target{k, sm, arch::Suffix::None});
    req.toolkit = tk;
    auto r = resolve_loaded(req, shipped(), nullptr, gpus());
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(r->cuda, "13.0");
    EXPECT_EQ(r->list.to_string(), "8.0 8.6 9.0+PTX 10.0 12.0+PTX");
    ASSERT_EQ(r->clamped.size(), 1u);
    EXPECT_NE(r->clamped[0].reason.find("nvcc 13.0.88 cannot emit sm_75"), std::string::npos);
    EXPECT_NE(r->nvcc_source.find("/fake/nvcc"), std::string::npos);
}
