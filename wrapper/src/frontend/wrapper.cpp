#include "frontend/wrapper.h"

#include "core/colour.h"
#include "core/file.h"
#include "core/process.h"
#include "frontend/compare.h"
#include "frontend/compile_log.h"
#include "frontend/decide.h"
#include "frontend/log_call.h"
#include "frontend/notice.h"
#include "toolkit/probe.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <unistd.h>

namespace forge::frontend {

namespace {

void say(const std::string& text) {
    write_all(STDERR_FILENO, text);
}

std::vector<std::string> argv_for(const Call& call, const std::vector<std::string>& nvcc_args) {
    // nvcc as the caller spelled it: nvcc derives its toolkit root (_HERE_) from argv[0].
    const std::string nvcc = toolkit::exec_path(call.nvcc).string();
    std::vector<std::string> argv =
        call.launchers.empty() ? std::vector<std::string>{} : call.launcher_args;
    argv.push_back(nvcc);
    argv.insert(argv.end(), nvcc_args.begin(), nvcc_args.end());
    return argv;
}

ProcessSpec make_spec(const Call& call, const std::vector<std::string>& nvcc_args, bool capture) {
    ProcessSpec s;
    s.forward_signals = true;
    s.argv = argv_for(call, nvcc_args);
    s.path = call.launchers.empty() ? s.argv.front() : call.launchers.front();
    s.env = environment_with(toolkit::kDepthEnv, call.marker);
    // The environment the caller started us with: our marker out, theirs (if any) back.
    s.env_if_too_long = [&call] {
        return call.env.depth.empty() ? environment_without({toolkit::kDepthEnv})
                                      : environment_with(toolkit::kDepthEnv, call.env.depth);
    };
    s.output = capture ? ProcessSpec::Output::Capture : ProcessSpec::Output::Inherit;
    return s;
}

// nvcc reads a source from stdin: `-` (nvcc's own spelling) or a path naming our stdin.
bool reads_stdin(const nvcc::Invocation& inv) {
    return std::any_of(inv.sources.begin(), inv.sources.end(), [](const std::string& s) {
        return s == "-" || s == "/dev/stdin" || s == "/dev/fd/0" || s == "/proc/self/fd/0";
    });
}

long long elapsed_ms(const Call& call) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 call.started)
        .count();
}

void write_log(const Call& call, LogRecord& rec, int exit_code) {
    if (call.env.log.empty()) return;
    rec.exit_code = exit_code;
    rec.duration_ms = elapsed_ms(call);
    if (auto st = append_log_line(call.env.log, rec.to_json()); !st)
        say(fmt::format("nvcc-forge: warning: {}\n", st.error().to_string()));
}

bool is_name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// `name` (sm_80) in `text` as a word of its own: not inside sm_800 or xsm_80.
bool names_token(const std::string& text, const std::string& name) {
    for (std::size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
        const std::size_t end = at + name.size();
        if ((at == 0 || !is_name_char(text[at - 1])) &&
            (end == text.size() || !is_name_char(text[end])))
            return true;
    }
    return false;
}

std::vector<std::string> unique_names(std::vector<arch::Target> targets) {
    std::sort(targets.begin(), targets.end());
    targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
    return target_names(targets);
}

// The log record written (unless nothing was started) and the call's exit: a process's status,
// or its signal re-raised.
int finish(const Call& call, LogRecord& rec, const RunOutcome& outcome) {
    if (outcome.logged) write_log(call, rec, outcome.status);
    return outcome.process ? propagate(*outcome.process) : outcome.status;
}

// Runs `args` with inherited stdio; a call that cannot start is still logged.
RunOutcome run_plain(const Call& call, const std::vector<std::string>& args) {
    auto outcome = run_process(make_spec(call, args, false));
    if (!outcome) {
        say(fmt::format("nvcc-forge: {}\n", outcome.error().to_string()));
        return ended(Ran::Nothing, kExitInput);
    }
    return ran_process(Ran::AsGiven, *outcome);
}

void replay(const ProcessOutcome& o) {
    write_all(STDOUT_FILENO, o.out);
    write_all(STDERR_FILENO, o.err);
}

std::string indent(const std::string& text) {
    std::string out;
    size_t start = 0;
    while (start < text.size()) {
        size_t nl = text.find('\n', start);
        size_t end = nl == std::string::npos ? text.size() : nl + 1;
        out += "  | " + text.substr(start, end - start);
        start = end;
    }
    if (!out.empty() && out.back() != '\n') out += '\n';
    return out;
}

// One stub compile of the stand-in: the call without launchers (no ccache in front of a stub),
// what the stub is built with, and where it is kept.
struct StubJob {
    const Call& bare;
    const StubPlan& plan;
    const toolkit::ToolkitCaps& caps;
    const std::filesystem::path& dir;
    const std::string& key;
};

Result<ProcessOutcome> compile_stub(const Call& call, const StubJob& job, const std::string& out) {
    auto compile = [&](bool full_header) {
        std::vector<std::string> args =
            stub_compile_args(job.plan, call.plan->state_dir, job.caps.version, full_header);
        if (job.plan.per_output) args.push_back("-DNVCC_FORGE_PLAN_ID=0x" + job.key.substr(0, 7));
        args.push_back(stub_source_path(call.plan->state_dir).string());
        args.push_back("-o");
        args.push_back(out);
        return run_process(make_spec(job.bare, args, true));
    };
    auto outcome = compile(false);
    // A toolkit whose headers the short cuda_runtime.h does not suit: the stub with the toolkit's
    // own header, as any TU compiles. Not after a signal: that ends the call.
    if (outcome && outcome->exit_code != 0 && outcome->signal == 0 &&
        outcome->forwarded_signal == 0)
        outcome = compile(true);
    return outcome;
}

// The stub for `output`: the kept one when it is sound, else compiled and kept. A kept one that
// is not (standin.h, read_kept_stub) is named, removed and built again. nullopt: the call ends
// as `end` says (the error said).
std::optional<StubFile> obtain_stub(const Call& call, const StubJob& job, const std::string& output,
                                    RunOutcome& end) {
    KeptStub kept = read_kept_stub(job.dir, job.key);
    if (kept.stub) return std::move(kept.stub);
    if (!kept.problem.empty()) {
        say(fmt::format(
            "nvcc-forge: plan: refusing the kept stub {}; removed, compiling it again\n",
            kept.problem));
        drop_kept_stub(job.dir, job.key);
    }
    const std::string tmp =
        fmt::format("{}.{}.tmp", (job.dir / (job.key + ".out")).string(), ::getpid());
    auto outcome = compile_stub(call, job, tmp);
    std::error_code ec;
    if (!outcome || !outcome->succeeded()) std::filesystem::remove(tmp, ec);
    if (!outcome) {
        say(fmt::format("nvcc-forge: plan: {}\n", outcome.error().to_string()));
        end = ended(Ran::Nothing, kExitInput);
        return std::nullopt;
    }
    if (!outcome->succeeded()) {
        // Told to stop: the call ends as nvcc did, with no word of a failed stub.
        if (outcome->signal == 0 && outcome->forwarded_signal == 0)
            say(fmt::format("nvcc-forge: plan: the stub compile for {} failed:\n{}", output,
                            indent(outcome->err + outcome->out)));
        end = ran_process(Ran::Nothing, *outcome);
        return std::nullopt;
    }
    auto stub = keep_stub(job.dir, job.key, tmp);
    if (!stub) {
        std::filesystem::remove(tmp, ec);
        say(fmt::format("nvcc-forge: plan: {}\n", stub.error().to_string()));
        end = ended(Ran::Nothing, kExitInput);
        return std::nullopt;
    }
    return std::move(*stub);
}

// The stand-in's answer (standin.h): `args` is the call as the mode would run it. A link of
// objects runs for real (its inputs are stubs); anything with sources gets the stub, built once
// per flag set by the real nvcc and copied to each output.
RunOutcome plan_answer(const Call& call, const nvcc::Invocation& inv,
                       const std::vector<std::string>& args, const toolkit::ToolkitCaps& caps) {
    auto fin = nvcc::parse_invocation(args, call.env.prepend, call.env.append, call.cwd, caps);
    if (!fin) return run_plain(call, args); // nvcc says what is wrong, in its own words
    if (inv.sources.empty()) return run_plain(call, link_args(*fin, args));

    const StubPlan plan = plan_stub(*fin);
    Call bare = call;
    bare.launchers.clear();
    bare.launcher_args.clear();
    const std::filesystem::path stubs =
        call.plan->stub_cache.empty() ? call.plan->state_dir / "stubs" : call.plan->stub_cache;
    const std::string toolkit = toolkit_identity(call.nvcc.nvcc);
    for (const auto& output : plan.outputs) {
        std::error_code ec;
        const std::string unique =
            plan.per_output ? std::filesystem::absolute(output, ec).string() : std::string();
        const std::string key =
            stub_cache_key(toolkit, plan.flags, call.env.prepend, call.env.append, unique);
        const StubLock lock(stubs / (key + ".lock"));
        RunOutcome end;
        auto stub = obtain_stub(call, {bare, plan, caps, stubs, key}, output, end);
        if (!stub) return end;
        if (auto written = write_stub_output(*stub, output); !written) {
            say(fmt::format("nvcc-forge: plan: {}\n", written.error().to_string()));
            return ended(Ran::Nothing, kExitInput);
        }
    }
    for (const auto& dep : plan.depfiles) {
        const std::string text = depfile_text(dep.target, fin->sources);
        if (!replace_file(dep.path, text)) {
            say(fmt::format("nvcc-forge: plan: cannot write the dependency file {}\n", dep.path));
            return ended(Ran::Nothing, kExitInput);
        }
    }
    return ended(Ran::Nothing, kExitOk);
}

constexpr const char* kHowToSetPolicy =
    "set NVCC_FORGE_ARCH_LIST or NVCC_FORGE_PACKAGE, e.g. eval \"$(nvcc-forge env --package "
    "NAME)\"; under CMake, forge_arch_resolve() before forge_use_wrapper()";

// No silent passthrough (said on a device compile, once per build: calls without device code and
// --dryrun stay byte for byte nvcc's): no policy; settings the build fixed that replaced the
// environment's; a compiler cache in front of a wrapper whose policy it cannot see.
void say_build_notes(const Call& call, bool has_policy, const nvcc::Invocation& inv) {
    // Not on --dryrun, which stays nvcc's own output: sccache 0.16 reads it, keys on the steps it
    // lists (injected targets included) and shows none of its stderr.
    if (inv.dryrun) return;
    const FrontendEnv& env = call.env;
    if (!has_policy)
        say_once_per_build(env, "no-policy",
                           fmt::format("nvcc-forge: no policy is set, so nvcc calls are neither "
                                       "checked nor changed: {}\n",
                                       kHowToSetPolicy));
    if (!env.env_not_used.empty())
        say_once_per_build(
            env, "env-not-used",
            fmt::format("nvcc-forge: this build's settings were fixed by {}; the environment's {} "
                        "{} not used (change the settings there: reconfigure the build, or build "
                        "with the $CUDA_HOME/bin/nvcc that nvcc-forge env ... --shim ROOT "
                        "exports for the new policy)\n",
                        env.bound_by, fmt::join(env.env_not_used, ", "),
                        env.env_not_used.size() == 1 ? "is" : "are"));
    if (!call.cache_parent.empty())
        say_once_per_build(
            env, "unbound-under-cache",
            fmt::format("nvcc-forge: warning: {} runs this nvcc, whose policy comes from the "
                        "environment: the cache does not see it, and can answer a changed policy "
                        "with objects of the old one. Build with the shim bound to the policy "
                        "(eval \"$(nvcc-forge env ... --shim ROOT)\", then $CUDA_HOME/bin/nvcc) or "
                        "put nvcc-forge in front of the "
                        "cache (nvcc-forge {} nvcc ...)\n",
                        call.cache_parent, call.cache_parent));
    if (!call.env_policy_driver.empty())
        say_once_per_build(
            env, "env-policy-unseen",
            fmt::format("nvcc-forge: note: this launcher's policy comes from the environment "
                        "({}), which {} does not see: a changed list rebuilds nothing, and what is "
                        "rebuilt gets it beside objects of the old one. Put it on the launcher "
                        "line (CMAKE_CUDA_COMPILER_LAUNCHER=\"nvcc-forge;NVCC_FORGE_ARCH_LIST=...;"
                        "ccache\") or use ForgeArch (forge_arch_resolve)\n",
                        env.arch_list.empty() ? "NVCC_FORGE_PACKAGE=" + env.package
                                              : "NVCC_FORGE_ARCH_LIST=" + env.arch_list,
                        call.env_policy_driver));
}

// A call without a policy (run_call asks), before anything is probed: a mode that needs one
// refuses; nothing to compare and nothing to log is a plain exec (no probe, no parse) once this
// build has been told there is no policy (the first device compile parses the call to say it).
// That exec replaces this process, so for such a call this function never returns (only a failed
// exec comes back, as exit 2): nothing run_call does after it happens for that call.
std::optional<int> without_policy(const Call& call, std::optional<Mode> mode) {
    const FrontendEnv& env = call.env;
    if (mode && *mode != Mode::Observe) {
        say(fmt::format("nvcc-forge: NVCC_FORGE_MODE={} needs a policy, and none is set: {}\n",
                        mode_string(*mode), kHowToSetPolicy));
        return kExitInput;
    }
    if (env.log.empty() && said_in_this_build(env, "no-policy")) return exec_untouched(call);
    return std::nullopt;
}

// What the fallback after a failed rewritten call needs of the call it stands for.
struct InjectedCall {
    const nvcc::Invocation& inv;
    const Plan& plan;
    int stdin_fd = -1;
};

// What a rewrite changed, as the fallback's lines name it: "injected sm_90, clamped sm_50".
std::string rewrite_text(const nvcc::Rewrite& rw) {
    std::string what = rw.injected.empty() ? std::string() : "injected " + join_names(rw.injected);
    if (!rw.clamped_targets.empty())
        what += (what.empty() ? "" : ", ") + std::string("clamped ") +
                fmt::format("{}", fmt::join(unique_names(rw.clamped_targets), ", "));
    return what;
}

// The stderr lines after the fallback: whose failure it was, and what the rewritten call said.
void say_fallback(const InjectedCall& c, const ProcessOutcome& first, const ProcessOutcome& second,
                  bool own_failure) {
    const std::string what = rewrite_text(c.plan.rewrite);
    for (const auto& tu : tu_names(c.inv)) {
        if (own_failure)
            say(fmt::format("nvcc-forge: {}: the call fails as given too (exit {}), as it did "
                            "with {}: its own failure, not the injection's (its diagnostics are "
                            "above)\n",
                            tu, second.status_code(), what));
        else if (second.succeeded())
            say(fmt::format("nvcc-forge: {}: injection failed: the call with {} exited {}; "
                            "built the original call instead, which lacks them\n",
                            tu, what, first.status_code()));
        else
            say(fmt::format("nvcc-forge: {}: injection failed: the call with {} exited {}, "
                            "and the original call failed too (its diagnostics are above)\n",
                            tu, what, first.status_code()));
    }
    // Its own failure: the rewritten call said what the caller's call just said.
    if (!own_failure)
        say("nvcc-forge: the rewritten call's diagnostics:\n" + indent(first.err + first.out));
}

// The rewritten call failed (not by a signal): the caller's own call runs with inherited stdio,
// and its exit, output and signal are the caller's. The log and stderr say whose failure it was:
// injection-failed when the injected targets are to blame, call-failed when the call fails on
// its own (failure_is_the_calls_own). The caller gets the original's targets only when it built.
RunOutcome run_original_after_failure(const Call& call, const InjectedCall& c,
                                      const ProcessOutcome& first) {
    ProcessSpec second_spec = make_spec(call, call.args, false);
    second_spec.stdin_fd = c.stdin_fd;
    auto second = run_process(second_spec);
    if (!second) {
        replay(first);
        say(fmt::format("nvcc-forge: {}\n", second.error().to_string()));
        return ended(Ran::Nothing, kExitInput, false);
    }
    const bool own_failure = failure_is_the_calls_own(first, *second, c.plan.rewrite.injected);
    if (second->signal == 0) say_fallback(c, first, *second, own_failure);
    RunOutcome out = ran_process(second->succeeded() ? Ran::AsGiven : Ran::Nothing, *second);
    out.blame = own_failure ? kActionCallFailed : kActionInjectionFailed;
    return out;
}

} // namespace

bool failure_is_the_calls_own(const ProcessOutcome& rewritten, const ProcessOutcome& original,
                              const std::vector<arch::Target>& injected) {
    if (original.succeeded() || original.signal != 0 || original.forwarded_signal != 0 ||
        original.status_code() != rewritten.status_code())
        return false;
    const std::string said = rewritten.err + rewritten.out;
    return std::none_of(injected.begin(), injected.end(),
                        [&](const arch::Target& t) { return names_token(said, t.name()); });
}

int exec_untouched(const Call& call) {
    ProcessSpec spec = make_spec(call, call.args, false);
    Error e = exec_process(spec);
    say(fmt::format("nvcc-forge: {}\n", e.to_string()));
    return kExitInput;
}

namespace {

// NVCC_FORGE_MODE when set (into `out`); an exit code when it names no mode.
std::optional<int> read_env_mode(const FrontendEnv& env, std::optional<Mode>& out) {
    if (env.mode.empty()) return std::nullopt;
    auto m = parse_mode(env.mode, "NVCC_FORGE_MODE");
    if (!m) {
        say(fmt::format("nvcc-forge: NVCC_FORGE_MODE: {}\n", m.error().message));
        return kExitInput;
    }
    out = *m;
    return std::nullopt;
}

// The real nvcc could not be probed: the call runs untouched, unless a policy is set and the
// mode is strict.
int run_unprobed(const Call& call, bool configured, std::optional<Mode> env_mode,
                 const Error& why) {
    if (!configured) return exec_untouched(call);
    say(fmt::format("nvcc-forge: cannot probe the real nvcc: {}\n", why.to_string()));
    if (env_mode == Mode::Strict) return kExitInput;
    return exec_untouched(call);
}

// NVCC_FORGE_MODE, else the package's wrapper.mode, else inject (observe without a policy);
// nullopt when wrapper.mode names no mode (said).
std::optional<Mode> call_mode(const FrontendEnv& env, std::optional<Mode> env_mode,
                              const std::optional<EffectivePolicy>& policy) {
    if (env_mode) return env_mode;
    if (policy && !policy->wrapper.mode.empty()) {
        auto m = parse_mode(policy->wrapper.mode, "wrapper.mode");
        if (!m) {
            say(fmt::format("nvcc-forge: {}: {}\n", env.package, m.error().message));
            return std::nullopt;
        }
        return *m;
    }
    return policy ? Mode::Inject : Mode::Observe;
}

// -arch=native: what it means depends on this machine's GPU, asked per call (never cached).
void ask_native_sm(const Call& call, toolkit::ToolkitCaps& caps) {
    if (std::any_of(call.args.begin(), call.args.end(),
                    [](const std::string& a) { return a.find("native") != std::string::npos; }) ||
        call.env.prepend.find("native") != std::string::npos ||
        call.env.append.find("native") != std::string::npos)
        caps.native_sm = toolkit::query_native_sm(call.nvcc.nvcc.string());
}

// The call as given: exec'd in place, or run and logged when there is a log.
RunOutcome run_unchanged(const Call& call) {
    if (call.env.log.empty()) return ended(Ran::Nothing, exec_untouched(call), false);
    return run_plain(call, call.args);
}

void say_invocation_warnings(const Call& call, bool has_policy, const nvcc::Invocation& inv) {
    say_build_notes(call, has_policy, inv);
    for (const auto& w : inv.warnings)
        say(fmt::format("nvcc-forge: warning: {}\n", w));
    if (inv.uses_native && inv.warnings.empty())
        say("nvcc-forge: warning: -arch=native builds only for this machine's GPU (or nvcc's "
            "default without one); a distributable build needs explicit targets\n");
}

// A call after decide(): what the runners act on.
struct Decided {
    const Call& call;
    const nvcc::Invocation& inv;
    const EffectivePolicy* policy;
    const toolkit::ToolkitCaps& caps;
    const Plan& plan;
};

// Untouched (a call read and compared, or not): nvcc runs the call as given; the caller gets its
// targets unless a signal killed it.
RunOutcome run_as_given(const Decided& d) {
    const Call& call = d.call;
    if (!d.plan.compared) return run_unchanged(call);
    auto outcome = run_process(make_spec(call, call.args, false));
    if (!outcome) {
        say(fmt::format("nvcc-forge: {}\n", outcome.error().to_string()));
        return ended(Ran::Nothing, kExitInput, false);
    }
    return ran_process(outcome->signal == 0 ? Ran::AsGiven : Ran::Nothing, *outcome);
}

// Behind a launcher (ccache, sccache) a failed rewritten call may be the launcher's failure, not
// nvcc's: a read-only CCACHE_DIR fails every miss, while the original call, a hit of an object
// built before the policy, would exit 0 with fewer targets. nvcc alone with the same argv tells
// them apart: when it builds, the call ends with the launcher's failure (docs/build-hosts.md,
// "Whose failure the fallback follows"). nullopt: no launcher, or nvcc fails alone too (the
// injection's failure or the call's own: the fallback decides).
std::optional<RunOutcome> launcher_failure(const Decided& d, const ProcessOutcome& first,
                                           int stdin_fd) {
    const Call& call = d.call;
    if (call.launchers.empty()) return std::nullopt;
    Call bare = call;
    bare.launchers.clear();
    bare.launcher_args.clear();
    ProcessSpec spec = make_spec(bare, d.plan.argv, true);
    spec.stdin_fd = stdin_fd;
    auto alone = run_process(spec);
    if (!alone) return std::nullopt;
    // Told to stop while nvcc ran alone: the call ends, as after the rewritten call.
    if (alone->signal != 0 || alone->forwarded_signal != 0) {
        replay(first);
        return ran_process(Ran::Nothing, *alone);
    }
    if (!alone->succeeded()) return std::nullopt;
    replay(first);
    const std::string launcher = std::filesystem::path(call.launchers.front()).filename().string();
    for (const auto& tu : tu_names(d.inv))
        say(fmt::format("nvcc-forge: {}: {} failed (exit {}) on the call with {}, which nvcc "
                        "alone builds: the failure is {}'s (its diagnostics are above); not "
                        "falling back to the call as given, which would have fewer targets than "
                        "the policy\n",
                        tu, launcher, first.status_code(), rewrite_text(d.plan.rewrite), launcher));
    RunOutcome out = ran_process(Ran::Nothing, first);
    out.blame = kActionLauncherFailed;
    return out;
}

// The rewritten call runs with its output held back: if it fails, the original runs and its
// output (not the rewritten one's) is what the caller sees first.
RunOutcome run_rewritten(const Decided& d) {
    const Call& call = d.call;
    // Both calls must read what the caller's stdin held: it is read once, and each reads the copy.
    std::optional<StdinCopy> stdin_copy;
    if (reads_stdin(d.inv)) {
        auto copy = StdinCopy::take();
        if (!copy) {
            say(fmt::format("nvcc-forge: warning: {}; running the call as given, nothing "
                            "injected\n",
                            copy.error().to_string()));
            // No drop line: the warning is this call's word.
            RunOutcome out = run_plain(call, call.args);
            out.ran = Ran::Nothing;
            out.undone = true;
            return out;
        }
        stdin_copy.emplace(std::move(*copy));
    }
    const int stdin_fd = stdin_copy ? stdin_copy->fd() : -1;
    ProcessSpec first_spec = make_spec(call, d.plan.argv, true);
    first_spec.stdin_fd = stdin_fd;
    first_spec.argv_if_too_long = argv_for(call, call.args);
    auto first = run_process(first_spec);
    if (!first) {
        say(fmt::format("nvcc-forge: {}\n", first.error().to_string()));
        return ended(Ran::Nothing, kExitInput, false);
    }
    const bool stopped = first->signal != 0 || first->forwarded_signal != 0;
    if (first->too_long) {
        // What ran is the caller's own call: nothing injected, nothing clamped.
        replay(*first);
        for (const auto& tu : tu_names(d.inv))
            say(fmt::format("nvcc-forge: {}: the rewritten call is too long for this system "
                            "(E2BIG); ran the call as given\n",
                            tu));
        RunOutcome out = ran_process(stopped ? Ran::Nothing : Ran::AsGiven, *first);
        out.undone = true;
        return out;
    }
    // Told to stop (Ctrl-C, SIGTERM from make or CI): what nvcc made of it is the answer; a
    // retry would turn an interrupted build into a successful one.
    if (first->succeeded() || stopped) {
        replay(*first);
        return ran_process(stopped ? Ran::Nothing : Ran::Rewritten, *first);
    }
    if (auto out = launcher_failure(d, *first, stdin_fd)) return *out;
    return run_original_after_failure(call, {d.inv, d.plan, stdin_fd}, *first);
}

// The log's fields that the decision fixes, before anything runs.
void record_plan(const nvcc::Invocation& inv, const Plan& plan, LogRecord& rec) {
    rec.sources = inv.sources;
    rec.output = inv.output;
    if (!plan.read) return;
    rec.requested = target_names(inv.requested);
    rec.arch_specific = plan.tu_class.arch_specific();
    rec.arch_rule = arch_rule_string(plan.tu_class.rule);
    rec.action = plan.action;
    if (!plan.compared) return;
    rec.missing = target_names(plan.cmp.missing);
    rec.extra = target_names(plan.cmp.extra);
    if (plan.kind != PlanKind::Rewritten) return;
    rec.injected = target_names(plan.rewrite.injected);
    rec.clamped = plan.rewritten.clamped;
}

// The stand-in answers every call it reads (plan_answer) as the plan would run it, a refused one
// as given: its report names every call the build would stop at. What it answers is what the
// drop lines say, whatever became of the stub.
RunOutcome run_standin(const Decided& d) {
    const Plan& plan = d.plan;
    const bool rewritten = plan.kind == PlanKind::Rewritten;
    RunOutcome out = plan_answer(d.call, d.inv, rewritten ? plan.argv : d.call.args, d.caps);
    out.ran = rewritten ? Ran::Rewritten : Ran::AsGiven;
    return out;
}

// The last step: the refusal or the drop lines of what the caller got, said once what ran has
// ended, then the record (its action: the plan's, or whose failure it was) and the exit.
int log_call(const Decided& d, LogRecord& rec, const RunOutcome& outcome) {
    const CallEnd end = end_call(d.plan, outcome,
                                 {d.inv, d.policy, d.call.env.quiet, colour_wanted(STDERR_FILENO)});
    if (!end.lines.empty()) say(end.lines);
    rec.action = end.action;
    if (end.undone) {
        rec.injected.clear();
        rec.clamped.clear();
    }
    return finish(d.call, rec, outcome);
}

// The runner the plan chose: the stand-in, or nvcc as the kind says.
RunOutcome run_plan(const Decided& d) {
    if (d.plan.runner == Runner::StandIn) return run_standin(d);
    switch (d.plan.kind) {
    case PlanKind::Refused:
        return ended(Ran::Nothing, kExitPolicy); // the call does not run
    case PlanKind::Rewritten:
        return run_rewritten(d);
    case PlanKind::Untouched:
        break;
    }
    return run_as_given(d);
}

// A call nvcc-forge has read: decide, run, log.
int run_read_call(const Call& call, const nvcc::Invocation& inv,
                  const std::optional<EffectivePolicy>& policy, const toolkit::ToolkitCaps& caps,
                  Mode mode, LogRecord& rec) {
    const EffectivePolicy* pol = policy ? &*policy : nullptr;
    const Plan plan = decide({inv, pol, caps, mode, call.plan.has_value()});
    record_plan(inv, plan, rec);
    if (!plan.read) return finish(call, rec, run_unchanged(call));
    say_invocation_warnings(call, pol != nullptr, inv);
    for (const auto& n : plan.rewrite.notes)
        say(fmt::format("nvcc-forge: note: {}\n", n));
    const Decided d{call, inv, pol, caps, plan};
    return log_call(d, rec, run_plan(d));
}

} // namespace

int run_call(const Call& call) {
    const FrontendEnv& env = call.env;
    std::optional<Mode> env_mode;
    if (auto rc = read_env_mode(env, env_mode)) return *rc;
    const bool configured = call.policy_configured;
    if (!configured)
        if (auto rc = without_policy(call, env_mode)) return *rc;

    auto caps = toolkit_caps(env, call.nvcc.nvcc);
    if (!caps) return run_unprobed(call, configured, env_mode, caps.error());
    if (auto warning = packages_dir_warning(env)) say(*warning);
    std::optional<EffectivePolicy> policy;
    if (configured) {
        auto p = effective_policy(env, *caps, call.nvcc.nvcc);
        if (!p) {
            say(fmt::format("nvcc-forge: no usable policy: {}\n", p.error().to_string()));
            return kExitInput;
        }
        policy = std::move(*p);
    }
    const std::optional<Mode> mode = call_mode(env, env_mode, policy);
    if (!mode) return kExitInput;

    LogRecord rec;
    rec.cwd = call.cwd;
    rec.mode = std::string(mode_string(*mode));
    rec.action = kActionPassthrough;
    if (policy) rec.policy = target_names(policy->list.targets());

    ask_native_sm(call, *caps);
    auto inv = nvcc::parse_invocation(call.args, env.prepend, env.append, call.cwd, *caps);
    // nvcc gets a call it cannot read as it is, and says what is wrong with it in its own words.
    if (!inv) return finish(call, rec, run_unchanged(call));
    return run_read_call(call, *inv, policy, *caps, *mode, rec);
}

} // namespace forge::frontend
