# cython: language_level=3
"""The scalar core: one `cdef inline ... noexcept nogil` function per base-Xtensa op a program may use
(docs/firmware.md §6.4; docs/asm.md §3). Every other fact of an op (its operands, immediate ranges, slot class) is
in its record in q7emu/primitives/scalar_ops.py; the program interpreter (src/kernels/_program.pyx) decodes the
operands and calls these. Registers are uint32_t; arithmetic wraps modulo 2^32; a comparison is signed unless the
mnemonic ends in `u`. The caller checks what can fail before calling (a divisor of 0, a memory address).
Named `xt_<mnemonic>` (`and`, `or`, `abs` are taken words)."""
cimport cython
from libc.stdint cimport uint8_t, uint16_t, int16_t, uint32_t, int32_t, uint64_t, int64_t

# movi: at = imm (signed 12-bit, sign-extended)
cdef inline uint32_t xt_movi(int32_t imm) noexcept nogil:
    return <uint32_t>imm

# const16: at = (at << 16) | imm16
cdef inline uint32_t xt_const16(uint32_t at, int32_t imm) noexcept nogil:
    return (at << 16) | (<uint32_t>imm & 0xFFFFu)

# mov: ar = as
cdef inline uint32_t xt_mov(uint32_t s) noexcept nogil:
    return s

# addi: at = as + imm
cdef inline uint32_t xt_addi(uint32_t s, int32_t imm) noexcept nogil:
    return s + <uint32_t>imm

# addmi: at = as + imm (a multiple of 256)
cdef inline uint32_t xt_addmi(uint32_t s, int32_t imm) noexcept nogil:
    return s + <uint32_t>imm

# add: ar = as + at
cdef inline uint32_t xt_add(uint32_t s, uint32_t t) noexcept nogil:
    return s + t

# sub: ar = as - at
cdef inline uint32_t xt_sub(uint32_t s, uint32_t t) noexcept nogil:
    return s - t

# addx2: ar = (as << 1) + at
cdef inline uint32_t xt_addx2(uint32_t s, uint32_t t) noexcept nogil:
    return (s << 1) + t

# addx4: ar = (as << 2) + at
cdef inline uint32_t xt_addx4(uint32_t s, uint32_t t) noexcept nogil:
    return (s << 2) + t

# addx8: ar = (as << 3) + at
cdef inline uint32_t xt_addx8(uint32_t s, uint32_t t) noexcept nogil:
    return (s << 3) + t

# subx2: ar = (as << 1) - at
cdef inline uint32_t xt_subx2(uint32_t s, uint32_t t) noexcept nogil:
    return (s << 1) - t

# subx4: ar = (as << 2) - at
cdef inline uint32_t xt_subx4(uint32_t s, uint32_t t) noexcept nogil:
    return (s << 2) - t

# subx8: ar = (as << 3) - at
cdef inline uint32_t xt_subx8(uint32_t s, uint32_t t) noexcept nogil:
    return (s << 3) - t

# neg: ar = -at (wraps)
cdef inline uint32_t xt_neg(uint32_t t) noexcept nogil:
    return 0u - t

# abs: ar = |at| (INT32_MIN stays INT32_MIN)
cdef inline uint32_t xt_abs(uint32_t t) noexcept nogil:
    return (0u - t) if (t >> 31) else t

# and: ar = as & at
cdef inline uint32_t xt_and(uint32_t s, uint32_t t) noexcept nogil:
    return s & t

# or: ar = as | at
cdef inline uint32_t xt_or(uint32_t s, uint32_t t) noexcept nogil:
    return s | t

# xor: ar = as ^ at
cdef inline uint32_t xt_xor(uint32_t s, uint32_t t) noexcept nogil:
    return s ^ t

# slli: ar = as << sa (1..31)
cdef inline uint32_t xt_slli(uint32_t s, int32_t sa) noexcept nogil:
    return s << (sa & 31)

# srli: ar = at >> sa, logical (0..15)
cdef inline uint32_t xt_srli(uint32_t t, int32_t sa) noexcept nogil:
    return t >> (sa & 15)

# srai: ar = at >> sa, arithmetic (0..31)
cdef inline uint32_t xt_srai(uint32_t t, int32_t sa) noexcept nogil:
    return <uint32_t>((<int32_t>t) >> (sa & 31))

# extui: ar = (at >> shift) & (2^bits - 1)
cdef inline uint32_t xt_extui(uint32_t t, int32_t shift, int32_t bits) noexcept nogil:
    return (t >> (shift & 31)) & <uint32_t>((1u << bits) - 1u)

# mull: low 32 bits of as * at
cdef inline uint32_t xt_mull(uint32_t s, uint32_t t) noexcept nogil:
    return s * t

# muluh: high 32 bits of the unsigned product
cdef inline uint32_t xt_muluh(uint32_t s, uint32_t t) noexcept nogil:
    return <uint32_t>(((<uint64_t>s) * t) >> 32)

# mulsh: high 32 bits of the signed product
cdef inline uint32_t xt_mulsh(uint32_t s, uint32_t t) noexcept nogil:
    return <uint32_t>(<uint64_t>((<int64_t><int32_t>s) * (<int64_t><int32_t>t)) >> 32)

# mul16u: (as & 0xFFFF) * (at & 0xFFFF)
cdef inline uint32_t xt_mul16u(uint32_t s, uint32_t t) noexcept nogil:
    return (s & 0xFFFFu) * (t & 0xFFFFu)

# mul16s: int16(as) * int16(at)
cdef inline uint32_t xt_mul16s(uint32_t s, uint32_t t) noexcept nogil:
    return <uint32_t>((<int32_t><int16_t><uint16_t>s) * (<int32_t><int16_t><uint16_t>t))


# quou: as / at, unsigned (at != 0: the caller's check)
@cython.cdivision(True)
cdef inline uint32_t xt_quou(uint32_t s, uint32_t t) noexcept nogil:
    return s // t


# quos: as / at, signed, truncated; INT32_MIN / -1 = INT32_MIN (at != 0)
@cython.cdivision(True)
cdef inline uint32_t xt_quos(uint32_t s, uint32_t t) noexcept nogil:
    cdef int64_t a = <int32_t>s, b = <int32_t>t, q
    q = (a if a >= 0 else -a) // (b if b >= 0 else -b)
    if (a < 0) != (b < 0):
        q = -q
    return <uint32_t>q


# remu: as % at, unsigned (at != 0)
@cython.cdivision(True)
cdef inline uint32_t xt_remu(uint32_t s, uint32_t t) noexcept nogil:
    return s % t


# rems: as % at, signed, the sign of as (at != 0)
@cython.cdivision(True)
cdef inline uint32_t xt_rems(uint32_t s, uint32_t t) noexcept nogil:
    cdef int64_t a = <int32_t>s, b = <int32_t>t, r
    r = (a if a >= 0 else -a) % (b if b >= 0 else -b)
    return <uint32_t>(-r if a < 0 else r)

# moveqz: ar = as if at == 0 (else ar unchanged)
cdef inline uint32_t xt_moveqz(uint32_t r, uint32_t s, uint32_t t) noexcept nogil:
    return s if t == 0 else r

# movnez: ar = as if at != 0
cdef inline uint32_t xt_movnez(uint32_t r, uint32_t s, uint32_t t) noexcept nogil:
    return s if t != 0 else r

# movltz: ar = as if at < 0
cdef inline uint32_t xt_movltz(uint32_t r, uint32_t s, uint32_t t) noexcept nogil:
    return s if (t >> 31) else r

# movgez: ar = as if at >= 0
cdef inline uint32_t xt_movgez(uint32_t r, uint32_t s, uint32_t t) noexcept nogil:
    return r if (t >> 31) else s

# salt: ar = as < at (signed)
cdef inline uint32_t xt_salt(uint32_t s, uint32_t t) noexcept nogil:
    return 1u if <int32_t>s < <int32_t>t else 0u

# saltu: ar = as < at (unsigned)
cdef inline uint32_t xt_saltu(uint32_t s, uint32_t t) noexcept nogil:
    return 1u if s < t else 0u

# l32i: the little-endian word at p
cdef inline uint32_t xt_l32i(const uint8_t* p) noexcept nogil:
    return (<uint32_t>p[0]) | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)

# l16ui: the zero-extended halfword at p
cdef inline uint32_t xt_l16ui(const uint8_t* p) noexcept nogil:
    return (<uint32_t>p[0]) | (<uint32_t>p[1] << 8)

# l16si: the sign-extended halfword at p
cdef inline uint32_t xt_l16si(const uint8_t* p) noexcept nogil:
    return <uint32_t><int32_t><int16_t><uint16_t>((<uint32_t>p[0]) | (<uint32_t>p[1] << 8))

# l8ui: the zero-extended byte at p
cdef inline uint32_t xt_l8ui(const uint8_t* p) noexcept nogil:
    return p[0]

# s32i: store the word at p, little-endian
cdef inline void xt_s32i(uint8_t* p, uint32_t t) noexcept nogil:
    p[0] = <uint8_t>t
    p[1] = <uint8_t>(t >> 8)
    p[2] = <uint8_t>(t >> 16)
    p[3] = <uint8_t>(t >> 24)

# s16i: store the low halfword at p
cdef inline void xt_s16i(uint8_t* p, uint32_t t) noexcept nogil:
    p[0] = <uint8_t>t
    p[1] = <uint8_t>(t >> 8)

# s8i: store the low byte at p
cdef inline void xt_s8i(uint8_t* p, uint32_t t) noexcept nogil:
    p[0] = <uint8_t>t

# the branch conditions: beqz .. bgez (as vs 0), beq .. bbs (as vs at), the reg-immediate forms (as vs imm)
cdef inline bint xt_beqz(uint32_t s) noexcept nogil:
    return s == 0

cdef inline bint xt_bnez(uint32_t s) noexcept nogil:
    return s != 0

cdef inline bint xt_bltz(uint32_t s) noexcept nogil:
    return <int32_t>s < 0

cdef inline bint xt_bgez(uint32_t s) noexcept nogil:
    return <int32_t>s >= 0

cdef inline bint xt_beq(uint32_t s, uint32_t t) noexcept nogil:
    return s == t

cdef inline bint xt_bne(uint32_t s, uint32_t t) noexcept nogil:
    return s != t

cdef inline bint xt_blt(uint32_t s, uint32_t t) noexcept nogil:
    return <int32_t>s < <int32_t>t

cdef inline bint xt_bge(uint32_t s, uint32_t t) noexcept nogil:
    return <int32_t>s >= <int32_t>t

cdef inline bint xt_bltu(uint32_t s, uint32_t t) noexcept nogil:
    return s < t

cdef inline bint xt_bgeu(uint32_t s, uint32_t t) noexcept nogil:
    return s >= t

cdef inline bint xt_bany(uint32_t s, uint32_t t) noexcept nogil:
    return (s & t) != 0

cdef inline bint xt_bnone(uint32_t s, uint32_t t) noexcept nogil:
    return (s & t) == 0

cdef inline bint xt_ball(uint32_t s, uint32_t t) noexcept nogil:
    return (~s & t) == 0

cdef inline bint xt_bnall(uint32_t s, uint32_t t) noexcept nogil:
    return (~s & t) != 0

cdef inline bint xt_bbc(uint32_t s, uint32_t t) noexcept nogil:
    return ((s >> (t & 31)) & 1) == 0

cdef inline bint xt_bbs(uint32_t s, uint32_t t) noexcept nogil:
    return ((s >> (t & 31)) & 1) != 0

cdef inline bint xt_beqi(uint32_t s, int32_t imm) noexcept nogil:
    return s == <uint32_t>imm

cdef inline bint xt_bnei(uint32_t s, int32_t imm) noexcept nogil:
    return s != <uint32_t>imm

cdef inline bint xt_blti(uint32_t s, int32_t imm) noexcept nogil:
    return <int32_t>s < imm

cdef inline bint xt_bgei(uint32_t s, int32_t imm) noexcept nogil:
    return <int32_t>s >= imm

cdef inline bint xt_bltui(uint32_t s, int32_t imm) noexcept nogil:
    return s < <uint32_t>imm

cdef inline bint xt_bgeui(uint32_t s, int32_t imm) noexcept nogil:
    return s >= <uint32_t>imm

cdef inline bint xt_bbci(uint32_t s, int32_t bit) noexcept nogil:
    return ((s >> (bit & 31)) & 1) == 0

cdef inline bint xt_bbsi(uint32_t s, int32_t bit) noexcept nogil:
    return ((s >> (bit & 31)) & 1) != 0

# entry: as = as - imm (the frame; windows not modelled)
cdef inline uint32_t xt_entry(uint32_t s, int32_t imm) noexcept nogil:
    return s - <uint32_t>imm
