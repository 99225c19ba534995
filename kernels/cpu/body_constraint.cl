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
 * constraint whose central member is at r, adding to `sums`. Sixteen members at a time as
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
        gather16_at(particle_p, table + m, 1, &cx, &cy, &cz, &cw);
        cx = cx - r.x, cy = cy - r.y, cz = cz - r.z;
        ax = cx, ay = cy, az = cz;
        for (int s = 1; s <= steps; ++s) { /* pair s - 1: (n_s-1, n_s), row steps is row 0 */
            if (s < steps) {
                gather16_at(particle_p, table + s * np + m, 1, &bx, &by, &bz, &bw);
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
 * p' = p - r spread over the sums' lanes with a 1 in front, where m goes, so that m times it
 * is (m, m p', m p'x x3, ...) in one multiplication, then times (1, 1, 1, 1, q x3, p'): two
 * two-source shuffles and a blend a member, where building them from four-lane pieces took
 * five or six shuffles. pbd_body_constraint_sums' products lane by lane: the same bits. */
VEC8_INLINE float16 shape_sums16(float16 s, pbd_float4 p, pbd_float4 q, pbd_float4 r)
{
    const float4 one = (float4)(1.0f);
    /* (1, p'x, p'y, p'z, p'x x3, p'y x3, p'z x3, p'x, p'y, p'z) and (1, 1, 1, 1, q x3, p') */
    float16 d = shuffle2(p - r, one, (uint16)(4, 0, 1, 2, 0, 0, 0, 1, 1, 1, 2, 2, 2, 0, 1, 2));
    float16 b = shuffle2(q, one, (uint16)(4, 4, 4, 4, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 0, 0));
    const int16 tail = (int16)(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, -1, -1);
    return s + (q.w * d) * select(b, d, tail);
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
        pbd_body_constraint_finish(s[j], bc, particle_p[bc.first], particle_p[bc.base],
                                   body_goal + b * PBD_GOAL_COUNT, inv_h2, reset_lambda, shaped[j],
                                   aj, dc[j], (pbd_float4)(q[0][j], q[1][j], q[2][j], q[3][j]));
    }
}

/* Lane k of each particle of a float16 of four, in all four of its lanes. */
#define BODY_LANE16(v, k)                                                                          \
    shuffle((v), (uint16)(k, k, k, k, 4 + k, 4 + k, 4 + k, 4 + k, 8 + k, 8 + k, 8 + k, 8 + k,      \
                          12 + k, 12 + k, 12 + k, 12 + k))

/* A body's goal as body_apply4 takes it: shape matching's four goal columns (pbd_shape_goal's)
 * and reference point spread over the four particles' lanes, and the pressure step. */
typedef struct {
    float16 g0, g1, g2, g3, o;
    float cw;
    int flags;
} body_apply_goal;

static inline body_apply_goal body_goal_of(pbd_body_constraint bc, __global const pbd_float4 *goal)
{
    body_apply_goal k;
    k.g0 = goal[PBD_GOAL_SHAPE].s0123012301230123;
    k.g1 = goal[PBD_GOAL_SHAPE + 1].s0123012301230123;
    k.g2 = goal[PBD_GOAL_SHAPE + 2].s0123012301230123;
    k.g3 = goal[PBD_GOAL_SHAPE + 3].s0123012301230123;
    k.o = goal[PBD_GOAL_BASE].s0123012301230123;
    k.cw = goal[1].w;
    k.flags = bc.flags;
    return k;
}

/* pbd_shape_move on four particles as they are stored, their goal columns g0 .. g3 and
 * reference points o side by side, lane by lane in its order: the same bits. */
static inline float16 shape_move4(float16 p, float16 q, float16 g0, float16 g1, float16 g2,
                                  float16 g3, float16 o)
{
    return (((g0 * BODY_LANE16(q, 0) + g1 * BODY_LANE16(q, 1)) + g2 * BODY_LANE16(q, 2)) + g3) -
           BODY_LANE16(g0, 3) * (p - o);
}

/* pbd_body_constraint_apply on four particles of one body as they are stored, lane by lane in
 * its order: the same bits. */
static inline void body_apply4(__global pbd_float4 *particle_p, __global const pbd_float4 *rest,
                               __global const pbd_float4 *grad, const body_apply_goal *k)
{
    float16 p = VEC8_LOAD16(particle_p), d = (float16)(0.0f);
    float16 pw = BODY_LANE16(p, 3);
    if (k->flags & PBD_BODY_SHAPE)
        d = shape_move4(p, VEC8_LOAD16(rest), k->g0, k->g1, k->g2, k->g3, k->o);
    if (k->flags & PBD_BODY_PRESSURE)
        d = d + (pw * k->cw) * VEC8_LOAD16(grad);
    float16 out = select(p + d, p, VEC8_W_LANES); /* w: the inverse mass stays */
    VEC8_STORE16(select(p, out, isgreater(pw, (float16)(0.0f))), particle_p);
}

/* pbd_shape_set_goal for set s, each cluster's four columns as one float16, lane by lane in
 * its order (the same bits); the reference point to o. */
static inline float16 set_goal16(int s, __global const int *set_offsets,
                                 __global const int *set_constraints,
                                 __global const pbd_float4 *body_goal, float4 *o)
{
    int begin = set_offsets[s], last = set_offsets[s + 1];
    int k = set_constraints[begin] * PBD_GOAL_COUNT;
    *o = body_goal[k + PBD_GOAL_BASE];
    float16 g = VEC8_LOAD16(body_goal + k + PBD_GOAL_SHAPE);
    for (int e = begin + 1; e < last; ++e)
        g = g + VEC8_LOAD16(body_goal + set_constraints[e] * PBD_GOAL_COUNT + PBD_GOAL_SHAPE);
    if (last - begin > 1)
        g = g * (1.0f / (float)(last - begin));
    return g;
}

/* The clustered particles' apply, PBD_SET_RUN sets a work-item: each set's goal once
 * (set_goal16), then its particles (set_particles; one body's) moved as
 * pbd_body_constraint_apply moves them, with the same operations (the same bits), four at a
 * time side by side as float16 lanes, the rest one by one. A particle's goal would otherwise
 * be formed once a particle, or its clusters' pulls once a membership. */
static void sets_apply(int first, int end, __global pbd_float4 *particle_p,
                       __global const int *particle_body, __global const pbd_float4 *set_rest,
                       __global const pbd_float4 *particle_grad, __global const int *set_offsets,
                       __global const int *set_constraints,
                       __global const int *set_particle_offsets, __global const int *set_particles,
                       __global const pbd_body_constraint *body_constraints,
                       __global const pbd_float4 *body_goal)
{
    for (int s = first; s < end; ++s) {
        float4 o;
        float16 g = set_goal16(s, set_offsets, set_constraints, body_goal, &o);
        int e = set_particle_offsets[s], last = set_particle_offsets[s + 1];
        int b = particle_body[set_particles[e]];
        pbd_body_constraint bc = body_constraints[b];
        float cw = body_goal[b * PBD_GOAL_COUNT + 1].w;
        float16 g0 = g.s0123012301230123, g1 = g.s4567456745674567;
        float16 g2 = g.s89ab89ab89ab89ab, g3 = g.scdefcdefcdefcdef;
        float16 o16 = o.s0123012301230123;
        for (; e + 4 <= last; e += 4) {
            int4 k = vload4(0, set_particles + e);
            float16 p =
                (float16)(particle_p[k.s0], particle_p[k.s1], particle_p[k.s2], particle_p[k.s3]);
            float16 d = shape_move4(p, VEC8_LOAD16(set_rest + e), g0, g1, g2, g3, o16);
            float16 pw = BODY_LANE16(p, 3);
            if (bc.flags & PBD_BODY_PRESSURE)
                d = d + (pw * cw) * (float16)(particle_grad[k.s0], particle_grad[k.s1],
                                              particle_grad[k.s2], particle_grad[k.s3]);
            float16 out = select(p + d, p, VEC8_W_LANES); /* w: the inverse mass stays */
            out = select(p, out, isgreater(pw, (float16)(0.0f)));
            particle_p[k.s0] = out.s0123;
            particle_p[k.s1] = out.s4567;
            particle_p[k.s2] = out.s89ab;
            particle_p[k.s3] = out.scdef;
        }
        for (; e < last; ++e) {
            int i = set_particles[e];
            pbd_float4 p = particle_p[i];
            if (!(p.w > 0.0f))
                continue;
            pbd_float4 d = pbd_shape_move(p, set_rest[e], g.s0123, g.s4567, g.s89ab, g.scdef, o);
            particle_p[i] = pbd_body_constraint_pressure(p, d, i, b, bc, particle_grad, body_goal);
        }
    }
}

/* The clustered particles' apply on CPU devices (sets_apply), PBD_SET_RUN sets a work-item;
 * body_constraint_apply_runs takes the others. */
__kernel void body_constraint_apply_sets(
    __global pbd_float4 *particle_p, __global const int *particle_body,
    __global const pbd_float4 *set_rest, __global const pbd_float4 *particle_grad,
    __global const int *set_offsets, __global const int *set_constraints,
    __global const int *set_particle_offsets, __global const int *set_particles,
    __global const pbd_body_constraint *body_constraints, __global const pbd_float4 *body_goal,
    int num_sets)
{
    int first = PBD_SET_RUN * get_global_id(0);
    if (first < num_sets)
        sets_apply(first, min(first + PBD_SET_RUN, num_sets), particle_p, particle_body, set_rest,
                   particle_grad, set_offsets, set_constraints, set_particle_offsets, set_particles,
                   body_constraints, body_goal);
}

/* The body constraints' apply stage (common/body_constraint.cl's body_constraint_apply) on CPU
 * devices for the particles in no cluster, a run of PBD_PARTICLE_RUN particles a work-item:
 * four at a time as they are stored (a float16) where the four share a body that has a
 * constraint of its own, each lane doing pbd_body_constraint_apply's operations in its order
 * (the same bits), any other one by one. Built after vec8.cl. */
__kernel void body_constraint_apply_runs(
    __global pbd_float4 *particle_p, __global const int *particle_body,
    __global const pbd_float4 *member_rest, __global const pbd_float4 *particle_grad,
    __global const int *particle_set, __global const int *set_offsets,
    __global const int *set_constraints, __global const pbd_body_constraint *body_constraints,
    __global const pbd_float4 *body_goal, int num_particles)
{
    int first = PBD_PARTICLE_RUN * get_global_id(0);
    int end = min(first + PBD_PARTICLE_RUN, num_particles);
    if (first >= num_particles) /* the work-groups' padding */
        return;
    /* A run in one body with a constraint of its own and no cluster: the body's goal once. */
    int b0 = particle_body[first];
    pbd_body_constraint b0c = body_constraints[b0];
    if ((end - first) % 4 == 0 && b0c.flags != 0 && particle_body[end - 1] == b0 &&
        particle_set[first] < 0) {
        body_apply_goal k = body_goal_of(b0c, body_goal + b0 * PBD_GOAL_COUNT);
        for (int i = first; i < end; i += 4)
            body_apply4(particle_p + i, member_rest + i, particle_grad + i, &k);
        return;
    }
    for (int i = first; i < end;) {
        int b = particle_body[i];
        pbd_body_constraint bc = body_constraints[b];
        /* bodies are runs of particles: the first and fourth share a body, so all four do; a
         * clustered body has every particle in a set */
        if (i + 4 <= end && particle_body[i + 3] == b && bc.flags != 0 && particle_set[i] < 0) {
            body_apply_goal k = body_goal_of(bc, body_goal + b * PBD_GOAL_COUNT);
            body_apply4(particle_p + i, member_rest + i, particle_grad + i, &k);
            i += 4;
            continue;
        }
        if (bc.flags != 0 && particle_set[i] < 0)
            particle_p[i] = pbd_body_constraint_apply(particle_p[i], i, b, body_constraints,
                                                      member_rest, particle_grad, particle_set,
                                                      set_offsets, set_constraints, body_goal);
        ++i;
    }
}
