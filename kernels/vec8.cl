/* Eight particles at a time, for the CPU-device kernels: PoCL does not vectorise a kernel
 * across work-items once it holds vector-typed values (see project_distance.cl), so kernels
 * that want the vector unit and read float4 records take 8 records a work-item and work on
 * them as float8, one component a register. Built after pbd_shared.h. */

/* Particles i .. i + 7 of a (float4 records) as four float8, one per component. */
static void load8(__global const pbd_float4 *a, int i, float8 *x, float8 *y, float8 *z, float8 *w)
{
    __global const float *f = (__global const float *)(a + i);
    float16 lo = vload16(0, f), hi = vload16(1, f);
    *x = (float8)(lo.s048c, hi.s048c);
    *y = (float8)(lo.s159d, hi.s159d);
    *z = (float8)(lo.s26ae, hi.s26ae);
    *w = (float8)(lo.s37bf, hi.s37bf);
}

/* The inverse of load8. */
static void store8(__global pbd_float4 *a, int i, float8 x, float8 y, float8 z, float8 w)
{
    __global float *f = (__global float *)(a + i);
    float16 xy = (float16)(x.s0, y.s0, x.s1, y.s1, x.s2, y.s2, x.s3, y.s3, x.s4, y.s4, x.s5, y.s5,
                           x.s6, y.s6, x.s7, y.s7);
    float16 zw = (float16)(z.s0, w.s0, z.s1, w.s1, z.s2, w.s2, z.s3, w.s3, z.s4, w.s4, z.s5, w.s5,
                           z.s6, w.s6, z.s7, w.s7);
    vstore16((float16)(xy.s01, zw.s01, xy.s23, zw.s23, xy.s45, zw.s45, xy.s67, zw.s67), 0, f);
    vstore16((float16)(xy.s89, zw.s89, xy.sab, zw.sab, xy.scd, zw.scd, xy.sef, zw.sef), 1, f);
}
