/* The four-particle constraints (tet volume, dihedral and isometric bending, Neo-Hookean
 * elements), and tethers, on CPU devices, sixteen of one colour a work-item: the sixteen
 * constraints' particles gathered as float16 components, the shared projection's arithmetic element
 * by element (pbd_shared.h's bodies for float16: the same bits), and what it writes scattered back.
 * As there, a constraint that skips changes nothing it would not, and a pinned particle (w = 0)
 * keeps its bits, so that a colour may share it: the blocks' whole groups store every record
 * (a block's work-item is the only one to touch its particles, pinned ones included), the
 * others only what changes (pbd_store). The plain kernels, one constraint a
 * work-item, hold float4 records, which keep PoCL from vectorising their work-item loops (vec8.cl).
 * Where a mesh has blocks (pbd_blocks), a work-item takes a block's part of every colour in one
 * launch (project_<name>_blocks), the last group of a part, fewer than sixteen, through the same
 * lanes, the unused ones writing nothing (LANES16). A launch a colour takes a colour's last group,
 * and `serial` constraints (an overflow set, or a type's small colours all in one launch), one by
 * one through the shared projection. Every call passes n = 16 as a constant where the group is
 * whole, so that the tails' code folds away there: with n at run time the whole groups ran a third
 * slower on a 40^3 tet box. Built after vec8.cl. */

/* Eight 32-byte records laid out as (a, b, c, d, f0, f1, pad, pad) (pbd_volume,
 * pbd_dihedral): four whole-vector loads, each field transposed to an int8. */
VEC8_INLINE void records4x8(__global const int *r, int8 *a, int8 *b, int8 *cc, int8 *d, int8 *f0,
                            int8 *f1)
{
    int16 q0 = vload16(0, r), q1 = vload16(1, r), q2 = vload16(2, r), q3 = vload16(3, r);
    const uint16 abcd = (uint16)(0, 8, 16, 24, 1, 9, 17, 25, 2, 10, 18, 26, 3, 11, 19, 27);
    int16 lo = shuffle2(q0, q1, abcd), hi = shuffle2(q2, q3, abcd);
    int16 flo = shuffle2(q0, q1, abcd + 4), fhi = shuffle2(q2, q3, abcd + 4);
    *a = (int8)(lo.s0123, hi.s0123);
    *b = (int8)(lo.s4567, hi.s4567);
    *cc = (int8)(lo.s89ab, hi.s89ab);
    *d = (int8)(lo.scdef, hi.scdef);
    *f0 = (int8)(flo.s0123, fhi.s0123);
    *f1 = (int8)(flo.s4567, fhi.s4567);
}

/* Sixteen such records from record c: each field as an int16 or float16. With n < 16 only
 * records [c, c + n) are read, the last repeated in the lanes after it (see LANES16). */
VEC8_INLINE void records4x16(__global const void *records, int c, int n, int16 *k, float16 *f0,
                             float16 *f1)
{
    __global const int *r = (__global const int *)records + 8 * c;
    if (n < 16) {
        int f[6][16];
        for (int i = 0; i < 16; ++i)
            for (int j = 0; j < 6; ++j)
                f[j][i] = r[8 * min(i, n - 1) + j];
        PBD_UNROLL
        for (int i = 0; i < 4; ++i)
            k[i] = vload16(0, f[i]);
        *f0 = as_float16(vload16(0, f[4]));
        *f1 = as_float16(vload16(0, f[5]));
        return;
    }
    int8 lo[6], hi[6];
    records4x8(r, &lo[0], &lo[1], &lo[2], &lo[3], &lo[4], &lo[5]);
    records4x8(r + 64, &hi[0], &hi[1], &hi[2], &hi[3], &hi[4], &hi[5]);
    PBD_UNROLL
    for (int i = 0; i < 4; ++i)
        k[i] = (int16)(lo[i], hi[i]);
    *f0 = as_float16((int16)(lo[4], hi[4]));
    *f1 = as_float16((int16)(lo[5], hi[5]));
}

/* Sixteen 64-byte records at r as their sixteen fields (f[j]: field j of each, lane i from
 * record i; with n < 16, from record min(i, n - 1)): sixteen whole-record loads and a transpose in
 * four rounds of sixteen two-source shuffles, each pairing rows j and j + 8 lane by lane (row 2j
 * their first halves, 2j + 1 the second). Reading each field record by record costs sixteen loads
 * and inserts a field. */
VEC8_INLINE void records16x16(__global const float *r, int n, float16 *f)
{
    const uint16 lo = (uint16)(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    float16 a[16], b[16];
    if (n < 16) {
        PBD_UNROLL
        for (int i = 0; i < 16; ++i)
            a[i] = VEC8_LOAD16(r + 16 * min(i, n - 1));
    } else {
        PBD_UNROLL
        for (int i = 0; i < 16; ++i)
            a[i] = VEC8_LOAD16(r + 16 * i);
    }
    PBD_UNROLL
    for (int round = 0; round < 2; ++round) {
        PBD_UNROLL
        for (int j = 0; j < 8; ++j) {
            b[2 * j] = shuffle2(a[j], a[j + 8], lo);
            b[2 * j + 1] = shuffle2(a[j], a[j + 8], lo + 8);
        }
        PBD_UNROLL
        for (int j = 0; j < 8; ++j) {
            a[2 * j] = shuffle2(b[j], b[j + 8], lo);
            a[2 * j + 1] = shuffle2(b[j], b[j + 8], lo + 8);
        }
    }
    PBD_UNROLL
    for (int j = 0; j < 16; ++j)
        f[j] = a[j];
}

/* Field f of sixteen records r[0..15], as a float16 (IFIELD16: an int16). */
#define FIELD16(r, f)                                                                              \
    (float16)(r[0].f, r[1].f, r[2].f, r[3].f, r[4].f, r[5].f, r[6].f, r[7].f, r[8].f, r[9].f,      \
              r[10].f, r[11].f, r[12].f, r[13].f, r[14].f, r[15].f)
#define IFIELD16(r, f)                                                                             \
    (int16)(r[0].f, r[1].f, r[2].f, r[3].f, r[4].f, r[5].f, r[6].f, r[7].f, r[8].f, r[9].f,        \
            r[10].f, r[11].f, r[12].f, r[13].f, r[14].f, r[15].f)

/* A group of n < 16 constraints (the last of a block's part of a colour) goes through the
 * same sixteen-lane arithmetic: its lanes from n on repeat constraint n - 1,
 * so every particle index is one of the group's, and write nothing (LANES16: the lanes below
 * n). The multipliers are read and written for the n only (load16_n, store16_n). */
#define LANES16(n) ((int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15) < (int16)(n))

/* Floats src[0, m), m <= 16, as a float16 whose lanes from m on repeat src[m - 1]. */
VEC8_INLINE float16 load16_n(__global const float *src, int m)
{
    if (m == 16)
        return vload16(0, src);
    float t[16];
    for (int i = 0; i < 16; ++i)
        t[i] = src[min(i, m - 1)];
    return vload16(0, t);
}

/* The first m (<= 16) lanes of v to dst[0, m). */
VEC8_INLINE void store16_n(float16 v, __global float *dst, int m)
{
    if (m == 16) {
        vstore16(v, 0, dst);
        return;
    }
    float t[16];
    vstore16(v, 0, t);
    for (int i = 0; i < m; ++i)
        dst[i] = t[i];
}

/* Where a group's particle indices are read from: for a whole group (on), lane i's index of
 * slot j at kr[ks i + kj j] of the records themselves, as scalar loads (gather16_at); for a
 * group of fewer than sixteen, whose lanes repeat the last, from the int16 vectors k. `own`:
 * no other work-item of the launch touches the group's particles, pinned ones included (a
 * block's or a cut group's, pbd_blocks), so a whole group stores every record (store4x16). */
typedef struct index16 {
    int on; /* a whole group (a constant where the caller's n is) */
    __global const int *kr;
    int ks, kj;
    int own; /* a constant */
} index16;

/* Slot j's sixteen particles, those of k or, where ix.on, lane i's at ix.kr[ix.ks i + ix.kj j],
 * as float16 components (x[0..3]: x, y, z, w). */
VEC8_INLINE void gather4x16(__global const pbd_float4 *p, int16 k, index16 ix, int j, float16 *x)
{
    if (ix.on) /* no pointer past the records for a group's tail, which reads none */
        gather16_at(p, ix.kr + ix.kj * j, ix.ks, &x[0], &x[1], &x[2], &x[3]);
    else
        gather16(p, k, &x[0], &x[1], &x[2], &x[3]);
}

/* Eight particles k (or, where `on`, those at kr[0], kr[ks], ...), records r0 and r1
 * (join8's), stored where `write`. */
VEC8_INLINE void scatter8_where(__global pbd_float4 *p, int8 k, int on, __global const int *kr,
                                int ks, int8 write, float16 r0, float16 r1)
{
    const float4 rec[8] = {r0.s0123, r0.s4567, r0.s89ab, r0.scdef,
                           r1.s0123, r1.s4567, r1.s89ab, r1.scdef};
    const int at[8] = {k.s0, k.s1, k.s2, k.s3, k.s4, k.s5, k.s6, k.s7};
    const int w[8] = {write.s0, write.s1, write.s2, write.s3,
                      write.s4, write.s5, write.s6, write.s7};
    PBD_UNROLL
    for (int j = 0; j < 8; ++j)
        if (w[j])
            p[on ? kr[ks * j] : at[j]] = rec[j];
}

/* Slot j's particles, those of k or, where ix.on, gather4x16's, (x: x, y, z, w) moved by d
 * (3 components) where `ok` and w != 0. A whole group of a work-item that owns its particles
 * (ix.on and ix.own) stores all sixteen records, the others as they were gathered: the same
 * memory after, without a test and branch a record, which cost this Intel core 10-20 % of
 * the elements' time. Elsewhere a colour's work-items may share a pinned particle, which
 * none may then write. */
VEC8_INLINE void store4x16(__global pbd_float4 *p, int16 k, index16 ix, int j, int16 ok,
                           const float16 *x, const float16 *d)
{
    /* no pointer past the records for a group's tail, which reads none */
    __global const int *kr = ix.on ? ix.kr + ix.kj * j : ix.kr;
    int on = ix.on, ks = ix.ks;
    int16 write = ok & (x[3] != 0.0f);
    float16 nx = x[0] + d[0], ny = x[1] + d[1], nz = x[2] + d[2];
    float16 r0, r1;
    if (on && ix.own) {
        nx = select(x[0], nx, write), ny = select(x[1], ny, write), nz = select(x[2], nz, write);
        join8(nx.lo, ny.lo, nz.lo, x[3].lo, &r0, &r1);
        scatter8_at(p, kr, ks, r0, r1);
        join8(nx.hi, ny.hi, nz.hi, x[3].hi, &r0, &r1);
        scatter8_at(p, kr + 8 * ks, ks, r0, r1);
        return;
    }
    if (!any(write)) /* a tether's pinned anchors, or sixteen slack tethers */
        return;
    join8(nx.lo, ny.lo, nz.lo, x[3].lo, &r0, &r1);
    scatter8_where(p, k.lo, on, kr, ks, write.lo, r0, r1);
    join8(nx.hi, ny.hi, nz.hi, x[3].hi, &r0, &r1);
    scatter8_where(p, k.hi, on, on ? kr + 8 * ks : kr, ks, write.hi, r0, r1);
}

/* pbd_project4 for sixteen constraints, lanes `active` only (x: the four particles' x, y, z, w;
 * g: their gradients, 12 float16). Returns the multipliers' changes (0 where skipped). */
VEC8_INLINE float16 project4x16(__global pbd_float4 *p, const int16 *k, index16 ix, int16 active,
                                float16 x[4][4], const float16 *g, float16 cval, float16 compliance,
                                float16 l, float inv_h2)
{
    float16 wsum = 0.0f;
    PBD_UNROLL
    for (int i = 0; i < 4; ++i)
        wsum += x[i][3] *
                (g[3 * i] * g[3 * i] + g[3 * i + 1] * g[3 * i + 1] + g[3 * i + 2] * g[3 * i + 2]);
    float16 at = compliance * inv_h2;
    int16 xpbd = compliance >= 0.0f;
    float16 num = select(-compliance * -cval, -cval - at * l, xpbd);
    float16 den = select(wsum, wsum + at, xpbd);
    int16 ok = active & (wsum > 0.0f) & (den > 0.0f);
    float16 s = num / den;
    PBD_UNROLL
    for (int i = 0; i < 4; ++i) {
        float16 d[3] = {x[i][3] * s * g[3 * i], x[i][3] * s * g[3 * i + 1],
                        x[i][3] * s * g[3 * i + 2]};
        store4x16(p, k[i], ix, i, ok, x[i], d);
    }
    return select((float16)0.0f, s, ok & xpbd);
}

/* Constraints [c, c + 16)' four particles k gathered (x[i]: x, y, z, w of particle i) and
 * their positions as pbd_shared.h's gradients take them (12 float16: a, b, c, d). */
VEC8_INLINE void positions4x16(__global const pbd_float4 *p, const int16 *k, index16 ix,
                               float16 x[4][4], float16 *pos)
{
    PBD_UNROLL
    for (int i = 0; i < 4; ++i) {
        gather4x16(p, k[i], ix, i, x[i]);
        pos[3 * i] = x[i][0];
        pos[3 * i + 1] = x[i][1];
        pos[3 * i + 2] = x[i][2];
    }
}

/* Volume: pbd_volume_project, constraints [c, c + n), n <= 16. */
VEC8_INLINE void pbd_volume_project16(__global pbd_float4 *p, __global const pbd_volume *records,
                                      __global float *lambda, int c, int n, float inv_h2,
                                      int reset_lambda, int own)
{
    int16 k[4];
    float16 rest, compliance, x[4][4], pos[12], g[12];
    records4x16(records, c, n, k, &rest, &compliance);
    float16 old = load16_n(lambda + c, n);
    float16 l = reset_lambda ? (float16)0.0f : old;
    const index16 ix = {n == 16, (__global const int *)(records + c), 8, 1, own};
    positions4x16(p, k, ix, x, pos);
    float16 cval = pbd_volume_gradients16(pos, g) - rest;
    /* pbd_volume_project sums without project4's leading 0 (the same bits: the first term
     * is >= 0) and leaves the multiplier of a skipped constraint as it was */
    float16 wsum = x[0][3] * (g[0] * g[0] + g[1] * g[1] + g[2] * g[2]) +
                   x[1][3] * (g[3] * g[3] + g[4] * g[4] + g[5] * g[5]) +
                   x[2][3] * (g[6] * g[6] + g[7] * g[7] + g[8] * g[8]) +
                   x[3][3] * (g[9] * g[9] + g[10] * g[10] + g[11] * g[11]);
    float16 den = compliance >= 0.0f ? wsum + compliance * inv_h2 : wsum;
    int16 ok = wsum > 0.0f && den > 0.0f;
    float16 dl = project4x16(p, k, ix, LANES16(n), x, g, cval, compliance, l, inv_h2);
    store16_n(ok ? l + dl : old, lambda + c, n);
}

/* Sixteen 16-byte records (a, b, f0, f1: pbd_tether) from record c, each field as an int16
 * or float16: four whole-vector loads and four two-source shuffles. With n < 16 only records
 * [c, c + n) are read, the last repeated in the lanes after it (see LANES16). */
VEC8_INLINE void records2x16(__global const void *records, int c, int n, int16 *ka, int16 *kb,
                             float16 *f0, float16 *f1)
{
    __global const int *r = (__global const int *)records + 4 * c;
    if (n < 16) {
        int f[4][16];
        for (int i = 0; i < 16; ++i)
            for (int j = 0; j < 4; ++j)
                f[j][i] = r[4 * min(i, n - 1) + j];
        *ka = vload16(0, f[0]);
        *kb = vload16(0, f[1]);
        *f0 = as_float16(vload16(0, f[2]));
        *f1 = as_float16(vload16(0, f[3]));
        return;
    }
    int16 q0 = vload16(0, r), q1 = vload16(1, r), q2 = vload16(2, r), q3 = vload16(3, r);
    /* of eight records: field 0 in lanes 0-7, field 1 in 8-15 (+ 2: fields 2 and 3) */
    const uint16 ab = (uint16)(0, 4, 8, 12, 16, 20, 24, 28, 1, 5, 9, 13, 17, 21, 25, 29);
    int16 lo = shuffle2(q0, q1, ab), hi = shuffle2(q2, q3, ab);
    int16 flo = shuffle2(q0, q1, ab + 2), fhi = shuffle2(q2, q3, ab + 2);
    *ka = (int16)(lo.lo, hi.lo);
    *kb = (int16)(lo.hi, hi.hi);
    *f0 = as_float16((int16)(flo.lo, fhi.lo));
    *f1 = as_float16((int16)(flo.hi, fhi.hi));
}

/* Tethers: pbd_tether_project, constraints [c, c + n), n <= 16. A colour's tethers share no
 * free particle, only pinned anchors, which no lane writes: sixteen at once are the one by
 * one order's results. pbd_project_distance's gain (pbd_distance_gain16) and corrections, lane
 * by lane, applied where the tether is stretched; a slack one writes nothing and adds 0 to
 * its multiplier, as there. */
VEC8_INLINE void pbd_tether_project16(__global pbd_float4 *p, __global const pbd_tether *records,
                                      __global float *lambda, int c, int n, float inv_h2,
                                      int reset_lambda, int own)
{
    int16 k[2];
    float16 rest, compliance, xa[4], xb[4], dl;
    records2x16(records, c, n, &k[0], &k[1], &rest, &compliance);
    float16 old = load16_n(lambda + c, n);
    float16 l = reset_lambda ? (float16)0.0f : old;
    const index16 ix = {n == 16, (__global const int *)(records + c), 4, 1, own};
    gather4x16(p, k[0], ix, 0, xa);
    gather4x16(p, k[1], ix, 1, xb);
    float16 ex = xa[0] - xb[0], ey = xa[1] - xb[1], ez = xa[2] - xb[2];
    int16 on = (ex * ex + ey * ey + ez * ez > rest * rest) & LANES16(n);
    float16 g = pbd_distance_gain16(ex, ey, ez, xa[3], xb[3], rest, compliance, l, inv_h2, &dl);
    float16 ga = xa[3] * g, gb = -xb[3] * g;
    const float16 da[3] = {ga * ex, ga * ey, ga * ez}, db[3] = {gb * ex, gb * ey, gb * ez};
    store4x16(p, k[0], ix, 0, on, xa, da);
    store4x16(p, k[1], ix, 1, on, xb, db);
    store16_n(l + (on ? dl : (float16)0.0f), lambda + c, n);
}

/* Dihedral bending: pbd_dihedral_project, constraints [c, c + n), n <= 16. */
VEC8_INLINE void pbd_dihedral_project16(__global pbd_float4 *p,
                                        __global const pbd_dihedral *records,
                                        __global float *lambda, int c, int n, float inv_h2,
                                        int reset_lambda, int own)
{
    int16 k[4];
    float16 rest, compliance, x[4][4], pos[12], g[12], cval;
    records4x16(records, c, n, k, &rest, &compliance);
    float16 old = load16_n(lambda + c, n);
    float16 l = reset_lambda ? (float16)0.0f : old;
    const index16 ix = {n == 16, (__global const int *)(records + c), 8, 1, own};
    positions4x16(p, k, ix, x, pos);
    int16 active = pbd_dihedral_gradients16(pos, rest, g, &cval) & LANES16(n);
    float16 dl = project4x16(p, k, ix, active, x, g, cval, compliance, l, inv_h2);
    store16_n(active ? l + dl : old, lambda + c, n);
}

/* Isometric bending: pbd_isometric_project, constraints [c, c + n), n <= 16 (48-byte
 * records, read field by field; with n < 16 record r[min(i, n - 1)] in lane i). */
VEC8_INLINE void pbd_isometric_project16(__global pbd_float4 *p,
                                         __global const pbd_isometric *records,
                                         __global float *lambda, int c, int n, float inv_h2,
                                         int reset_lambda, int own)
{
    __global const pbd_isometric *r = records + c;
    pbd_isometric rec[16];
    if (n < 16) {
        for (int i = 0; i < 16; ++i)
            rec[i] = r[min(i, n - 1)];
    }
    int16 k[4];
    float16 w[4], compliance, x[4][4], pos[12], g[12];
/* the indices, the weights k and the compliance of sixteen records src[0..15] */
#define ISOMETRIC_FIELDS16(src)                                                                    \
    do {                                                                                           \
        k[0] = IFIELD16(src, a), k[1] = IFIELD16(src, b), k[2] = IFIELD16(src, c);                 \
        k[3] = IFIELD16(src, d);                                                                   \
        PBD_UNROLL                                                                                 \
        for (int j = 0; j < 4; ++j)                                                                \
            w[j] = FIELD16(src, k[j]);                                                             \
        compliance = FIELD16(src, compliance);                                                     \
    } while (0)
    if (n < 16)
        ISOMETRIC_FIELDS16(rec);
    else
        ISOMETRIC_FIELDS16(r);
#undef ISOMETRIC_FIELDS16
    float16 l = reset_lambda ? (float16)0.0f : load16_n(lambda + c, n);
    const index16 ix = {n == 16, (__global const int *)r, 12, 1, own};
    positions4x16(p, k, ix, x, pos);
    float16 cval = pbd_isometric_gradients16(w, pos, g);
    float16 dl = project4x16(p, k, ix, LANES16(n), x, g, cval, compliance, l, inv_h2);
    store16_n(l + dl, lambda + c, n);
}

/* Neo-Hookean elements: pbd_neo_hookean_project, constraints [c, c + n), n <= 16 (64-byte
 * records; the multipliers interleaved, H and D, as there). As stored (pbd_neo_hookean) the
 * sixteen records are loaded whole and transposed, 64 two-source shuffles a group; `tiled`,
 * the blocks' whole groups of sixteen are stored transposed already (field j of record i at
 * 16 j + i: cl.c's tile_records), so that each field is one load, and the next group's
 * kilobyte is fetched meanwhile: where the records outgrow the caches (a pile of 205,800
 * elements), the loads otherwise wait on memory. A group of fewer keeps its records as
 * stored. */
VEC8_INLINE void pbd_neo_hookean_project16(__global pbd_float4 *p,
                                           __global const pbd_neo_hookean *records,
                                           __global float *lambda, int c, int n, float inv_h2,
                                           int reset_lambda, int own, int tiled)
{
    float16 f[16]; /* a, b, c, d, dm_inv[9], compliance, compliance_h, gamma */
    __global const float *r = (__global const float *)(records + c);
    if (tiled && n == 16) {
        PBD_UNROLL
        for (int j = 0; j < 16; ++j)
            VEC8_PREFETCH(r + 256 + 16 * j);
        PBD_UNROLL
        for (int j = 0; j < 16; ++j)
            f[j] = VEC8_LOAD16(r + 16 * j);
    } else
        records16x16(r, n, f);
    int16 k[4] = {as_int16(f[0]), as_int16(f[1]), as_int16(f[2]), as_int16(f[3])};
    float16 dm[9];
    PBD_UNROLL
    for (int m = 0; m < 9; ++m)
        dm[m] = f[4 + m];
    float16 gamma = f[15], ah = f[14] * inv_h2, ad = f[13] * inv_h2;
    float16 v0 = load16_n(lambda + 2 * c, min(16, 2 * n));
    float16 v1 = n > 8 ? load16_n(lambda + 2 * c + 16, 2 * n - 16) : v0;
    const uint16 even = (uint16)(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    float16 old_h = shuffle2(v0, v1, even), old_d = shuffle2(v0, v1, even + 1);
    float16 lh = reset_lambda ? (float16)0.0f : old_h, ld = reset_lambda ? (float16)0.0f : old_d;
    float16 x[4][4], pos[12], gh[12], gd[12], det_f, norm, dlh, dld, sd;
    /* tiled: slot j's sixteen indices are row j of the tile; as stored: a record's first four
     * fields, 16 ints a record */
    const index16 ix = {n == 16, (__global const int *)r, tiled ? 1 : 16, tiled ? 16 : 1, own};
    positions4x16(p, k, ix, x, pos);
    float16 w[4] = {x[0][3], x[1][3], x[2][3], x[3][3]};
    int16 ok = pbd_neo_hookean_gradients16(pos, dm, gh, gd, &det_f, &norm) & LANES16(n);
    ok &= pbd_neo_hookean_solve16(w, gh, gd, det_f, norm, gamma, ah, ad, lh, ld, &dlh, &dld, &sd);
    PBD_UNROLL
    for (int i = 0; i < 4; ++i) {
        float16 d[3];
        PBD_UNROLL
        for (int j = 0; j < 3; ++j)
            d[j] = w[i] * pbd_fmaf(sd, gd[3 * i + j], dlh * gh[3 * i + j]);
        store4x16(p, k[i], ix, i, ok, x[i], d);
    }
    float16 nh = ok ? lh + dlh : old_h, nd = ok ? ld + dld : old_d;
    const uint16 mix = (uint16)(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    store16_n(shuffle2(nh, nd, mix), lambda + 2 * c, min(16, 2 * n));
    if (n > 8)
        store16_n(shuffle2(nh, nd, mix + 8), lambda + 2 * c + 16, 2 * n - 16);
}

/* project_<name>16: project_<name>'s parameters; work-item k takes constraints
 * [16k, 16k + 16) of the colour (fewer at its end); its work-items may share a pinned
 * particle (own = 0). The arguments after the type are pbd_<name>_project16's after `own`
 * (the Neo-Hookean element's `tiled`), with their commas. */
#define PBD_PROJECT16_KERNEL(name, type, ...)                                                      \
    __kernel void project_##name##16(                                                              \
        __global pbd_float4 * particle_p, __global pbd_float4 * particle_dx,                       \
        __global const type *records, __global float *lambda, int offset, int count, float inv_h2, \
        int reset_lambda, int track, int serial)                                                   \
    {                                                                                              \
        int k = 16 * (int)get_global_id(0);                                                        \
        int lo = serial ? 0 : k, hi = serial ? (k == 0 ? count : 0) : min(k + 16, count);          \
        if (!serial && hi - lo == 16) {                                                            \
            pbd_##name##_project16(particle_p, records, lambda, offset + lo, 16, inv_h2,           \
                                   reset_lambda, 0 __VA_ARGS__);                                   \
            return;                                                                                \
        }                                                                                          \
        for (int j = lo; j < hi; ++j)                                                              \
            pbd_##name##_project(particle_p, particle_dx, records, lambda, offset + j, inv_h2,     \
                                 reset_lambda, track);                                             \
    }
/* project_<name>_blocks: block b's part of each of num_colors colours in turn (offsets:
 * num_colors x (num_blocks + 1), pbd_blocks' block_offsets or cut_offsets), sixteen at a
 * time; no other block touches its particles, pinned ones included (own = 1). (One block
 * ending in an overflow set has that set as parts of up to sixteen that share no unpinned
 * particle: pbd_blocks.block_colors.) A
 * part's last group of fewer than lanes_min goes one by one, where sixteen lanes cost more
 * (about 12 ns a volume element on one core that way, 33 a dihedral one, 43 a Neo-Hookean
 * one, against about 115, 115, 125 and 160 ns a group of sixteen): the same results. Then,
 * with num_colliders > 0 (the iteration's last type, where no distance constraint or body
 * constraint follows), block b's particles collide as the collide kernel would after the last
 * colour, as project_gs_blocks does: every constraint on them is done by then. The
 * arguments after lanes_min as project_<name>16's. */
#define PBD_PROJECT_BLOCKS_KERNEL(name, type, lanes_min, ...)                                      \
    __kernel void project_##name##_blocks(                                                         \
        __global pbd_float4 *particle_p, __global const type *records, __global float *lambda,     \
        __global const int *block_offsets, int num_colors, int num_blocks, float inv_h2,           \
        int reset_lambda, __global const int *block_first, __global const pbd_collider *colliders, \
        int num_colliders, __global pbd_float4 *particle_dx,                                       \
        __global const pbd_float4 *particle_x, int track, __global const int *particle_body,       \
        __global const pbd_float4 *body_material, int materials)                                   \
    {                                                                                              \
        int b = get_global_id(0);                                                                  \
        if (b >= num_blocks)                                                                       \
            return;                                                                                \
        for (int k = 0; k < num_colors; ++k) {                                                     \
            __global const int *bo = block_offsets + k * (num_blocks + 1);                         \
            int c = bo[b], hi = bo[b + 1];                                                         \
            for (; c + 16 <= hi; c += 16)                                                          \
                pbd_##name##_project16(particle_p, records, lambda, c, 16, inv_h2, reset_lambda,   \
                                       1 __VA_ARGS__);                                             \
            if (hi - c >= lanes_min)                                                               \
                pbd_##name##_project16(particle_p, records, lambda, c, hi - c, inv_h2,             \
                                       reset_lambda, 1 __VA_ARGS__);                               \
            else                                                                                   \
                for (; c < hi; ++c)                                                                \
                    pbd_##name##_project(particle_p, NULL, records, lambda, c, inv_h2,             \
                                         reset_lambda, 0);                                         \
        }                                                                                          \
        collide_range8(particle_p, particle_dx, particle_x, block_first[b], block_first[b + 1],    \
                       colliders, num_colliders, track, particle_body, body_material, materials);  \
    }
PBD_PROJECT_BLOCKS_KERNEL(volume, pbd_volume, 10, )
PBD_PROJECT_BLOCKS_KERNEL(dihedral, pbd_dihedral, 4, )
PBD_PROJECT_BLOCKS_KERNEL(isometric, pbd_isometric, 8, )
PBD_PROJECT_BLOCKS_KERNEL(neo_hookean, pbd_neo_hookean, 4, , 1) /* tiled */
#undef PBD_PROJECT_BLOCKS_KERNEL

PBD_PROJECT16_KERNEL(tether, pbd_tether, )
PBD_PROJECT16_KERNEL(volume, pbd_volume, )
PBD_PROJECT16_KERNEL(dihedral, pbd_dihedral, )
PBD_PROJECT16_KERNEL(isometric, pbd_isometric, )
PBD_PROJECT16_KERNEL(neo_hookean, pbd_neo_hookean, , 0) /* as stored */
#undef PBD_PROJECT16_KERNEL
