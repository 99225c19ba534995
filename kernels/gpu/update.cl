/* Last projection stage of a substep: the velocity update (first order or BDF2) with point
 * damping, then x = p. For BDF2 the old x and v are kept for the next prediction. Built after
 * pbd_shared.h. */
__kernel void update_velocity(__global pbd_float4 *particle_x,
                              __global const pbd_float4 *particle_p,
                              __global pbd_float4 *particle_v, __global pbd_float4 *particle_xp,
                              __global pbd_float4 *particle_vp, float inv_h, float damping,
                              __global const int *particle_body, __global const float *body_damping,
                              int damping_per_body, int bdf2, int keep_prev, int num_particles)
{
    int i = get_global_id(0);
    if (i >= num_particles)
        return;
    pbd_float4 p;
    float k = pbd_particle_damping(i, particle_body, body_damping, damping_per_body, 0, damping);
    pbd_update_particle(i, particle_x, particle_p, particle_v, particle_xp, particle_vp, bdf2,
                        keep_prev, inv_h, k, &p);
}
