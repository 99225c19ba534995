/* Stage 1 of a substep: integrate external acceleration and predict positions.
 * Built after pbd_shared.h (the host concatenates the sources). */
__kernel void predict(__global const pbd_float4 *particle_x, __global pbd_float4 *particle_p,
                      __global pbd_float4 *particle_v, float gx, float gy, float gz, float h,
                      int num_particles)
{
    int i = get_global_id(0);
    if (i >= num_particles)
        return;
    pbd_float4 v = particle_v[i];
    pbd_float4 p;
    pbd_predict(particle_x[i], &v, &p, gx, gy, gz, h);
    particle_v[i] = v;
    particle_p[i] = p;
}
