/* The momentum stages on GPUs: a work-group and a tree per segment (body_reduce) and per body
 * (body_solve), over common/momentum.cl. */

/* Tree reduction of PBD_REDUCE_WG rows of PBD_SUM_COUNT values in local memory; row 0 ends
 * with the result. */
static void reduce_rows(__local pbd_acc *rows, int l)
{
    for (int w = PBD_REDUCE_WG / 2; w > 0; w >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l < w) {
            pbd_acc a[PBD_SUM_COUNT], b[PBD_SUM_COUNT];
            for (int q = 0; q < PBD_SUM_COUNT; ++q) {
                a[q] = rows[l * PBD_SUM_COUNT + q];
                b[q] = rows[(l + w) * PBD_SUM_COUNT + q];
            }
            pbd_sums_add(a, b);
            for (int q = 0; q < PBD_SUM_COUNT; ++q)
                rows[l * PBD_SUM_COUNT + q] = a[q];
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}
/* Stage one, for GPUs: one work-group per segment, work-item l summing particles l, l + WG,
 * ..., then the group's tree. */
__kernel __attribute__((reqd_work_group_size(PBD_REDUCE_WG, 1, 1))) void
body_reduce(__global const pbd_segment *segments, __global const pbd_float4 *particle_x,
            __global const pbd_float4 *particle_v, __global const pbd_float4 *particle_dx,
            __global const pbd_float4 *body_ref, __global const int *csr_offsets,
            __global const int *csr_slots, __global const pbd_distance *distance_records,
            float inv_h, int with_dx, int stats, __global pbd_acc *segment_sums, int num_segments)
{
    __local pbd_acc rows[PBD_REDUCE_WG * PBD_SUM_COUNT];
    int g = get_group_id(0);
    int l = get_local_id(0);
    pbd_segment seg = segments[g];
    pbd_acc acc[PBD_SUM_COUNT];
    sum_particles(seg.first, l, seg.count, PBD_REDUCE_WG, particle_x, particle_v, particle_dx,
                  body_ref[seg.body], csr_offsets, csr_slots, distance_records, inv_h, with_dx,
                  stats, acc);
    for (int q = 0; q < PBD_SUM_COUNT; ++q)
        rows[l * PBD_SUM_COUNT + q] = acc[q];
    reduce_rows(rows, l);
    if (l < PBD_SUM_COUNT)
        segment_sums[g * PBD_SUM_COUNT + l] = rows[l];
}
/* Stage two and the solve, one work-group per body (bodies of more than PBD_SERIAL_SEGMENTS
 * segments): work-item l sums segments l, l + WG, ... of the body, the tree combines them,
 * and work-item 0 solves. In PBD_SOLVE_INIT and PBD_SOLVE_STEP modes the body's reference
 * point moves to its centre of mass. */
__kernel __attribute__((reqd_work_group_size(PBD_REDUCE_WG, 1, 1))) void
body_solve(__global const int *body_segments, __global const pbd_acc *segment_sums,
           __global pbd_float4 *body_ref, __global pbd_acc *body_track,
           __global const int *body_flags, int mode, float4 gh, __global pbd_acc *body_out,
           __global pbd_float4 *body_apply, int num_bodies)
{
    __local pbd_acc rows[PBD_REDUCE_WG * PBD_SUM_COUNT];
    int b = get_group_id(0);
    int l = get_local_id(0);
    pbd_acc acc[PBD_SUM_COUNT], s[PBD_SUM_COUNT];
    for (int q = 0; q < PBD_SUM_COUNT; ++q)
        acc[q] = 0;
    for (int g = body_segments[b] + l; g < body_segments[b + 1]; g += PBD_REDUCE_WG) {
        for (int q = 0; q < PBD_SUM_COUNT; ++q)
            s[q] = segment_sums[g * PBD_SUM_COUNT + q];
        pbd_sums_add(acc, s);
    }
    for (int q = 0; q < PBD_SUM_COUNT; ++q)
        rows[l * PBD_SUM_COUNT + q] = acc[q];
    reduce_rows(rows, l);
    if (l != 0)
        return;
    for (int q = 0; q < PBD_SUM_COUNT; ++q)
        s[q] = rows[q];
    solve_body(b, s, body_ref, body_track, body_flags, mode, gh, body_out, body_apply);
}
