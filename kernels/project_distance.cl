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

/* Sixteen constraints [c, c + 16) on CPU devices: their records, and their 32 particles as
 * float16 components (gather16). */
typedef struct pbd_con16 {
    int16 ia, ib;
    float16 ax, ay, az, aw, bx, by, bz, bw, rest, compliance;
} pbd_con16;

static inline pbd_con16 pbd_load16(__global const float4 *p, __global const int *distance, int c)
{
    pbd_con16 k;
    int16 d0 = vload16(0, distance + 4 * c), d1 = vload16(0, distance + 4 * c + 16);
    int16 d2 = vload16(0, distance + 4 * c + 32), d3 = vload16(0, distance + 4 * c + 48);
    k.ia = (int16)(d0.s048c, d1.s048c, d2.s048c, d3.s048c);
    k.ib = (int16)(d0.s159d, d1.s159d, d2.s159d, d3.s159d);
    k.rest = as_float16((int16)(d0.s26ae, d1.s26ae, d2.s26ae, d3.s26ae));
    k.compliance = as_float16((int16)(d0.s37bf, d1.s37bf, d2.s37bf, d3.s37bf));
    gather16(p, k.ia, &k.ax, &k.ay, &k.az, &k.aw);
    gather16(p, k.ib, &k.bx, &k.by, &k.bz, &k.bw);
    return k;
}

/* Gauss-Seidel on CPU devices, sixteen constraints of one colour at a time: pbd_load16,
 * pbd_distance_gain16, and the corrected particles transposed back. Element by element this
 * is the arithmetic of the float4 kernel, so the results are the same bits. The sixteen share
 * no particle: they are of one colour. Sixteen rather than eight: the chain from the loads
 * through sqrt and two divisions to the stores is long, and one core overlaps too little of
 * the next group's with it; sixteen at once did the same work in about 15 % less time
 * (@cloth-256). */
static inline void pbd_gs16(__global float4 *particle_p, __global const int *distance,
                            __global float *distance_lambda, int c, float inv_h2, int reset_lambda)
{
    pbd_con16 k = pbd_load16(particle_p, distance, c);
    float16 lambda = reset_lambda ? (float16)0.0f : vload16(0, distance_lambda + c);
    float16 dx = k.ax - k.bx, dy = k.ay - k.by, dz = k.az - k.bz, dl;
    float16 g =
        pbd_distance_gain16(dx, dy, dz, k.aw, k.bw, k.rest, k.compliance, lambda, inv_h2, &dl);
    float16 ga = k.aw * g, gb = -k.bw * g;
    scatter16(particle_p, k.ia, k.ax + ga * dx, k.ay + ga * dy, k.az + ga * dz, k.aw);
    scatter16(particle_p, k.ib, k.bx + gb * dx, k.by + gb * dy, k.bz + gb * dz, k.bw);
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
