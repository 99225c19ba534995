/* Global momentum preservation (Dahl & Bargteil 2019, Algorithm 2) and per-body statistics,
 * in three launches whatever the number of bodies:
 *   body_reduce:    one work-group per segment (a piece of one body's particles): sums;
 *   body_solve:     one work-group per body: the body's segments in a fixed order, then the
 *                   per-body solve (com, inertia, P_pbd, L_pbd, tracking, v_cor, w_cor);
 *   momentum_apply: one work-item per particle: v += v_cor + w_cor x (x - com).
 * Fixed orders and no atomics: the sums, and so the corrections, are the same on every run.
 * The CPU reference reduces in exactly this order. Built after pbd_shared.h. */

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

/* Each work-item sums particles l, l + WG, ... of the segment, then the group's tree. With
 * `with_error` the largest |C| at each particle is taken too (statistics only: it reads
 * every constraint). */
__kernel __attribute__((reqd_work_group_size(PBD_REDUCE_WG, 1, 1))) void
body_reduce(__global const pbd_segment *segments, __global const pbd_float4 *particle_x,
            __global const pbd_float4 *particle_v, __global const pbd_float4 *particle_dx,
            __global const pbd_float4 *body_ref, __global const int *csr_offsets,
            __global const int *csr_slots, __global const pbd_distance *distance, float gx,
            float gy, float gz, float h, float inv_h, int with_dx, int with_error,
            __global pbd_acc *segment_sums)
{
    __local pbd_acc rows[PBD_REDUCE_WG * PBD_SUM_COUNT];
    int g = get_group_id(0);
    int l = get_local_id(0);
    pbd_segment seg = segments[g];
    pbd_float4 r = body_ref[seg.body];
    pbd_acc acc[PBD_SUM_COUNT], s[PBD_SUM_COUNT];
    for (int q = 0; q < PBD_SUM_COUNT; ++q)
        acc[q] = 0;
#ifdef PBD_ACC_COMPENSATED
    pbd_acc comp[PBD_SUM_COUNT];
    for (int q = 0; q < PBD_SUM_COUNT; ++q)
        comp[q] = 0;
#endif
    for (int k = l; k < seg.count; k += PBD_REDUCE_WG) {
        int i = seg.first + k;
        float e = with_error ? pbd_particle_error(particle_x, distance, csr_slots, csr_offsets[i],
                                                  csr_offsets[i + 1])
                             : 0.0f;
        pbd_float4 dx = with_dx ? particle_dx[i] : PBD_F4(0.0f, 0.0f, 0.0f, 0.0f);
        pbd_particle_sums(particle_x[i], particle_v[i], dx, r, e, gx, gy, gz, h, inv_h, s);
#ifdef PBD_ACC_COMPENSATED
        pbd_sums_add_compensated(acc, comp, s);
#else
        pbd_sums_add(acc, s);
#endif
    }
#ifdef PBD_ACC_COMPENSATED
    pbd_sums_fold(acc, comp);
#endif
    for (int q = 0; q < PBD_SUM_COUNT; ++q)
        rows[l * PBD_SUM_COUNT + q] = acc[q];
    reduce_rows(rows, l);
    if (l < PBD_SUM_COUNT)
        segment_sums[g * PBD_SUM_COUNT + l] = rows[l];
}

/* Stage two and the solve: work-item l sums segments l, l + WG, ... of the body, the tree
 * combines them, and work-item 0 solves (pbd_body_solve). In PBD_SOLVE_INIT and
 * PBD_SOLVE_STEP modes it also moves the body's reference point to its centre of mass. */
__kernel __attribute__((reqd_work_group_size(PBD_REDUCE_WG, 1, 1))) void
body_solve(__global const int *body_segments, __global const pbd_acc *segment_sums,
           __global pbd_float4 *body_ref, __global pbd_acc *body_track,
           __global const int *body_flags, int mode, __global pbd_acc *body_out)
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
    pbd_acc track[6], out[PBD_OUT_COUNT];
    for (int k = 0; k < 6; ++k)
        track[k] = body_track[b * 6 + k];
    pbd_body_solve(s, body_ref[b], track, body_flags[b], mode, out);
    for (int k = 0; k < 6; ++k)
        body_track[b * 6 + k] = track[k];
    for (int q = 0; q < PBD_OUT_COUNT; ++q)
        body_out[b * PBD_OUT_COUNT + q] = out[q];
    if (mode != PBD_SOLVE_STATS)
        body_ref[b] = PBD_F4((float)out[PBD_OUT_COM], (float)out[PBD_OUT_COM + 1],
                             (float)out[PBD_OUT_COM + 2], 0.0f);
}

static pbd_float4 out_vec(__global const pbd_acc *o, int k)
{
    return PBD_F4((float)o[k], (float)o[k + 1], (float)o[k + 2], 0.0f);
}

__kernel void momentum_apply(__global const pbd_float4 *particle_x, __global pbd_float4 *particle_v,
                             __global const int *particle_body, __global const pbd_acc *body_out,
                             float rigid_k, int num_particles)
{
    int i = get_global_id(0);
    if (i >= num_particles)
        return;
    __global const pbd_acc *o = body_out + particle_body[i] * PBD_OUT_COUNT;
    particle_v[i] = pbd_apply_rigid(particle_x[i], particle_v[i], out_vec(o, PBD_OUT_COM),
                                    out_vec(o, PBD_OUT_VCOR), out_vec(o, PBD_OUT_WCOR),
                                    out_vec(o, PBD_OUT_VRIG), out_vec(o, PBD_OUT_WRIG), rigid_k);
}
