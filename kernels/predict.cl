/* Stage 1 of a substep: predict positions from velocities and gravity (first order or BDF2),
 * and clear the collision displacements the momentum tracker reads. With `apply`, first the
 * pending momentum correction of the previous substep (momentum_apply's work, folded in here
 * to save a pass over the particles). Built after pbd_shared.h and vec8.cl (the host
 * concatenates the sources). */

/* The stage for particle i. */
static void predict_one(int i, __global const pbd_float4 *particle_x,
                        __global pbd_float4 *particle_p, __global pbd_float4 *particle_v,
                        __global const pbd_float4 *particle_xp,
                        __global const pbd_float4 *particle_vp, __global pbd_float4 *particle_dx,
                        __global const int *particle_body, __global const pbd_float4 *body_apply,
                        float rigid_k, int apply, int keep_v, float gx, float gy, float gz, float h,
                        int bdf2, int track)
{
    pbd_float4 x = particle_x[i];
    pbd_float4 v = particle_v[i];
    if (apply) {
        v = pbd_apply_rigid(x, v, body_apply + particle_body[i] * PBD_APPLY_COUNT, rigid_k);
        /* First order: update_velocity recomputes v from positions (which used the corrected
         * v), so only BDF2, which keeps v, needs it stored. */
        if (keep_v)
            particle_v[i] = v;
    }
    particle_p[i] = pbd_predict(x, v, bdf2 ? particle_xp[i] : x, bdf2 ? particle_vp[i] : v, bdf2,
                                gx, gy, gz, h);
    if (track)
        particle_dx[i] = PBD_F4(0.0f, 0.0f, 0.0f, 0.0f);
}

__kernel void predict(__global const pbd_float4 *particle_x, __global pbd_float4 *particle_p,
                      __global pbd_float4 *particle_v, __global const pbd_float4 *particle_xp,
                      __global const pbd_float4 *particle_vp, __global pbd_float4 *particle_dx,
                      __global const int *particle_body, __global const pbd_float4 *body_apply,
                      float rigid_k, int apply, int keep_v, float gx, float gy, float gz, float h,
                      int bdf2, int track, int num_particles)
{
    int i = get_global_id(0);
    if (i < num_particles)
        predict_one(i, particle_x, particle_p, particle_v, particle_xp, particle_vp, particle_dx,
                    particle_body, body_apply, rigid_k, apply, keep_v, gx, gy, gz, h, bdf2, track);
}

/* The same for CPU devices, particles 8i .. 8i + 7 a work-item in float8 lanes (vec8.cl),
 * each lane doing predict_one's operations (pbd_apply_rigid's and pbd_predict's) in their
 * order: the same bits. The last few particles go one by one. */
__kernel void predict8(__global const pbd_float4 *particle_x, __global pbd_float4 *particle_p,
                       __global pbd_float4 *particle_v, __global const pbd_float4 *particle_xp,
                       __global const pbd_float4 *particle_vp, __global pbd_float4 *particle_dx,
                       __global const int *particle_body, __global const pbd_float4 *body_apply,
                       float rigid_k, int apply, int keep_v, float gx, float gy, float gz, float h,
                       int bdf2, int track, int num_particles)
{
    int i = 8 * get_global_id(0);
    if (i >= num_particles)
        return;
    if (i + 8 > num_particles) {
        for (int k = i; k < num_particles; ++k)
            predict_one(k, particle_x, particle_p, particle_v, particle_xp, particle_vp,
                        particle_dx, particle_body, body_apply, rigid_k, apply, keep_v, gx, gy, gz,
                        h, bdf2, track);
        return;
    }
    float8 xx, xy, xz, xw, vx, vy, vz, vw;
    load8(particle_x, i, 8, &xx, &xy, &xz, &xw);
    load8(particle_v, i, 8, &vx, &vy, &vz, &vw);
    int8 pinned = xw <= 0.0f;
    if (apply) {
        /* Each lane's body record (com, v_cor, w_cor, rigid v, rigid w): one body's,
         * broadcast, or where the eight straddle two bodies, gathered lane by lane. */
        int8 rec = vload8(0, particle_body + i) * PBD_APPLY_COUNT;
        int same = particle_body[i] == particle_body[i + 7];
        float8 cx, cy, cz, ux, uy, uz, wx, wy, wz;
        record8(body_apply, rec, same, &cx, &cy, &cz);
        record8(body_apply, rec + 1, same, &ux, &uy, &uz);
        record8(body_apply, rec + 2, same, &wx, &wy, &wz);
        float8 rx = xx - cx, ry = xy - cy, rz = xz - cz;
        float8 nx = vx + (ux + (wy * rz - wz * ry));
        float8 ny = vy + (uy + (wz * rx - wx * rz));
        float8 nz = vz + (uz + (wx * ry - wy * rx));
        if (rigid_k > 0.0f) {
            record8(body_apply, rec + 3, same, &ux, &uy, &uz);
            record8(body_apply, rec + 4, same, &wx, &wy, &wz);
            nx = nx + rigid_k * (ux + (wy * rz - wz * ry) - nx);
            ny = ny + rigid_k * (uy + (wz * rx - wx * rz) - ny);
            nz = nz + rigid_k * (uz + (wx * ry - wy * rx) - nz);
        }
        vx = select(nx, vx, pinned);
        vy = select(ny, vy, pinned);
        vz = select(nz, vz, pinned);
        if (keep_v)
            store8(particle_v, i, 8, vx, vy, vz, vw);
    }
    float8 px, py, pz;
    if (!bdf2) {
        px = xx + h * (vx + h * gx);
        py = xy + h * (vy + h * gy);
        pz = xz + h * (vz + h * gz);
    } else {
        const float a = 4.0f / 3.0f, b = 1.0f / 3.0f, c = 2.0f / 3.0f;
        float8 ax, ay, az, aw, bx, by, bz, bw;
        load8(particle_xp, i, 8, &ax, &ay, &az, &aw);
        load8(particle_vp, i, 8, &bx, &by, &bz, &bw);
        float8 ux = a * vx - b * bx + c * h * gx;
        float8 uy = a * vy - b * by + c * h * gy;
        float8 uz = a * vz - b * bz + c * h * gz;
        px = a * xx - b * ax + c * h * ux;
        py = a * xy - b * ay + c * h * uy;
        pz = a * xz - b * az + c * h * uz;
    }
    store8(particle_p, i, 8, select(px, xx, pinned), select(py, xy, pinned), select(pz, xz, pinned),
           xw);
    if (track) {
        __global float *d = (__global float *)(particle_dx + i);
        vstore16((float16)(0.0f), 0, d);
        vstore16((float16)(0.0f), 1, d);
    }
}
