/* The velocity update (gpu/update.cl's update_velocity) for CPU devices, a run of PBD_PARTICLE_RUN
 * particles a work-item, four at a time as they are stored (a float16): the update is element-wise,
 * each lane doing pbd_update_velocity's operations, so the same bits. The last few particles go one
 * by one. */
__kernel void update_runs(__global pbd_float4 *particle_x, __global const pbd_float4 *particle_p,
                          __global pbd_float4 *particle_v, __global pbd_float4 *particle_xp,
                          __global pbd_float4 *particle_vp, float inv_h, float damping,
                          __global const int *particle_body, __global const float *body_damping,
                          int damping_per_body, int bdf2, int keep_prev, int num_particles)
{
    int first = PBD_PARTICLE_RUN * get_global_id(0);
    int end = min(first + PBD_PARTICLE_RUN, num_particles);
    float f = 1.0f - damping;
    int i = first;
    /* Bodies that damp differently: every particle one by one, with its body's fraction. */
    for (; i + 4 <= end && !damping_per_body; i += 4) {
        float16 x = VEC8_LOAD16(particle_x + i);
        float16 p = VEC8_LOAD16(particle_p + i);
        float16 v = VEC8_LOAD16(particle_v + i);
        float16 n = velocity16(x, p, bdf2 ? VEC8_LOAD16(particle_xp + i) : x, bdf2, inv_h, f);
        if (keep_prev) {
            VEC8_STORE16(x, particle_xp + i);
            VEC8_STORE16(v, particle_vp + i);
        }
        VEC8_STORE16(select(n, v, VEC8_W_LANES), particle_v + i); /* w: the mass stays */
        VEC8_STORE16(p, particle_x + i);
    }
    for (; i < end; ++i) {
        pbd_float4 p;
        float k =
            pbd_particle_damping(i, particle_body, body_damping, damping_per_body, 0, damping);
        pbd_update_particle(i, particle_x, particle_p, particle_v, particle_xp, particle_vp, bdf2,
                            keep_prev, inv_h, k, &p);
    }
}
