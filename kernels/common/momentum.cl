/* Global momentum preservation (Dahl & Bargteil 2019, Algorithm 2) and per-body statistics,
 * in three stages whatever the number of bodies:
 *   body_reduce:    per segment (a piece of one body's particles): sums;
 *   body_solve:     per body: the body's segments in a fixed order, then the per-body solve
 *                   (com, inertia, P_pbd, L_pbd, tracking, v_cor, w_cor);
 *   momentum_apply: one work-item per particle: v += v_cor + w_cor x (x - com). The step
 *                   folds this into the next substep's predict (predict.cl), so a substep
 *                   costs two extra launches; it runs alone only before the state is read.
 * On CPU devices with fp64 the update also does body_reduce's and body_solve's work
 * (update_reduce_serial): then the correction has no launch of its own at all. Fixed orders
 * (the one atomic, on CPU devices, only elects the work-item that adds a body's segments in
 * order): the sums, and so the corrections, are the same on every run.
 * Each of the first two comes in two layouts: a work-group and a tree per item (GPUs), or a
 * work-item per item (CPU devices, and bodies small enough) summing a segment in
 * PBD_SUM_LANES double8 lanes and a body's segments in order. The CPU reference reduces in
 * exactly the chosen layout's order. This file holds what both kernel variants use (the body solve,
 * the serial per-segment sums, body_solve_serial, momentum_apply); kernels/gpu/momentum.cl the
 * work-group trees, kernels/cpu/momentum.cl the double8 lanes and the fused update. Built after
 * pbd_shared.h. */

/* The per-body solve on the summed s, shared by both body_solve variants and
 * update_reduce_serial; also leaves the float4 record momentum_apply reads. */
static void solve_body(int b, const pbd_acc *s, __global pbd_float4 *body_ref,
                       __global pbd_acc *body_track, __global const int *body_flags, int mode,
                       float4 gh, __global pbd_acc *body_out, __global pbd_float4 *body_apply)
{
    pbd_acc track[6], out[PBD_OUT_COUNT];
    pbd_float4 rec[PBD_APPLY_COUNT];
    for (int k = 0; k < 6; ++k)
        track[k] = body_track[b * 6 + k];
    pbd_body_solve(s, body_ref[b], track, body_flags[b], mode, gh.x, gh.y, gh.z, gh.w, out);
    for (int k = 0; k < 6; ++k)
        body_track[b * 6 + k] = track[k];
    for (int q = 0; q < PBD_OUT_COUNT; ++q)
        body_out[b * PBD_OUT_COUNT + q] = out[q];
    if (mode == PBD_SOLVE_STATS)
        return;
    pbd_apply_record(out, rec);
    for (int k = 0; k < PBD_APPLY_COUNT; ++k)
        body_apply[b * PBD_APPLY_COUNT + k] = rec[k];
    body_ref[b] = rec[0];
}
/* Adds particles first + start, first + start + stride, ... below first + count to acc
 * (PBD_SUM_* layout). With `stats`, the kinetic energy and the largest |C| too (they read
 * every constraint: statistics only). */
static void sum_particles(int first, int start, int count, int stride,
                          __global const pbd_float4 *particle_x,
                          __global const pbd_float4 *particle_v,
                          __global const pbd_float4 *particle_dx, pbd_float4 r,
                          __global const int *csr_offsets, __global const int *csr_slots,
                          __global const pbd_distance *distance_records, float inv_h, int with_dx,
                          int stats, pbd_acc *acc)
{
    pbd_acc s[PBD_SUM_COUNT], comp[PBD_SUM_COUNT];
    for (int q = 0; q < PBD_SUM_COUNT; ++q)
        acc[q] = comp[q] = 0;
    for (int k = start; k < count; k += stride) {
        int i = first + k;
        float e = stats ? pbd_particle_error(particle_x, distance_records, csr_slots,
                                             csr_offsets[i], csr_offsets[i + 1])
                        : 0.0f;
        pbd_float4 dx = with_dx ? particle_dx[i] : PBD_F4(0.0f, 0.0f, 0.0f, 0.0f);
        pbd_particle_sums(particle_x[i], particle_v[i], dx, r, e, stats, inv_h, s);
#ifdef PBD_ACC_COMPENSATED
        pbd_sums_add_compensated(acc, comp, s);
#else
        pbd_sums_add(acc, s);
#endif
    }
#ifdef PBD_ACC_COMPENSATED
    pbd_sums_fold(acc, comp);
#endif
}
/* The same with one work-item per body summing its few segments in order: for scenes whose
 * bodies all have at most PBD_SERIAL_SEGMENTS segments, where a work-group and a tree per
 * body would cost more than the sums (many small bodies). */
__kernel void body_solve_serial(__global const int *body_segments,
                                __global const pbd_acc *segment_sums, __global pbd_float4 *body_ref,
                                __global pbd_acc *body_track, __global const int *body_flags,
                                int mode, float4 gh, __global pbd_acc *body_out,
                                __global pbd_float4 *body_apply, int num_bodies)
{
    int b = get_global_id(0);
    if (b >= num_bodies)
        return;
    pbd_acc acc[PBD_SUM_COUNT], s[PBD_SUM_COUNT];
    for (int q = 0; q < PBD_SUM_COUNT; ++q)
        acc[q] = 0;
    for (int g = body_segments[b]; g < body_segments[b + 1]; ++g) {
        for (int q = 0; q < PBD_SUM_COUNT; ++q)
            s[q] = segment_sums[g * PBD_SUM_COUNT + q];
        pbd_sums_add(acc, s);
    }
    solve_body(b, acc, body_ref, body_track, body_flags, mode, gh, body_out, body_apply);
}

__kernel void momentum_apply(__global const pbd_float4 *particle_x, __global pbd_float4 *particle_v,
                             __global const int *particle_body,
                             __global const pbd_float4 *body_apply, float rigid_k,
                             __global const float *body_damping, int damping_per_body,
                             int num_particles)
{
    int i = get_global_id(0);
    if (i >= num_particles)
        return;
    float k = pbd_particle_damping(i, particle_body, body_damping, damping_per_body, 1, rigid_k);
    particle_v[i] = pbd_apply_rigid(particle_x[i], particle_v[i],
                                    body_apply + particle_body[i] * PBD_APPLY_COUNT, k);
}
