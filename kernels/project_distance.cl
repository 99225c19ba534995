/* Distance constraint projection, both solvers. Built after pbd_shared.h. */

/* Gauss-Seidel on GPUs: one launch per colour. Constraints of a colour share no particle, so each
 * work-item reads and writes its two particles without races or atomics, and the result is
 * the serial result for that colour. */
__kernel void project_distance_gs(__global pbd_float4 *particle_p,
                                  __global const pbd_distance *distance,
                                  __global float *distance_lambda, int offset, int count,
                                  float inv_h2, int reset_lambda)
{
    int k = get_global_id(0);
    if (k < count)
        pbd_gs_project(particle_p, distance, distance_lambda, offset + k, inv_h2, reset_lambda);
}

/* Jacobi: every constraint reads the same iterate and writes its gain (pbd_distance_gain)
 * and multiplier; gather_jacobi derives each end's correction from the gain. */
__kernel void project_distance_jacobi(__global const pbd_float4 *particle_p,
                                      __global const pbd_distance *distance,
                                      __global float *distance_lambda,
                                      __global float *distance_gain, int count, float inv_h2,
                                      int reset_lambda)
{
    int c = get_global_id(0);
    if (c < count)
        pbd_jacobi_project(particle_p, distance, distance_lambda, distance_gain, c, inv_h2,
                           reset_lambda);
}

/* Gauss-Seidel on CPU devices, sixteen constraints [c, c + 16) of one colour at a time. The
 * 32 particles stay as they are stored, four records to a float16: d = pa - pb and the
 * corrections p += (w g) d are element-wise there, so only d and the inverse masses are
 * transposed, for pbd_distance_gain16 (sixteen constraints a lane each), and each gain is
 * spread back over its record's four lanes with one shuffle. Element by element this is the
 * arithmetic of the float4 kernel, so the results are the same bits; d's w lane is zeroed, so
 * adding (w g) d leaves each inverse mass as it was. The sixteen share no particle: they are
 * of one colour. Transposing all 32 particles to components and back, as this did before,
 * cost about a quarter more time on @cloth-256: the transposes' shuffles all queue for one
 * port. Sixteen rather than eight: the chain from the loads through sqrt and two divisions
 * to the stores is long, and one core overlaps too little of the next group's with it. */
static inline void pbd_gs16(__global float4 *particle_p, __global const int *distance,
                            __global float *distance_lambda, int c, float inv_h2, int reset_lambda)
{
    int16 d0 = vload16(0, distance + 4 * c), d1 = vload16(0, distance + 4 * c + 16);
    int16 d2 = vload16(0, distance + 4 * c + 32), d3 = vload16(0, distance + 4 * c + 48);
    int16 ia = (int16)(d0.s048c, d1.s048c, d2.s048c, d3.s048c);
    int16 ib = (int16)(d0.s159d, d1.s159d, d2.s159d, d3.s159d);
    float16 rest = as_float16((int16)(d0.s26ae, d1.s26ae, d2.s26ae, d3.s26ae));
    float16 compliance = as_float16((int16)(d0.s37bf, d1.s37bf, d2.s37bf, d3.s37bf));
    /* Arrays here would not be kept in registers. */
    float16 a0, a1, a2, a3, b0, b1, b2, b3;
    gather8(particle_p, ia.lo, &a0, &a1);
    gather8(particle_p, ia.hi, &a2, &a3);
    gather8(particle_p, ib.lo, &b0, &b1);
    gather8(particle_p, ib.hi, &b2, &b3);
    float16 e0 = a0 - b0, e1 = a1 - b1, e2 = a2 - b2, e3 = a3 - b3;
    float8 x0, y0, z0, x1, y1, z1, wa0, wa1, wb0, wb1, unused;
    split8(e0, e1, &x0, &y0, &z0, &unused);
    split8(e2, e3, &x1, &y1, &z1, &unused);
    split8(a0, a1, &unused, &unused, &unused, &wa0);
    split8(a2, a3, &unused, &unused, &unused, &wa1);
    split8(b0, b1, &unused, &unused, &unused, &wb0);
    split8(b2, b3, &unused, &unused, &unused, &wb1);
    float16 wa = (float16)(wa0, wa1), wb = (float16)(wb0, wb1), dl;
    float16 lambda = reset_lambda ? (float16)0.0f : vload16(0, distance_lambda + c);
    float16 g = pbd_distance_gain16((float16)(x0, x1), (float16)(y0, y1), (float16)(z0, z1), wa, wb,
                                    rest, compliance, lambda, inv_h2, &dl);
    float16 ga = wa * g, gb = -wb * g;
    const uint16 spread = (uint16)(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    e0 = select(e0, (float16)(0.0f), VEC8_W_LANES);
    e1 = select(e1, (float16)(0.0f), VEC8_W_LANES);
    e2 = select(e2, (float16)(0.0f), VEC8_W_LANES);
    e3 = select(e3, (float16)(0.0f), VEC8_W_LANES);
    scatter8(particle_p, ia.lo, a0 + shuffle(ga, spread) * e0, a1 + shuffle(ga, spread + 4) * e1);
    scatter8(particle_p, ia.hi, a2 + shuffle(ga, spread + 8) * e2,
             a3 + shuffle(ga, spread + 12) * e3);
    scatter8(particle_p, ib.lo, b0 + shuffle(gb, spread) * e0, b1 + shuffle(gb, spread + 4) * e1);
    scatter8(particle_p, ib.hi, b2 + shuffle(gb, spread + 8) * e2,
             b3 + shuffle(gb, spread + 12) * e3);
    vstore16(lambda + dl, 0, distance_lambda + c);
}

/* Constraints [lo, hi) of one colour: sixteen at a time, the rest one by one. */
static inline void pbd_gs_range(__global float4 *particle_p, __global const int *distance,
                                __global float *distance_lambda, int lo, int hi, float inv_h2,
                                int reset_lambda)
{
    __global const pbd_distance *dist = (__global const pbd_distance *)distance;
    int c = lo;
    for (; c + 16 <= hi; c += 16)
        pbd_gs16(particle_p, distance, distance_lambda, c, inv_h2, reset_lambda);
    for (; c < hi; ++c)
        pbd_gs_project(particle_p, dist, distance_lambda, c, inv_h2, reset_lambda);
}

/* One colour, constraints [offset, offset + count): work-item j takes sixteen of them. */
__kernel void project_distance_gs16(__global pbd_float4 *particle_p, __global const int *distance,
                                    __global float *distance_lambda, int offset, int count,
                                    float inv_h2, int reset_lambda)
{
    int k = 16 * (int)get_global_id(0);
    if (k < count)
        pbd_gs_range(particle_p, distance, distance_lambda, offset + k, offset + min(k + 16, count),
                     inv_h2, reset_lambda);
}

/* Colours [first, first + num_colors) in one work-item, colour after colour: the boundary
 * of a block Gauss-Seidel iteration when it is small, in one launch instead of one a
 * colour. */
__kernel void project_gs_serial(__global pbd_float4 *particle_p, __global const int *distance,
                                __global float *distance_lambda, __global const int *color_offsets,
                                int first, int num_colors, float inv_h2, int reset_lambda)
{
    for (int k = first; k < first + num_colors; ++k)
        pbd_gs_range(particle_p, distance, distance_lambda, color_offsets[k], color_offsets[k + 1],
                     inv_h2, reset_lambda);
}

/* The blocks' colours: work-item b projects block b's share of each interior colour in turn
 * (no other block touches its particles), then collides the block's particles with the
 * planes, as collide_planes would after the last colour. */
__kernel void project_gs_blocks(__global pbd_float4 *particle_p, __global const int *distance,
                                __global float *distance_lambda, __global const int *block_offsets,
                                int num_colors, __global const int *block_first, int num_blocks,
                                float inv_h2, int reset_lambda, __global const pbd_float4 *planes,
                                int num_planes, __global pbd_float4 *particle_dx, int track)
{
    int b = get_global_id(0);
    if (b >= num_blocks)
        return;
    for (int k = 0; k < num_colors; ++k) {
        __global const int *bo = block_offsets + k * (num_blocks + 1);
        pbd_gs_range(particle_p, distance, distance_lambda, bo[b], bo[b + 1], inv_h2, reset_lambda);
    }
    for (int i = block_first[b], end = block_first[b + 1]; num_planes > 0 && i < end; i += 8) {
        float8 x, y, z, w;
        int n = min(8, end - i);
        load8(particle_p, i, n, &x, &y, &z, &w);
        collide_store8(particle_p, particle_dx, i, n, x, y, z, w, planes, num_planes, track);
    }
}
