/* The momentum stages on CPU devices: a segment's sums in PBD_SUM_LANES double8 lanes
 * (body_reduce_serial), and the velocity update that also reduces and solves
 * (update_reduce_serial), over common/momentum.cl. Built after cpu/vec8.cl. */

#ifndef PBD_ACC_COMPENSATED
/* pbd_particle_accumulate for 8 particles at once, lane j of every double8 for particle j: the
 * PBD_SUM_LANES layout of CPU devices. Each lane does pbd_particle_accumulate's operations in
 * its order, so lane j's sums are the CPU reference's lane j. */
typedef struct sums8 {
    double8 m, mx, my, mz, px, py, pz, lx, ly, lz, ke;
    double8 xx, xy, xz, yy, yz, zz, jx, jy, jz, ljx, ljy, ljz, err;
} sums8;

/* 8 particles' x, v (w: mass), dx and |C|, lane j for particle j, for sums8_add. */
typedef struct part8 {
    float8 x, y, z, vx, vy, vz, m, dx, dy, dz, e;
} part8;

static void sums8_zero(sums8 *a)
{
    a->m = a->mx = a->my = a->mz = a->px = a->py = a->pz = a->lx = a->ly = a->lz = a->ke =
        (double8)(0.0);
    a->xx = a->xy = a->xz = a->yy = a->yz = a->zz = a->jx = a->jy = a->jz = a->ljx = a->ljy =
        a->ljz = a->err = (double8)(0.0);
}

/* (x, y, z) += a x b, lane by lane, as pbd_cross_accumulate. */
VEC8_INLINE void cross8_acc(double8 *x, double8 *y, double8 *z, double8 ax, double8 ay, double8 az,
                            double8 bx, double8 by, double8 bz)
{
    *x = fma(-az, by, fma(ay, bz, *x));
    *y = fma(-ax, bz, fma(az, bx, *y));
    *z = fma(-ay, bx, fma(ax, by, *z));
}

VEC8_INLINE void sums8_add(sums8 *a, const part8 *q, double4 rd, int with_dx, int stats,
                           float inv_h)
{
    double8 m = convert_double8(q->m);
    double8 rx = convert_double8(q->x) - rd.x;
    double8 ry = convert_double8(q->y) - rd.y;
    double8 rz = convert_double8(q->z) - rd.z;
    double8 vx = convert_double8(q->vx), vy = convert_double8(q->vy), vz = convert_double8(q->vz);
    double8 mx = m * rx, my = m * ry, mz = m * rz;
    a->m = a->m + m;
    a->mx = a->mx + mx;
    a->my = a->my + my;
    a->mz = a->mz + mz;
    a->px = fma(m, vx, a->px);
    a->py = fma(m, vy, a->py);
    a->pz = fma(m, vz, a->pz);
    cross8_acc(&a->lx, &a->ly, &a->lz, mx, my, mz, vx, vy, vz);
    if (stats) {
        double8 px = m * vx, py = m * vy, pz = m * vz;
        a->ke = a->ke + 0.5 * ((px * vx + py * vy) + pz * vz);
        a->err = fmax(a->err, convert_double8(q->e));
    }
    a->xx = fma(mx, rx, a->xx);
    a->xy = fma(mx, ry, a->xy);
    a->xz = fma(mx, rz, a->xz);
    a->yy = fma(my, ry, a->yy);
    a->yz = fma(my, rz, a->yz);
    a->zz = fma(mz, rz, a->zz);
    if (with_dx) {
        double8 jx = m * convert_double8(q->dx * inv_h);
        double8 jy = m * convert_double8(q->dy * inv_h);
        double8 jz = m * convert_double8(q->dz * inv_h);
        a->jx = a->jx + jx;
        a->jy = a->jy + jy;
        a->jz = a->jz + jz;
        cross8_acc(&a->ljx, &a->ljy, &a->ljz, rx, ry, rz, jx, jy, jz);
    }
}

/* Each of eight double8 summed across its lanes as a tree (lane j + lane j + 4, then
 * j + j + 2, then 0 + 1: the order pbd_sum_lane's CPU reference follows), the eight at
 * once: each stage adds two vectors' halves side by side, 21 instructions in all where
 * eight separate trees take 48. */
static double8 lanes_sum8(double8 a, double8 b, double8 c, double8 d, double8 e, double8 f,
                          double8 g, double8 h)
{
    double8 ab = (double8)(a.lo, b.lo) + (double8)(a.hi, b.hi);
    double8 cd = (double8)(c.lo, d.lo) + (double8)(c.hi, d.hi);
    double8 ef = (double8)(e.lo, f.lo) + (double8)(e.hi, f.hi);
    double8 gh = (double8)(g.lo, h.lo) + (double8)(g.hi, h.hi);
    double8 ad =
        (double8)(ab.s01, ab.s45, cd.s01, cd.s45) + (double8)(ab.s23, ab.s67, cd.s23, cd.s67);
    double8 eh =
        (double8)(ef.s01, ef.s45, gh.s01, gh.s45) + (double8)(ef.s23, ef.s67, gh.s23, gh.s67);
    return (double8)(ad.even, eh.even) + (double8)(ad.odd, eh.odd);
}

/* The PBD_SUM_* record (sums8's fields are in its order). */
static void sums8_store(const sums8 *a, pbd_acc *out)
{
    vstore8(lanes_sum8(a->m, a->mx, a->my, a->mz, a->px, a->py, a->pz, a->lx), 0, out);
    vstore8(lanes_sum8(a->ly, a->lz, a->ke, a->xx, a->xy, a->xz, a->yy, a->yz), 1, out);
    /* The last slot, PBD_SUM_ERR, is a maximum, not a sum: it is written below. */
    vstore8(lanes_sum8(a->zz, a->jx, a->jy, a->jz, a->ljx, a->ljy, a->ljz, (double8)(0.0)), 2, out);
    double4 e4 = fmax(a->err.lo, a->err.hi);
    double2 e2 = fmax(e4.lo, e4.hi);
    out[PBD_SUM_ERR] = fmax(e2.lo, e2.hi);
}

/* pbd_update_particle for particles i .. i + n - 1, the same operations per component
 * (pbd_update_velocity's), leaving the new positions and velocities in q. The update is
 * element-wise, so it runs on the records as they are stored (two float16 of four
 * particles); only the new x and v are transposed, for the sums. */
VEC8_INLINE void update8(part8 *q, int i, int n, int skip, __global pbd_float4 *x,
                         __global const pbd_float4 *p, __global pbd_float4 *v,
                         __global pbd_float4 *xp, __global pbd_float4 *vp, int bdf2, int keep_prev,
                         float inv_h, float damping)
{
    float16 xlo, xhi, plo, phi, vlo, vhi, alo = 0.0f, ahi = 0.0f;
    load_raw8(x, i, n, &xlo, &xhi);
    load_raw8(p, i, n, &plo, &phi);
    load_raw8(v, i, n, &vlo, &vhi);
    float f = 1.0f - damping;
    if (bdf2)
        load_raw8(xp, i, n, &alo, &ahi);
    float16 nlo = velocity16(xlo, plo, alo, bdf2, inv_h, f);
    float16 nhi = velocity16(xhi, phi, ahi, bdf2, inv_h, f);
    /* Lanes below skip hold particles this work-item has updated already: their kept
     * previous state is not written again, and their x (p by now) and loaded v go back
     * unchanged, so that x and v still take whole-vector stores. The mass (w) stays. */
    if (keep_prev) {
        store_raw8(xp, i, skip, n, xlo, xhi);
        store_raw8(vp, i, skip, n, vlo, vhi);
    }
    int16 k = (int16)(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    nlo = select(nlo, vlo, VEC8_W_LANES | (k < skip));
    nhi = select(nhi, vhi, VEC8_W_LANES | (k + 4 < skip));
    store_raw8(v, i, 0, n, nlo, nhi);
    store_raw8(x, i, 0, n, plo, phi);
    float8 unused;
    split8(plo, phi, &q->x, &q->y, &q->z, &unused);
    split8(nlo, nhi, &q->vx, &q->vy, &q->vz, &q->m);
}

/* Adds particles i + skip .. i + n - 1 (1 <= n <= 8; skip > 0 only with n = 8) to a, after
 * updating them when `update`. Lanes below skip or from n on get the neutral particle at r
 * (m = 0, x = r, v = dx = 0): every term is +0, which leaves the sums' bits alone. */
VEC8_INLINE void sum_group8(sums8 *a, int i, int n, int skip, int update, __global pbd_float4 *x,
                            __global const pbd_float4 *p, __global pbd_float4 *v,
                            __global pbd_float4 *xp, __global pbd_float4 *vp,
                            __global const pbd_float4 *dx, float4 r, double4 rd, int bdf2,
                            int keep_prev, float inv_h, float damping, int with_dx, int stats,
                            __global const int *csr_offsets, __global const int *csr_slots,
                            __global const pbd_distance *distance_records)
{
    part8 q;
    float8 unused;
    if (update)
        update8(&q, i, n, skip, x, p, v, xp, vp, bdf2, keep_prev, inv_h, damping);
    else {
        load8(x, i, n, &q.x, &q.y, &q.z, &unused);
        load8(v, i, n, &q.vx, &q.vy, &q.vz, &q.m);
    }
    if (with_dx)
        load8(dx, i, n, &q.dx, &q.dy, &q.dz, &unused);
    else
        q.dx = q.dy = q.dz = (float8)(0.0f);
    q.e = (float8)(0.0f);
    if (stats) {
        float e[8];
        for (int j = 0; j < 8; ++j) {
            int k = i + min(j, n - 1);
            e[j] = pbd_particle_error(x, distance_records, csr_slots, csr_offsets[k],
                                      csr_offsets[k + 1]);
        }
        q.e = vload8(0, e);
    }
    if (n < 8 || skip > 0) {
        int8 lane = (int8)(0, 1, 2, 3, 4, 5, 6, 7);
        int8 out = lane >= n || lane < skip;
        float8 zero = (float8)(0.0f);
        q.x = select(q.x, (float8)(r.x), out);
        q.y = select(q.y, (float8)(r.y), out);
        q.z = select(q.z, (float8)(r.z), out);
        q.vx = select(q.vx, zero, out);
        q.vy = select(q.vy, zero, out);
        q.vz = select(q.vz, zero, out);
        q.m = select(q.m, zero, out);
        q.dx = select(q.dx, zero, out);
        q.dy = select(q.dy, zero, out);
        q.dz = select(q.dz, zero, out);
        q.e = select(q.e, zero, out);
    }
    sums8_add(a, &q, rd, with_dx, stats, inv_h);
}

/* A segment's sums in the PBD_SUM_LANES layout, after updating its particles when `update`.
 * Inlined, so that a caller passing constant flags gets a loop without their branches. */
VEC8_INLINE void sum_segment8(pbd_segment seg, int update, __global pbd_float4 *x,
                              __global const pbd_float4 *p, __global pbd_float4 *v,
                              __global pbd_float4 *xp, __global pbd_float4 *vp,
                              __global const pbd_float4 *dx, float4 r, int bdf2, int keep_prev,
                              float inv_h, float damping, int with_dx, int stats,
                              __global const int *csr_offsets, __global const int *csr_slots,
                              __global const pbd_distance *distance_records, pbd_acc *out)
{
    const double4 rd = convert_double4(r);
    sums8 a;
    sums8_zero(&a);
    int end = seg.first + seg.count, i = seg.first;
    /* Full groups (n = 8: whole-vector loads and stores), then the rest: the segment's last
     * 8 particles with the ones already summed masked (pbd_sum_lane), or, in a segment of
     * fewer than 8, a clamped gather and per-lane stores. */
    for (; i + 8 <= end; i += 8)
        sum_group8(&a, i, 8, 0, update, x, p, v, xp, vp, dx, r, rd, bdf2, keep_prev, inv_h, damping,
                   with_dx, stats, csr_offsets, csr_slots, distance_records);
    if (i < end && seg.count >= 8)
        sum_group8(&a, end - 8, 8, 8 - (end - i), update, x, p, v, xp, vp, dx, r, rd, bdf2,
                   keep_prev, inv_h, damping, with_dx, stats, csr_offsets, csr_slots,
                   distance_records);
    else if (i < end)
        sum_group8(&a, i, end - i, 0, update, x, p, v, xp, vp, dx, r, rd, bdf2, keep_prev, inv_h,
                   damping, with_dx, stats, csr_offsets, csr_slots, distance_records);
    sums8_store(&a, out);
}

/* update_velocity, body_reduce_serial and body_solve_serial in one launch, for CPU devices
 * with fp64 sums: one work-item per segment updates its particles (update.cl's work, 8 at a
 * time, update8) and sums them from the registers, saving the reduction a second read
 * of x and v. Then the body's last segment to finish does body_solve_serial's work: it adds the
 * body's segment sums in order from zero and solves, saving that launch. A counter per body
 * (body_done; the elected work-item sets it back to 0) elects it; the atomic only elects, the sums
 * keep their fixed order, so the bits are those of the separate kernels. The fences make each
 * segment's sums visible before its count. */
__kernel void
update_reduce_serial(__global const pbd_segment *segments, __global pbd_float4 *particle_x,
                     __global const pbd_float4 *particle_p, __global pbd_float4 *particle_v,
                     __global pbd_float4 *particle_xp, __global pbd_float4 *particle_vp,
                     __global const pbd_float4 *particle_dx, __global pbd_float4 *body_ref,
                     float inv_h, float damping, int bdf2, int keep_prev, int with_dx,
                     __global pbd_acc *segment_sums, int num_segments, __global pbd_acc *body_track,
                     __global const int *body_flags, float4 gh, __global pbd_acc *body_out,
                     __global pbd_float4 *body_apply, __global const int *body_segments,
                     __global int *body_done)
{
    int g = get_global_id(0);
    if (g >= num_segments)
        return;
    pbd_segment seg = segments[g];
    pbd_acc acc[PBD_SUM_COUNT];
    /* The usual substep (first order, nothing collided) gets a loop of its own. */
    if (!bdf2 && !keep_prev && !with_dx)
        sum_segment8(seg, 1, particle_x, particle_p, particle_v, particle_xp, particle_vp,
                     particle_dx, body_ref[seg.body], 0, 0, inv_h, damping, 0, 0, NULL, NULL, NULL,
                     acc);
    else
        sum_segment8(seg, 1, particle_x, particle_p, particle_v, particle_xp, particle_vp,
                     particle_dx, body_ref[seg.body], bdf2, keep_prev, inv_h, damping, with_dx, 0,
                     NULL, NULL, NULL, acc);
    for (int q = 0; q < PBD_SUM_COUNT; ++q)
        segment_sums[g * PBD_SUM_COUNT + q] = acc[q];
    int b = seg.body, first = body_segments[b], count = body_segments[b + 1] - first;
    if (count > 1) {
        mem_fence(CLK_GLOBAL_MEM_FENCE);
        if (atomic_inc(body_done + b) != count - 1)
            return;
        mem_fence(CLK_GLOBAL_MEM_FENCE);
        body_done[b] = 0;
    }
    pbd_acc s[PBD_SUM_COUNT];
    for (int q = 0; q < PBD_SUM_COUNT; ++q)
        acc[q] = 0;
    for (int k = first; k < first + count; ++k) {
        for (int q = 0; q < PBD_SUM_COUNT; ++q)
            s[q] = segment_sums[k * PBD_SUM_COUNT + q];
        pbd_sums_add(acc, s);
    }
    solve_body(b, acc, body_ref, body_track, body_flags, PBD_SOLVE_STEP, gh, body_out, body_apply);
}
#endif
/* Stage one, for CPU devices: one work-item per segment, its particles 8 at a time in the
 * PBD_SUM_LANES layout (fp64), or in order (compensated float). A CPU device runs a
 * work-group as a loop; the tree's barriers and its 64 x 24 partial sums cost more there
 * than the particles themselves. */
__kernel void
body_reduce_serial(__global const pbd_segment *segments, __global const pbd_float4 *particle_x,
                   __global const pbd_float4 *particle_v, __global const pbd_float4 *particle_dx,
                   __global const pbd_float4 *body_ref, __global const int *csr_offsets,
                   __global const int *csr_slots, __global const pbd_distance *distance_records,
                   float inv_h, int with_dx, int stats, __global pbd_acc *segment_sums,
                   int num_segments)
{
    int g = get_global_id(0);
    if (g >= num_segments)
        return;
    pbd_segment seg = segments[g];
    pbd_acc acc[PBD_SUM_COUNT];
#ifdef PBD_ACC_COMPENSATED
    sum_particles(seg.first, 0, seg.count, 1, particle_x, particle_v, particle_dx,
                  body_ref[seg.body], csr_offsets, csr_slots, distance_records, inv_h, with_dx,
                  stats, acc);
#else
    /* Reads only, with update = 0 (the casts drop const for the shared signature). */
    sum_segment8(seg, 0, (__global pbd_float4 *)particle_x, NULL, (__global pbd_float4 *)particle_v,
                 NULL, NULL, particle_dx, body_ref[seg.body], 0, 0, inv_h, 0.0f, with_dx, stats,
                 csr_offsets, csr_slots, distance_records, acc);
#endif
    for (int q = 0; q < PBD_SUM_COUNT; ++q)
        segment_sums[g * PBD_SUM_COUNT + q] = acc[q];
}
