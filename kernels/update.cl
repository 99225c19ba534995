/* Last projection stage of a substep: the velocity update (first order or BDF2) with point
 * damping, then x = p. For BDF2 the old x and v are kept for the next prediction. Built after
 * pbd_shared.h. */
__kernel void update_velocity(__global pbd_float4 *particle_x,
                              __global const pbd_float4 *particle_p,
                              __global pbd_float4 *particle_v, __global pbd_float4 *particle_xp,
                              __global pbd_float4 *particle_vp, float inv_h, float damping,
                              int bdf2, int keep_prev, int num_particles)
{
    int i = get_global_id(0);
    if (i >= num_particles)
        return;
    pbd_float4 x = particle_x[i];
    pbd_float4 p = particle_p[i];
    pbd_float4 v = particle_v[i];
    pbd_float4 xp = bdf2 ? particle_xp[i] : x;
    if (keep_prev) {
        particle_xp[i] = x;
        particle_vp[i] = v;
    }
    particle_v[i] = pbd_update_velocity(x, p, xp, bdf2, v.w, inv_h, damping);
    particle_x[i] = p;
}
