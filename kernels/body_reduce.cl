/* Per-body sums in two fixed-order stages, so the launch count does not grow with the number
 * of bodies and the result does not change from run to run (no atomics):
 *   body_reduce_segments: one work-group per segment (a piece of one body's particles);
 *   body_reduce_bodies:   one work-group per body, over that body's segments.
 * Sums are relative to each body's reference point, which keeps bodies far from the origin
 * precise. Built after pbd_shared.h. */

/* Tree reduction of PBD_REDUCE_WG rows of PBD_SUM_COUNT values in local memory; row 0 ends
 * with the result. Sums, except PBD_SUM_ERR, which is a maximum. */
static void reduce_rows(__local pbd_acc *rows, int l)
{
    for (int w = PBD_REDUCE_WG / 2; w > 0; w >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l < w) {
            __local pbd_acc *a = rows + l * PBD_SUM_COUNT;
            __local const pbd_acc *b = rows + (l + w) * PBD_SUM_COUNT;
            for (int q = 0; q < PBD_SUM_ERR; ++q)
                a[q] = a[q] + b[q];
            a[PBD_SUM_ERR] = a[PBD_SUM_ERR] > b[PBD_SUM_ERR] ? a[PBD_SUM_ERR] : b[PBD_SUM_ERR];
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

__kernel __attribute__((reqd_work_group_size(PBD_REDUCE_WG, 1, 1))) void
body_reduce_segments(__global const pbd_segment *segments, __global const pbd_float4 *particle_x,
                     __global const pbd_float4 *particle_v, __global const pbd_float4 *body_ref,
                     __global const int *csr_offsets, __global const int *csr_slots,
                     __global const pbd_distance *distance, __global pbd_acc *segment_sums)
{
    __local pbd_acc rows[PBD_REDUCE_WG * PBD_SUM_COUNT];
    int g = get_group_id(0);
    int l = get_local_id(0);
    pbd_segment seg = segments[g];
    pbd_float4 r = body_ref[seg.body];
    pbd_acc acc[PBD_SUM_COUNT];
    pbd_acc s[PBD_SUM_COUNT];
    for (int q = 0; q < PBD_SUM_COUNT; ++q)
        acc[q] = 0;
    for (int k = l; k < seg.count; k += PBD_REDUCE_WG) {
        int i = seg.first + k;
        float e =
            pbd_particle_error(particle_x, distance, csr_slots, csr_offsets[i], csr_offsets[i + 1]);
        pbd_particle_sums(particle_x[i], particle_v[i], r, e, s);
        pbd_sums_add(acc, s);
    }
    for (int q = 0; q < PBD_SUM_COUNT; ++q)
        rows[l * PBD_SUM_COUNT + q] = acc[q];
    reduce_rows(rows, l);
    if (l < PBD_SUM_COUNT)
        segment_sums[g * PBD_SUM_COUNT + l] = rows[l];
}

__kernel __attribute__((reqd_work_group_size(PBD_REDUCE_WG, 1, 1))) void
body_reduce_bodies(__global const int *body_segments, __global const pbd_acc *segment_sums,
                   __global pbd_acc *body_sums)
{
    __local pbd_acc rows[PBD_REDUCE_WG * PBD_SUM_COUNT];
    int b = get_group_id(0);
    int l = get_local_id(0);
    pbd_acc acc[PBD_SUM_COUNT];
    for (int q = 0; q < PBD_SUM_COUNT; ++q)
        acc[q] = 0;
    for (int g = body_segments[b] + l; g < body_segments[b + 1]; g += PBD_REDUCE_WG) {
        pbd_acc s[PBD_SUM_COUNT];
        for (int q = 0; q < PBD_SUM_COUNT; ++q)
            s[q] = segment_sums[g * PBD_SUM_COUNT + q];
        pbd_sums_add(acc, s);
    }
    for (int q = 0; q < PBD_SUM_COUNT; ++q)
        rows[l * PBD_SUM_COUNT + q] = acc[q];
    reduce_rows(rows, l);
    if (l < PBD_SUM_COUNT)
        body_sums[b * PBD_SUM_COUNT + l] = rows[l];
}
