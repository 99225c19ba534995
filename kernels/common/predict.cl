/* Stage 1 of a substep: predict positions from velocities and gravity (first order or BDF2),
 * and clear the collision displacements the momentum tracker reads (keeping whether each
 * particle's friction slides, pbd_friction_carry). With `apply`, first the
 * pending momentum correction of the previous substep (momentum_apply's work, folded in here
 * to save a pass over the particles). This file: the stage for one particle, which both variants'
 * kernels (gpu/predict.cl, cpu/predict.cl) call. Built after pbd_shared.h. */

/* The stage for particle i. */
static void predict_one(int i, __global const pbd_float4 *particle_x,
                        __global pbd_float4 *particle_p, __global pbd_float4 *particle_v,
                        __global const pbd_float4 *particle_xp,
                        __global const pbd_float4 *particle_vp, __global pbd_float4 *particle_dx,
                        __global const int *particle_body, __global const pbd_float4 *body_apply,
                        float rigid_k, __global const float *body_damping, int damping_per_body,
                        int apply, int keep_v, float gx, float gy, float gz, float h, int bdf2,
                        int track)
{
    pbd_float4 x = particle_x[i];
    pbd_float4 v = particle_v[i];
    if (apply) {
        float k =
            pbd_particle_damping(i, particle_body, body_damping, damping_per_body, 1, rigid_k);
        v = pbd_apply_rigid(x, v, body_apply + particle_body[i] * PBD_APPLY_COUNT, k);
        /* First order: update_velocity recomputes v from positions (which used the corrected
         * v), so only BDF2, which keeps v, and the bounce, which reads the v the substep began
         * with, need it stored (keep_v). */
        if (keep_v)
            particle_v[i] = v;
    }
    particle_p[i] = pbd_predict(x, v, bdf2 ? particle_xp[i] : x, bdf2 ? particle_vp[i] : v, bdf2,
                                gx, gy, gz, h);
    if (track)
        particle_dx[i] = PBD_F4(0.0f, 0.0f, 0.0f, pbd_friction_carry(particle_dx[i].w));
}
