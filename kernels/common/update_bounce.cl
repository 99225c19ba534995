/* The velocity update with restitution, for scenes with a bouncing collider: each particle's
 * pbd_update_bounce (pbd_update_particle, then the bounce off the colliders it rests on). Both
 * variants run it in place of their own update, a particle a work-item. Built after
 * pbd_shared.h. */
__kernel void update_bounce(__global pbd_float4 *particle_x, __global const pbd_float4 *particle_p,
                            __global pbd_float4 *particle_v, __global pbd_float4 *particle_xp,
                            __global pbd_float4 *particle_vp, __global pbd_float4 *particle_dx,
                            float inv_h, float damping, int bdf2, int keep_prev,
                            __global const pbd_collider *colliders, int num_colliders, float gx,
                            float gy, float gz, float h, int track,
                            __global const int *particle_body,
                            __global const pbd_float4 *body_material, int materials,
                            __global const float *body_damping, int damping_per_body,
                            int num_particles)
{
    int i = get_global_id(0);
    if (i >= num_particles)
        return;
    float k = pbd_particle_damping(i, particle_body, body_damping, damping_per_body, 0, damping);
    pbd_update_bounce(i, particle_x, particle_p, particle_v, particle_xp, particle_vp, particle_dx,
                      bdf2, keep_prev, inv_h, k, colliders, num_colliders, gx, gy, gz, h, track,
                      pbd_particle_material(i, particle_body, body_material, materials));
}
