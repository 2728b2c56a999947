# cython: language_level=3
"""The ISA levels this CPU can run (docs/build.md §1), for q7emu.kernels.extension's dispatch.

Compiled at the portable baseline, like every non-kernel module, so it can be imported on any x86-64 CPU.
A level counts when CPUID reports every feature its compile flags let the compiler use and the OS saves
the register state (GCC / Clang ``__builtin_cpu_supports`` checks XGETBV), so under
``qemu-x86_64 -cpu Haswell`` only ``generic`` and ``avx2`` count. Other compilers and CPUs: ``generic`` only.
"""

cdef extern from *:
    """
    #if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
    #define Q7_CPU_HAS(f) (__builtin_cpu_supports(f) != 0)
    static int q7_cpu_avx2(void) {
        __builtin_cpu_init();
        /* -march=x86-64-v3 */
        return Q7_CPU_HAS("avx") && Q7_CPU_HAS("avx2") && Q7_CPU_HAS("fma") && Q7_CPU_HAS("bmi")
            && Q7_CPU_HAS("bmi2") && Q7_CPU_HAS("f16c") && Q7_CPU_HAS("movbe") && Q7_CPU_HAS("popcnt")
            && Q7_CPU_HAS("sse4.2");
    }
    static int q7_cpu_avx512(void) {
        /* -march=x86-64-v4 -mavx512vbmi */
        return q7_cpu_avx2() && Q7_CPU_HAS("avx512f") && Q7_CPU_HAS("avx512bw") && Q7_CPU_HAS("avx512cd")
            && Q7_CPU_HAS("avx512dq") && Q7_CPU_HAS("avx512vl") && Q7_CPU_HAS("avx512vbmi");
    }
    #define Q7_CPU_DETECTS 1
    #else
    static int q7_cpu_avx2(void) { return 0; }
    static int q7_cpu_avx512(void) { return 0; }
    #define Q7_CPU_DETECTS 0
    #endif
    """
    int q7_cpu_avx2() nogil
    int q7_cpu_avx512() nogil
    int Q7_CPU_DETECTS


def levels() -> tuple:
    """The ISA levels this CPU supports, lowest first: ``("generic",)``, ``(..., "avx2")``,
    ``(..., "avx2", "avx512")``."""
    out = ["generic"]
    if q7_cpu_avx2():
        out.append("avx2")
    if q7_cpu_avx512():
        out.append("avx512")
    return tuple(out)


def detects() -> bool:
    """Whether this build can detect levels above ``generic`` (GCC or Clang on x86)."""
    return bool(Q7_CPU_DETECTS)
