/* Struct layouts and projection math shared by the host (C11) and the device (OpenCL C 1.2).
 *
 * This is the one copy of the physics: the CPU reference solver includes it as C, and the
 * OpenCL program is built from it followed by the .cl files of kernels/ (host/cl/program.c
 * concatenates them, so the .cl files do not #include it). Write it so that both compilers
 * see the same arithmetic: component-wise scalar code, no vector built-ins, no FMA
 * contraction (host builds with -ffp-contract=off, the device with FP_CONTRACT OFF), and the
 * device built with correctly rounded divide and sqrt where it offers them.
 *
 * Every struct here holds 4-byte scalars only, padding written out; sizes are checked with
 * _Static_assert on the host and by a probe kernel in tests/test_layout.c. */
#ifndef PBD_SHARED_H
#define PBD_SHARED_H

#ifdef __OPENCL_C_VERSION__
#pragma OPENCL FP_CONTRACT OFF
#define PBD_GLOBAL         __global
#define PBD_LOCAL          __local
#define PBD_INLINE         static inline
#define PBD_F4(a, b, c, d) ((float4)((a), (b), (c), (d)))
#define pbd_sqrtf(x)       sqrt(x)
#define pbd_fabsf(x)       fabs(x)
#define pbd_fmaxf(a, b)    fmax((a), (b))
typedef float4 pbd_float4;
#else
#include <math.h>
#define PBD_GLOBAL
#define PBD_LOCAL
#define PBD_INLINE         static inline
#define PBD_F4(a, b, c, d) ((pbd_float4){(a), (b), (c), (d)})
#define pbd_sqrtf(x)       sqrtf(x)
#define pbd_fabsf(x)       fabsf(x)
#define pbd_fmaxf(a, b)    fmaxf((a), (b))
/* Same size (16) and alignment (16) as cl_float4 and OpenCL's float4. */
typedef struct pbd_float4 {
    _Alignas(16) float x;
    float y;
    float z;
    float w;
} pbd_float4;
#endif

/* Below this length (m) a distance constraint has no direction and is left alone. */
#define PBD_MIN_LENGTH 1e-9f

/* A distance constraint between particles a and b (Müller 2007 section 3.3; XPBD: Macklin
 * 2016 eq. 18). 16 bytes. */
typedef struct pbd_distance {
    int a;            /* first particle index, 0 <= a < particle count */
    int b;            /* second particle index, != a */
    float rest;       /* rest length, m, >= 0 */
    float compliance; /* >= 0: XPBD compliance alpha, m/N (0 = hard constraint);
                         < 0: PBD constraint with per-iteration stiffness -compliance in (0, 1]
                         (the solver stores 1 - (1 - k)^(1/iterations) there, section 3.3) */
} pbd_distance;

/* A body's particles, cut into pieces of at most PBD_SEGMENT particles for the two-stage
 * per-body reduction: stage one reduces each segment, stage two each body's segments. */
typedef struct pbd_segment {
    int body;  /* owning body index */
    int first; /* first particle of the segment */
    int count; /* number of particles, 1..PBD_SEGMENT */
    int pad;   /* 0 */
} pbd_segment;

/* Work-group size of the reduction kernels and the particles a work-item sums serially. */
#define PBD_REDUCE_WG 64
#define PBD_SEGMENT   (PBD_REDUCE_WG * 16)

/* Per-body sums, in this order, relative to the body's reference point r (its first
 * particle's initial position): x' = x - r. */
enum {
    PBD_SUM_M = 0,    /* sum m                                   kg      */
    PBD_SUM_MX = 1,   /* sum m x'            (3)                 kg m    */
    PBD_SUM_P = 4,    /* sum m v             (3)                 kg m/s  */
    PBD_SUM_XCP = 7,  /* sum m x' x v        (3)                 kg m2/s */
    PBD_SUM_KE = 10,  /* sum m v.v / 2                           J       */
    PBD_SUM_ERR = 11, /* max |C| of the constraints at the particles  m   */
    PBD_SUM_COUNT = 12
};

/* Predict (Müller 2007, Algorithm 1 lines 5-7): v += h g for free particles, p = x + h v.
 * Pinned particles (inverse mass 0) keep v and stay put. */
PBD_INLINE void pbd_predict(pbd_float4 x, pbd_float4 *v, pbd_float4 *p, float gx, float gy,
                            float gz, float h)
{
    pbd_float4 vv = *v;
    if (x.w > 0.0f) {
        vv.x = vv.x + h * gx;
        vv.y = vv.y + h * gy;
        vv.z = vv.z + h * gz;
    }
    *v = vv;
    *p = PBD_F4(x.x + h * vv.x, x.y + h * vv.y, x.z + h * vv.z, x.w);
}

/* Projects one distance constraint on predictions pa, pb (w = inverse mass).
 * XPBD (compliance >= 0): dlambda = (-C - at lambda) / (wa + wb + at), at = compliance / h^2;
 * PBD (compliance < 0): the hard correction scaled by the stiffness -compliance.
 * Writes the position corrections of a and b and the multiplier increment. */
PBD_INLINE void pbd_project_distance(pbd_float4 pa, pbd_float4 pb, float rest, float compliance,
                                     float lambda, float inv_h2, pbd_float4 *da, pbd_float4 *db,
                                     float *dlambda)
{
    float dx = pa.x - pb.x;
    float dy = pa.y - pb.y;
    float dz = pa.z - pb.z;
    float len = pbd_sqrtf(dx * dx + dy * dy + dz * dz);
    float wsum = pa.w + pb.w;
    *da = PBD_F4(0.0f, 0.0f, 0.0f, 0.0f);
    *db = PBD_F4(0.0f, 0.0f, 0.0f, 0.0f);
    *dlambda = 0.0f;
    if (wsum <= 0.0f || len < PBD_MIN_LENGTH)
        return;
    float c = len - rest;
    float s;
    if (compliance >= 0.0f) {
        float at = compliance * inv_h2;
        s = (-c - at * lambda) / (wsum + at);
        *dlambda = s;
    } else {
        s = -compliance * (-c / wsum);
    }
    float nx = dx / len;
    float ny = dy / len;
    float nz = dz / len;
    float sa = pa.w * s;
    float sb = pb.w * s;
    *da = PBD_F4(sa * nx, sa * ny, sa * nz, 0.0f);
    *db = PBD_F4(-sb * nx, -sb * ny, -sb * nz, 0.0f);
}

/* |C| of a distance constraint, m. */
PBD_INLINE float pbd_distance_error(pbd_float4 pa, pbd_float4 pb, float rest)
{
    float dx = pa.x - pb.x;
    float dy = pa.y - pb.y;
    float dz = pa.z - pb.z;
    return pbd_fabsf(pbd_sqrtf(dx * dx + dy * dy + dz * dz) - rest);
}

/* Pushes a free particle out of every static plane (n.x >= offset, n unit; planes are
 * (nx, ny, nz, offset)), in plane order: the unilateral constraint of Müller 2007 sec. 3.4. */
PBD_INLINE pbd_float4 pbd_collide_planes(pbd_float4 p, PBD_GLOBAL const pbd_float4 *planes,
                                         int num_planes)
{
    if (p.w <= 0.0f)
        return p;
    for (int k = 0; k < num_planes; ++k) {
        pbd_float4 pl = planes[k];
        float d = pl.x * p.x + pl.y * p.y + pl.z * p.z - pl.w;
        if (d < 0.0f) {
            p.x = p.x - d * pl.x;
            p.y = p.y - d * pl.y;
            p.z = p.z - d * pl.z;
        }
    }
    return p;
}

/* Velocity update (Algorithm 1 line 10): v = (p - x) / h, keeping v.w (the particle's mass). */
PBD_INLINE pbd_float4 pbd_update_velocity(pbd_float4 x, pbd_float4 p, float v_w, float inv_h)
{
    return PBD_F4((p.x - x.x) * inv_h, (p.y - x.y) * inv_h, (p.z - x.z) * inv_h, v_w);
}

/* Adds the xyz of d to p, keeping p.w (the inverse mass). */
PBD_INLINE pbd_float4 pbd_add3(pbd_float4 p, pbd_float4 d)
{
    return PBD_F4(p.x + d.x, p.y + d.y, p.z + d.z, p.w);
}

/* Jacobi gather for one particle: the sum of its constraints' deltas, in the fixed slot order
 * of its CSR row, scaled by omega / n (Bender et al. survey, "Jacobi"; n = the particle's
 * constraint count), then the plane collisions. No atomics: the order is fixed, so the result
 * is the same on every run and every device. */
PBD_INLINE pbd_float4 pbd_gather(pbd_float4 p, PBD_GLOBAL const pbd_float4 *delta,
                                 PBD_GLOBAL const int *slots, int begin, int end, float omega,
                                 PBD_GLOBAL const pbd_float4 *planes, int num_planes)
{
    if (end > begin) {
        float sx = 0.0f, sy = 0.0f, sz = 0.0f;
        for (int s = begin; s < end; ++s) {
            pbd_float4 d = delta[slots[s]];
            sx = sx + d.x;
            sy = sy + d.y;
            sz = sz + d.z;
        }
        float f = omega / (float)(end - begin);
        p = PBD_F4(p.x + f * sx, p.y + f * sy, p.z + f * sz, p.w);
    }
    return pbd_collide_planes(p, planes, num_planes);
}

/* Accumulator of the per-body reductions: double where the device has fp64 (always on the
 * host), float otherwise. */
#ifdef __OPENCL_C_VERSION__
#ifdef PBD_HAS_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double pbd_acc;
#else
typedef float pbd_acc;
#endif
#else
typedef double pbd_acc;
#endif

/* One particle's contribution to its body's sums (PBD_SUM_*), relative to the body's
 * reference point r; err is the largest |C| among the particle's constraints. */
PBD_INLINE void pbd_particle_sums(pbd_float4 x, pbd_float4 v, pbd_float4 r, float err, pbd_acc *s)
{
    pbd_acc m = (pbd_acc)v.w;
    pbd_acc rx = (pbd_acc)x.x - (pbd_acc)r.x;
    pbd_acc ry = (pbd_acc)x.y - (pbd_acc)r.y;
    pbd_acc rz = (pbd_acc)x.z - (pbd_acc)r.z;
    pbd_acc px = m * (pbd_acc)v.x;
    pbd_acc py = m * (pbd_acc)v.y;
    pbd_acc pz = m * (pbd_acc)v.z;
    s[PBD_SUM_M] = m;
    s[PBD_SUM_MX + 0] = m * rx;
    s[PBD_SUM_MX + 1] = m * ry;
    s[PBD_SUM_MX + 2] = m * rz;
    s[PBD_SUM_P + 0] = px;
    s[PBD_SUM_P + 1] = py;
    s[PBD_SUM_P + 2] = pz;
    s[PBD_SUM_XCP + 0] = ry * pz - rz * py;
    s[PBD_SUM_XCP + 1] = rz * px - rx * pz;
    s[PBD_SUM_XCP + 2] = rx * py - ry * px;
    s[PBD_SUM_KE] = (pbd_acc)0.5 * (px * (pbd_acc)v.x + py * (pbd_acc)v.y + pz * (pbd_acc)v.z);
    s[PBD_SUM_ERR] = (pbd_acc)err;
}

/* acc += s for every sum; the error entry keeps the maximum. */
PBD_INLINE void pbd_sums_add(pbd_acc *acc, const pbd_acc *s)
{
    for (int q = 0; q < PBD_SUM_ERR; ++q)
        acc[q] = acc[q] + s[q];
    acc[PBD_SUM_ERR] = acc[PBD_SUM_ERR] > s[PBD_SUM_ERR] ? acc[PBD_SUM_ERR] : s[PBD_SUM_ERR];
}

/* Largest |C| among the constraints in a particle's CSR row (slot = 2 * constraint + end). */
PBD_INLINE float pbd_particle_error(PBD_GLOBAL const pbd_float4 *x,
                                    PBD_GLOBAL const pbd_distance *cons,
                                    PBD_GLOBAL const int *slots, int begin, int end)
{
    float e = 0.0f;
    for (int s = begin; s < end; ++s) {
        pbd_distance d = cons[slots[s] >> 1];
        e = pbd_fmaxf(e, pbd_distance_error(x[d.a], x[d.b], d.rest));
    }
    return e;
}

#endif
