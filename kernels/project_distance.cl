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
    float16 ax = k.ax + ga * dx, ay = k.ay + ga * dy, az = k.az + ga * dz, aw = k.aw;
    float16 bx = k.bx + gb * dx, by = k.by + gb * dy, bz = k.bz + gb * dz, bw = k.bw;
    __global float4 *p = particle_p;
    int16 ia = k.ia, ib = k.ib;
    p[ia.s0] = (float4)(ax.s0, ay.s0, az.s0, aw.s0);
    p[ia.s1] = (float4)(ax.s1, ay.s1, az.s1, aw.s1);
    p[ia.s2] = (float4)(ax.s2, ay.s2, az.s2, aw.s2);
    p[ia.s3] = (float4)(ax.s3, ay.s3, az.s3, aw.s3);
    p[ia.s4] = (float4)(ax.s4, ay.s4, az.s4, aw.s4);
    p[ia.s5] = (float4)(ax.s5, ay.s5, az.s5, aw.s5);
    p[ia.s6] = (float4)(ax.s6, ay.s6, az.s6, aw.s6);
    p[ia.s7] = (float4)(ax.s7, ay.s7, az.s7, aw.s7);
    p[ia.s8] = (float4)(ax.s8, ay.s8, az.s8, aw.s8);
    p[ia.s9] = (float4)(ax.s9, ay.s9, az.s9, aw.s9);
    p[ia.sa] = (float4)(ax.sa, ay.sa, az.sa, aw.sa);
    p[ia.sb] = (float4)(ax.sb, ay.sb, az.sb, aw.sb);
    p[ia.sc] = (float4)(ax.sc, ay.sc, az.sc, aw.sc);
    p[ia.sd] = (float4)(ax.sd, ay.sd, az.sd, aw.sd);
    p[ia.se] = (float4)(ax.se, ay.se, az.se, aw.se);
    p[ia.sf] = (float4)(ax.sf, ay.sf, az.sf, aw.sf);
    p[ib.s0] = (float4)(bx.s0, by.s0, bz.s0, bw.s0);
    p[ib.s1] = (float4)(bx.s1, by.s1, bz.s1, bw.s1);
    p[ib.s2] = (float4)(bx.s2, by.s2, bz.s2, bw.s2);
    p[ib.s3] = (float4)(bx.s3, by.s3, bz.s3, bw.s3);
    p[ib.s4] = (float4)(bx.s4, by.s4, bz.s4, bw.s4);
    p[ib.s5] = (float4)(bx.s5, by.s5, bz.s5, bw.s5);
    p[ib.s6] = (float4)(bx.s6, by.s6, bz.s6, bw.s6);
    p[ib.s7] = (float4)(bx.s7, by.s7, bz.s7, bw.s7);
    p[ib.s8] = (float4)(bx.s8, by.s8, bz.s8, bw.s8);
    p[ib.s9] = (float4)(bx.s9, by.s9, bz.s9, bw.s9);
    p[ib.sa] = (float4)(bx.sa, by.sa, bz.sa, bw.sa);
    p[ib.sb] = (float4)(bx.sb, by.sb, bz.sb, bw.sb);
    p[ib.sc] = (float4)(bx.sc, by.sc, bz.sc, bw.sc);
    p[ib.sd] = (float4)(bx.sd, by.sd, bz.sd, bw.sd);
    p[ib.se] = (float4)(bx.se, by.se, bz.se, bw.se);
    p[ib.sf] = (float4)(bx.sf, by.sf, bz.sf, bw.sf);
    vstore16(lambda + dl, 0, distance_lambda + c);
}

/* Jacobi for sixteen loaded constraints [c, c + 16): their gains and multipliers. */
static inline void pbd_jacobi16(const pbd_con16 *k, __global float *distance_lambda,
                                __global float *distance_gain, int c, float inv_h2,
                                int reset_lambda)
{
    float16 lambda = reset_lambda ? (float16)0.0f : vload16(0, distance_lambda + c);
    float16 dl;
    vstore16(pbd_distance_gain16(k->ax - k->bx, k->ay - k->by, k->az - k->bz, k->aw, k->bw, k->rest,
                                 k->compliance, lambda, inv_h2, &dl),
             0, distance_gain + c);
    vstore16(lambda + dl, 0, distance_lambda + c);
}

/* Jacobi on CPU devices: a work-item projects 32 constraints, two groups of sixteen
 * (pbd_load16, pbd_distance_gain16) loaded before either is computed, which gives a core
 * two independent chains through the square root and the divisions (8-11 % less time
 * than one group, @cloth-256); the last work-item takes the remainder by sixteen, then one
 * by one. Element by element the arithmetic of project_distance_jacobi. */
__kernel void project_distance_jacobi16(__global const float4 *particle_p,
                                        __global const int *distance,
                                        __global float *distance_lambda,
                                        __global float *distance_gain, int count, float inv_h2,
                                        int reset_lambda)
{
    int c = 32 * (int)get_global_id(0);
    if (c + 32 <= count) {
        pbd_con16 k = pbd_load16(particle_p, distance, c);
        pbd_con16 m = pbd_load16(particle_p, distance, c + 16);
        pbd_jacobi16(&k, distance_lambda, distance_gain, c, inv_h2, reset_lambda);
        pbd_jacobi16(&m, distance_lambda, distance_gain, c + 16, inv_h2, reset_lambda);
        return;
    }
    if (c + 16 <= count) {
        pbd_con16 k = pbd_load16(particle_p, distance, c);
        pbd_jacobi16(&k, distance_lambda, distance_gain, c, inv_h2, reset_lambda);
        c += 16;
    }
    for (; c < count; ++c)
        pbd_jacobi_project(particle_p, (__global const pbd_distance *)distance, distance_lambda,
                           distance_gain, c, inv_h2, reset_lambda);
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
    if (num_planes > 0)
        for (int i = block_first[b]; i < block_first[b + 1]; ++i)
            pbd_collide_particle(particle_p, particle_dx, i, particle_p[i], planes, num_planes,
                                 track);
}
