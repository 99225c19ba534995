/* Members [first, end) one by one (body_constraint_member), their sums carried in *v and *w
 * (pressure alone: sums holds no others) and left in sums too. */
static inline void
body_pressure_members(int first, int end, pbd_float4 r, __global const pbd_float4 *particle_p,
                      __global const int *member_particle, __global const pbd_float4 *member_rest,
                      __global pbd_float4 *particle_grad, __global const int *pressure_offsets,
                      __global const int *pressure_pairs, float *v, float *w, float *sums)
{
    sums[PBD_BSUM_VOL] = *v;
    sums[PBD_BSUM_WG] = *w;
    for (int m = first; m < end; ++m)
        body_constraint_member(m, r, PBD_BODY_PRESSURE, particle_p, member_particle, member_rest,
                               particle_grad, pressure_offsets, pressure_pairs, sums);
    *v = sums[PBD_BSUM_VOL];
    *w = sums[PBD_BSUM_WG];
}

/* Pressure's reduction (body_constraint_reduce_one for a constraint of pressure alone) over
 * members [first, end), particles themselves (a body's members are its particles), of a
 * constraint whose first member is at r, adding to `sums`. Sixteen members at a time as
 * float16 components, lane l walking member l's ring of neighbours from `table`
 * (pbd_plan_pressure_table's, rows 0 .. steps - 1 of np particles), pair s being (n_s, n_s+1)
 * as in pbd_volume_gradient, the last closing on row 0, each neighbour gathered once (a
 * particle past its ring adds an exact 0 for finite positions, which leaves a sum that began
 * at +0 as it is); then their terms added one by one in member order, as
 * pbd_body_constraint_sums adds them: the same bits. A last group of fewer than sixteen, and
 * a group with a particle the table does not hold (-1 in row 0), goes one by one
 * (body_constraint_member), in the same order. */
static inline void
body_pressure_reduce16(int first, int end, pbd_float4 r, __global const pbd_float4 *particle_p,
                       __global const int *member_particle, __global const pbd_float4 *member_rest,
                       __global pbd_float4 *particle_grad, __global const int *pressure_offsets,
                       __global const int *pressure_pairs, __global const int *table, int steps,
                       int np, float *sums)
{
    const float sixth = 1.0f / 6.0f;
    float v = sums[PBD_BSUM_VOL], w = sums[PBD_BSUM_WG];
    int m = first;
    for (; m + 16 <= end; m += 16) {
        int16 k0 = vload16(0, table + m);
        if (any(k0 < 0)) { /* a particle the table does not hold: the sixteen one by one */
            body_pressure_members(m, m + 16, r, particle_p, member_particle, member_rest,
                                  particle_grad, pressure_offsets, pressure_pairs, &v, &w, sums);
            continue;
        }
        float16 gx = 0.0f, gy = 0.0f, gz = 0.0f, cx, cy, cz, cw, ax, ay, az, bx, by, bz, bw;
        gather16(particle_p, k0, &cx, &cy, &cz, &cw);
        cx = cx - r.x, cy = cy - r.y, cz = cz - r.z;
        ax = cx, ay = cy, az = cz;
        for (int s = 1; s <= steps; ++s) { /* pair s - 1: (n_s-1, n_s), row steps is row 0 */
            if (s < steps) {
                gather16(particle_p, vload16(0, table + s * np + m), &bx, &by, &bz, &bw);
                bx = bx - r.x, by = by - r.y, bz = bz - r.z;
            } else {
                bx = cx, by = cy, bz = cz;
            }
            gx = gx + (ay * bz - az * by);
            gy = gy + (az * bx - ax * bz);
            gz = gz + (ax * by - ay * bx);
            ax = bx, ay = by, az = bz;
        }
        gx = gx * sixth, gy = gy * sixth, gz = gz * sixth;
        float8 x0, y0, z0, w0, x1, y1, z1, w1;
        load8(particle_p, m, 8, &x0, &y0, &z0, &w0);
        load8(particle_p, m + 8, 8, &x1, &y1, &z1, &w1);
        float16 px = (float16)(x0, x1) - r.x, py = (float16)(y0, y1) - r.y;
        float16 pz = (float16)(z0, z1) - r.z, pw = (float16)(w0, w1);
        float16 dv = (px * gx + py * gy) + pz * gz;
        float16 dw = pw * ((gx * gx + gy * gy) + gz * gz);
        float tv[16], tw[16];
        vstore16(dv, 0, tv);
        vstore16(dw, 0, tw);
        PBD_UNROLL
        for (int l = 0; l < 16; ++l) {
            v = v + tv[l];
            w = w + tw[l];
        }
        float16 r0, r1;
        join8(gx.lo, gy.lo, gz.lo, (float8)(0.0f), &r0, &r1);
        store_raw8(particle_grad, m, 0, 8, r0, r1);
        join8(gx.hi, gy.hi, gz.hi, (float8)(0.0f), &r0, &r1);
        store_raw8(particle_grad, m + 8, 0, 8, r0, r1);
    }
    body_pressure_members(m, end, r, particle_p, member_particle, member_rest, particle_grad,
                          pressure_offsets, pressure_pairs, &v, &w, sums);
}

/* A member's terms added to the float16 of shape matching's sums (body_constraint_reduce16):
 * p' = p - r as one vector with its w lane moved to the front, where m goes, so that
 * a = (m, m p') is one multiplication. */
VEC8_INLINE float16 shape_sums16(float16 s, pbd_float4 p, pbd_float4 q, pbd_float4 r)
{
    float4 d = (p - r).s3012;
    float4 a = q.w * d, b = (float4)(1.0f, q.x, q.y, q.z);
    a.s0 = q.w;
    return s + a.s0123111222333123 *
                   shuffle2(b, d, (uint16)(0, 0, 0, 0, 1, 2, 3, 1, 2, 3, 1, 2, 3, 5, 6, 7));
}

/* The body constraints' reduction (common/body_constraint.cl's body_constraint_reduce_one) on
 * CPU devices, a work-item a segment: for shape matching without pressure, the sums m, m p'
 * and m p' q^T (PBD_BSUM_M .. PBD_BSUM_MPQ + 8) and the XPBD form's m p'_k^2 as one float16,
 * each member adding (m, mx, my, mz, mx, mx, mx, my, ..., mz, mx, my, mz) * (1, 1, 1, 1, q0,
 * q1, q2, q0, ..., q2, px, py, pz) lane by lane: pbd_body_constraint_sums' products and sums
 * in its order, so the same bits (shape_sums16). The segment's sums m q, constants, come
 * from the plan (body_constraint_mq). Pressure alone: body_pressure_reduce16, where there is
 * a table; pressure with shape matching, or without a table: the shared code. */
__kernel void
body_constraint_reduce16(__global const pbd_segment *body_constraint_segments,
                         __global const pbd_float4 *particle_p, __global const int *member_particle,
                         __global const pbd_float4 *member_rest, __global pbd_float4 *particle_grad,
                         __global const int *pressure_offsets, __global const int *pressure_pairs,
                         __global const int *pressure_table, int pressure_steps, int num_particles,
                         __global const pbd_body_constraint *body_constraints,
                         __global const pbd_float4 *body_constraint_mq,
                         __global float *body_constraint_sums, int num_body_constraint_segments)
{
    int gi = get_global_id(0);
    if (gi >= num_body_constraint_segments)
        return;
    pbd_segment seg = body_constraint_segments[gi];
    pbd_body_constraint bc = body_constraints[seg.body];
    if (bc.flags == PBD_BODY_PRESSURE && pressure_steps > 0) {
        float sums[PBD_BSUM_COUNT];
        PBD_UNROLL
        for (int q = 0; q < PBD_BSUM_COUNT; ++q)
            sums[q] = 0.0f;
        body_pressure_reduce16(seg.first, seg.first + seg.count, particle_p[bc.first], particle_p,
                               member_particle, member_rest, particle_grad, pressure_offsets,
                               pressure_pairs, pressure_table, pressure_steps, num_particles, sums);
        PBD_UNROLL
        for (int q = 0; q < PBD_BSUM_COUNT; ++q)
            body_constraint_sums[gi * PBD_BSUM_COUNT + q] = sums[q];
        return;
    }
    if (bc.flags & PBD_BODY_PRESSURE) {
        body_constraint_reduce_one(gi, body_constraint_segments, particle_p, member_particle,
                                   member_rest, particle_grad, pressure_offsets, pressure_pairs,
                                   body_constraints, body_constraint_sums);
        return;
    }
    pbd_float4 r = particle_p[bc.first];
    float16 s = (float16)(0.0f);
    int end = seg.first + seg.count;
    /* A body's own members are its particles (member m is particle m): no index to load. */
    if (seg.first < num_particles)
        for (int m = seg.first; m < end; ++m)
            s = shape_sums16(s, particle_p[m], member_rest[m], r);
    else
        for (int m = seg.first; m < end; ++m)
            s = shape_sums16(s, particle_p[member_particle[m]], member_rest[m], r);
    __global float *out = body_constraint_sums + gi * PBD_BSUM_COUNT;
    float3 mpp = bc.flags & PBD_BODY_SHAPE_XPBD ? s.sdef : (float3)(0.0f);
    s.sdef = body_constraint_mq[gi].xyz; /* the sums m q: the segment's constants */
    vstore16(s, 0, out);
    out[PBD_BSUM_VOL] = 0.0f;
    out[PBD_BSUM_WG] = 0.0f;
    vstore3(mpp, 0, out + PBD_BSUM_MPP);
}

/* pbd_polar_rotation for eight constraints at once, lane j for constraint j: its operations
 * lane by lane, so the same bits. Its steps are a chain of dependent divisions and square
 * roots, on which a core solving one constraint at a time mostly waits. a: the nine entries
 * of A, each the eight constraints'. */
static void polar8(const float8 *a, float8 *qx, float8 *qy, float8 *qz, float8 *qw, int steps)
{
    for (int it = 0; it < steps; ++it) {
        float8 x2 = *qx + *qx, y2 = *qy + *qy, z2 = *qz + *qz;
        float8 xx = *qx * x2, yy = *qy * y2, zz = *qz * z2;
        float8 xy = *qx * y2, xz = *qx * z2, yz = *qy * z2;
        float8 wx = *qw * x2, wy = *qw * y2, wz = *qw * z2;
        float8 r[9] = {1.0f - (yy + zz), xy - wz, xz + wy, xy + wz,         1.0f - (xx + zz),
                       yz - wx,          xz - wy, yz + wx, 1.0f - (xx + yy)};
        float8 ox = 0.0f, oy = 0.0f, oz = 0.0f, dot = 0.0f;
        for (int k = 0; k < 3; ++k) {
            float8 rx = r[k], ry = r[3 + k], rz = r[6 + k];
            float8 ax = a[k], ay = a[3 + k], az = a[6 + k];
            ox = ox + (ry * az - rz * ay);
            oy = oy + (rz * ax - rx * az);
            oz = oz + (rx * ay - ry * ax);
            dot = dot + ((rx * ax + ry * ay) + rz * az);
        }
        float8 inv = 0.5f / (fabs(dot) + 1e-9f);
        float8 hx = ox * inv, hy = oy * inv, hz = oz * inv;
        float8 nx = *qx + (hy * *qz - hz * *qy) + hx * *qw;
        float8 ny = *qy + (hz * *qx - hx * *qz) + hy * *qw;
        float8 nz = *qz + (hx * *qy - hy * *qx) + hz * *qw;
        float8 nw = *qw - ((hx * *qx + hy * *qy) + hz * *qz);
        float8 len = sqrt(((nx * nx + ny * ny) + nz * nz) + nw * nw);
        *qx = nx / len, *qy = ny / len, *qz = nz / len, *qw = nw / len;
    }
}

/* The body constraints' solve on CPU devices: eight constraints a work-item, each one's
 * segment sums added in order (as the CPU reference does) and solved in the shared code's
 * parts (pbd_shape_solved, pbd_shape_matrix, pbd_body_constraint_finish), their rotations side
 * by side (polar8, pbd_polar_rotation's operations lane by lane): the same bits. */
__kernel void body_constraint_solve8(__global const int *body_constraint_ranges,
                                     __global const float *body_constraint_sums,
                                     __global const pbd_float4 *particle_p,
                                     __global const pbd_body_constraint *body_constraints,
                                     __global pbd_float4 *body_goal, float inv_h2, int reset_lambda,
                                     int num_body_constraints)
{
    int first = 8 * get_global_id(0);
    if (first >= num_body_constraints)
        return;
    int n = min(8, num_body_constraints - first);
    float s[8][PBD_BSUM_COUNT], a[9][8], dc[8][3], q[4][8], aj[9];
    int shaped[8];
    for (int j = 0; j < 8; ++j) { /* lanes from n on: A = 0 about the identity, unused */
        for (int k = 0; k < 9; ++k)
            aj[k] = 0.0f;
        dc[j][0] = dc[j][1] = dc[j][2] = 0.0f;
        q[0][j] = q[1][j] = q[2][j] = 0.0f, q[3][j] = 1.0f;
        shaped[j] = 0;
        if (j < n) {
            int b = first + j;
            pbd_body_constraint bc = body_constraints[b];
            PBD_UNROLL
            for (int k = 0; k < PBD_BSUM_COUNT; ++k)
                s[j][k] = 0.0f;
            for (int g = body_constraint_ranges[b]; g < body_constraint_ranges[b + 1]; ++g)
                PBD_UNROLL
            for (int k = 0; k < PBD_BSUM_COUNT; ++k)
                s[j][k] = s[j][k] + body_constraint_sums[g * PBD_BSUM_COUNT + k];
            shaped[j] = pbd_shape_solved(s[j], bc);
            if (shaped[j])
                pbd_shape_matrix(s[j], aj, dc[j]);
            pbd_float4 g0 = body_goal[b * PBD_GOAL_COUNT];
            q[0][j] = g0.x, q[1][j] = g0.y, q[2][j] = g0.z, q[3][j] = g0.w;
        }
        for (int k = 0; k < 9; ++k)
            a[k][j] = aj[k];
    }
    float8 a8[9];
    for (int k = 0; k < 9; ++k)
        a8[k] = vload8(0, a[k]);
    float8 qx = vload8(0, q[0]), qy = vload8(0, q[1]), qz = vload8(0, q[2]), qw = vload8(0, q[3]);
    polar8(a8, &qx, &qy, &qz, &qw, PBD_POLAR_ITERATIONS);
    vstore8(qx, 0, q[0]), vstore8(qy, 0, q[1]), vstore8(qz, 0, q[2]), vstore8(qw, 0, q[3]);
    for (int j = 0; j < n; ++j) {
        int b = first + j;
        pbd_body_constraint bc = body_constraints[b];
        if (bc.flags == 0)
            continue;
        for (int k = 0; k < 9; ++k)
            aj[k] = a[k][j];
        pbd_body_constraint_finish(s[j], bc, particle_p[bc.first], body_goal + b * PBD_GOAL_COUNT,
                                   inv_h2, reset_lambda, shaped[j], aj, dc[j],
                                   (pbd_float4)(q[0][j], q[1][j], q[2][j], q[3][j]));
    }
}

/* Lane k of each particle of a float16 of four, in all four of its lanes. */
#define BODY_LANE16(v, k)                                                                          \
    shuffle((v), (uint16)(k, k, k, k, 4 + k, 4 + k, 4 + k, 4 + k, 8 + k, 8 + k, 8 + k, 8 + k,      \
                          12 + k, 12 + k, 12 + k, 12 + k))

/* (a, b, c, 0) four times. */
#define BODY_ABC16(a, b, c) ((float16)((float4)((a), (b), (c), 0.0f).s0123012301230123))

/* A body's goal as body_apply4 takes it: the rows of R and c spread over the four particles'
 * lanes, the pull k and the pressure step. */
typedef struct {
    float16 rx, ry, rz, c;
    float k, cw;
    int flags;
} body_apply_goal;

static inline body_apply_goal body_goal_of(pbd_body_constraint bc, __global const pbd_float4 *goal)
{
    pbd_float4 c = goal[1], r0 = goal[2], r1 = goal[3], r2 = goal[4];
    body_apply_goal k;
    k.rx = BODY_ABC16(r0.x, r1.x, r2.x);
    k.ry = BODY_ABC16(r0.y, r1.y, r2.y);
    k.rz = BODY_ABC16(r0.z, r1.z, r2.z);
    k.c = BODY_ABC16(c.x, c.y, c.z);
    k.k = (bc.flags & PBD_BODY_SHAPE_XPBD) ? r2.w : bc.shape_k;
    k.cw = c.w;
    k.flags = bc.flags;
    return k;
}

/* pbd_body_constraint_apply on four particles of one body as they are stored, lane by lane in
 * its order: the same bits. */
static inline void body_apply4(__global pbd_float4 *particle_p, __global const pbd_float4 *rest,
                               __global const pbd_float4 *grad, const body_apply_goal *k)
{
    float16 p = VEC8_LOAD16(particle_p), d = (float16)(0.0f);
    float16 pw = BODY_LANE16(p, 3);
    if (k->flags & PBD_BODY_SHAPE) { /* pbd_shape_pull */
        float16 q = VEC8_LOAD16(rest);
        float16 g =
            ((k->rx * BODY_LANE16(q, 0) + k->ry * BODY_LANE16(q, 1)) + k->rz * BODY_LANE16(q, 2)) +
            k->c;
        d = k->k * (g - p);
    }
    if (k->flags & PBD_BODY_PRESSURE)
        d = d + (pw * k->cw) * VEC8_LOAD16(grad);
    float16 out = select(p + d, p, VEC8_W_LANES); /* w: the inverse mass stays */
    VEC8_STORE16(select(p, out, isgreater(pw, (float16)(0.0f))), particle_p);
}

/* Shape matching's pull on each member of the clusters (pbd_shape_pull), for the apply to
 * read: a work-item a segment of a cluster's members (segments first_segment on; a cluster's
 * are its constraint's), its goal once, four members at a time as float16 lanes (the member
 * records are consecutive; the particles' positions gathered), each lane in
 * pbd_shape_pull's order, so the same bits. Each pull goes to its (particle, cluster) entry
 * (member_slot[member - pull_first]), so that a particle's pulls, and those of the particles
 * after it, lie side by side for the apply. Computed in the apply instead, each pull would
 * read its cluster's record and goal again, about three times a particle. */
__kernel void
body_constraint_pull16(__global const pbd_segment *body_constraint_segments, int first_segment,
                       int num_segments, __global const pbd_float4 *particle_p,
                       __global const int *member_particle, __global const pbd_float4 *member_rest,
                       __global const pbd_body_constraint *body_constraints,
                       __global const pbd_float4 *body_goal, __global const int *member_slot,
                       int pull_first, __global pbd_float4 *member_pull)
{
    int gi = get_global_id(0);
    if (gi >= num_segments)
        return;
    pbd_segment seg = body_constraint_segments[first_segment + gi];
    pbd_body_constraint bc = body_constraints[seg.body];
    __global const pbd_float4 *goal = body_goal + seg.body * PBD_GOAL_COUNT;
    body_apply_goal k = body_goal_of(bc, goal);
    __global const int *slot = member_slot + (seg.first - pull_first);
    int m = 0, count = seg.count;
    __global const int *member = member_particle + seg.first;
    __global const pbd_float4 *rest = member_rest + seg.first;
    for (; m + 4 <= count; m += 4) {
        float16 q = VEC8_LOAD16(rest + m);
        float16 p = (float16)(particle_p[member[m]], particle_p[member[m + 1]],
                              particle_p[member[m + 2]], particle_p[member[m + 3]]);
        float16 g =
            ((k.rx * BODY_LANE16(q, 0) + k.ry * BODY_LANE16(q, 1)) + k.rz * BODY_LANE16(q, 2)) +
            k.c;
        float16 d = select(k.k * (g - p), (float16)(0.0f), VEC8_W_LANES);
        member_pull[slot[m]] = d.s0123;
        member_pull[slot[m + 1]] = d.s4567;
        member_pull[slot[m + 2]] = d.s89ab;
        member_pull[slot[m + 3]] = d.scdef;
    }
    for (; m < count; ++m)
        member_pull[slot[m]] = pbd_shape_pull(particle_p[member[m]], rest[m], bc, goal);
}

/* pbd_body_constraint_apply_from on four particles at i of one body without shape matching of
 * its own, each in at least one cluster (o: their cluster_offsets, five; their pulls are
 * member_pull[o.s0 ..] on, side by side), as they are stored, lane by lane in its order: the
 * first pull, then each further one added, the mean, then pressure's step (flags). The same
 * bits. */
static inline void cluster_apply4(__global pbd_float4 *particle_p, int i, int4 o, int last,
                                  int flags, __global const pbd_float4 *grad,
                                  __global const pbd_float4 *member_pull, float cw)
{
    float16 p = VEC8_LOAD16(particle_p + i), d = (float16)(0.0f);
    int4 n = (int4)(o.s123, last) - o;
    int most = max(max(n.s0, n.s1), max(n.s2, n.s3));
    for (int t = 0; t < most; ++t) {
        int4 e = o + min((int4)(t), n - 1); /* a lane past its last pull reads that again */
        float16 f =
            (float16)(member_pull[e.s0], member_pull[e.s1], member_pull[e.s2], member_pull[e.s3]);
        d = t == 0 ? f : select(d, d + f, n.s0000111122223333 > (int16)(t));
    }
    float16 nf = convert_float16(n.s0000111122223333);
    d = select(d, d * (1.0f / nf), nf > 1.0f);
    float16 pw = BODY_LANE16(p, 3);
    if (flags & PBD_BODY_PRESSURE)
        d = d + (pw * cw) * VEC8_LOAD16(grad + i);
    float16 out = select(p + d, p, VEC8_W_LANES); /* w: the inverse mass stays */
    VEC8_STORE16(select(p, out, isgreater(pw, (float16)(0.0f))), particle_p + i);
}

/* The body constraints' apply stage (common/body_constraint.cl's body_constraint_apply) on CPU
 * devices, a run of PBD_PARTICLE_RUN particles a work-item: four particles at a time as they
 * are stored (a float16) where the four share a body that has a constraint of its own and none
 * is in a cluster, each lane doing pbd_body_constraint_apply's operations in its order (the
 * same bits); where `pulled` (body_constraint_pull16 ran), four particles of one body in
 * clusters at a time (cluster_apply4); any other particle one by one through
 * pbd_body_constraint_apply_from, its cluster pulls read from the pull launch's where
 * `pulled`. Built after vec8.cl. */
__kernel void body_constraint_apply_runs(
    __global pbd_float4 *particle_p, __global const int *particle_body,
    __global const pbd_float4 *member_rest, __global const pbd_float4 *particle_grad,
    __global const int *cluster_offsets, __global const int *cluster_pairs,
    __global const pbd_body_constraint *body_constraints, __global const pbd_float4 *body_goal,
    __global const pbd_float4 *member_pull, int pulled, int num_particles)
{
    int first = PBD_PARTICLE_RUN * get_global_id(0);
    int end = min(first + PBD_PARTICLE_RUN, num_particles);
    if (first >= num_particles) /* the work-groups' padding */
        return;
    /* A run in one body with a constraint of its own and no cluster: the body's goal once. */
    int b0 = particle_body[first];
    pbd_body_constraint b0c = body_constraints[b0];
    if ((end - first) % 4 == 0 && b0c.flags != 0 && particle_body[end - 1] == b0 &&
        cluster_offsets[first] == cluster_offsets[end]) {
        body_apply_goal k = body_goal_of(b0c, body_goal + b0 * PBD_GOAL_COUNT);
        for (int i = first; i < end; i += 4)
            body_apply4(particle_p + i, member_rest + i, particle_grad + i, &k);
        return;
    }
    for (int i = first; i < end;) {
        int b = particle_body[i];
        pbd_body_constraint bc = body_constraints[b];
        /* bodies are runs of particles: the first and fourth share a body, so all four do */
        if (i + 4 <= end && bc.flags != 0 && particle_body[i + 3] == b &&
            cluster_offsets[i] == cluster_offsets[i + 4]) {
            body_apply_goal k = body_goal_of(bc, body_goal + b * PBD_GOAL_COUNT);
            body_apply4(particle_p + i, member_rest + i, particle_grad + i, &k);
            i += 4;
            continue;
        }
        if (pulled && i + 4 <= end && !(bc.flags & PBD_BODY_SHAPE) && particle_body[i + 3] == b) {
            int4 o = vload4(0, cluster_offsets + i);
            int last = cluster_offsets[i + 4];
            if (all((int4)(o.s123, last) > o)) { /* each of the four in a cluster */
                cluster_apply4(particle_p, i, o, last, bc.flags, particle_grad, member_pull,
                               body_goal[b * PBD_GOAL_COUNT + 1].w);
                i += 4;
                continue;
            }
        }
        if (bc.flags != 0 || cluster_offsets[i] != cluster_offsets[i + 1])
            particle_p[i] = pbd_body_constraint_apply_from(
                particle_p[i], i, b, body_constraints, member_rest, particle_grad, cluster_offsets,
                cluster_pairs, body_goal, pulled ? member_pull : NULL);
        ++i;
    }
}
