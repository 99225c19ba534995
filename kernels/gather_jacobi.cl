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
    pbd_float4 p1 = pbd_collide_planes(p0, planes, num_planes);
    particle_out[i] = p1;
    if (track)
        particle_dx[i] = pbd_add_displacement(particle_dx[i], p0, p1);
}

/* The Jacobi gather on CPU devices: a work-item takes sixteen particles [16j, 16j + 16) at
 * once, one lane each, and walks their CSR rows side by side in the padded layout the host
 * builds (ell_start, ell_other, ell_con: group j's k-th entry holds, per lane, the far end and
 * the constraint of that particle's k-th slot; lanes whose row is shorter are masked out).
 * Lane by lane this is pbd_gather's arithmetic in its order, so the results are the same
 * bits. The last work-item takes a partial group one particle at a time. */
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
    float4 r[16];
    if (i0 + 16 <= num_particles) {
        float16 px, py, pz, pw;
        gather16(particle_p, i0 + (int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                 &px, &py, &pz, &pw);
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
        float16 xy = (float16)(px.s0, py.s0, px.s1, py.s1, px.s2, py.s2, px.s3, py.s3, px.s4, py.s4,
                               px.s5, py.s5, px.s6, py.s6, px.s7, py.s7);
        float16 zw = (float16)(pz.s0, pw.s0, pz.s1, pw.s1, pz.s2, pw.s2, pz.s3, pw.s3, pz.s4, pw.s4,
                               pz.s5, pw.s5, pz.s6, pw.s6, pz.s7, pw.s7);
        float16 xy2 = (float16)(px.s8, py.s8, px.s9, py.s9, px.sa, py.sa, px.sb, py.sb, px.sc,
                                py.sc, px.sd, py.sd, px.se, py.se, px.sf, py.sf);
        float16 zw2 = (float16)(pz.s8, pw.s8, pz.s9, pw.s9, pz.sa, pw.sa, pz.sb, pw.sb, pz.sc,
                                pw.sc, pz.sd, pw.sd, pz.se, pw.se, pz.sf, pw.sf);
        r[0] = (float4)(xy.s01, zw.s01);
        r[1] = (float4)(xy.s23, zw.s23);
        r[2] = (float4)(xy.s45, zw.s45);
        r[3] = (float4)(xy.s67, zw.s67);
        r[4] = (float4)(xy.s89, zw.s89);
        r[5] = (float4)(xy.sab, zw.sab);
        r[6] = (float4)(xy.scd, zw.scd);
        r[7] = (float4)(xy.sef, zw.sef);
        r[8] = (float4)(xy2.s01, zw2.s01);
        r[9] = (float4)(xy2.s23, zw2.s23);
        r[10] = (float4)(xy2.s45, zw2.s45);
        r[11] = (float4)(xy2.s67, zw2.s67);
        r[12] = (float4)(xy2.s89, zw2.s89);
        r[13] = (float4)(xy2.sab, zw2.sab);
        r[14] = (float4)(xy2.scd, zw2.scd);
        r[15] = (float4)(xy2.sef, zw2.sef);
    } else {
        for (int l = 0; i0 + l < num_particles; ++l)
            r[l] = pbd_gather(particle_p, i0 + l, distance_gain, csr_slots, csr_other,
                              csr_offsets[i0 + l], csr_offsets[i0 + l + 1], omega);
    }
    int n = min(16, num_particles - i0);
    if (num_planes == 0) {
        for (int l = 0; l < n; ++l)
            particle_out[i0 + l] = r[l];
        return;
    }
    for (int l = 0; l < n; ++l) {
        pbd_float4 p1 = pbd_collide_planes(r[l], planes, num_planes);
        particle_out[i0 + l] = p1;
        if (track)
            particle_dx[i0 + l] = pbd_add_displacement(particle_dx[i0 + l], r[l], p1);
    }
}
