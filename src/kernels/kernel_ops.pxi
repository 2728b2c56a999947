# The kernels' instruction layer: issue one IVP primitive on the register file `rf`, the way a
# firmware listing names it (`ivp_addnx16 v5, v3, v20` -> V3(tr, rf, B, "addnx16", P.addnx16,
# VIEW_NX16, 5, 3, 20)): registers in the disassembly's order, which is the C intrinsic's (a two-register
# source high half first: `ivp_sel2nx8i v10, v26, v7, 53` = hi v26, lo v7; docs/intrinsics.md §2). Every call
# executes exactly one primitive from q7ivp.pxd; when the kernel
# is the TracerP specialisation it also records the op, its bundle index and its operands (sources
# before, destinations after). In the NoTraceP specialisation the `if TR is TracerP` blocks are
# removed at compile time. Included by the kernel modules (needs q7regs/q7ivp/q7trace cimports).

cdef inline bint run_op(TR tr, const char* op, int b) noexcept nogil:
    """False when the run's mutation (docs/traces.md §8) makes this op a no-op; always True without a tracer."""
    if TR is TracerP:
        return not tr_skip(tr, op, b)
    return True


ctypedef void (*f_vvv)(vec_t*, const vec_t*, const vec_t*) noexcept nogil
ctypedef void (*f_vvvv)(vec_t*, const vec_t*, const vec_t*, const vec_t*) noexcept nogil
ctypedef void (*f_vvi)(vec_t*, const vec_t*, int) noexcept nogil
ctypedef void (*f_vvvi)(vec_t*, const vec_t*, const vec_t*, int) noexcept nogil
ctypedef void (*f_bvvv)(vbool_t*, vec_t*, const vec_t*, const vec_t*) noexcept nogil
ctypedef void (*f_bvv)(vbool_t*, const vec_t*, const vec_t*) noexcept nogil
ctypedef void (*f_vvb)(vec_t*, const vec_t*, vbool_t) noexcept nogil
ctypedef void (*f_vv)(vec_t*, const vec_t*) noexcept nogil


cdef inline void V3(TR tr, regfile_t* rf, int b, const char* op, f_vvv fn, int view,
                    int t, int s, int r) noexcept nogil:
    """vt <- op(vs, vr)"""
    if TR is TracerP:
        if tr_begin(tr, op, b):
            tr_vec(tr, ROLE_SRC, s, view, &rf.v[s]); tr_vec(tr, ROLE_SRC, r, view, &rf.v[r])
    if run_op(tr, op, b):
        fn(&rf.v[t], &rf.v[s], &rf.v[r])
    if TR is TracerP:
        if tr.open:
            tr_vec(tr, ROLE_DST, t, view, &rf.v[t]); tr_end(tr)


cdef inline void V4(TR tr, regfile_t* rf, int b, const char* op, f_vvvv fn, int view,
                    int t, int s, int r, int x) noexcept nogil:
    """vt <- op(vs, vr, vx)  (selects with an index vector: vs is the pool's high half, vr its low)"""
    if TR is TracerP:
        if tr_begin(tr, op, b):
            tr_vec(tr, ROLE_SRC, s, view, &rf.v[s]); tr_vec(tr, ROLE_SRC, r, view, &rf.v[r])
            tr_vec(tr, ROLE_SRC, x, view, &rf.v[x])
    if run_op(tr, op, b):
        fn(&rf.v[t], &rf.v[s], &rf.v[r], &rf.v[x])
    if TR is TracerP:
        if tr.open:
            tr_vec(tr, ROLE_DST, t, view, &rf.v[t]); tr_end(tr)


cdef inline void VI(TR tr, regfile_t* rf, int b, const char* op, f_vvi fn, int view,
                    int t, int s, int imm) noexcept nogil:
    """vt <- op(vs, imm)"""
    if TR is TracerP:
        if tr_begin(tr, op, b):
            tr_vec(tr, ROLE_SRC, s, view, &rf.v[s]); tr_scalar(tr, 255, imm)
    if run_op(tr, op, b):
        fn(&rf.v[t], &rf.v[s], imm)
    if TR is TracerP:
        if tr.open:
            tr_vec(tr, ROLE_DST, t, view, &rf.v[t]); tr_end(tr)


cdef inline void VVI(TR tr, regfile_t* rf, int b, const char* op, f_vvvi fn, int view_in, int view_out,
                     int t, int s, int r, int imm) noexcept nogil:
    """vt <- op(vs, vr, imm)  (immediate selects: vs first, as the disassembly lists it)"""
    if TR is TracerP:
        if tr_begin(tr, op, b):
            tr_vec(tr, ROLE_SRC, s, view_in, &rf.v[s]); tr_vec(tr, ROLE_SRC, r, view_in, &rf.v[r])
            tr_scalar(tr, 255, imm)
    if run_op(tr, op, b):
        fn(&rf.v[t], &rf.v[s], &rf.v[r], imm)
    if TR is TracerP:
        if tr.open:
            tr_vec(tr, ROLE_DST, t, view_out, &rf.v[t]); tr_end(tr)


cdef inline void BV(TR tr, regfile_t* rf, int b, const char* op, f_bvvv fn, int view, int vbview,
                    int fb, int t, int s, int r) noexcept nogil:
    """vbf, vt <- op(va, vr)  (flag-setting bmin / bmax / babssub)"""
    if TR is TracerP:
        if tr_begin(tr, op, b):
            tr_vec(tr, ROLE_SRC, s, view, &rf.v[s]); tr_vec(tr, ROLE_SRC, r, view, &rf.v[r])
    if run_op(tr, op, b):
        fn(&rf.vb[fb], &rf.v[t], &rf.v[s], &rf.v[r])
    if TR is TracerP:
        if tr.open:
            tr_vbool(tr, ROLE_DST, fb, vbview, rf.vb[fb]); tr_vec(tr, ROLE_DST, t, view, &rf.v[t]); tr_end(tr)


cdef inline void CMP(TR tr, regfile_t* rf, int b, const char* op, f_bvv fn, int view, int vbview,
                     int fb, int s, int r) noexcept nogil:
    """vbf <- op(vs, vr)  (integer compares)"""
    if TR is TracerP:
        if tr_begin(tr, op, b):
            tr_vec(tr, ROLE_SRC, s, view, &rf.v[s]); tr_vec(tr, ROLE_SRC, r, view, &rf.v[r])
    if run_op(tr, op, b):
        fn(&rf.vb[fb], &rf.v[s], &rf.v[r])
    if TR is TracerP:
        if tr.open:
            tr_vbool(tr, ROLE_DST, fb, vbview, rf.vb[fb]); tr_end(tr)


cdef inline void MOVT(TR tr, regfile_t* rf, int b, const char* op, f_vvb fn, int view, int vbview,
                      int t, int s, int pb) noexcept nogil:
    """vt <- vb ? vs : vt  (predicated move; vt is read and written)"""
    if TR is TracerP:
        if tr_begin(tr, op, b):
            tr_vec(tr, ROLE_SRC, t, view, &rf.v[t]); tr_vec(tr, ROLE_SRC, s, view, &rf.v[s])
            tr_vbool(tr, ROLE_SRC, pb, vbview, rf.vb[pb])
    if run_op(tr, op, b):
        fn(&rf.v[t], &rf.v[s], rf.vb[pb])
    if TR is TracerP:
        if tr.open:
            tr_vec(tr, ROLE_DST, t, view, &rf.v[t]); tr_end(tr)


cdef inline void V2(TR tr, regfile_t* rf, int b, const char* op, f_vv fn, int view_in, int view_out,
                    int t, int s) noexcept nogil:
    """vt <- op(vs)  (converts)"""
    if TR is TracerP:
        if tr_begin(tr, op, b):
            tr_vec(tr, ROLE_SRC, s, view_in, &rf.v[s])
    if run_op(tr, op, b):
        fn(&rf.v[t], &rf.v[s])
    if TR is TracerP:
        if tr.open:
            tr_vec(tr, ROLE_DST, t, view_out, &rf.v[t]); tr_end(tr)


cdef inline void I_floatn_2x32(TR tr, regfile_t* rf, int b, int t, int s, int imm) noexcept nogil:
    """ivp_floatn_2x32 vt, vs, imm"""
    if TR is TracerP:
        if tr_begin(tr, "floatn_2x32", b):
            tr_vec(tr, ROLE_SRC, s, VIEW_N_2X32, &rf.v[s]); tr_scalar(tr, 255, imm)
    if run_op(tr, "floatn_2x32", b):
        P.floatn_2x32(&rf.v[t], &rf.v[s], imm)
    if TR is TracerP:
        if tr.open:
            tr_vec(tr, ROLE_DST, t, VIEW_N_2XF32, &rf.v[t]); tr_end(tr)


cdef inline void I_ultn_2xf32t(TR tr, regfile_t* rf, int b, int fb, int s, int r, int pb) noexcept nogil:
    """ivp_ultn_2xf32t vbf, va, vr, vbp (unordered fp32 less-than, merged under vbp)"""
    if TR is TracerP:
        if tr_begin(tr, "ultn_2xf32t", b):
            tr_vbool(tr, ROLE_SRC, fb, VIEW_VB32, rf.vb[fb])
            tr_vec(tr, ROLE_SRC, s, VIEW_N_2XF32, &rf.v[s]); tr_vec(tr, ROLE_SRC, r, VIEW_N_2XF32, &rf.v[r])
            tr_vbool(tr, ROLE_SRC, pb, VIEW_VB32, rf.vb[pb])
    if run_op(tr, "ultn_2xf32t", b):
        P.ultn_2xf32t(&rf.vb[fb], &rf.v[s], &rf.v[r], rf.vb[pb])
    if TR is TracerP:
        if tr.open:
            tr_vbool(tr, ROLE_DST, fb, VIEW_VB32, rf.vb[fb]); tr_end(tr)


cdef inline void I_dselnx16(TR tr, regfile_t* rf, int b, int odd, int even, int hi, int lo, int sel) noexcept nogil:
    """ivp_dselnx16 odd, even, hi, lo, sel  (even[k] from selector byte 2k, odd[k] from byte 2k+1 of lo || hi)"""
    if TR is TracerP:
        if tr_begin(tr, "dselnx16", b):
            tr_vec(tr, ROLE_SRC, hi, VIEW_NX16, &rf.v[hi]); tr_vec(tr, ROLE_SRC, lo, VIEW_NX16, &rf.v[lo])
            tr_vec(tr, ROLE_SRC, sel, VIEW_2NX8, &rf.v[sel])
    if run_op(tr, "dselnx16", b):
        P.dselnx16(&rf.v[odd], &rf.v[even], &rf.v[hi], &rf.v[lo], &rf.v[sel])
    if TR is TracerP:
        if tr.open:
            tr_vec(tr, ROLE_DST, odd, VIEW_NX16, &rf.v[odd]); tr_vec(tr, ROLE_DST, even, VIEW_NX16, &rf.v[even])
            tr_end(tr)


cdef inline void I_dselnx16t(TR tr, regfile_t* rf, int b, int odd, int even, int hi, int lo, int sel,
                             int pb) noexcept nogil:
    """ivp_dselnx16t odd, even, hi, lo, sel, vb  (merged under the vbool2N vb: bit 2k gates even[k], bit 2k+1
    odd[k]; odd and even are read and written)"""
    if TR is TracerP:
        if tr_begin(tr, "dselnx16t", b):
            tr_vec(tr, ROLE_SRC, odd, VIEW_NX16, &rf.v[odd]); tr_vec(tr, ROLE_SRC, even, VIEW_NX16, &rf.v[even])
            tr_vec(tr, ROLE_SRC, hi, VIEW_NX16, &rf.v[hi]); tr_vec(tr, ROLE_SRC, lo, VIEW_NX16, &rf.v[lo])
            tr_vec(tr, ROLE_SRC, sel, VIEW_2NX8, &rf.v[sel]); tr_vbool(tr, ROLE_SRC, pb, VIEW_VB8, rf.vb[pb])
    if run_op(tr, "dselnx16t", b):
        P.dselnx16t(&rf.v[odd], &rf.v[even], &rf.v[hi], &rf.v[lo], &rf.v[sel], rf.vb[pb])
    if TR is TracerP:
        if tr.open:
            tr_vec(tr, ROLE_DST, odd, VIEW_NX16, &rf.v[odd]); tr_vec(tr, ROLE_DST, even, VIEW_NX16, &rf.v[even])
            tr_end(tr)


cdef inline void I_packvrnrnx48(TR tr, regfile_t* rf, int b, int t, int w, int sh) noexcept nogil:
    """ivp_packvrnrnx48 vt, wv, sh"""
    if TR is TracerP:
        if tr_begin(tr, "packvrnrnx48", b):
            tr_wvec(tr, ROLE_SRC, w, &rf.wv[w]); tr_scalar(tr, 255, sh)
    if run_op(tr, "packvrnrnx48", b):
        P.packvrnrnx48(&rf.v[t], &rf.wv[w], sh)
    if TR is TracerP:
        if tr.open:
            tr_vec(tr, ROLE_DST, t, VIEW_NX16, &rf.v[t]); tr_end(tr)


cdef inline void I_packvrn_2x96(TR tr, regfile_t* rf, int b, int t, int w, int sh) noexcept nogil:
    """ivp_packvrn_2x96 vt, wv, sh"""
    if TR is TracerP:
        if tr_begin(tr, "packvrn_2x96", b):
            tr_wvec(tr, ROLE_SRC, w, &rf.wv[w]); tr_scalar(tr, 255, sh)
    if run_op(tr, "packvrn_2x96", b):
        P.packvrn_2x96(&rf.v[t], &rf.wv[w], sh)
    if TR is TracerP:
        if tr.open:
            tr_vec(tr, ROLE_DST, t, VIEW_N_2X32, &rf.v[t]); tr_end(tr)


cdef inline void I_extrprn_2x32(TR tr, regfile_t* rf, int b, int p, int s, int k) noexcept nogil:
    """ivp_extrprn_2x32 pr, vs, k"""
    if TR is TracerP:
        if tr_begin(tr, "extrprn_2x32", b):
            tr_vec(tr, ROLE_SRC, s, VIEW_N_2X32, &rf.v[s]); tr_scalar(tr, 255, k)
    if run_op(tr, "extrprn_2x32", b):
        P.extrprn_2x32(&rf.pr[p], &rf.v[s], k)
    if TR is TracerP:
        if tr.open:
            tr_pr(tr, ROLE_DST, p, rf.pr[p]); tr_end(tr)


cdef inline void I_lav2nx8_xp(TR tr, regfile_t* rf, int b, int t, const uint8_t* base, Py_ssize_t* off,
                              Py_ssize_t n) noexcept nogil:
    """ivp_lav2nx8_xp vt, a(base+off), n   (variable-length load, off += n)"""
    if TR is TracerP:
        if tr_begin(tr, "lav2nx8_xp", b):
            tr_scalar(tr, 254, off[0]); tr_scalar(tr, 253, n)
    if run_op(tr, "lav2nx8_xp", b):
        P.lav2nx8_xp(&rf.v[t], base, off, n)
    if TR is TracerP:
        if tr.open:
            tr_vec(tr, ROLE_DST, t, VIEW_2NX8, &rf.v[t]); tr_end(tr)


cdef inline void I_labvdcmprs2nx8_xp(TR tr, regfile_t* rf, int b, int t, int pb, const uint8_t* base,
                                     Py_ssize_t* off, Py_ssize_t n) noexcept nogil:
    """ivp_labvdcmprs2nx8_xp vt, vb, a(base+off), n   (variable-length load expanded under vb, off += n)"""
    if TR is TracerP:
        if tr_begin(tr, "labvdcmprs2nx8_xp", b):
            tr_vbool(tr, ROLE_SRC, pb, VIEW_VB8, rf.vb[pb]); tr_scalar(tr, 254, off[0]); tr_scalar(tr, 253, n)
    if run_op(tr, "labvdcmprs2nx8_xp", b):
        P.labvdcmprs2nx8_xp(&rf.v[t], rf.vb[pb], base, off, n)
    if TR is TracerP:
        if tr.open:
            tr_vec(tr, ROLE_DST, t, VIEW_2NX8, &rf.v[t]); tr_end(tr)


cdef inline void I_sav2nx8_xp(TR tr, regfile_t* rf, int b, int s, uint8_t* base, Py_ssize_t* off,
                              Py_ssize_t n) noexcept nogil:
    """ivp_sav2nx8_xp vs, a(base+off), n   (variable-length store, off += n)"""
    if TR is TracerP:
        if tr_begin(tr, "sav2nx8_xp", b):
            tr_vec(tr, ROLE_SRC, s, VIEW_2NX8, &rf.v[s]); tr_scalar(tr, 254, off[0]); tr_scalar(tr, 253, n)
    if run_op(tr, "sav2nx8_xp", b):
        P.sav2nx8_xp(&rf.v[s], base, off, n)
    if TR is TracerP:
        if tr.open:
            tr_end(tr)


cdef inline void I_lv2nx8_i(TR tr, regfile_t* rf, int b, int t, const uint8_t* base, Py_ssize_t off) noexcept nogil:
    """ivp_lv2nx8_i vt, a(base), off   (constant / rodata load)"""
    if TR is TracerP:
        if tr_begin(tr, "lv2nx8_i", b):
            tr_scalar(tr, 254, off)
    if run_op(tr, "lv2nx8_i", b):
        P.lv2nx8_i(&rf.v[t], base, off)
    if TR is TracerP:
        if tr.open:
            tr_vec(tr, ROLE_DST, t, VIEW_2NX8, &rf.v[t]); tr_end(tr)


ctypedef void (*f_wvvp)(wvec_t*, const vec_t*, const vec_t*, pr_t) noexcept nogil
ctypedef void (*f_wvv)(wvec_t*, const vec_t*, const vec_t*) noexcept nogil


cdef inline void WVVP(TR tr, regfile_t* rf, int b, const char* op, f_wvvp fn, int view, int w, int s, int r,
                      int p) noexcept nogil:
    """wv <- op(va, vb, pr)  (an overwriting pr MAC; 4-tap: va the window's high half, vb its low)"""
    if TR is TracerP:
        if tr_begin(tr, op, b):
            tr_vec(tr, ROLE_SRC, s, view, &rf.v[s]); tr_vec(tr, ROLE_SRC, r, view, &rf.v[r])
            tr_pr(tr, ROLE_SRC, p, rf.pr[p])
    if run_op(tr, op, b):
        fn(&rf.wv[w], &rf.v[s], &rf.v[r], rf.pr[p])
    if TR is TracerP:
        if tr.open:
            tr_wvec(tr, ROLE_DST, w, &rf.wv[w]); tr_end(tr)


cdef inline void WVVPA(TR tr, regfile_t* rf, int b, const char* op, f_wvvp fn, int view, int w, int s, int r,
                       int p) noexcept nogil:
    """wv <- wv + op(va, vb, pr)  (an accumulating pr MAC: wv is read and written)"""
    if TR is TracerP:
        if tr_begin(tr, op, b):
            tr_wvec(tr, ROLE_SRC, w, &rf.wv[w])
            tr_vec(tr, ROLE_SRC, s, view, &rf.v[s]); tr_vec(tr, ROLE_SRC, r, view, &rf.v[r])
            tr_pr(tr, ROLE_SRC, p, rf.pr[p])
    if run_op(tr, op, b):
        fn(&rf.wv[w], &rf.v[s], &rf.v[r], rf.pr[p])
    if TR is TracerP:
        if tr.open:
            tr_wvec(tr, ROLE_DST, w, &rf.wv[w]); tr_end(tr)


cdef inline void WVV(TR tr, regfile_t* rf, int b, const char* op, f_wvv fn, int view, int w, int s,
                     int r) noexcept nogil:
    """wv <- op(va, vb)  (32-bit MACs and the gather-widens into wvec)"""
    if TR is TracerP:
        if tr_begin(tr, op, b):
            tr_vec(tr, ROLE_SRC, s, view, &rf.v[s]); tr_vec(tr, ROLE_SRC, r, view, &rf.v[r])
    if run_op(tr, op, b):
        fn(&rf.wv[w], &rf.v[s], &rf.v[r])
    if TR is TracerP:
        if tr.open:
            tr_wvec(tr, ROLE_DST, w, &rf.wv[w]); tr_end(tr)


cdef inline void I_extrpr2nx8(TR tr, regfile_t* rf, int b, int p, int s, int k) noexcept nogil:
    """ivp_extrpr2nx8 pr, vs, k   (pr = byte lane k of vs)"""
    if TR is TracerP:
        if tr_begin(tr, "extrpr2nx8", b):
            tr_vec(tr, ROLE_SRC, s, VIEW_2NX8, &rf.v[s]); tr_scalar(tr, 255, k)
    if run_op(tr, "extrpr2nx8", b):
        P.extrpr2nx8(&rf.pr[p], &rf.v[s], k)
    if TR is TracerP:
        if tr.open:
            tr_pr(tr, ROLE_DST, p, rf.pr[p]); tr_end(tr)


cdef inline void I_movpint16(TR tr, regfile_t* rf, int b, int p, int imm) noexcept nogil:
    """ivp_movpint16 pr, imm   (the 16-bit immediate into each 16-bit field of pr)"""
    if TR is TracerP:
        if tr_begin(tr, "movpint16", b):
            tr_scalar(tr, 255, imm)
    if run_op(tr, "movpint16", b):
        P.movpint16(&rf.pr[p], imm)
    if TR is TracerP:
        if tr.open:
            tr_pr(tr, ROLE_DST, p, rf.pr[p]); tr_end(tr)


cdef inline void I_oltnxf16t(TR tr, regfile_t* rf, int b, int fb, int s, int r, int pb) noexcept nogil:
    """ivp_oltnxf16t vbf, va, vr, vbp (ordered fp16 less-than, merged under vbp)"""
    if TR is TracerP:
        if tr_begin(tr, "oltnxf16t", b):
            tr_vbool(tr, ROLE_SRC, fb, VIEW_VB16, rf.vb[fb])
            tr_vec(tr, ROLE_SRC, s, VIEW_NXF16, &rf.v[s]); tr_vec(tr, ROLE_SRC, r, VIEW_NXF16, &rf.v[r])
            tr_vbool(tr, ROLE_SRC, pb, VIEW_VB16, rf.vb[pb])
    if run_op(tr, "oltnxf16t", b):
        P.oltnxf16t(&rf.vb[fb], &rf.v[s], &rf.v[r], rf.vb[pb])
    if TR is TracerP:
        if tr.open:
            tr_vbool(tr, ROLE_DST, fb, VIEW_VB16, rf.vb[fb]); tr_end(tr)
