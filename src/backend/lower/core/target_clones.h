// Kernels compiled for AVX-512, AVX2 and baseline x86-64, chosen at load time
// by the CPU (GCC's target_clones: an ifunc whose resolver the dynamic loader
// calls while it relocates the executable).
//
// ONNXFUSE_TARGET_CLONES, on a function: the three builds, except under
// ThreadSanitizer (ONNXFUSE_TSAN), where the baseline build alone: TSan
// instruments the resolvers too, and they run before TSan's runtime has
// started, which crashes the process before main (a SIGSEGV in
// elf_machine_lazy_rel). The TSan build checks the kernels' memory accesses at
// the baseline ISA; the other builds compute the same thing wider.
// ONNXFUSE_TEMPLATE_CLONES, on a function template: the same, and the
// baseline build under clang too, which does not multiversion templates (its
// builds: the fuzz targets, scripts/fuzz.sh).
#pragma once

// GCC says -fsanitize=thread with __SANITIZE_THREAD__, clang with __has_feature.
#if defined(__SANITIZE_THREAD__)
#define ONNXFUSE_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ONNXFUSE_UNDER_TSAN 1
#endif
#endif

#if defined(ONNXFUSE_UNDER_TSAN)
#define ONNXFUSE_TARGET_CLONES
#else
#define ONNXFUSE_TARGET_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif

#if defined(__clang__)
#define ONNXFUSE_TEMPLATE_CLONES
#else
#define ONNXFUSE_TEMPLATE_CLONES ONNXFUSE_TARGET_CLONES
#endif
