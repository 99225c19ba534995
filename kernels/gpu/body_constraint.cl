/* The body constraints' sums on GPUs, a work-group of PBD_BODY_SEGMENT (PBD_REDUCE_WG)
 * work-items a segment and a constraint, with the order of addition of
 * common/body_constraint.cl, so the same bits. There a work-item walks its segment's members
 * (or its constraint's segments) one after another, each member's loads waiting on its index:
 * 34-38 us a launch for shape matching on an H200's 9,261-particle box, 96 us for pressure.
 * Here the loads and each member's terms are the group's, side by side, into local memory,
 * and work-item q then adds sum q's column in order: a term stored as 0 + t differs from t
 * only for t = -0, which adds nothing to a sum that starts at +0 (such a sum is never -0),
 * and without contraction each addition is the serial loop's. */

/* Sums q = 0 .. PBD_BSUM_COUNT - 1 of rows [0, n) of t (PBD_BSUM_COUNT floats a row), in
 * order, onto s (work-item q's sum). */
static float add_rows(__local const float *t, int n, int q, float s)
{
    for (int k = 0; k < n; ++k)
        s = s + t[k * PBD_BSUM_COUNT + q];
    return s;
}

/* Stage one, for GPUs: one work-group a segment, work-item l its member l. */
__kernel __attribute__((reqd_work_group_size(PBD_BODY_SEGMENT, 1, 1))) void
body_constraint_reduce64(__global const pbd_segment *body_constraint_segments,
                         __global const pbd_float4 *particle_p, __global const int *member_particle,
                         __global const pbd_float4 *member_rest, __global pbd_float4 *particle_grad,
                         __global const int *pressure_offsets, __global const int *pressure_pairs,
                         __global const pbd_body_constraint *body_constraints,
                         __global float *body_constraint_sums, int num_body_constraint_segments)
{
    __local float t[PBD_BODY_SEGMENT * PBD_BSUM_COUNT];
    int gi = get_group_id(0), l = get_local_id(0);
    if (gi >= num_body_constraint_segments)
        return; /* the whole group */
    pbd_segment seg = body_constraint_segments[gi];
    pbd_body_constraint bc = body_constraints[seg.body];
    float s[PBD_BSUM_COUNT];
    PBD_UNROLL
    for (int q = 0; q < PBD_BSUM_COUNT; ++q)
        s[q] = 0.0f;
    if (l < seg.count)
        body_constraint_member(seg.first + l, particle_p[bc.first], bc.flags, particle_p,
                               member_particle, member_rest, particle_grad, pressure_offsets,
                               pressure_pairs, s);
    PBD_UNROLL
    for (int q = 0; q < PBD_BSUM_COUNT; ++q)
        t[l * PBD_BSUM_COUNT + q] = s[q];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l < PBD_BSUM_COUNT)
        body_constraint_sums[gi * PBD_BSUM_COUNT + l] = add_rows(t, seg.count, l, 0.0f);
}

/* Stage two, for GPUs: one work-group a constraint; its segments' sums come PBD_BODY_SEGMENT
 * at a time into local memory, work-item q adds column q, and work-item 0 solves. */
__kernel __attribute__((reqd_work_group_size(PBD_BODY_SEGMENT, 1, 1))) void body_constraint_solve64(
    __global const int *body_constraint_ranges, __global const float *body_constraint_sums,
    __global const pbd_float4 *particle_p, __global const pbd_body_constraint *body_constraints,
    __global pbd_float4 *body_goal, float inv_h2, int reset_lambda, int num_body_constraints)
{
    __local float t[PBD_BODY_SEGMENT * PBD_BSUM_COUNT];
    int b = get_group_id(0), l = get_local_id(0);
    if (b >= num_body_constraints)
        return; /* the whole group */
    pbd_body_constraint bc = body_constraints[b];
    if (bc.flags == 0)
        return;
    int first = body_constraint_ranges[b], end = body_constraint_ranges[b + 1];
    float acc = 0.0f;
    for (int g0 = first; g0 < end; g0 += PBD_BODY_SEGMENT) {
        int n = end - g0 < PBD_BODY_SEGMENT ? end - g0 : PBD_BODY_SEGMENT;
        for (int k = l; k < n * PBD_BSUM_COUNT; k += PBD_BODY_SEGMENT)
            t[k] = body_constraint_sums[g0 * PBD_BSUM_COUNT + k];
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l < PBD_BSUM_COUNT)
            acc = add_rows(t, n, l, acc);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l < PBD_BSUM_COUNT)
        t[l] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l != 0)
        return;
    float s[PBD_BSUM_COUNT];
    PBD_UNROLL
    for (int q = 0; q < PBD_BSUM_COUNT; ++q)
        s[q] = t[q];
    pbd_body_constraint_solve(s, bc, particle_p[bc.first], particle_p[bc.base],
                              body_goal + b * PBD_GOAL_COUNT, inv_h2, reset_lambda);
}
