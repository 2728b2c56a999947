# cython: language_level=3
"""Vision-Q7 register files as plain C types (docs/firmware.md §6.1).

vec_t    512-bit vector register (`v`), lane views 2NX8 = 64 x 8, NX16 = 32 x 16, N_2X32 = 16 x 32,
         NXF16 = 32 x fp16 (bit patterns in u16), N_2XF32 = 16 x fp32 (bit patterns in u32).
wvec_t   1536-bit wide accumulator (`wv`): 64 x 24, 32 x 48 or 16 x 96-bit lanes that wrap.
         Stored as 64 int64 cells in the lane view last written (`view`): view 24 keeps lane i
         sign-extended in cell i; view 48 keeps lane i in the low 48 bits of cell i, the cell's bits
         48-63 undefined (the accumulating MACs add whole cells modulo 2^64 and leave the wrap to the
         readers, docs/build.md §3.6: wvec_to_raw, and the packs, which read bits <= 47 or sign-extend);
         view 96 keeps lane i as cell 2i (low 64 bits) + cell 2i+1 (high 32 bits, sign-extended).
         The raw bit image (lane i of width W at bits [iW, iW+W)) is the architectural state: an op
         that reads another view converts through it (wvec_as).
vbool_t  64-bit predicate (`vb`): one bit per 8-bit sub-lane; a compare on 8/16/32-bit lanes
         sets 1/2/4 bits per lane. A predicated op on W-bit lanes reads bit (W/8)*k for lane k.
pr_t     64-bit packed-operand register (`pr`) read by the ...XR8 / ...XR16 MACs.
valign_t 512-bit alignment register (`u`): the carry row of the unaligned streaming loads.
"""
from libc.stdint cimport uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, uint64_t, int64_t
from libc.string cimport memcpy, memset

cdef union vec_t:
    uint8_t u8[64]
    int8_t s8[64]
    uint16_t u16[32]
    int16_t s16[32]
    uint32_t u32[16]
    int32_t s32[16]

cdef struct wvec_t:
    int64_t c[64]
    int view

# Narrowed accumulators (docs/asm.md §9): a translation keeps an accumulator whose every reader reads only the low
# 16 (32) bits of its 48-bit lanes as 32 cells of 16 (32) bits, lane i modulo 2^16 (2^32) in cell i. Carries only
# move up, so the low bits of a MAC's lanes are the low bits of its inputs' sums and products: the narrowed cells hold
# exactly the low bits of the lanes the wvec_t cells hold. Never architectural state: no view, no trace, no register
# file slot; only the MACs and packs whose op-table record says so (optable.Op.narrows) take them.
cdef struct wcells16_t:
    uint16_t c[32]

cdef struct wcells32_t:
    uint32_t c[32]

ctypedef fused wacc48_t:
    wvec_t
    wcells16_t
    wcells32_t

# The 96-bit-lane accumulators a translation may narrow (docs/asm.md §9, value ranges): lane i of the 16 in cell i,
# modulo 2^16 (2^32). Only the ops whose op-table row says so take them: a product (optable.Op.lane_range) writes the
# low bits of its lanes; a whole-lane pack reads each lane as its cell's sign extension, which is the lane where the
# translation proved the lane's values fit the cell as signed numbers.
ctypedef fused wacc96_t:
    wvec_t
    wcells16_t
    wcells32_t

ctypedef uint64_t vbool_t
ctypedef uint64_t pr_t

# Lane-mask predicates (docs/asm.md §9): a translation keeps a vbool register that only ops taking one read and
# write (optable.Op.lane_mask) as 64 bytes, byte j all ones where bit j of the vbool is set, none where it is clear:
# the same predicate, in the form a compare's lanes give and a byte blend takes (the bits cost a movemask to make and
# a spread to use). Never architectural state: no trace, no register file slot.
cdef struct vmask_t:
    vec_t m

ctypedef fused vpred_t:        # a predicate an op writes (through a pointer)
    vbool_t
    vmask_t

ctypedef vmask_t* vmask_ptr_t

# A lane mask as read by an op whose lanes it is known to fill whole (docs/asm.md §9, uniform lane masks): every byte
# of each of the reader's lanes equal, as a compare or flag op of lanes as wide or wider wrote it. The same bytes as
# its vmask_t; a merge under it blends them as they are, where under a vmask_t it first spreads each lane's first
# byte over the lane (the predicate bit of a lane is the bit of its first byte).
cdef struct vumask_t:
    vec_t m

ctypedef vumask_t* vumask_ptr_t

ctypedef fused vpred_src_t:    # a predicate an op reads: the vbool's value, or the lane mask's address (no copy)
    vbool_t
    vmask_ptr_t
    vumask_ptr_t

# The 96-bit lanes' arithmetic (view 96: lane i = cell 2i, its low 64 bits, and cell 2i + 1, its high bits
# sign-extended from 32) in 128-bit two's complement: __int128 where the compiler has one (GCC, Clang), two 64-bit
# words elsewhere (MSVC; and under Q7_PLAIN_C, the C without GNU extensions that
# firmware_tests/primitives/test_primitive_levels.py compiles and tests). Every right shift of a negative number
# here is arithmetic, as on every compiler q7emu supports.
cdef extern from *:
    """
    #include <stdint.h>
    #if defined(__SIZEOF_INT128__) && !defined(Q7_PLAIN_C)
    #define Q7_HAS_INT128 1
    #else
    #define Q7_HAS_INT128 0
    #endif
    /* (c[1]:c[0]) += p modulo 2^128 (the caller sign-extends the high word to its lane) */
    static inline void q7_add128_s64(int64_t *c, int64_t p) {
    #if Q7_HAS_INT128
        unsigned __int128 u = ((unsigned __int128)(uint64_t)c[1] << 64) | (uint64_t)c[0];
        u += (unsigned __int128)(__int128)p;
        c[0] = (int64_t)(uint64_t)u;
        c[1] = (int64_t)(uint64_t)(u >> 64);
    #else
        uint64_t lo = (uint64_t)c[0] + (uint64_t)p;
        c[1] = (int64_t)((uint64_t)c[1] + (p < 0 ? ~(uint64_t)0 : 0) + (lo < (uint64_t)c[0]));
        c[0] = (int64_t)lo;
    #endif
    }
    /* sat32(round-half-up((hi:lo) >> s)) of a 96-bit lane, 0 <= s <= 32 */
    static inline int32_t q7_round_shift_sat96(int64_t lo, int64_t hi, int s) {
    #if Q7_HAS_INT128
        __int128 acc = (__int128)(((unsigned __int128)(uint64_t)hi << 64) | (uint64_t)lo);
        if (s > 0)
            acc = (acc + ((__int128)1 << (s - 1))) >> s;
        return acc > INT32_MAX ? INT32_MAX : acc < INT32_MIN ? INT32_MIN : (int32_t)acc;
    #else
        uint64_t l = (uint64_t)lo, h = (uint64_t)hi;
        if (s > 0) {
            uint64_t t = l + ((uint64_t)1 << (s - 1));
            h += t < l;
            l = (t >> s) | (h << (64 - s));
            h = (uint64_t)((int64_t)h >> s);
        }
        if ((int64_t)h > 0 || (h == 0 && l > 0x7FFFFFFFu))
            return INT32_MAX;
        if ((int64_t)h < -1 || (h == ~(uint64_t)0 && l < 0xFFFFFFFF80000000u))
            return INT32_MIN;
        return (int32_t)(int64_t)l;
    #endif
    }
    """
    void q7_add128_s64(int64_t* c, int64_t p) nogil
    int32_t q7_round_shift_sat96(int64_t lo, int64_t hi, int s) nogil

cdef struct valign_t:
    uint8_t row[64]

# The register file of one Q7 core, as the kernels address it: `ivp_addnx16 v5, v3, v20`
# becomes addnx16(&rf.v[5], &rf.v[3], &rf.v[20]).
cdef struct regfile_t:
    vec_t v[32]
    wvec_t wv[4]
    vbool_t vb[16]
    pr_t pr[16]
    valign_t u[4]


cdef inline void regfile_reset(regfile_t* rf) noexcept nogil:
    """The register file at kernel entry: every register zero, the accumulators in their 48-bit view."""
    cdef int i
    memset(rf, 0, sizeof(regfile_t))
    for i in range(4):
        rf.wv[i].view = 48


cdef inline int64_t sext(int64_t x, int bits) noexcept nogil:
    """Sign-extend the low `bits` bits of x (1 <= bits <= 63). With a 64-bit arithmetic shift in the vector ISA
    (AVX-512: vpsraq) two shifts; below it ((x & (2^bits - 1)) ^ 2^(bits-1)) - 2^(bits-1), three ops SSE2 / AVX2
    have for 64-bit lanes, where GCC would emulate the arithmetic shift lane by lane."""
    cdef uint64_t m
    if Q7_HAS_SRAQ:
        return (<int64_t>((<uint64_t>x) << (64 - bits))) >> (64 - bits)
    m = (<uint64_t>1) << (bits - 1)
    return <int64_t>((((<uint64_t>x) & ((m << 1) - 1)) ^ m) - m)


cdef inline void wvec_to_raw(const wvec_t* w, uint8_t* raw) noexcept nogil:
    """Write the 192-byte architectural image of w (lane i of width W at bits [iW, iW+W))."""
    cdef int i, j
    cdef int nb = w.view // 8            # bytes per lane: 3 (24-bit) or 6 (48-bit) lanes, one cell each
    cdef uint64_t lo, hi
    if nb == 0:                          # a never-written accumulator (view 0) is all zeros
        memset(raw, 0, 192)
        return
    if nb == 6:                          # the lane widths as constants: the compiler merges each lane's stores
        for i in range(32):
            lo = <uint64_t>w.c[i]
            for j in range(6):
                raw[6 * i + j] = <uint8_t>(lo >> (8 * j))
    elif nb == 3:
        for i in range(64):
            lo = <uint64_t>w.c[i]
            for j in range(3):
                raw[3 * i + j] = <uint8_t>(lo >> (8 * j))
    else:
        for i in range(16):
            lo = <uint64_t>w.c[2 * i]
            hi = <uint64_t>w.c[2 * i + 1]
            for j in range(8):
                raw[12 * i + j] = <uint8_t>(lo >> (8 * j))
            for j in range(4):
                raw[12 * i + 8 + j] = <uint8_t>(hi >> (8 * j))


cdef inline void wvec_from_raw(wvec_t* w, const uint8_t* raw, int view) noexcept nogil:
    """Load w from a 192-byte architectural image, in lane view `view` (24, 48 or 96)."""
    cdef int i, j
    cdef int nb = view // 8
    cdef uint64_t lo, hi
    memset(w.c, 0, sizeof(w.c))
    w.view = view
    if view != 96:
        for i in range(192 // nb):
            lo = 0
            for j in range(nb):
                lo |= (<uint64_t>raw[nb * i + j]) << (8 * j)
            w.c[i] = sext(<int64_t>lo, view)
    else:
        for i in range(16):
            lo = 0
            hi = 0
            for j in range(8):
                lo |= (<uint64_t>raw[12 * i + j]) << (8 * j)
            for j in range(4):
                hi |= (<uint64_t>raw[12 * i + 8 + j]) << (8 * j)
            w.c[2 * i] = <int64_t>lo
            w.c[2 * i + 1] = sext(<int64_t>hi, 32)


cdef inline void wvec_as(wvec_t* w, int view) noexcept nogil:
    """Make w readable in lane view `view`, reinterpreting its raw bits when the view changes."""
    cdef uint8_t raw[192]
    if w.view != view:
        wvec_to_raw(w, raw)
        wvec_from_raw(w, raw, view)


cdef inline void wvec_zero(wvec_t* w, int view) noexcept nogil:
    memset(w.c, 0, sizeof(w.c))
    w.view = view


# ---------------------------------------------------------------------------------- SIMD leaves
# The few lane operations plain C loops cannot express so that GCC vectorises them: vbool <-> lane
# mask conversion (one bit per byte), the two-register permutes of the select unit, the bounded
# prefix load of the variable-length loads and the byte spreads of the expanding loads. Each has an
# x86 SIMD body (AVX-512 BW / VBMI, AVX2; the mask conversions also SSE2, the x86-64 baseline that the
# generic level gets) chosen at compile time and a portable C body that is the reference; all bodies give
# identical results on every input. Outputs may alias inputs (every body reads all of its inputs before
# writing).
cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    #if defined(__AVX2__) || defined(__AVX512F__)
    #include <immintrin.h>
    #elif defined(__SSE2__)
    #include <emmintrin.h>
    #endif
    #if defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    #define Q7_LITTLE_ENDIAN 0
    #else
    #define Q7_LITTLE_ENDIAN 1
    #endif
    /* The portable bodies' vector form: GCC / Clang vector extensions, 16-byte vectors of lane-wise C operators,
       which the compiler maps to SSE2 on x86-64, to NEON on aarch64 and to scalar code elsewhere (docs/build.md
       §1.6). Other compilers (MSVC), and Q7_PLAIN_C, take the scalar loops. Vectors move through memcpy (unaligned
       loads and stores). A comparison gives a vector of -1 / 0 lanes: a lane mask. */
    #if (defined(__GNUC__) || defined(__clang__)) && !defined(Q7_PLAIN_C)
    #define Q7_VEC 1
    typedef uint8_t q7_vu8 __attribute__((vector_size(16)));
    typedef int8_t q7_vs8 __attribute__((vector_size(16)));
    typedef uint16_t q7_vu16 __attribute__((vector_size(16)));
    typedef int16_t q7_vs16 __attribute__((vector_size(16)));
    typedef uint32_t q7_vu32 __attribute__((vector_size(16)));
    typedef int32_t q7_vs32 __attribute__((vector_size(16)));
    typedef uint64_t q7_vu64 __attribute__((vector_size(16)));
    #define Q7_VLOAD(type, p) q7_vload_##type(p)
    #define Q7_VLOADER(type) \
        static inline q7_v##type q7_vload_##type(const void *p) { q7_v##type v; memcpy(&v, p, 16); return v; }
    Q7_VLOADER(u8) Q7_VLOADER(s8) Q7_VLOADER(u16) Q7_VLOADER(s16) Q7_VLOADER(u32) Q7_VLOADER(s32)
    static inline void q7_vstore(void *p, q7_vu8 v) { memcpy(p, &v, 16); }
    #if defined(__clang__) || __GNUC__ >= 9
    #define Q7_VEC_CVT 1      /* __builtin_convertvector: lane-wise conversion (widening) between vector types */
    #else
    #define Q7_VEC_CVT 0
    #endif
    /* the byte masks of 16 predicate bits h: byte j 0xFF where bit j of h is set (each byte broadcast to 8, then
       bit j % 8 tested) */
    static inline q7_vu8 q7_vmask16(uint64_t h) {
        const q7_vu8 bit = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
        q7_vu64 x = {(h & 0xFFu) * 0x0101010101010101ULL, ((h >> 8) & 0xFFu) * 0x0101010101010101ULL};
        return (q7_vu8)(((q7_vu8)x & bit) == bit);
    }
    #else
    #define Q7_VEC 0
    #define Q7_VEC_CVT 0
    #endif
    /* bit k = most significant bit of byte k, k = 0..63 */
    static inline uint64_t q7_bytes_to_bits(const uint8_t *m) {
    #if defined(__AVX512BW__)
        return (uint64_t)_mm512_movepi8_mask(_mm512_loadu_si512((const void *)m));
    #elif defined(__AVX2__)
        uint32_t lo = (uint32_t)_mm256_movemask_epi8(_mm256_loadu_si256((const __m256i *)m));
        uint32_t hi = (uint32_t)_mm256_movemask_epi8(_mm256_loadu_si256((const __m256i *)(m + 32)));
        return (uint64_t)lo | ((uint64_t)hi << 32);
    #elif defined(__SSE2__)
        uint64_t r = 0;
        int k;
        for (k = 0; k < 4; k++)
            r |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(m + 16 * k))) << (16 * k);
        return r;
    #elif Q7_LITTLE_ENDIAN
        /* 8 bytes at a time (SWAR, plain C): their top bits, masked, times 2^0 + 2^7 + ... + 2^49 land, without
           carries, in the top byte, byte j's at bit 56 + j (a movemask in three scalar ops; NEON has none) */
        uint64_t r = 0, w;
        int k;
        for (k = 0; k < 8; k++) {
            memcpy(&w, m + 8 * k, 8);
            r |= (((w & 0x8080808080808080ULL) * 0x0002040810204081ULL) >> 56) << (8 * k);
        }
        return r;
    #else
        uint64_t r = 0;
        int k;
        for (k = 0; k < 64; k++)
            r |= (uint64_t)(m[k] >> 7) << k;
        return r;
    #endif
    }
    /* o = the first k bytes of src (0 <= k <= 64), zero-filled to 64; reads only those k bytes (an AVX-512
       masked load does not touch the masked-off bytes). Else o is written in whole 16-byte blocks (at AVX2 each
       made in a register, below; elsewhere fixed-size copies, one variable-length copy into a zeroed block only for
       a partial block), so the 16- and 32-byte loads that read o next are each forwarded from one store: after a
       variable-length memcpy they straddled its narrow stores and waited for them to retire (two 32-byte stores
       instead of four 16-byte ones: NF4 group 0 0.89-0.92x, E2M1 group 0 0.98-1.07x the four's speed) */
    /* dst = the 64 bytes at src, in the widest vector stores the level has (AVX-512 one, AVX2 two, SSE2 four).
       A primitive's result goes out this way instead of a vec_t assignment: GCC lowered a union copy through
       general registers (8-byte loads, vpinsrq, 16-byte stores), and the next op's 32-byte loads, straddling two
       16-byte stores, could not be forwarded from them (~15 cycles per op at AVX2) */
    static inline void q7_copy64(void *dst, const void *src) {
    #if defined(__AVX512F__)
        _mm512_storeu_si512(dst, _mm512_loadu_si512(src));
    #elif defined(__AVX2__)
        __m256i a = _mm256_loadu_si256((const __m256i *)src);
        __m256i b = _mm256_loadu_si256((const __m256i *)((const uint8_t *)src + 32));
        _mm256_storeu_si256((__m256i *)dst, a);
        _mm256_storeu_si256((__m256i *)((uint8_t *)dst + 32), b);
    #elif defined(__SSE2__)
        /* written out: as two loops of 4 GCC kept the loops where it did not inline them whole (the interpreter's
           handlers: 11 host instructions more per 64-byte store) */
        const uint8_t *s = (const uint8_t *)src;
        uint8_t *d = (uint8_t *)dst;
        __m128i v0 = _mm_loadu_si128((const __m128i *)s), v1 = _mm_loadu_si128((const __m128i *)(s + 16));
        __m128i v2 = _mm_loadu_si128((const __m128i *)(s + 32)), v3 = _mm_loadu_si128((const __m128i *)(s + 48));
        _mm_storeu_si128((__m128i *)d, v0);
        _mm_storeu_si128((__m128i *)(d + 16), v1);
        _mm_storeu_si128((__m128i *)(d + 32), v2);
        _mm_storeu_si128((__m128i *)(d + 48), v3);
    #else
        memcpy(dst, src, 64);
    #endif
    }
    #if defined(__AVX2__) || (defined(__SSE2__) && defined(__x86_64__))
    /* q7_load_prefix's quarter the k bytes end in (lo: its first byte, lo < k < lo + 16), no byte at or past src + k
       read: at AVX2 (k >= 16) the 16 bytes that end at src + k moved down by a byte shuffle whose control slides
       over `slide` (byte j takes byte 16 - t + j of them for j < t = its bytes, else zero); at SSE2, which has no
       byte shuffle, (k >= 8) from 8-byte reads that start at lo or end at src + k, shifted; else through a zeroed
       local */
    static inline __m128i q7_partial_quarter(const uint8_t *src, size_t k, size_t lo) {
    #if defined(__AVX2__)
        static const uint8_t slide[32] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                                          0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                          0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80};
        if (k >= 16)
            return _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(src + k - 16)),
                                    _mm_loadu_si128((const __m128i *)(slide + 16 - (k - lo))));
    #else
        if (k >= 8) {
            size_t m = k - lo;                              /* 1 .. 15 bytes, the last at src + k - 1 */
            uint64_t tail;
            memcpy(&tail, src + k - 8, 8);
            if (m < 8)
                return _mm_cvtsi64_si128((long long)(tail >> (8 * (8 - m))));
            return _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)(src + lo)),
                                      _mm_cvtsi64_si128((long long)(m == 8 ? 0 : tail >> (8 * (16 - m)))));
        }
    #endif
        {
            uint8_t t[16];
            memset(t, 0, 16);
            memcpy(t, src, k);
            return _mm_loadu_si128((const __m128i *)t);
        }
    }
    /* q7_load_prefix by 16-byte quarters in vector registers: a whole one loaded, an empty one zero, the one the k
       bytes end in by q7_partial_quarter */
    static inline void q7_prefix_quarters(uint8_t *o, const uint8_t *src, size_t k) {
        __m128i q[4];
        int c;
        for (c = 0; c < 4; c++) {
            size_t lo = 16 * (size_t)c;
            if (k >= lo + 16)
                q[c] = _mm_loadu_si128((const __m128i *)(src + lo));
            else if (k <= lo)
                q[c] = _mm_setzero_si128();
            else
                q[c] = q7_partial_quarter(src, k, lo);
        }
        for (c = 0; c < 4; c++)
            _mm_storeu_si128((__m128i *)(o + 16 * c), q[c]);
    }
    #endif
    static inline void q7_load_prefix(uint8_t *o, const uint8_t *src, size_t k) {
    #if defined(__AVX512BW__)
        __mmask64 m = k >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << k) - 1);
        _mm512_storeu_si512((void *)o, _mm512_maskz_loadu_epi8(m, (const void *)src));
    #elif defined(__AVX2__)
        /* by 16-byte quarters (q7_prefix_quarters). Against the quarter copies below (a variable-length memcpy
           into a zeroed local for the partial one), host instructions per 64 outputs: MX group 8 1,122 -> 1,090,
           NF4 group 0 192 -> 182, QuantizeMX 3,431 -> 3,355 */
        q7_prefix_quarters(o, src, k);
    #elif defined(__SSE2__) && defined(__x86_64__)
        /* k a constant (a translation's access_lengths) that is not a whole number of quarters: by 16-byte quarters
           in vector registers (q7_prefix_quarters). With MX group 8's constant 40 bytes the copies below let GCC
           split the vector into general registers and rebuild it a byte at a time for the byte moves that read it:
           4 % slower than a variable k. A whole number of quarters
           stays the copies (as vector loads and stores, E2M3's 48 bytes, which its byte spread reads next, were
           12 % slower), and so does a variable k (the interpreter: the quarters here cost it 1 % more instructions
           on NF4 group 0). Q7_PREFIX_QUARTERS_ALWAYS=1 takes this path for every k (the primitive suite runs so
           too: firmware_tests/primitives/test_primitive_levels.py) */
        #ifndef Q7_PREFIX_QUARTERS_ALWAYS
        #define Q7_PREFIX_QUARTERS_ALWAYS 0
        #endif
        if ((Q7_PREFIX_QUARTERS_ALWAYS || __builtin_constant_p(k)) && k % 16 != 0) {
            q7_prefix_quarters(o, src, k);
            return;
        }
    #endif
    #if !defined(__AVX512BW__) && !defined(__AVX2__)
        int c;
        for (c = 0; c < 4; c++) {
            size_t lo = 16 * (size_t)c;
            if (k >= lo + 16) {
                memcpy(o + lo, src + lo, 16);
            } else {
                uint8_t t[16];
                memset(t, 0, 16);
                if (k > lo) memcpy(t, src + lo, k - lo);
                memcpy(o + lo, t, 16);
            }
        }
    #endif
    }
    /* the byte spread: 16-bit lane j = r[j] | r[63] << 8, j = 0..31 (the dcmprs rule under the even-byte
       predicate); o may alias r */
    static inline void q7_spread_bytes16(uint8_t *o, const uint8_t *r) {
    #if defined(__AVX512BW__)
        __m512i v = _mm512_or_si512(_mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)r)),
                                    _mm512_set1_epi16((short)((unsigned)r[63] << 8)));
        _mm512_storeu_si512((void *)o, v);
    #elif defined(__AVX2__)
        __m256i hi = _mm256_set1_epi16((short)((unsigned)r[63] << 8));
        __m256i a = _mm256_or_si256(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)r)), hi);
        __m256i b = _mm256_or_si256(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(r + 16))), hi);
        _mm256_storeu_si256((__m256i *)o, a);
        _mm256_storeu_si256((__m256i *)(o + 32), b);
    #else
        uint8_t t[64]; int k;
        for (k = 0; k < 32; k++) { t[2 * k] = r[k]; t[2 * k + 1] = r[63]; }
        memcpy(o, t, 64);
    #endif
    }
    /* the group spread: 32-bit lane i = r[3i] | r[3i+1] << 8 | r[3i+2] << 16 | r[63] << 24, i = 0..15 (the
       dcmprs rule under the predicate of 3 bytes in every 4); o may alias r */
    static inline void q7_spread_bytes32(uint8_t *o, const uint8_t *r) {
    #if defined(__AVX512BW__)
        const __m512i shuf = _mm512_set4_epi32((int)0x800B0A09, (int)0x80080706, (int)0x80050403, (int)0x80020100);
        __m512i d = _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 1, 2, 2, 3, 4, 5, 5, 6, 7, 8, 8, 9, 10, 11, 11),
                                             _mm512_loadu_si512((const void *)r));
        __m512i v = _mm512_mask_blend_epi8((__mmask64)0x8888888888888888ULL, _mm512_shuffle_epi8(d, shuf),
                                           _mm512_set1_epi8((char)r[63]));
        _mm512_storeu_si512((void *)o, v);
    #elif defined(__AVX2__)
        const __m256i shuf = _mm256_setr_epi8(0, 1, 2, -128, 3, 4, 5, -128, 6, 7, 8, -128, 9, 10, 11, -128,
                                              0, 1, 2, -128, 3, 4, 5, -128, 6, 7, 8, -128, 9, 10, 11, -128);
        const __m256i perm = _mm256_setr_epi32(0, 1, 2, 2, 3, 4, 5, 5);
        const __m256i top = _mm256_set1_epi32((int)0xFF000000);
        __m256i last = _mm256_set1_epi8((char)r[63]);
        __m256i a = _mm256_permutevar8x32_epi32(_mm256_loadu_si256((const __m256i *)r), perm);
        __m256i b = _mm256_permutevar8x32_epi32(_mm256_loadu_si256((const __m256i *)(r + 24)), perm);
        a = _mm256_blendv_epi8(_mm256_shuffle_epi8(a, shuf), last, top);
        b = _mm256_blendv_epi8(_mm256_shuffle_epi8(b, shuf), last, top);
        _mm256_storeu_si256((__m256i *)o, a);
        _mm256_storeu_si256((__m256i *)(o + 32), b);
    #else
        uint8_t t[64]; int i;
        for (i = 0; i < 16; i++) {
            t[4 * i] = r[3 * i]; t[4 * i + 1] = r[3 * i + 1]; t[4 * i + 2] = r[3 * i + 2]; t[4 * i + 3] = r[63];
        }
        memcpy(o, t, 64);
    #endif
    }
    /* the half-word spread: 32-bit lane i = r16[i] | r[63] * 0x01010000 (hi = 0: the dcmprs rule under the
       predicate 0x3333..., the low two bytes of every 4) or r16[i] << 16 | r[63] * 0x0101 (hi = 1: under 0xCCCC...,
       the high two bytes), i = 0..15, r16[i] = r[2i] | r[2i+1] << 8; o may alias r */
    static inline void q7_spread_halves32(uint8_t *o, const uint8_t *r, int hi) {
        const uint32_t fill = (uint32_t)r[63] * (hi ? 0x0101u : 0x01010000u);
        const int sh = hi ? 16 : 0;
    #if defined(__AVX512F__)
        __m512i v = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)r));
        v = _mm512_or_si512(_mm512_sll_epi32(v, _mm_cvtsi32_si128(sh)), _mm512_set1_epi32((int)fill));
        _mm512_storeu_si512((void *)o, v);
    #elif defined(__AVX2__)
        __m256i a = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)r));
        __m256i b = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(r + 16)));
        const __m128i s = _mm_cvtsi32_si128(sh);
        const __m256i f = _mm256_set1_epi32((int)fill);
        _mm256_storeu_si256((__m256i *)o, _mm256_or_si256(_mm256_sll_epi32(a, s), f));
        _mm256_storeu_si256((__m256i *)(o + 32), _mm256_or_si256(_mm256_sll_epi32(b, s), f));
    #else
        uint32_t t[16]; int i;
        for (i = 0; i < 16; i++)
            t[i] = ((uint32_t)(r[2 * i] | (r[2 * i + 1] << 8)) << sh) | fill;
        memcpy(o, t, 64);
    #endif
    }
    #if defined(__SSE2__)
    /* the byte masks of 16 predicate bits h at SSE2: byte j 0xFF where bit j of h is set. The two bytes of h are
       spread over 8 bytes each by three unpacks (no 64-bit multiply), then bit j % 8 of byte j is tested */
    static inline __m128i q7_bytemask16_sse2(uint32_t h) {
        const __m128i bit = _mm_set1_epi64x((long long)0x8040201008040201ULL);
        __m128i v = _mm_cvtsi32_si128((int)(h & 0xFFFFu));
        v = _mm_unpacklo_epi8(v, v);                   /* b0 b0 b1 b1 */
        v = _mm_unpacklo_epi16(v, v);                  /* b0 x4, b1 x4 */
        v = _mm_unpacklo_epi32(v, v);                  /* b0 x8, b1 x8 */
        return _mm_cmpeq_epi8(_mm_and_si128(v, bit), bit);
    }
    #endif
    #if defined(__AVX2__)
    /* the byte masks of 32 predicate bits h at AVX2: byte j 0xFF where bit j of h is set. Byte j takes byte j / 8 of
       h (a byte shuffle of h broadcast), then bit j % 8 of it is tested */
    static inline __m256i q7_bytemask32_avx2(uint32_t h) {
        const __m256i pick = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                              2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
        const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
        return _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int)h), pick), bit), bit);
    }
    #endif
    /* byte k = 0xFF if bit k of b else 0x00, k = 0..63 */
    static inline void q7_bits_to_bytes(uint64_t b, uint8_t *m) {
    #if defined(__AVX512BW__)
        _mm512_storeu_si512((void *)m, _mm512_movm_epi8((__mmask64)b));
    #elif defined(__AVX2__)
        /* 32 bits at a time */
        _mm256_storeu_si256((__m256i *)m, q7_bytemask32_avx2((uint32_t)b));
        _mm256_storeu_si256((__m256i *)(m + 32), q7_bytemask32_avx2((uint32_t)(b >> 32)));
    #elif defined(__SSE2__)
        /* 16 bits at a time */
        int k;
        for (k = 0; k < 4; k++)
            _mm_storeu_si128((__m128i *)(m + 16 * k), q7_bytemask16_sse2((uint32_t)(b >> (16 * k))));
    #elif Q7_VEC
        int k;
        for (k = 0; k < 4; k++)
            q7_vstore(m + 16 * k, q7_vmask16(b >> (16 * k)));
    #else
        int k;
        for (k = 0; k < 64; k++)
            m[k] = (uint8_t)(0u - (unsigned)((b >> k) & 1u));
    #endif
    }
    /* Q7_MASK_COMPARE: 1 where the compares below have their AVX-512 bodies (a compare straight into a mask
       register, its bits spread to the vbool's bits by pdep); the primitives then take them instead of a lane loop
       that builds a lane mask vector for q7_bytes_to_bits (a mask -> vector -> mask round trip) */
    /* Q7_HAS_SRAQ: 1 where the vector ISA shifts 64-bit lanes arithmetically (AVX-512F vpsraq): sext's form */
    #if defined(__AVX512F__)
    #define Q7_HAS_SRAQ 1
    #else
    #define Q7_HAS_SRAQ 0
    #endif
    #if defined(__AVX512BW__) && defined(__BMI2__)
    #define Q7_MASK_COMPARE 1
    #else
    #define Q7_MASK_COMPARE 0
    #endif
    /* vt[j] = bit j of m ? x[j] : vt[j], j = 0..63 (x may alias vt): the predicated merge. AVX-512: one byte
       blend under the mask register; AVX2 / SSE2: q7_bits_to_bytes' byte masks, built in registers, and a blend */
    /* Q7_NO_MASKED_STORE(v): keeps v in a register, so GCC does not fold a load-blend-store into a masked store,
       which a following full load of the register cannot forward from (a stall of the store's whole latency) */
    #if defined(__GNUC__) && !defined(Q7_PLAIN_C)
    #define Q7_NO_MASKED_STORE(v) __asm__("" : "+v"(v))
    #else
    #define Q7_NO_MASKED_STORE(v) ((void)0)
    #endif
    static inline void q7_merge_bits(uint8_t *vt, const uint8_t *x, uint64_t m) {
    #if defined(__AVX512BW__)
        __m512i r = _mm512_mask_blend_epi8((__mmask64)m, _mm512_loadu_si512((const void *)vt),
                                           _mm512_loadu_si512((const void *)x));
        Q7_NO_MASKED_STORE(r);
        _mm512_storeu_si512((void *)vt, r);
    #elif defined(__AVX2__)
        /* the byte masks of q7_bits_to_bytes in registers, then a byte blend */
        __m256i r[2];
        int h;
        for (h = 0; h < 2; h++) {
            __m256i mk = q7_bytemask32_avx2((uint32_t)(m >> (32 * h)));
            r[h] = _mm256_blendv_epi8(_mm256_loadu_si256((const __m256i *)(vt + 32 * h)),
                                      _mm256_loadu_si256((const __m256i *)(x + 32 * h)), mk);
        }
        for (h = 0; h < 2; h++)
            _mm256_storeu_si256((__m256i *)(vt + 32 * h), r[h]);
    #elif defined(__SSE2__)
        /* the byte masks of q7_bits_to_bytes in registers, then and / andnot / or */
        __m128i r[4];
        int q;
        for (q = 0; q < 4; q++) {
            __m128i mk = q7_bytemask16_sse2((uint32_t)(m >> (16 * q)));
            r[q] = _mm_or_si128(_mm_and_si128(mk, _mm_loadu_si128((const __m128i *)(x + 16 * q))),
                                _mm_andnot_si128(mk, _mm_loadu_si128((const __m128i *)(vt + 16 * q))));
        }
        for (q = 0; q < 4; q++)
            _mm_storeu_si128((__m128i *)(vt + 16 * q), r[q]);
    #elif Q7_VEC
        q7_vu8 r[4];
        int k;
        for (k = 0; k < 4; k++) {
            q7_vu8 mk = q7_vmask16(m >> (16 * k));
            r[k] = (mk & Q7_VLOAD(u8, x + 16 * k)) | (~mk & Q7_VLOAD(u8, vt + 16 * k));
        }
        for (k = 0; k < 4; k++)
            q7_vstore(vt + 16 * k, r[k]);
    #else
        uint8_t mk[64], a[64], o[64];
        int k;
        q7_bits_to_bytes(m, mk);
        memcpy(a, x, 64); memcpy(o, vt, 64);
        for (k = 0; k < 64; k++) o[k] = (uint8_t)((a[k] & mk[k]) | (o[k] & ~mk[k]));
        memcpy(vt, o, 64);
    #endif
    }
    /* the vbool of a < b over lanes of lane_bytes (1, 2 or 4) bytes, signed (sgn) or unsigned: a true lane sets
       its lane_bytes bits, as a compare writes them */
    static inline uint64_t q7_lt_bits(const void *a, const void *b, int lane_bytes, int sgn) {
    #if Q7_MASK_COMPARE
        __m512i x = _mm512_loadu_si512(a), y = _mm512_loadu_si512(b);
        if (lane_bytes == 1)
            return (uint64_t)(sgn ? _mm512_cmplt_epi8_mask(x, y) : _mm512_cmplt_epu8_mask(x, y));
        if (lane_bytes == 2)
            return _pdep_u64((uint64_t)(sgn ? _mm512_cmplt_epi16_mask(x, y) : _mm512_cmplt_epu16_mask(x, y)),
                             0x5555555555555555ULL) * 3;
        return _pdep_u64((uint64_t)(sgn ? _mm512_cmplt_epi32_mask(x, y) : _mm512_cmplt_epu32_mask(x, y)),
                         0x1111111111111111ULL) * 15;
    #elif Q7_VEC && !defined(__SSE2__)
        /* the lane compares give lane masks, 1, 2 or 4 bytes of -1 per true lane: as bytes, the vbool's bits */
        const uint8_t *x = (const uint8_t *)a, *y = (const uint8_t *)b;
        uint8_t mk[64];
        int k;
        for (k = 0; k < 64; k += 16) {
            q7_vu8 r;
            if (lane_bytes == 1)
                r = sgn ? (q7_vu8)(Q7_VLOAD(s8, x + k) < Q7_VLOAD(s8, y + k))
                        : (q7_vu8)(Q7_VLOAD(u8, x + k) < Q7_VLOAD(u8, y + k));
            else if (lane_bytes == 2)
                r = sgn ? (q7_vu8)(Q7_VLOAD(s16, x + k) < Q7_VLOAD(s16, y + k))
                        : (q7_vu8)(Q7_VLOAD(u16, x + k) < Q7_VLOAD(u16, y + k));
            else
                r = sgn ? (q7_vu8)(Q7_VLOAD(s32, x + k) < Q7_VLOAD(s32, y + k))
                        : (q7_vu8)(Q7_VLOAD(u32, x + k) < Q7_VLOAD(u32, y + k));
            q7_vstore(mk + k, r);
        }
        return q7_bytes_to_bits(mk);
    #else
        union { uint8_t u8[64]; int8_t s8[64]; uint16_t u16[32]; int16_t s16[32]; uint32_t u32[16]; int32_t s32[16]; }
            x, y;
        uint64_t r = 0, ones = (1ULL << lane_bytes) - 1;
        int k, lt;
        memcpy(x.u8, a, 64); memcpy(y.u8, b, 64);
        for (k = 0; k < 64 / lane_bytes; k++) {
            if (lane_bytes == 1) lt = sgn ? x.s8[k] < y.s8[k] : x.u8[k] < y.u8[k];
            else if (lane_bytes == 2) lt = sgn ? x.s16[k] < y.s16[k] : x.u16[k] < y.u16[k];
            else lt = sgn ? x.s32[k] < y.s32[k] : x.u32[k] < y.u32[k];
            if (lt) r |= ones << (lane_bytes * k);
        }
        return r;
    #endif
    }
    /* The ordered fp16 compare a < b on one x86 vector of 16-bit lanes (false when either is NaN; -0 == +0), the
       AVX2 and SSE2 bodies of q7_fcmp16_olt_bits and q7_fcmp16_olt_lanes, one algorithm at two widths: the AVX-512
       body's keys and compares. A true lane is 0xFFFF (two 0xFF bytes: the byte movemask gives its two vbool bits;
       the lane loop it replaced stored a lane mask for q7_bytes_to_bits). The order key of a non-NaN pattern is its
       magnitude with the sign applied, (m ^ s) - s. */
    #define Q7_FCMP16_OLT_VEC(V, P, S) \
        static inline V q7_fcmp16_olt_##S(V x, V y) { \
            const V mag = P##set1_epi16(0x7FFF), inf = P##set1_epi16(0x7C00); \
            V mx = P##and_##S(x, mag), my = P##and_##S(y, mag); \
            V sx = P##srai_epi16(x, 15), sy = P##srai_epi16(y, 15); \
            V nan = P##or_##S(P##cmpgt_epi16(mx, inf), P##cmpgt_epi16(my, inf)); \
            V lt = P##cmpgt_epi16(P##sub_epi16(P##xor_##S(my, sy), sy), P##sub_epi16(P##xor_##S(mx, sx), sx)); \
            return P##andnot_##S(nan, lt); \
        }
    /* the widest x86 integer vector the compares run on (AVX2: 32 bytes, SSE2: 16; AVX-512 levels take the AVX2
       body where they have no mask-register one): its type, width, loads, stores and byte movemask */
    #if defined(__AVX2__)
    Q7_FCMP16_OLT_VEC(__m256i, _mm256_, si256)
    #define Q7_XV __m256i
    #define Q7_XV_BYTES 32
    #define Q7_XV_LOAD(p) _mm256_loadu_si256((const __m256i *)(p))
    #define Q7_XV_STORE(p, v) _mm256_storeu_si256((__m256i *)(p), v)
    #define Q7_XV_MOVEMASK(v) _mm256_movemask_epi8(v)
    #define Q7_FCMP16_OLT(x, y) q7_fcmp16_olt_si256(x, y)
    #elif defined(__SSE2__)
    Q7_FCMP16_OLT_VEC(__m128i, _mm_, si128)
    #define Q7_XV __m128i
    #define Q7_XV_BYTES 16
    #define Q7_XV_LOAD(p) _mm_loadu_si128((const __m128i *)(p))
    #define Q7_XV_STORE(p, v) _mm_storeu_si128((__m128i *)(p), v)
    #define Q7_XV_MOVEMASK(v) _mm_movemask_epi8(v)
    #define Q7_FCMP16_OLT(x, y) q7_fcmp16_olt_si128(x, y)
    #endif
    /* the vbool of the ordered fp16 compare a < b (false when either is NaN; -0 == +0) */
    static inline uint64_t q7_fcmp16_olt_bits(const uint16_t *a, const uint16_t *b) {
    #if Q7_MASK_COMPARE
        const __m512i mag = _mm512_set1_epi16(0x7FFF), inf = _mm512_set1_epi16(0x7C00);
        __m512i x = _mm512_loadu_si512((const void *)a), y = _mm512_loadu_si512((const void *)b);
        __m512i mx = _mm512_and_si512(x, mag), my = _mm512_and_si512(y, mag);
        __m512i sx = _mm512_srai_epi16(x, 15), sy = _mm512_srai_epi16(y, 15);
        __m512i kx = _mm512_sub_epi16(_mm512_xor_si512(mx, sx), sx);
        __m512i ky = _mm512_sub_epi16(_mm512_xor_si512(my, sy), sy);
        __mmask32 k = _mm512_mask_cmplt_epi16_mask(_mm512_mask_cmple_epi16_mask(_mm512_cmple_epi16_mask(mx, inf), my,
                                                                               inf), kx, ky);
        return _pdep_u64((uint64_t)k, 0x5555555555555555ULL) * 3;
    #elif defined(__SSE2__)
        uint64_t r = 0;
        int q;
        for (q = 0; q < 64 / Q7_XV_BYTES; q++)
            r |= (uint64_t)(uint32_t)Q7_XV_MOVEMASK(
                Q7_FCMP16_OLT(Q7_XV_LOAD(a + Q7_XV_BYTES / 2 * q), Q7_XV_LOAD(b + Q7_XV_BYTES / 2 * q)))
                << (Q7_XV_BYTES * q);
        return r;
    #elif Q7_VEC
        /* the lane loop's order keys and tests on eight 16-bit lanes at a time; each true lane's mask is two bytes
           of -1, its two vbool bits */
        uint8_t mk[64];
        int k;
        for (k = 0; k < 32; k += 8) {
            q7_vs16 x = Q7_VLOAD(s16, a + k), y = Q7_VLOAD(s16, b + k);
            q7_vs16 ma = x & 0x7FFF, mb = y & 0x7FFF, sa = x >> 15, sb = y >> 15;    /* magnitude, sign (-1 / 0) */
            q7_vs16 lt = (ma <= 0x7C00) & (mb <= 0x7C00) & (((ma ^ sa) - sa) < ((mb ^ sb) - sb));
            q7_vstore(mk + 2 * k, (q7_vu8)lt);
        }
        return q7_bytes_to_bits(mk);
    #else
        /* the lane loop: the reference, and the body of compilers without vector extensions */
        uint64_t r = 0;
        int k;
        for (k = 0; k < 32; k++) {
            int16_t ma = (int16_t)(a[k] & 0x7FFF), mb = (int16_t)(b[k] & 0x7FFF);
            int16_t sa = (int16_t)-(int16_t)(a[k] >> 15), sb = (int16_t)-(int16_t)(b[k] >> 15);
            if (ma <= 0x7C00 && mb <= 0x7C00 && (int16_t)((ma ^ sa) - sa) < (int16_t)((mb ^ sb) - sb))
                r |= 3ULL << (2 * k);
        }
        return r;
    #endif
    }
    /* the same compare as a lane mask (docs/asm.md §9, lane masks): o[k] = 0xFFFF where a[k] < b[k], else 0; the
       x86 vectors' compare stored (AVX-512: its mask register's lanes), the vbool's bytes elsewhere */
    static inline void q7_fcmp16_olt_lanes(const uint16_t *a, const uint16_t *b, uint16_t *o) {
    #if Q7_MASK_COMPARE
        _mm512_storeu_si512((void *)o, _mm512_maskz_mov_epi8(
            (__mmask64)q7_fcmp16_olt_bits(a, b), _mm512_set1_epi8((char)0xFF)));
    #elif defined(__SSE2__)
        Q7_XV r[64 / Q7_XV_BYTES];
        int q;
        for (q = 0; q < 64 / Q7_XV_BYTES; q++)
            r[q] = Q7_FCMP16_OLT(Q7_XV_LOAD(a + Q7_XV_BYTES / 2 * q), Q7_XV_LOAD(b + Q7_XV_BYTES / 2 * q));
        for (q = 0; q < 64 / Q7_XV_BYTES; q++)
            Q7_XV_STORE(o + Q7_XV_BYTES / 2 * q, r[q]);
    #else
        q7_bits_to_bytes(q7_fcmp16_olt_bits(a, b), (uint8_t *)o);
    #endif
    }
    /* The vbool of the unordered fp32 compares over 16 lanes (4 bits a lane): isnan(a) | isnan(b) | a < b (eq = 0:
       the order keys of q7_fcmp16_olt_bits at 32 bits, +0 and -0 equal) or isnan(a) | isnan(b) | a == b (eq = 1: the
       same pattern, or both zero), on integer lanes only (no MXCSR mode can change it). A true 32-bit lane is four
       0xFF bytes, so the byte movemask gives its four vbool bits. The x86 bodies (Q7_FCMP32_LEAF); elsewhere the
       lane loop of ivp_fp.pxd (fcmp32_unordered). */
    #define Q7_FCMP32_VEC(V, P, S) \
        static inline V q7_fcmp32_unordered_##S(V x, V y, int eq) { \
            const V mag = P##set1_epi32(0x7FFFFFFF), inf = P##set1_epi32(0x7F800000), zero = P##setzero_##S(); \
            V mx = P##and_##S(x, mag), my = P##and_##S(y, mag), t; \
            V nan = P##or_##S(P##cmpgt_epi32(mx, inf), P##cmpgt_epi32(my, inf)); \
            if (eq) { \
                t = P##or_##S(P##cmpeq_epi32(x, y), P##cmpeq_epi32(P##or_##S(mx, my), zero)); \
            } else { \
                V sx = P##srai_epi32(x, 31), sy = P##srai_epi32(y, 31); \
                t = P##cmpgt_epi32(P##sub_epi32(P##xor_##S(my, sy), sy), P##sub_epi32(P##xor_##S(mx, sx), sx)); \
            } \
            return P##or_##S(nan, t); \
        }
    #if defined(__AVX2__)
    Q7_FCMP32_VEC(__m256i, _mm256_, si256)
    #define Q7_FCMP32(x, y, eq) q7_fcmp32_unordered_si256(x, y, eq)
    #elif defined(__SSE2__)
    Q7_FCMP32_VEC(__m128i, _mm_, si128)
    #define Q7_FCMP32(x, y, eq) q7_fcmp32_unordered_si128(x, y, eq)
    #endif
    #if defined(__SSE2__)
    #define Q7_FCMP32_LEAF 1
    static inline uint64_t q7_fcmp32_unordered_bits(const uint32_t *a, const uint32_t *b, int eq) {
        uint64_t r = 0;
        int q;
        for (q = 0; q < 64 / Q7_XV_BYTES; q++)
            r |= (uint64_t)(uint32_t)Q7_XV_MOVEMASK(Q7_FCMP32(Q7_XV_LOAD(a + Q7_XV_BYTES / 4 * q),
                                                         Q7_XV_LOAD(b + Q7_XV_BYTES / 4 * q), eq)) << (Q7_XV_BYTES * q);
        return r;
    }
    /* the same compares as a lane mask (docs/asm.md §9, lane masks): o[k] = 0xFFFFFFFF where true */
    static inline void q7_fcmp32_unordered_lanes(const uint32_t *a, const uint32_t *b, int eq, uint32_t *o) {
        Q7_XV r[64 / Q7_XV_BYTES];
        int q;
        for (q = 0; q < 64 / Q7_XV_BYTES; q++)
            r[q] = Q7_FCMP32(Q7_XV_LOAD(a + Q7_XV_BYTES / 4 * q), Q7_XV_LOAD(b + Q7_XV_BYTES / 4 * q), eq);
        for (q = 0; q < 64 / Q7_XV_BYTES; q++)
            Q7_XV_STORE(o + Q7_XV_BYTES / 4 * q, r[q]);
    }
    #else
    #define Q7_FCMP32_LEAF 0
    static inline uint64_t q7_fcmp32_unordered_bits(const uint32_t *a, const uint32_t *b, int eq) {
        (void)a; (void)b; (void)eq;
        return 0;          /* never called: Q7_FCMP32_LEAF is 0 */
    }
    static inline void q7_fcmp32_unordered_lanes(const uint32_t *a, const uint32_t *b, int eq, uint32_t *o) {
        (void)a; (void)b; (void)eq; (void)o;      /* never called: Q7_FCMP32_LEAF is 0 */
    }
    #endif
    #if defined(__SSE2__) && !defined(__AVX2__)
    /* The SSE2 (generic level) permutes: SSE2 has no variable shuffle, so a permute is a scalar lookup per lane in
       a local copy of the pool; the lanes are inserted into registers (pinsrw, 16 bits at a time) and stored whole.
       The C loop stored them one by one into a local and copied that out: a vector load of a group of narrow
       stores cannot be store-forwarded, and waits for them to retire. q7_gather16_128: lanes pool[(ix[j] >> SH) &
       MASK], j = 0..7. q7_gather8_128: bytes pool[ix[j] & MASK], j = 0..15, a pair per pinsrw. q7_gather32_128:
       lanes pool[ix[j] & 0x1F], j = 0..3. Q7_PERMUTE2_SSE2: the two-register permute over them, GATHER the
       register of lanes q of the output (it reads pool, idx and q). */
    /* the eight 16-bit words WORD(0) .. WORD(7) inserted into a register, word 0 first */
    #define Q7_INSERT_WORDS8(WORD) \
        __m128i v = _mm_cvtsi32_si128(WORD(0)); \
        v = _mm_insert_epi16(v, WORD(1), 1); \
        v = _mm_insert_epi16(v, WORD(2), 2); \
        v = _mm_insert_epi16(v, WORD(3), 3); \
        v = _mm_insert_epi16(v, WORD(4), 4); \
        v = _mm_insert_epi16(v, WORD(5), 5); \
        v = _mm_insert_epi16(v, WORD(6), 6); \
        return _mm_insert_epi16(v, WORD(7), 7);
    #define Q7_GATHER_LANE16(j) pool[(ix[j] >> sh) & mask]
    static inline __m128i q7_gather16_128(const uint16_t *pool, const uint16_t *ix, int sh, int mask) {
        Q7_INSERT_WORDS8(Q7_GATHER_LANE16)
    }
    #define Q7_GATHER_PAIR8(j) (pool[ix[2 * (j)] & mask] | (pool[ix[2 * (j) + 1] & mask] << 8))
    static inline __m128i q7_gather8_128(const uint8_t *pool, const uint8_t *ix, int mask) {
        Q7_INSERT_WORDS8(Q7_GATHER_PAIR8)
    }
    static inline __m128i q7_gather32_128(const uint32_t *pool, const uint32_t *ix) {
        return _mm_setr_epi32((int)pool[ix[0] & 0x1F], (int)pool[ix[1] & 0x1F], (int)pool[ix[2] & 0x1F],
                              (int)pool[ix[3] & 0x1F]);
    }
    #define Q7_PERMUTE2_SSE2(T, N, GATHER) do { \
        T pool[2 * (N)]; __m128i r[4]; int q; \
        memcpy(pool, a, 64); memcpy(pool + (N), b, 64); \
        for (q = 0; q < 4; q++) r[q] = (GATHER); \
        for (q = 0; q < 4; q++) _mm_storeu_si128((__m128i *)(o + (N) / 4 * q), r[q]); } while (0)
    #endif
    /* the portable body of a two-register permute: o[k] = (a || b)[BASE + (idx[k] & MASK)], N lanes of type T */
    #define Q7_PERMUTE2_C(T, N, MASK, BASE) do { \
        T pool[2 * (N)], t[N]; int k; \
        memcpy(pool, a, 64); memcpy(pool + (N), b, 64); \
        for (k = 0; k < (N); k++) t[k] = pool[(BASE) + (idx[k] & (MASK))]; \
        memcpy(o, t, 64); } while (0)
    /* the AVX-512 body: one vpermt2{b,w,d} */
    #define Q7_PERMUTE2_AVX512(SUFFIX) _mm512_storeu_si512((void *)o, _mm512_permutex2var_##SUFFIX( \
        _mm512_loadu_si512((const void *)a), _mm512_loadu_si512((const void *)idx), \
        _mm512_loadu_si512((const void *)b)))
    /* o[k] = (a || b)[idx[k] & 0x7F], 64 byte lanes */
    static inline void q7_permute2_u8(uint8_t *o, const uint8_t *a, const uint8_t *b, const uint8_t *idx) {
    #if defined(__AVX512VBMI__)
        Q7_PERMUTE2_AVX512(epi8);
    #elif defined(__AVX2__)
        /* the pool as eight 16-byte chunks: an in-lane byte shuffle of each by the index's low 4 bits, then the
           chunk (bits 4, 5, 6) picked by a tree of byte blends on those bits shifted to each byte's top (a 16-bit
           shift by 3, 2, 1 moves nothing into bit 7 from the neighbouring byte); 7 blends where matching each chunk
           number took 8 compares and 8 blends */
        const __m256i m0f = _mm256_set1_epi8(0x0F);
        __m256i tbl[8], r[2];
        int h, c;
        for (c = 0; c < 8; c++)
            tbl[c] = _mm256_broadcastsi128_si256(
                _mm_loadu_si128((const __m128i *)(c < 4 ? a + 16 * c : b + 16 * (c - 4))));
        for (h = 0; h < 2; h++) {
            __m256i ix = _mm256_loadu_si256((const __m256i *)(idx + 32 * h));
            __m256i lo4 = _mm256_and_si256(ix, m0f);
            __m256i b4 = _mm256_slli_epi16(ix, 3), b5 = _mm256_slli_epi16(ix, 2), b6 = _mm256_slli_epi16(ix, 1);
            __m256i pair[4];
            for (c = 0; c < 4; c++)
                pair[c] = _mm256_blendv_epi8(_mm256_shuffle_epi8(tbl[2 * c], lo4),
                                             _mm256_shuffle_epi8(tbl[2 * c + 1], lo4), b4);
            r[h] = _mm256_blendv_epi8(_mm256_blendv_epi8(pair[0], pair[1], b5),
                                      _mm256_blendv_epi8(pair[2], pair[3], b5), b6);
        }
        _mm256_storeu_si256((__m256i *)o, r[0]);
        _mm256_storeu_si256((__m256i *)(o + 32), r[1]);
    #elif defined(__SSE2__)
        Q7_PERMUTE2_SSE2(uint8_t, 64, q7_gather8_128(pool, idx + 16 * q, 0x7F));
    #else
        Q7_PERMUTE2_C(uint8_t, 64, 0x7F, 0);
    #endif
    }
    #if defined(__AVX2__)
    /* The AVX2 byte-plane lookup of 16-bit lanes (q7_permute2_u16, q7_dsel_u16_merge): the pool's 64 entries as
       four 16-entry chunks, each chunk's low bytes in the low 128-bit half and its high bytes in the high half, so
       one in-lane byte shuffle looks up both bytes of 16 entries; the chunk (index bits 4, 5) by two levels of
       blends, then the bytes interleaved back. q7_planes16_split: 16 lanes' bytes, per 128-bit half the low bytes
       then the high bytes (qwords: low bytes of lanes 0..7, their high bytes, low of 8..15, high of 8..15) */
    static inline __m256i q7_planes16_split(__m256i v) {
        return _mm256_shuffle_epi8(v, _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
                                                       0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15));
    }
    /* the pool a || b (64 lanes) as the four chunk registers of the lookup */
    static inline void q7_planes16_table(__m256i tbl[4], const uint16_t *a, const uint16_t *b) {
        int q;
        for (q = 0; q < 4; q++)
            tbl[q] = _mm256_permute4x64_epi64(q7_planes16_split(
                _mm256_loadu_si256((const __m256i *)(q < 2 ? a + 16 * q : b + 16 * (q - 2)))), 0xD8);
    }
    /* a lookup's result (per 128-bit half the low bytes of 16 lanes, then their high bytes) as 16 lanes */
    static inline __m256i q7_planes16_join(__m256i v) {
        return _mm256_shuffle_epi8(_mm256_permute4x64_epi64(v, 0xD8),
                                   _mm256_setr_epi8(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15,
                                                    0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15));
    }
    /* 16 lanes looked up: x holds one index byte per lane (lanes 0..15 in both 128-bit halves; its low 6 bits) */
    static inline __m256i q7_planes16_lookup(const __m256i tbl[4], __m256i x) {
        x = _mm256_and_si256(x, _mm256_set1_epi8(0x3F));
        __m256i b4 = _mm256_slli_epi16(x, 3), b5 = _mm256_slli_epi16(x, 2);   /* bit 4 / 5 -> bit 7 */
        __m256i lo = _mm256_blendv_epi8(_mm256_shuffle_epi8(tbl[0], x), _mm256_shuffle_epi8(tbl[1], x), b4);
        __m256i up = _mm256_blendv_epi8(_mm256_shuffle_epi8(tbl[2], x), _mm256_shuffle_epi8(tbl[3], x), b4);
        return q7_planes16_join(_mm256_blendv_epi8(lo, up, b5));
    }
    /* one 16-entry chunk of the pool (16 lanes at c) as the lookup's one register; its lookup of x's low 4 bits (the
       chunk forms: docs/asm.md §9, lookup chunks) */
    static inline __m256i q7_chunk16_table(const uint16_t *c) {
        return _mm256_permute4x64_epi64(q7_planes16_split(_mm256_loadu_si256((const __m256i *)c)), 0xD8);
    }
    static inline __m256i q7_chunk16_lookup(__m256i tbl, __m256i x) {
        return q7_planes16_join(_mm256_shuffle_epi8(tbl, _mm256_and_si256(x, _mm256_set1_epi8(0x0F))));
    }
    #endif
    /* The 16-bit lookups (q7_permute2_u16, q7_dsel_u16_merge) take a chunk c: -1, the whole pool (index bits 0..5);
       0..3, the chunk form (docs/asm.md §9, lookup chunks): every lane reads pool lane 16 c + (index & 15), the 16
       lanes at Q7_CHUNK16(a, b, c). The callers pass constants, so each call compiles to one of the two. */
    #define Q7_CHUNK16(a, b, c) ((c) < 2 ? (a) + 16 * (c) : (b) + 16 * ((c) - 2))
    /* o[k] = (a || b)[idx[k] & 0x3F] (chunk -1) or (a || b)[16 chunk + (idx[k] & 15)], 32 lanes of 16 bits */
    static inline void q7_permute2_u16(uint16_t *o, const uint16_t *a, const uint16_t *b, const uint16_t *idx,
                                       int chunk) {
    #if defined(__AVX512BW__)
        if (chunk >= 0) {       /* the index's chunk bits replaced by c's */
            __m512i s = _mm512_loadu_si512((const void *)idx);
            s = _mm512_or_si512(_mm512_and_si512(s, _mm512_set1_epi16(0x0F)), _mm512_set1_epi16((short)(16 * chunk)));
            _mm512_storeu_si512((void *)o, _mm512_permutex2var_epi16(_mm512_loadu_si512((const void *)a), s,
                                                                     _mm512_loadu_si512((const void *)b)));
            return;
        }
        Q7_PERMUTE2_AVX512(epi16);
    #elif defined(__AVX2__)
        /* the byte-plane lookup with the low byte of each index (the dword permutes of 8 lanes at a time it
           replaced took about 75 instructions); a chunk is one register, one byte shuffle */
        __m256i tbl[4], r[2];
        int g;
        if (chunk < 0)
            q7_planes16_table(tbl, a, b);
        else
            tbl[0] = q7_chunk16_table(Q7_CHUNK16(a, b, chunk));
        for (g = 0; g < 2; g++) {
            __m256i x = _mm256_permute4x64_epi64(q7_planes16_split(
                _mm256_loadu_si256((const __m256i *)(idx + 16 * g))), 0x88);
            r[g] = chunk < 0 ? q7_planes16_lookup(tbl, x) : q7_chunk16_lookup(tbl[0], x);
        }
        _mm256_storeu_si256((__m256i *)o, r[0]);
        _mm256_storeu_si256((__m256i *)(o + 16), r[1]);
    #elif defined(__SSE2__)
        if (chunk >= 0) {       /* a chunk's 16 lanes straight from a or b (o is stored after every lane is read) */
            const uint16_t *c = Q7_CHUNK16(a, b, chunk);
            __m128i r[4];
            int q;
            for (q = 0; q < 4; q++) r[q] = q7_gather16_128(c, idx + 8 * q, 0, 0x0F);
            for (q = 0; q < 4; q++) _mm_storeu_si128((__m128i *)(o + 8 * q), r[q]);
            return;
        }
        Q7_PERMUTE2_SSE2(uint16_t, 32, q7_gather16_128(pool, idx + 8 * q, 0, 0x3F));
    #else
        Q7_PERMUTE2_C(uint16_t, 32, chunk < 0 ? 0x3F : 0x0F, chunk < 0 ? 0 : 16 * chunk);
    #endif
    }
    /* o[k] = (a || b)[idx[k] & 0x1F], 16 lanes of 32 bits */
    static inline void q7_permute2_u32(uint32_t *o, const uint32_t *a, const uint32_t *b, const uint32_t *idx) {
    #if defined(__AVX512F__)
        Q7_PERMUTE2_AVX512(epi32);
    #elif defined(__AVX2__)
        /* the pool's four 8-lane quarters each permuted by the index's low 3 bits (vpermd), then the quarter picked
           by bits 3 and 4 (float blends on the sign bit of the index shifted up). The C loop's 4-byte stores, read
           back as one vector, could not be store-forwarded: QuantizeMX's reductions wait on seln_2x32. */
        const __m256i q0 = _mm256_loadu_si256((const __m256i *)a), q1 = _mm256_loadu_si256((const __m256i *)(a + 8));
        const __m256i q2 = _mm256_loadu_si256((const __m256i *)b), q3 = _mm256_loadu_si256((const __m256i *)(b + 8));
        __m256 r[2];
        int h;
        for (h = 0; h < 2; h++) {
            __m256i ix = _mm256_loadu_si256((const __m256i *)(idx + 8 * h));
            __m256 b3 = _mm256_castsi256_ps(_mm256_slli_epi32(ix, 28));
            __m256 b4 = _mm256_castsi256_ps(_mm256_slli_epi32(ix, 27));
            __m256 lo = _mm256_blendv_ps(_mm256_castsi256_ps(_mm256_permutevar8x32_epi32(q0, ix)),
                                         _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(q1, ix)), b3);
            __m256 hi = _mm256_blendv_ps(_mm256_castsi256_ps(_mm256_permutevar8x32_epi32(q2, ix)),
                                         _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(q3, ix)), b3);
            r[h] = _mm256_blendv_ps(lo, hi, b4);
        }
        _mm256_storeu_ps((float *)o, r[0]);
        _mm256_storeu_ps((float *)(o + 8), r[1]);
    #elif defined(__SSE2__)
        Q7_PERMUTE2_SSE2(uint32_t, 16, q7_gather32_128(pool, idx + 4 * q));
    #else
        Q7_PERMUTE2_C(uint32_t, 16, 0x1F, 0);
    #endif
    }
    /* the predicated 16-bit dual select (dselnx16t): lane k of u takes (a || b)[idx[k] & 0x3F], lane k of t
       (a || b)[(idx[k] >> 8) & 0x3F], byte j of u only where bit j of mu is set and byte j of t only where bit j of
       mt is (else it keeps its old value; u is written before t is read); cu, ct: u's and t's chunk (-1: the whole
       pool; 0..3: the chunk form, lane k of u reads pool lane 16 cu + (idx[k] & 15), of t 16 ct + ((idx[k] >> 8) &
       15): q7_permute2_u16). A leaf so that it inlines (GCC outlined the Cython form, a call that spills the kernel's
       vector registers) */
    static inline void q7_dsel_u16_merge(uint16_t *u, uint16_t *t, const uint16_t *a, const uint16_t *b,
                                         const uint16_t *idx, uint64_t mu, uint64_t mt, int cu, int ct) {
    #if defined(__AVX512BW__)
        __m512i x = _mm512_loadu_si512((const void *)a), y = _mm512_loadu_si512((const void *)b);
        __m512i s = _mm512_loadu_si512((const void *)idx), s8 = _mm512_srli_epi16(s, 8);
        const __m512i low4 = _mm512_set1_epi16(0x0F);
        if (cu >= 0)            /* the index's chunk bits replaced by the chunk's */
            s = _mm512_or_si512(_mm512_and_si512(s, low4), _mm512_set1_epi16((short)(16 * cu)));
        if (ct >= 0)
            s8 = _mm512_or_si512(_mm512_and_si512(s8, low4), _mm512_set1_epi16((short)(16 * ct)));
        __m512i ou = _mm512_permutex2var_epi16(x, s, y);
        __m512i ot = _mm512_permutex2var_epi16(x, s8, y);
        ou = _mm512_mask_blend_epi8((__mmask64)mu, _mm512_loadu_si512((const void *)u), ou);
        ot = _mm512_mask_blend_epi8((__mmask64)mt, _mm512_loadu_si512((const void *)t), ot);
        Q7_NO_MASKED_STORE(ou);
        Q7_NO_MASKED_STORE(ot);
        _mm512_storeu_si512((void *)u, ou);
        _mm512_storeu_si512((void *)t, ot);
    #elif defined(__AVX2__)
        /* the byte-plane lookup (q7_planes16_lookup) of each index's low byte (u) and high byte (t); a chunk's
           (q7_chunk16_lookup) where the chunk is given */
        __m256i tbl[4], tu, tt, r[4], mk[4];
        int g;
        if (cu < 0 || ct < 0)
            q7_planes16_table(tbl, a, b);
        tu = cu < 0 ? tbl[0] : q7_chunk16_table(Q7_CHUNK16(a, b, cu));
        tt = ct < 0 ? tbl[0] : q7_chunk16_table(Q7_CHUNK16(a, b, ct));
        for (g = 0; g < 2; g++) {     /* lanes 16g .. 16g + 15 */
            __m256i j = q7_planes16_split(_mm256_loadu_si256((const __m256i *)(idx + 16 * g)));
            __m256i jl = _mm256_permute4x64_epi64(j, 0x88), jh = _mm256_permute4x64_epi64(j, 0xDD);
            r[g] = cu < 0 ? q7_planes16_lookup(tbl, jl) : q7_chunk16_lookup(tu, jl);          /* the low bytes */
            r[2 + g] = ct < 0 ? q7_planes16_lookup(tbl, jh) : q7_chunk16_lookup(tt, jh);      /* the high bytes */
        }
        if ((mu & mt) == ~(uint64_t)0) {    /* every lane written (the all-true predicate): no merge */
            for (g = 0; g < 2; g++) _mm256_storeu_si256((__m256i *)(u + 16 * g), r[g]);
            for (g = 0; g < 2; g++) _mm256_storeu_si256((__m256i *)(t + 16 * g), r[2 + g]);
            return;
        }
        for (g = 0; g < 4; g++)     /* byte masks of bytes 32 (g & 1) .. + 31: u (g < 2), t (q7_bits_to_bytes) */
            mk[g] = q7_bytemask32_avx2((uint32_t)((g < 2 ? mu : mt) >> (32 * (g & 1))));
        for (g = 0; g < 2; g++)
            _mm256_storeu_si256((__m256i *)(u + 16 * g), _mm256_blendv_epi8(
                _mm256_loadu_si256((const __m256i *)(u + 16 * g)), r[g], mk[g]));
        for (g = 0; g < 2; g++)
            _mm256_storeu_si256((__m256i *)(t + 16 * g), _mm256_blendv_epi8(
                _mm256_loadu_si256((const __m256i *)(t + 16 * g)), r[2 + g], mk[2 + g]));
    #elif defined(__SSE2__)
        /* both lookups into registers (q7_gather16_128), then the merge or, under the all-true predicate, none: a
           lookup of the whole pool over one copy of it (a || b contiguous), a chunk's straight from its 16 lanes of
           a or b (the outputs are stored after every lane is read) */
        uint16_t pool[64];
        __m128i ru[4], rt[4];
        int q;
        if (cu < 0 || ct < 0) {
            memcpy(pool, a, 64);
            memcpy(pool + 32, b, 64);
        }
        for (q = 0; q < 4; q++) {
            ru[q] = q7_gather16_128(cu < 0 ? pool : Q7_CHUNK16(a, b, cu), idx + 8 * q, 0, cu < 0 ? 0x3F : 0x0F);
            rt[q] = q7_gather16_128(ct < 0 ? pool : Q7_CHUNK16(a, b, ct), idx + 8 * q, 8, ct < 0 ? 0x3F : 0x0F);
        }
        if ((mu & mt) != ~(uint64_t)0) {
            uint16_t ou[32], ot[32];
            for (q = 0; q < 4; q++) {
                _mm_storeu_si128((__m128i *)(ou + 8 * q), ru[q]);
                _mm_storeu_si128((__m128i *)(ot + 8 * q), rt[q]);
            }
            q7_merge_bits((uint8_t *)u, (const uint8_t *)ou, mu);
            q7_merge_bits((uint8_t *)t, (const uint8_t *)ot, mt);
            return;
        }
        for (q = 0; q < 4; q++)
            _mm_storeu_si128((__m128i *)(u + 8 * q), ru[q]);
        for (q = 0; q < 4; q++)
            _mm_storeu_si128((__m128i *)(t + 8 * q), rt[q]);
    #else
        /* both lookups in one pass over one copy of the pool, and the all-true predicate without a merge */
        uint16_t pool[64], ou[32], ot[32];
        int k;
        memcpy(pool, a, 64);
        memcpy(pool + 32, b, 64);
        for (k = 0; k < 32; k++) {
            ou[k] = cu < 0 ? pool[idx[k] & 0x3F] : pool[16 * cu + (idx[k] & 0x0F)];
            ot[k] = ct < 0 ? pool[(idx[k] >> 8) & 0x3F] : pool[16 * ct + ((idx[k] >> 8) & 0x0F)];
        }
        if ((mu & mt) == ~(uint64_t)0) {
            memcpy(u, ou, 64);
            memcpy(t, ot, 64);
            return;
        }
        q7_merge_bits((uint8_t *)u, (const uint8_t *)ou, mu);
        q7_merge_bits((uint8_t *)t, (const uint8_t *)ot, mt);
    #endif
    }
    """
    const int Q7_LITTLE_ENDIAN     # 1 on a little-endian host (u16 lane 2j = low half of u32 lane j)
    const int Q7_MASK_COMPARE      # 1 where q7_lt_bits / q7_fcmp16_olt_bits compare into mask registers (AVX-512)
    const int Q7_HAS_SRAQ          # 1 where 64-bit lanes shift arithmetically in one op (AVX-512F)
    const int Q7_VEC               # 1 where the portable bodies take their vector form (GCC, Clang: docs/build.md §1.6)
    uint64_t q7_lt_bits(const void* a, const void* b, int lane_bytes, int sgn) nogil
    void q7_merge_bits(uint8_t* vt, const uint8_t* x, uint64_t m) nogil
    uint64_t q7_fcmp16_olt_bits(const uint16_t* a, const uint16_t* b) nogil
    void q7_fcmp16_olt_lanes(const uint16_t* a, const uint16_t* b, uint16_t* o) nogil
    const int Q7_FCMP32_LEAF       # 1 where q7_fcmp32_unordered_bits has an x86 body (SSE2, AVX2)
    uint64_t q7_fcmp32_unordered_bits(const uint32_t* a, const uint32_t* b, int eq) nogil
    void q7_fcmp32_unordered_lanes(const uint32_t* a, const uint32_t* b, int eq, uint32_t* o) nogil
    uint64_t q7_bytes_to_bits(const uint8_t* m) nogil
    void q7_bits_to_bytes(uint64_t b, uint8_t* m) nogil
    void q7_copy64(void* dst, const void* src) nogil
    void q7_load_prefix(uint8_t* o, const uint8_t* src, size_t k) nogil
    void q7_spread_bytes16(uint8_t* o, const uint8_t* r) nogil
    void q7_spread_bytes32(uint8_t* o, const uint8_t* r) nogil
    void q7_spread_halves32(uint8_t* o, const uint8_t* r, int hi) nogil
    void q7_permute2_u8(uint8_t* o, const uint8_t* a, const uint8_t* b, const uint8_t* idx) nogil
    void q7_permute2_u16(uint16_t* o, const uint16_t* a, const uint16_t* b, const uint16_t* idx, int chunk) nogil
    void q7_permute2_u32(uint32_t* o, const uint32_t* a, const uint32_t* b, const uint32_t* idx) nogil
    void q7_dsel_u16_merge(uint16_t* u, uint16_t* t, const uint16_t* a, const uint16_t* b, const uint16_t* idx,
                           uint64_t mu, uint64_t mt, int cu, int ct) nogil


cdef inline vbool_t vb_spread(vbool_t b, int lane_bytes) noexcept nogil:
    """Copy the predicate bit of every lane (bit lane_bytes*k) to all lane_bytes bits of the lane."""
    if lane_bytes == 2:
        return (b & <vbool_t>0x5555555555555555) * 3
    if lane_bytes == 4:
        return (b & <vbool_t>0x1111111111111111) * 15
    return b


cdef inline void vb_to_mask(vbool_t b, int lane_bytes, vec_t* m) noexcept nogil:
    """m = the lane mask of predicate b for lanes of lane_bytes bytes: lane k all ones when bit
    lane_bytes*k of b is set, else 0 (the form a predicated op merges with)."""
    q7_bits_to_bytes(vb_spread(b, lane_bytes), m.u8)


cdef inline vbool_t vb_from_mask(const vec_t* m) noexcept nogil:
    """The vbool of a lane mask (every lane all ones or all zeros): bit j = top bit of byte j, so a
    true 8/16/32-bit lane sets its 1/2/4 bits, as a compare writes them."""
    return q7_bytes_to_bits(m.u8)


cdef inline bint vb_lane(vbool_t b, int k, int lane_bytes) noexcept nogil:
    """Predicate of lane k for lanes of `lane_bytes` bytes: bit lane_bytes*k of the vbool."""
    return (b >> (lane_bytes * k)) & 1


cdef inline vbool_t vb_set(vbool_t b, int k, int lane_bytes, bint value) noexcept nogil:
    """Set all lane_bytes bits of lane k to `value` (a compare writes 1/2/4 bits per lane)."""
    cdef vbool_t m = ((((<vbool_t>1) << lane_bytes) - 1) << (lane_bytes * k))
    return (b | m) if value else (b & ~m)
