/* Particle contacts (pbd_shared.h). Every substep, from the predicted positions, a counting
 * sort of the particles by their cells' table entries: hash_clear, hash_count (an integer
 * histogram: atomic_inc gives the same counts in any order), hash_scan, hash_scatter
 * (atomic slots, in no fixed order), hash_sort (each entry's particles by index: the order
 * the CPU reference's sort gives), then contact_list, each particle's candidates. Every
 * iteration, contact_solve (each particle's side of its contacts) and contact_apply; after
 * the iterations, where momentum is tracked, contact_moment. No float atomics: every float
 * is summed by one work-item in a fixed order. Built after pbd_shared.h. */

__kernel void hash_clear(__global int *cell_count, __global int *cell_fill, int table_size)
{
    int h = get_global_id(0);
    if (h >= table_size)
        return;
    cell_count[h] = 0;
    cell_fill[h] = 0;
}

/* Also starts the substep's contact bookkeeping (pbd_contact_start). */
__kernel void hash_count(__global const pbd_float4 *particle_p,
                         __global const float *particle_radius, __global int *contact_cell,
                         __global int *cell_count, float4 grid_inv, float4 grid_r, int grid_bits,
                         __global pbd_float4 *contact_p0, __global pbd_float4 *contact_cdx,
                         __global pbd_float4 *contact_a, int num_particles)
{
    int i = get_global_id(0);
    if (i >= num_particles)
        return;
    pbd_contact_start(particle_p, contact_p0, contact_cdx, contact_a, i);
    atomic_inc(&cell_count[pbd_contact_cell(particle_p, particle_radius, contact_cell, i, grid_inv,
                                            grid_r, grid_bits)]);
}

/* The exclusive prefix sum of the counts, one work-group of PBD_REDUCE_WG: each work-item
 * sums a run of entries, the first scans the runs' sums, then each writes its run's starts.
 * Integers: the order of addition does not matter. */
__kernel void hash_scan(__global const int *cell_count, __global int *cell_start, int table_size)
{
    __local int part[PBD_REDUCE_WG];
    int l = get_local_id(0), run = (table_size + PBD_REDUCE_WG - 1) / PBD_REDUCE_WG;
    int lo = l * run, hi = lo + run < table_size ? lo + run : table_size, s = 0;
    for (int h = lo; h < hi; ++h)
        s += cell_count[h];
    part[l] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l == 0) {
        int total = 0;
        for (int k = 0; k < PBD_REDUCE_WG; ++k) {
            int t = part[k];
            part[k] = total;
            total += t;
        }
        cell_start[table_size] = total;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    s = part[l];
    for (int h = lo; h < hi; ++h) {
        cell_start[h] = s;
        s += cell_count[h];
    }
}

__kernel void hash_scatter(__global const int *contact_cell, __global const int *cell_start,
                           __global int *cell_fill, __global int *cell_sorted, int num_particles)
{
    int i = get_global_id(0);
    if (i >= num_particles)
        return;
    int h = contact_cell[4 * i + 3];
    cell_sorted[cell_start[h] + atomic_inc(&cell_fill[h])] = i;
}

/* Each entry's particles by index (insertion sort: entries hold a few particles). */
__kernel void hash_sort(__global const int *cell_start, __global int *cell_sorted, int table_size)
{
    int h = get_global_id(0);
    if (h >= table_size)
        return;
    int lo = cell_start[h], hi = cell_start[h + 1];
    for (int k = lo + 1; k < hi; ++k) {
        int v = cell_sorted[k], j = k - 1;
        while (j >= lo && cell_sorted[j] > v) {
            cell_sorted[j + 1] = cell_sorted[j];
            --j;
        }
        cell_sorted[j + 1] = v;
    }
}

/* Each particle's candidates (contact_cand, listed in contact_other up to PBD_CONTACT_LIST)
 * and its contacts now (contact_num, for the relaxation). */
__kernel void contact_list(__global const pbd_float4 *contact_p0,
                           __global const pbd_float4 *contact_rest,
                           __global const float *particle_radius, __global const int *particle_body,
                           __global const int *body_self, __global const int *contact_cell,
                           __global const int *cell_start, __global const int *cell_sorted,
                           int grid_bits, float4 grid_inv, float4 grid_r,
                           __global int *contact_cand, __global int *contact_other,
                           __global int *contact_num, __global const int *contact_slide,
                           __global float *contact_state, int num_particles)
{
    int i = get_global_id(0);
    if (i >= num_particles)
        return;
    int active;
    float o[9];
    contact_cand[i] = pbd_contact_search(
        contact_p0, contact_rest, particle_radius, particle_body, body_self, contact_cell,
        cell_start, cell_sorted, grid_bits, grid_inv, grid_r, i, 1, contact_other, &active, 0,
        contact_p0, contact_p0, contact_rest, contact_num, 1.0f, o);
    contact_num[i] = active;
    pbd_contact_list_start(contact_cand, contact_other, contact_slide, contact_state, i);
}

__kernel void
contact_solve(__global const pbd_float4 *particle_p, __global const pbd_float4 *particle_x,
              __global const pbd_float4 *contact_p0, __global const pbd_float4 *contact_rest,
              __global const float *particle_radius, __global const int *particle_body,
              __global const int *body_self, __global const pbd_float4 *body_material,
              __global const int *contact_cell, __global const int *cell_start,
              __global const int *cell_sorted, int grid_bits, float4 grid_inv, float4 grid_r,
              __global const int *contact_cand, __global const int *contact_other,
              __global const int *contact_num, __global float *contact_state,
              __global int *contact_slide, float omega, __global pbd_float4 *contact_dp,
              __global pbd_float4 *particle_dx, __global pbd_float4 *contact_cdx,
              __global pbd_float4 *contact_a, int track, int num_particles)
{
    int i = get_global_id(0);
    if (i >= num_particles)
        return;
    pbd_contact_solve(particle_p, particle_x, contact_p0, contact_rest, particle_radius,
                      particle_body, body_self, body_material, contact_cell, cell_start,
                      cell_sorted, grid_bits, grid_inv, grid_r, contact_cand, contact_other,
                      contact_num, contact_state, contact_slide, omega, contact_dp, particle_dx,
                      contact_cdx, contact_a, track, i);
}

__kernel void contact_apply(__global pbd_float4 *particle_p, __global const pbd_float4 *contact_dp,
                            int num_particles)
{
    int i = get_global_id(0);
    if (i >= num_particles)
        return;
    pbd_contact_apply(particle_p, contact_dp, i);
}

/* A body a work-item: its contact impulses' moments where they acted (pbd_contact_moment). */
__kernel void contact_moment(__global const int *body_first, __global const int *body_flags,
                             __global const pbd_float4 *particle_p,
                             __global const pbd_float4 *particle_v,
                             __global const pbd_float4 *particle_x,
                             __global const pbd_float4 *contact_cdx,
                             __global const pbd_float4 *contact_a, float inv_h,
                             __global pbd_acc *body_track, int num_bodies)
{
    int b = get_global_id(0);
    if (b >= num_bodies)
        return;
    pbd_contact_moment(b, body_first, body_flags, particle_p, particle_v, particle_x, contact_cdx,
                       contact_a, inv_h, body_track);
}
