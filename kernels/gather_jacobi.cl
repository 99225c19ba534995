/* Jacobi gather: particle i's new position from the iterate particle_p (pbd_gather: its
 * constraints' corrections, in the fixed order of its CSR row), collided with the planes
 * (recording the displacement with `track`, as collide_planes does), into particle_out.
 * The host alternates the two position buffers. Built after pbd_shared.h. */
__kernel void gather_jacobi(__global const pbd_float4 *particle_p,
                            __global pbd_float4 *particle_out, __global const float *distance_gain,
                            __global const int *csr_offsets, __global const int *csr_slots,
                            __global const int *csr_other, float omega,
                            __global pbd_float4 *particle_dx, __global const pbd_float4 *planes,
                            int num_planes, int track, int num_particles)
{
    int i = get_global_id(0);
    if (i >= num_particles)
        return;
    pbd_float4 p0 = pbd_gather(particle_p, i, distance_gain, csr_slots, csr_other, csr_offsets[i],
                               csr_offsets[i + 1], omega);
    pbd_collide_particle(particle_out, particle_dx, i, p0, planes, num_planes, track);
}

/* The Jacobi gather on CPU devices: a work-item takes sixteen particles [16j, 16j + 16) at
 * once, one lane each, and walks their CSR rows side by side in the padded layout the host
 * builds (ell_start, ell_other, ell_con: group j's k-th entry holds, per lane, the far end and
 * the constraint of that particle's k-th slot; lanes whose row is shorter are masked out).
 * Lane by lane this is pbd_gather's arithmetic in its order, so the results are the same
 * bits. The positions are collided in registers before they are stored (collide_store8).
 * The last work-item takes a partial group one particle at a time. */
__kernel void gather_jacobi16(__global const pbd_float4 *particle_p,
                              __global pbd_float4 *particle_out,
                              __global const float *distance_gain, __global const int *csr_offsets,
                              __global const int *csr_slots, __global const int *csr_other,
                              float omega, __global pbd_float4 *particle_dx,
                              __global const pbd_float4 *planes, int num_planes, int track,
                              int num_particles, __global const int *ell_start,
                              __global const int *ell_other, __global const int *ell_con)
{
    int j = get_global_id(0), i0 = 16 * j;
    if (i0 >= num_particles)
        return;
    if (i0 + 16 <= num_particles) {
        float8 x0, y0, z0, w0, x1, y1, z1, w1;
        load8(particle_p, i0, 8, &x0, &y0, &z0, &w0);
        load8(particle_p, i0 + 8, 8, &x1, &y1, &z1, &w1);
        float16 px = (float16)(x0, x1), py = (float16)(y0, y1), pz = (float16)(z0, z1);
        float16 pw = (float16)(w0, w1);
        int16 len = vload16(0, csr_offsets + i0 + 1) - vload16(0, csr_offsets + i0);
        float16 sx = 0.0f, sy = 0.0f, sz = 0.0f;
        int k0 = ell_start[j], k1 = ell_start[j + 1];
        for (int k = k0; k < k1; ++k) {
            int16 o = vload16(k, ell_other), c = vload16(k, ell_con);
            float16 qx, qy, qz, qw;
            gather16(particle_p, o, &qx, &qy, &qz, &qw);
            __global const float *g = distance_gain;
            float16 ge = pw * (float16)(g[c.s0], g[c.s1], g[c.s2], g[c.s3], g[c.s4], g[c.s5],
                                        g[c.s6], g[c.s7], g[c.s8], g[c.s9], g[c.sa], g[c.sb],
                                        g[c.sc], g[c.sd], g[c.se], g[c.sf]);
            int16 on = (int16)(k - k0) < len;
            sx = on ? sx + ge * (px - qx) : sx;
            sy = on ? sy + ge * (py - qy) : sy;
            sz = on ? sz + ge * (pz - qz) : sz;
        }
        int16 some = len > 0;
        float16 f = omega / convert_float16(len);
        px = some ? px + f * sx : px;
        py = some ? py + f * sy : py;
        pz = some ? pz + f * sz : pz;
        if (num_planes > 0) {
            collide_store8(particle_out, particle_dx, i0, 8, px.lo, py.lo, pz.lo, pw.lo, planes,
                           num_planes, track);
            collide_store8(particle_out, particle_dx, i0 + 8, 8, px.hi, py.hi, pz.hi, pw.hi, planes,
                           num_planes, track);
        } else {
            store8(particle_out, i0, 8, px.lo, py.lo, pz.lo, pw.lo);
            store8(particle_out, i0 + 8, 8, px.hi, py.hi, pz.hi, pw.hi);
        }
        return;
    }
    for (int i = i0; i < num_particles; ++i) {
        pbd_float4 p0 = pbd_gather(particle_p, i, distance_gain, csr_slots, csr_other,
                                   csr_offsets[i], csr_offsets[i + 1], omega);
        pbd_collide_particle(particle_out, particle_dx, i, p0, planes, num_planes, track);
    }
}
