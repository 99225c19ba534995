/* Last stage of a substep: v = (p - x) / h, x = p (Algorithm 1 line 10). Built after
 * pbd_shared.h. */
__kernel void update_velocity(__global pbd_float4 *particle_x,
                              __global const pbd_float4 *particle_p,
                              __global pbd_float4 *particle_v, float inv_h, int num_particles)
{
    int i = get_global_id(0);
    if (i >= num_particles)
        return;
    pbd_float4 x = particle_x[i];
    pbd_float4 p = particle_p[i];
    particle_v[i] = pbd_update_velocity(x, p, particle_v[i].w, inv_h);
    particle_x[i] = p;
}
