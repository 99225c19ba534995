/* Eight or sixteen particles at a time, for the CPU-device kernels. PoCL vectorises a kernel
 * across work-items only while it holds scalars: LLVM's SLP pass (run before PoCL forms its
 * work-item loops) packs a float4 record's components into vector operations, and the loop
 * vectoriser then refuses the work-item loop ("instruction return type cannot be
 * vectorized"). So kernels that want the vector unit and read float4 records take 8 or 16
 * records a work-item and work on them as float8 or float16, one component a register, or,
 * where the work is element-wise (the prediction, the velocity update), as they are stored,
 * four records a float16. Built after pbd_shared.h. */

/* The helpers below are inlined into their loops, where n = 8 is a constant: a call would
 * pass the float8 values through memory. */
#define VEC8_INLINE static inline __attribute__((always_inline))

/* Eight float4 records, held as two float16, as four float8, one per component. */
VEC8_INLINE void split8(float16 lo, float16 hi, float8 *x, float8 *y, float8 *z, float8 *w)
{
    *x = (float8)(lo.s048c, hi.s048c);
    *y = (float8)(lo.s159d, hi.s159d);
    *z = (float8)(lo.s26ae, hi.s26ae);
    *w = (float8)(lo.s37bf, hi.s37bf);
}

/* The inverse of split8: four float8 components as eight float4 records in two float16. Two
 * rounds of two-source shuffles (x with y, z with w, then the pairs); a float4 built lane by
 * lane for each record costs about four shuffles a record. */
VEC8_INLINE void join8(float8 x, float8 y, float8 z, float8 w, float16 *lo, float16 *hi)
{
    float16 xy = (float16)(x.s0, y.s0, x.s1, y.s1, x.s2, y.s2, x.s3, y.s3, x.s4, y.s4, x.s5, y.s5,
                           x.s6, y.s6, x.s7, y.s7);
    float16 zw = (float16)(z.s0, w.s0, z.s1, w.s1, z.s2, w.s2, z.s3, w.s3, z.s4, w.s4, z.s5, w.s5,
                           z.s6, w.s6, z.s7, w.s7);
    *lo = (float16)(xy.s01, zw.s01, xy.s23, zw.s23, xy.s45, zw.s45, xy.s67, zw.s67);
    *hi = (float16)(xy.s89, zw.s89, xy.sab, zw.sab, xy.scd, zw.scd, xy.sef, zw.sef);
}

/* Four float4 records in a float16: their w lanes (inverse mass or mass), for select. */
#define VEC8_W_LANES ((int16)(0, 0, 0, -1, 0, 0, 0, -1, 0, 0, 0, -1, 0, 0, 0, -1))

/* pbd_update_velocity's new velocity for four records as stored (x, p and, for BDF2, the
 * previous x), component by component: the same bits. The w lanes hold no mass; callers keep
 * it with VEC8_W_LANES. */
VEC8_INLINE float16 velocity16(float16 x, float16 p, float16 xp, int bdf2, float inv_h, float f)
{
    if (!bdf2)
        return (p - x) * inv_h * f;
    return (3.0f * p - 4.0f * x + xp) * (0.5f * inv_h * f);
}

/* Records a[k.s0], ..., a[k.s7] (float4) as two float16: a gather. */
VEC8_INLINE void gather8(__global const pbd_float4 *a, int8 k, float16 *lo, float16 *hi)
{
    *lo = (float16)(a[k.s0], a[k.s1], a[k.s2], a[k.s3]);
    *hi = (float16)(a[k.s4], a[k.s5], a[k.s6], a[k.s7]);
}

/* gather8 of records a[kr[0]], a[kr[ks]], ..., a[kr[7 ks]], their indices read as scalars, and
 * its inverse (the eight records distinct). On Intel cores an index taken out of a vector
 * costs a shuffle-port instruction, which the transposes' shuffles already crowd; a scalar
 * load takes a load port. */
VEC8_INLINE void gather8_at(__global const pbd_float4 *a, __global const int *kr, int ks,
                            float16 *lo, float16 *hi)
{
    *lo = (float16)(a[kr[0]], a[kr[ks]], a[kr[2 * ks]], a[kr[3 * ks]]);
    *hi = (float16)(a[kr[4 * ks]], a[kr[5 * ks]], a[kr[6 * ks]], a[kr[7 * ks]]);
}

VEC8_INLINE void scatter8_at(__global pbd_float4 *a, __global const int *kr, int ks, float16 lo,
                             float16 hi)
{
    a[kr[0]] = lo.s0123;
    a[kr[ks]] = lo.s4567;
    a[kr[2 * ks]] = lo.s89ab;
    a[kr[3 * ks]] = lo.scdef;
    a[kr[4 * ks]] = hi.s0123;
    a[kr[5 * ks]] = hi.s4567;
    a[kr[6 * ks]] = hi.s89ab;
    a[kr[7 * ks]] = hi.scdef;
}

/* Eight consecutive records r0 = (p0, p1, p2, p3), r1 = (p4, ..., p7) as the even ones
 * (p0, p2, p4, p6) and the odd ones (p1, p3, p5, p7): whole-record shuffles. */
VEC8_INLINE void vec8_pairs_split(float16 r0, float16 r1, float16 *even, float16 *odd)
{
    *even = (float16)(r0.s0123, r0.s89ab, r1.s0123, r1.s89ab);
    *odd = (float16)(r0.s4567, r0.scdef, r1.s4567, r1.scdef);
}

/* The inverse of vec8_pairs_split. */
VEC8_INLINE void vec8_pairs_join(float16 even, float16 odd, float16 *r0, float16 *r1)
{
    *r0 = (float16)(even.s0123, odd.s0123, even.s4567, odd.s4567);
    *r1 = (float16)(even.s89ab, odd.s89ab, even.scdef, odd.scdef);
}

/* Sixteen records, four to a float16 (r0 .. r3), as four float16, one per component: split8
 * of each half. */
VEC8_INLINE void split16(float16 r0, float16 r1, float16 r2, float16 r3, float16 *x, float16 *y,
                         float16 *z, float16 *w)
{
    float8 x0, y0, z0, w0, x1, y1, z1, w1;
    split8(r0, r1, &x0, &y0, &z0, &w0);
    split8(r2, r3, &x1, &y1, &z1, &w1);
    *x = (float16)(x0, x1);
    *y = (float16)(y0, y1);
    *z = (float16)(z0, z1);
    *w = (float16)(w0, w1);
}

/* Records a[k.s0], ..., a[k.sf] as four float16, one per component: sixteen loads and a
 * transpose of a few shuffles (split16), where one gather per component would cost more. */
VEC8_INLINE void gather16(__global const pbd_float4 *a, int16 k, float16 *x, float16 *y, float16 *z,
                          float16 *w)
{
    float16 r0, r1, r2, r3;
    gather8(a, k.lo, &r0, &r1);
    gather8(a, k.hi, &r2, &r3);
    split16(r0, r1, r2, r3, x, y, z, w);
}

/* gather16 of records a[kr[0]], a[kr[ks]], ..., a[kr[15 ks]] (gather8_at). */
VEC8_INLINE void gather16_at(__global const pbd_float4 *a, __global const int *kr, int ks,
                             float16 *x, float16 *y, float16 *z, float16 *w)
{
    float16 r0, r1, r2, r3;
    gather8_at(a, kr, ks, &r0, &r1);
    gather8_at(a, kr + 8 * ks, ks, &r2, &r3);
    split16(r0, r1, r2, r3, x, y, z, w);
}

/* A prefetch of the cache line at a, for loads some way ahead of their use: PoCL's prefetch()
 * emits nothing, clang's builtin on x86-64 a prefetcht0; elsewhere nothing. */
#if defined(__clang__) && defined(__x86_64__)
#define VEC8_PREFETCH(a) __builtin_prefetch(a)
#else
#define VEC8_PREFETCH(a) ((void)(a))
#endif

/* Four float4 records at a (16-byte aligned) as one float16, and back; and sixteen floats at
 * a float pointer (any float's alignment). Clang-based OpenCL compilers (PoCL, where this
 * matters) get one unaligned vector access from a float16 type of the pointer's alignment;
 * vload16 can become many narrow loads and inserts there. Others use vload16 and vstore16. */
#ifdef __clang__
typedef float vec8_f16 __attribute__((ext_vector_type(16), aligned(16)));
typedef float vec8_f16_a4 __attribute__((ext_vector_type(16), aligned(4)));
#define VEC8_LOAD16(a)      (*(__global const vec8_f16 *)(a))
#define VEC8_STORE16(v, a)  (*(__global vec8_f16 *)(a) = (v))
#define VEC8_LOADF16(a)     (*(__global const vec8_f16_a4 *)(a))
#define VEC8_STOREF16(v, a) (*(__global vec8_f16_a4 *)(a) = (v))
#else
#define VEC8_LOAD16(a)      vload16(0, (__global const float *)(a))
#define VEC8_STORE16(v, a)  vstore16((v), 0, (__global float *)(a))
#define VEC8_LOADF16(a)     vload16(0, (a))
#define VEC8_STOREF16(v, a) vstore16((v), 0, (a))
#endif

/* Particles i .. i + n - 1 of a (float4 records, 1 <= n <= 8) as they are, two float16.
 * Lanes from n on repeat particle i + n - 1 (no read past the n records; the bound as an
 * int8: Oclgrind's min(int8, int) gives indices past it). */
VEC8_INLINE void load_raw8(__global const pbd_float4 *a, int i, int n, float16 *lo, float16 *hi)
{
    if (n == 8) {
        *lo = VEC8_LOAD16(a + i);
        *hi = VEC8_LOAD16(a + i + 4);
    } else {
        gather8(a, i + min((int8)(0, 1, 2, 3, 4, 5, 6, 7), (int8)(n - 1)), lo, hi);
    }
}

/* The inverse of load_raw8 for records from .. n - 1 of lo, hi (to particles i + from ..
 * i + n - 1): two whole-vector stores when that is all eight. */
VEC8_INLINE void store_raw8(__global pbd_float4 *a, int i, int from, int n, float16 lo, float16 hi)
{
    if (from == 0 && n == 8) {
        VEC8_STORE16(lo, a + i);
        VEC8_STORE16(hi, a + i + 4);
        return;
    }
    const float4 r[8] = {lo.s0123, lo.s4567, lo.s89ab, lo.scdef,
                         hi.s0123, hi.s4567, hi.s89ab, hi.scdef};
    for (int j = from; j < n; ++j)
        a[i + j] = r[j];
}

/* Particles i .. i + n - 1 of a as four float8, one per component (load_raw8's lanes). */
VEC8_INLINE void load8(__global const pbd_float4 *a, int i, int n, float8 *x, float8 *y, float8 *z,
                       float8 *w)
{
    float16 lo, hi;
    load_raw8(a, i, n, &lo, &hi);
    split8(lo, hi, x, y, z, w);
}

/* The inverse of load8: lanes 0 .. n - 1 to particles i .. i + n - 1. */
VEC8_INLINE void store8(__global pbd_float4 *a, int i, int n, float8 x, float8 y, float8 z,
                        float8 w)
{
    float16 lo, hi;
    join8(x, y, z, w, &lo, &hi);
    store_raw8(a, i, 0, n, lo, hi);
}

/* pbd_collide for eight particles held as components, i .. i + n - 1 (lanes from n on repeat
 * the last): frictionless planes as vectors, lane by lane, the same operations as
 * pbd_collide_plane; any other collider through its scalar functions (pbd_collide_one and
 * pbd_friction, against the positions at the substep's start px0), one lane at a time. A
 * plane with friction takes only the lanes below it that way: on the others pbd_collide_one
 * returns the particle as it was and pbd_friction, at depth 0, leaves it (the same bits). */
VEC8_INLINE void collide8(float8 *x, float8 *y, float8 *z, float8 w, float8 *pushed,
                          __global const pbd_float4 *px0, int i, int n,
                          __global const int *particle_body,
                          __global const pbd_float4 *body_material, int materials,
                          __global const pbd_collider *colliders, int num_colliders)
{
    int8 movable = !(w <= 0.0f);
    for (int k = 0; k < num_colliders; ++k) {
        float4 pl = colliders[k].shape;
        int8 hit = movable;
        if (colliders[k].kind == PBD_COLLIDER_PLANE) {
            float8 d = pl.x * *x + pl.y * *y + pl.z * *z - pl.w;
            hit = movable & (d < 0.0f);
            if (!(colliders[k].friction > 0.0f) && !materials) {
                *x = hit ? *x - d * pl.x : *x;
                *y = hit ? *y - d * pl.y : *y;
                *z = hit ? *z - d * pl.z : *z;
                continue;
            }
            if (!any(hit))
                continue;
        }
        float xs[8], ys[8], zs[8], ws[8], ds[8];
        int hs[8];
        vstore8(*x, 0, xs);
        vstore8(*y, 0, ys);
        vstore8(*z, 0, zs);
        vstore8(w, 0, ws);
        vstore8(*pushed, 0, ds);
        vstore8(hit, 0, hs);
        for (int j = 0; j < 8; ++j) {
            if (!hs[j])
                continue;
            int at = i + (j < n ? j : n - 1);
            float4 mat = pbd_particle_material(at, particle_body, body_material, materials);
            float4 q0 = (float4)(xs[j], ys[j], zs[j], ws[j]);
            float4 q = pbd_friction(q0, pbd_collide_one(q0, &colliders[k]), px0[at],
                                    pbd_mix_friction(colliders[k].friction, mat.x),
                                    pbd_mix_friction(colliders[k].friction_kinetic, mat.y), &ds[j]);
            xs[j] = q.x;
            ys[j] = q.y;
            zs[j] = q.z;
        }
        *x = vload8(0, xs);
        *y = vload8(0, ys);
        *z = vload8(0, zs);
        *pushed = vload8(0, ds);
    }
}

/* pbd_collide_particle for particles i .. i + n - 1 (n <= 8) at x, y, z, w: collided, stored
 * to p, and with `track` their displacements added to dx and their friction state
 * kept in dx's w (pbd_collide_particle). */
VEC8_INLINE void collide_store8(__global pbd_float4 *p, __global pbd_float4 *dx,
                                __global const pbd_float4 *px0, int i, int n, float8 x, float8 y,
                                float8 z, float8 w, __global const pbd_collider *colliders,
                                int num_colliders, int track, __global const int *particle_body,
                                __global const pbd_float4 *body_material, int materials)
{
    float8 x1 = x, y1 = y, z1 = z, dxx, dxy, dxz, dxw = (float8)0.0f;
    if (track)
        load8(dx, i, n, &dxx, &dxy, &dxz, &dxw);
    collide8(&x1, &y1, &z1, w, &dxw, px0, i, n, particle_body, body_material, materials, colliders,
             num_colliders);
    store8(p, i, n, x1, y1, z1, w);
    if (track)
        store8(dx, i, n, dxx + (x1 - x), dxy + (y1 - y), dxz + (z1 - z), dxw);
}

/* Particles [first, end) of p collided and stored, eight at a time (collide_store8): a block's
 * collisions after its colours. */
VEC8_INLINE void collide_range8(__global pbd_float4 *p, __global pbd_float4 *dx,
                                __global const pbd_float4 *px0, int first, int end,
                                __global const pbd_collider *colliders, int num_colliders,
                                int track, __global const int *particle_body,
                                __global const pbd_float4 *body_material, int materials)
{
    for (int i = first; num_colliders > 0 && i < end; i += 8) {
        float8 x, y, z, w;
        int n = min(8, end - i);
        load8(p, i, n, &x, &y, &z, &w);
        collide_store8(p, dx, px0, i, n, x, y, z, w, colliders, num_colliders, track, particle_body,
                       body_material, materials);
    }
}
