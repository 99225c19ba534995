/* A whole Jacobi iteration on CPU devices, projection and gather in one pass: a work-item
 * takes sixteen particles [16j, 16j + 16), one lane each, and walks their CSR rows side by
 * side in the padded layout the host builds (jacobi_rows: group j's entries ell_start[j] ..
 * ell_start[j + 1] - 1 hold, per lane, the far end, the slot code (constraint << 1 | end, -1
 * where the lane's row is shorter), the rest length and compliance, and the lane's copy of
 * the constraint's multiplier). Each lane computes its constraints' gains itself, from both
 * ends in the iterate: pbd_distance_gain16 of pa - pb, as pbd_jacobi_project does, so a
 * constraint's two ends get the same bits, and their two multiplier copies stay equal
 * (both start at 0 each substep and take the same increments). Then, in slot order,
 * pbd_gather's sum (w_i g)(p_i - p_other), the mean, and the collisions in registers
 * (collide_store8). So this is the CPU reference's projection and gather, bit for bit, with
 * each constraint's square root and divisions done twice instead of its gain stored and
 * loaded again, and one launch an iteration instead of two. */
__kernel void
jacobi_fused16(__global const pbd_float4 *particle_p, __global pbd_float4 *particle_out,
               __global const int *ell_start, __global const int *ell_other,
               __global const int *ell_code, __global const float *ell_rest,
               __global const float *ell_compliance, __global float *ell_lambda, float omega,
               float inv_h2, int reset_lambda, __global pbd_float4 *particle_dx,
               __global const pbd_float4 *particle_x, __global const pbd_collider *colliders,
               int num_colliders, int track, __global const int *particle_body,
               __global const pbd_float4 *body_material, int materials, int num_particles)
{
    int j = get_global_id(0), i0 = 16 * j;
    if (i0 >= num_particles)
        return;
    /* A partial last group: lanes n .. 15 repeat the last particle and are not stored. */
    int n = min(16, num_particles - i0), n0 = min(n, 8), n1 = max(n - 8, 1);
    float8 x0, y0, z0, w0, x1, y1, z1, w1;
    load8(particle_p, i0, n0, &x0, &y0, &z0, &w0);
    load8(particle_p, n > 8 ? i0 + 8 : i0 + n0 - 1, n1, &x1, &y1, &z1, &w1);
    float16 px = (float16)(x0, x1), py = (float16)(y0, y1), pz = (float16)(z0, z1);
    float16 pw = (float16)(w0, w1);
    float16 sx = 0.0f, sy = 0.0f, sz = 0.0f;
    int16 count = 0;
    for (int k = ell_start[j]; k < ell_start[j + 1]; ++k) {
        int16 code = vload16(k, ell_code);
        float16 lambda = reset_lambda ? (float16)0.0f : VEC8_LOADF16(ell_lambda + 16 * k);
        float16 qx, qy, qz, qw, dl;
        gather16_at(particle_p, ell_other + 16 * k, 1, &qx, &qy, &qz, &qw);
        int16 on = code >= 0, at_b = (code & 1) != 0;
        float16 g = pbd_distance_gain16(at_b ? qx - px : px - qx, at_b ? qy - py : py - qy,
                                        at_b ? qz - pz : pz - qz, at_b ? qw : pw, at_b ? pw : qw,
                                        vload16(k, ell_rest), vload16(k, ell_compliance), lambda,
                                        inv_h2, &dl);
        VEC8_STOREF16(lambda + dl, ell_lambda + 16 * k);
        float16 ge = pw * g;
        sx = on ? sx + ge * (px - qx) : sx;
        sy = on ? sy + ge * (py - qy) : sy;
        sz = on ? sz + ge * (pz - qz) : sz;
        count -= on;
    }
    int16 some = count > 0;
    float16 f = omega / convert_float16(count);
    px = some ? px + f * sx : px;
    py = some ? py + f * sy : py;
    pz = some ? pz + f * sz : pz;
    /* Without colliders this is store8 (the host tracks displacements only with them). */
    collide_store8(particle_out, particle_dx, particle_x, i0, n0, px.lo, py.lo, pz.lo, pw.lo,
                   colliders, num_colliders, track, particle_body, body_material, materials);
    if (n > 8)
        collide_store8(particle_out, particle_dx, particle_x, i0 + 8, n - 8, px.hi, py.hi, pz.hi,
                       pw.hi, colliders, num_colliders, track, particle_body, body_material,
                       materials);
}
