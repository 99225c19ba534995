/* The prediction on GPUs: a particle a work-item (common/predict.cl). */

__kernel void predict(__global const pbd_float4 *particle_x, __global pbd_float4 *particle_p,
                      __global pbd_float4 *particle_v, __global const pbd_float4 *particle_xp,
                      __global const pbd_float4 *particle_vp, __global pbd_float4 *particle_dx,
                      __global const int *particle_body, __global const pbd_float4 *body_apply,
                      float rigid_k, __global const float *body_damping, int damping_per_body,
                      int apply, int keep_v, float gx, float gy, float gz, float h, int bdf2,
                      int track, int num_particles)
{
    int i = get_global_id(0);
    if (i < num_particles)
        predict_one(i, particle_x, particle_p, particle_v, particle_xp, particle_vp, particle_dx,
                    particle_body, body_apply, rigid_k, body_damping, damping_per_body, apply,
                    keep_v, gx, gy, gz, h, bdf2, track);
}
