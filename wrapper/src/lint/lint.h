// nvcc-forge lint: tells from the sources, before a build, which kernels an arch list would stub
// out.
//
// Two scans over a source tree, both against the resolved arch list:
//  1. Arch-gated device code the list does not declare (C, C++, CUDA sources; comments and string
//     literals are not code, inline-asm templates are). The trap: code under
//     `#if __CUDA_ARCH__ >= 890` exists only in images compiled for 8.9 or newer. If an Ada device
//     loads the sm_86 cubin (the list has no 8.9), it runs the other branch - typically an empty
//     stub that host dispatch still selects - and fails with cudaErrorLaunchFailure or silently
//     wrong results on real hardware. Nothing fails at build time.
//  2. Build scripts that take the arch decision away from the request: they read or overwrite
//     TORCH_CUDA_ARCH_LIST themselves, or emit -gencode / arch=compute_ / CUDA_ARCHITECTURES of
//     their own (flash-attention's ladder, SageAttention's whitelist, pointnet2_ops' override),
//     and explicit targets (sm_90a, compute_120a, "100a") the list does not declare.
//
// "Declared" for an arch gate is decided device by device with arch/coverage.h's rules: for every
// real GPU the gate is meant for, the image that GPU loads from the list (its best cubin, else the
// PTX the driver JITs) must have been compiled with a __CUDA_ARCH__ that passes the gate. A GPU the
// list does not reach at all is coverage's business, not the lint's. So `>= 890` needs 8.9 in the
// list whenever an 8.x cubin or older PTX would otherwise serve Ada; `== 800` needs 8.0 itself.
//
// Rule ids (stable; used in JSON and in lint_ignore):
//   arch-gate            __CUDA_ARCH__ compared with a constant or a macro (`>=`, `>`, `<`, `<=`,
//                        `==`, `!=`, either operand order, parentheses), nv/target NV_PROVIDES_SM_X
//                        / NV_IS_EXACTLY_SM_X
//   fp8-type             FP8 types, intrinsics and PTX (e4m3, e5m2, __nv_fp8*, __nv_cvt_*fp8*):
//                        needs 8.9
//   arch-feature         __CUDA_ARCH_FEAT_SMxx_ALL, __CUDA_ARCH_HAS_FEATURE__(SMxx_ALL),
//                        NV_HAS_FEATURE_SM_xxa/f, CUTLASS_ARCH_MMA_SMxxA_ENABLED: needs xx a/f
//   arch-specific-macro  __CUDA_ARCH_SPECIFIC__ (needs an `a` target) and
//                        __CUDA_ARCH_FAMILY_SPECIFIC__ (needs an `a` or `f` target)
//   explicit-target      a build file names a target (sm_89, compute_90a, lto_100, "100a",
//                        "9.0a", CUDA_ARCHITECTURES 90a-real, "3.7+PTX;5.0") the list lacks;
//                        an `a` target needs that `a` entry, any other needs its SM in any
//                        form (sm_110f -> needs "11.0", as the gate folds suffixes)
//   build-arch-gate      a build file gates on HAS_SMxx (SageAttention builds _qattn_sm89 only
//   then) script-reads-arch-list   reads TORCH_CUDA_ARCH_LIST itself (then parses it its own way)
//   script-splits-arch-list  splits TORCH_CUDA_ARCH_LIST (or a name bound from it) on separators
//                        the exported form does not use (`.split(";")` meeting the space form, a
//                        plain `.split()` meeting the ';' form): the script sees fewer tokens
//   script-writes-arch-list  sets, overrides or clears TORCH_CUDA_ARCH_LIST
//   script-own-arch-knob     reads its own *CUDA_ARCH* variable (FLASH_ATTN_CUDA_ARCHS, ...)
//   script-emits-gencode     -gencode, --generate-code, arch=compute_, -arch=sm_, code=sm_ ...
//   script-sets-cuda-architectures  CMake CUDA_ARCHITECTURES with literal values
// The script-* rules do not depend on the list: a script that decides for itself is a finding
// under every list.
//
// `needs` is an arch token: "8.9", "9.0a", "10.0f"; "*a" / "*f" mean "any arch-specific / any
// family target" (a bare `#ifdef __CUDA_ARCH_SPECIFIC__`); "" for script-* rules.
//
// lint_ignore entries and their glob dialect: lint/ignore.h.
#pragma once

#include "lint/build_rules.h"
#include "lint/finding.h"
#include "lint/ignore.h"
#include "lint/source_rules.h"
#include "lint/tree.h"
