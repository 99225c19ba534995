/* Distance constraints on GPUs. Gauss-Seidel: project_distance (common/project.cl), a
 * launch a colour. */

/* Jacobi: every constraint reads the same iterate and writes its gain (pbd_distance_gain)
 * and multiplier; gather_jacobi derives each end's correction from the gain. */
__kernel void project_distance_jacobi(__global const pbd_float4 *particle_p,
                                      __global const pbd_distance *distance_records,
                                      __global float *distance_lambda,
                                      __global float *distance_gain, int count, float inv_h2,
                                      int reset_lambda)
{
    int c = get_global_id(0);
    if (c < count)
        pbd_jacobi_project(particle_p, distance_records, distance_lambda, distance_gain, c, inv_h2,
                           reset_lambda);
}

/* Gauss-Seidel on a mesh small enough for one work-group: every colour in turn, the
 * work-items striding over its constraints, a barrier between colours, then the collisions
 * of every particle; one launch an iteration instead of a launch a colour and one for the
 * collisions. A colour's constraints share no particle, and the barrier orders the colours,
 * so the result is the colour-by-colour launches' (and the CPU reference's). With `serial`
 * the last colour is the overflow set, which the first work-item takes in order. */
__kernel void
project_distance_group(__global pbd_float4 *particle_p, __global pbd_float4 *particle_dx,
                       __global const pbd_distance *distance_records,
                       __global float *distance_lambda, __global const int *color_offsets,
                       int num_colors, int serial, float inv_h2, int reset_lambda, int track,
                       __global const pbd_float4 *particle_x, __global const int *particle_body,
                       __global const pbd_float4 *body_material, int materials,
                       __global const pbd_collider *colliders, int num_colliders, int num_particles)
{
    int l = (int)get_local_id(0), n = (int)get_local_size(0);
    for (int k = 0; k < num_colors; ++k) {
        int one = serial && k == num_colors - 1, step = one ? 1 : n;
        for (int c = color_offsets[k] + l, end = one && l > 0 ? 0 : color_offsets[k + 1]; c < end;
             c += step)
            pbd_distance_project(particle_p, particle_dx, distance_records, distance_lambda, c,
                                 inv_h2, reset_lambda, track);
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
    for (int i = l; num_colliders > 0 && i < num_particles; i += n)
        pbd_collide_particle(particle_p, particle_dx, i, particle_p[i], particle_x, colliders,
                             num_colliders, track,
                             pbd_particle_material(i, particle_body, body_material, materials));
}
