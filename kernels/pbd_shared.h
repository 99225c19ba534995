/* The projection math and the solver's internal layouts, shared by the host (C11) and the
 * device (OpenCL C 1.2), over the public record layouts of pbd_layout.h.
 *
 * This is the one copy of the physics: the CPU reference solver includes it as C, and the
 * OpenCL program is built from pbd_layout.h, it, and the .cl files of kernels/
 * (host/cl/program.c concatenates them, so the .cl files do not #include it). Write it so that both
 * compilers see the same arithmetic: component-wise scalar code (the one float16 variant applies
 * the same scalar formula element by element), no vector built-ins, no FMA contraction (host builds
 * with -ffp-contract=off, the device with FP_CONTRACT OFF: a fused product is written out as
 * pbd_fmaf, correctly rounded on both), and the device built with correctly rounded divide and
 * sqrt where it offers them.
 *
 * Every struct here holds 4-byte scalars only, padding written out; sizes are checked with
 * _Static_assert on the host and by a probe kernel (tests/test_cl.c, layout_probe). */
#ifndef PBD_SHARED_H
#define PBD_SHARED_H

/* PBD_UNROLL before a loop of a few fixed passes: OpenCL compilers (PoCL's among them) keep
 * such loops and their small arrays in memory otherwise, which made the Neo-Hookean element
 * 1.8 times slower. Unrolling changes no arithmetic; the host compiler decides for itself. */
/* PBD_ALWAYS_INLINE: a function whose callers pass constants that should fold into it. */
#define PBD_ALWAYS_INLINE static inline __attribute__((always_inline))
#ifdef __OPENCL_C_VERSION__
#define PBD_INLINE        static inline
#define PBD_UNROLL        _Pragma("unroll")
#define pbd_sqrtf(x)      sqrt(x)
#define pbd_fabsf(x)      fabs(x)
#define pbd_fmaxf(a, b)   fmax((a), (b))
#define pbd_floorf(x)     floor(x)
#define pbd_fmaf(a, b, c) fma((a), (b), (c))
#else
#include <math.h>

#include "pbd_layout.h"
#define PBD_INLINE static inline
#define PBD_UNROLL
#define pbd_sqrtf(x)      sqrtf(x)
#define pbd_fabsf(x)      fabsf(x)
#define pbd_fmaxf(a, b)   fmaxf((a), (b))
#define pbd_floorf(x)     floorf(x)
#define pbd_fmaf(a, b, c) fmaf((a), (b), (c))
#endif

/* PBD_FMA_CLONES before a host function dense in pbd_fmaf: on x86-64, whose default target
 * has no FMA instruction (fmaf is then a library call, three times slower for the
 * Neo-Hookean element), the compiler makes an FMA copy too, chosen at load time where the CPU
 * has it (glibc's ifunc). fmaf is correctly rounded either way, so both copies give the
 * same bits. */
#if !defined(__OPENCL_C_VERSION__) && defined(__x86_64__) && defined(__GLIBC__) &&                 \
    (defined(__clang__) || defined(__GNUC__))
#define PBD_FMA_CLONES __attribute__((target_clones("fma", "default")))
#else
#define PBD_FMA_CLONES
#endif

/* Below this length (m) a distance constraint has no direction and is left alone. */
#define PBD_MIN_LENGTH 1e-9f

/* A body's particles, cut into pieces of at most PBD_SEGMENT particles for the two-stage
 * per-body reduction: stage one reduces each segment, stage two each body's segments. */
typedef struct pbd_segment {
    int body;  /* owning body index */
    int first; /* first particle of the segment */
    int count; /* number of particles, 1..PBD_SEGMENT */
    int pad;   /* 0 */
} pbd_segment;

/* Work-group size of the reduction kernels. A segment is one work-group's particles, one per
 * work-item: straight-line code that a CPU device can vectorise across work-items. */
#define PBD_REDUCE_WG 64
#define PBD_SEGMENT   (PBD_REDUCE_WG * 16)

/* On CPU devices (and in the CPU reference), a segment's fp64 sums run in this many lanes:
 * lane j adds the segment's particles j, j + 8, ... in order, and the lanes are then added
 * as a tree (j + j + 4, then j + j + 2, then 0 + 1). The device does it in double8
 * registers, 8 particles an instruction. A segment of at least 8 particles whose count is
 * not a multiple of 8 ends with the group of its last 8 particles, so its last few go to
 * the top lanes (pbd_sum_lane): whole-vector loads and stores there too. */
#define PBD_SUM_LANES 8

/* The lane that sums particle k of a segment of `count` particles. */
PBD_INLINE int pbd_sum_lane(int k, int count)
{
    int full = count - count % PBD_SUM_LANES;
    return count >= PBD_SUM_LANES && k >= full ? k - (count - PBD_SUM_LANES) : k % PBD_SUM_LANES;
}

/* Particles a work-item of the CPU devices' element-wise stages (predict_runs,
 * update_runs) takes, a multiple of 8. */
#define PBD_PARTICLE_RUN 64

/* Sets of clusters a work-item of the CPU devices' body constraint apply takes. */
#define PBD_SET_RUN 16

/* How the CPU devices' Gauss-Seidel kernel (pbd_gs16) moves the 32 particles of sixteen
 * constraints: one by one; as two runs of consecutive particles (a, a + 1, ...; b, b + 1,
 * ...); as interleaved pairs ((a, a + 1), (a + 2, a + 3), ...). The plan sorts each block's
 * part of a colour in this order (pbd_blocks.block_runs). A part of an overflow set, whose
 * constraints share particles, is marked PBD_RUN_SERIAL instead: no kernel takes it in runs
 * (the CPU variant launches its set on one work-item; its blocks are not bounded). */
#define PBD_RUN_NONE        0
#define PBD_RUN_CONSECUTIVE 1
#define PBD_RUN_PAIRS       2
#define PBD_RUN_SERIAL      (-1)

/* Bodies of at most this many segments are summed by one work-item each in body_solve (one
 * launch covers 64 bodies); larger ones get a work-group and a tree. */
#define PBD_SERIAL_SEGMENTS 64

/* The record body_solve leaves for momentum_apply, per body: com, v_cor, w_cor, rigid
 * velocity and angular velocity, as float4 (w = 0). */
#define PBD_APPLY_COUNT 5

/* Per-body sums, in this order, relative to the body's reference point r (its centre of
 * mass at the previous reduction, so the sums stay small and precise for bodies far from the
 * origin): x' = x - r. */
enum {
    PBD_SUM_M = 0,    /* sum m                                   kg      */
    PBD_SUM_MX = 1,   /* sum m x'            (3)                 kg m    */
    PBD_SUM_P = 4,    /* sum m v             (3)                 kg m/s  */
    PBD_SUM_XCP = 7,  /* sum m x' x v        (3)                 kg m2/s */
    PBD_SUM_KE = 10,  /* sum m v.v / 2                           J       */
    PBD_SUM_XX = 11,  /* sum m x' x'^T: xx xy xz yy yz zz (6)    kg m2   */
    PBD_SUM_J = 17,   /* sum of external impulses J (3)          N s     */
    PBD_SUM_XCJ = 20, /* sum x' x J          (3)                 N m s   */
    PBD_SUM_ERR = 23, /* max |C| of the constraints at the particles (m); a maximum, not a sum */
    PBD_SUM_COUNT = 24
};

/* What body_solve writes per body (pbd_acc each). P and L are the particles' own (before the
 * correction), L about the centre of mass; P_r and L_r the tracked rigid momenta. */
enum {
    PBD_OUT_MASS = 0,  /* kg */
    PBD_OUT_COM = 1,   /* centre of mass (3), m */
    PBD_OUT_P = 4,     /* sum m v (3) */
    PBD_OUT_L = 7,     /* sum m (x - com) x v (3) */
    PBD_OUT_KE = 10,   /* kinetic energy, J */
    PBD_OUT_ERR = 11,  /* max |C|, m */
    PBD_OUT_VCOR = 12, /* v_cor (3), m/s: Algorithm 2 line 17 */
    PBD_OUT_WCOR = 15, /* w_cor (3), rad/s: line 18, with a pseudo-inverse */
    PBD_OUT_VRIG = 18, /* rigid velocity after the correction (3), m/s */
    PBD_OUT_WRIG = 21, /* rigid angular velocity after the correction (3), rad/s */
    PBD_OUT_PR = 24,   /* tracked P_r (3) */
    PBD_OUT_LR = 27,   /* tracked L_r (3) */
    PBD_OUT_COUNT = 30
};

/* body_solve modes: statistics only; set P_r, L_r from the state; one substep of tracking and
 * correction. */
enum { PBD_SOLVE_STATS = 0, PBD_SOLVE_INIT = 1, PBD_SOLVE_STEP = 2 };

/* Body flags. */
#define PBD_BODY_MOMENTUM 1 /* preserve this body's momentum */

/* Eigenvalues of the inertia tensor below this fraction of the largest are treated as zero:
 * the pseudo-inverse then leaves rotation about that axis alone (two particles, a straight
 * rope) instead of dividing by a rounding error. */
#define PBD_PINV_RTOL 1e-6

/* Predict. First order (Müller 2007, Algorithm 1 lines 5-7): p = x + h (v + h g). BDF2
 * (Bender et al. survey): p = 4/3 x - 1/3 x' + 2/3 h (4/3 v - 1/3 v' + 2/3 h g),
 * with x', v' the previous substep's position and velocity. Pinned particles (inverse mass
 * 0) stay put. */
PBD_INLINE pbd_float4 pbd_predict(pbd_float4 x, pbd_float4 v, pbd_float4 xp, pbd_float4 vp,
                                  int bdf2, float gx, float gy, float gz, float h)
{
    if (x.w <= 0.0f)
        return x;
    if (!bdf2)
        return PBD_F4(x.x + h * (v.x + h * gx), x.y + h * (v.y + h * gy), x.z + h * (v.z + h * gz),
                      x.w);
    const float a = 4.0f / 3.0f, b = 1.0f / 3.0f, c = 2.0f / 3.0f;
    float vx = a * v.x - b * vp.x + c * h * gx;
    float vy = a * v.y - b * vp.y + c * h * gy;
    float vz = a * v.z - b * vp.z + c * h * gz;
    return PBD_F4(a * x.x - b * xp.x + c * h * vx, a * x.y - b * xp.y + c * h * vy,
                  a * x.z - b * xp.z + c * h * vz, x.w);
}

/* One distance constraint's step in scalars, for d = pa - pb and inverse masses wa, wb.
 * XPBD (compliance >= 0): dlambda = (-C - at lambda) / (wa + wb + at), at = compliance / h^2;
 * PBD (compliance < 0): s = -compliance (-C) / (wa + wb), the hard correction scaled by the
 * stiffness -compliance. Returns the gain g = s / |d|, so that pa moves by wa g d and pb by
 * -wb g d, and writes the multiplier increment (0 for PBD). A degenerate constraint (both
 * ends pinned, or |d| < PBD_MIN_LENGTH) gets g = 0.
 *
 * Written without branches, once for T = float (host and device) and, on the device, for
 * T = float16 (sixteen constraints at once, in the CPU devices' kernels): element by element the
 * same operations in the same order, so the results are the same bits. M is T's comparison
 * type (int, int16); OpenCL C's && and ?: work element-wise on vectors. */
#define PBD_DISTANCE_GAIN_BODY(T, M)                                                               \
    T len = pbd_sqrtf(dx * dx + dy * dy + dz * dz);                                                \
    T wsum = wa + wb;                                                                              \
    T c = len - rest;                                                                              \
    T at = compliance * inv_h2;                                                                    \
    M xpbd = compliance >= 0.0f;                                                                   \
    M ok = wsum > 0.0f && len >= PBD_MIN_LENGTH;                                                   \
    T num = xpbd ? -c - at * lambda : -compliance * -c;                                            \
    T den = xpbd ? wsum + at : wsum;                                                               \
    T s = ok ? num / den : (T)0.0f;                                                                \
    *dlambda = xpbd ? s : (T)0.0f;                                                                 \
    return ok ? s / len : (T)0.0f

PBD_INLINE float pbd_distance_gain(float dx, float dy, float dz, float wa, float wb, float rest,
                                   float compliance, float lambda, float inv_h2, float *dlambda)
{
    PBD_DISTANCE_GAIN_BODY(float, int);
}

#ifdef __OPENCL_C_VERSION__
PBD_INLINE float16 pbd_distance_gain16(float16 dx, float16 dy, float16 dz, float16 wa, float16 wb,
                                       float16 rest, float16 compliance, float16 lambda,
                                       float inv_h2, float16 *dlambda)
{
    PBD_DISTANCE_GAIN_BODY(float16, int16);
}
#endif

/* The gain of one distance constraint on predictions pa, pb (w = inverse mass), and its
 * multiplier increment: pbd_distance_gain of d = pa - pb. */
PBD_INLINE float pbd_distance_gain4(pbd_float4 pa, pbd_float4 pb, float rest, float compliance,
                                    float lambda, float inv_h2, float *dlambda)
{
    float dx = pa.x - pb.x;
    float dy = pa.y - pb.y;
    float dz = pa.z - pb.z;
    return pbd_distance_gain(dx, dy, dz, pa.w, pb.w, rest, compliance, lambda, inv_h2, dlambda);
}

/* The position correction of one end of a distance constraint of gain g: wa g (pa - pb) at
 * end a (end = 0), -wb g (pa - pb) at end b (end = 1). */
PBD_INLINE pbd_float4 pbd_distance_delta(pbd_float4 pa, pbd_float4 pb, float g, int end)
{
    float dx = pa.x - pb.x;
    float dy = pa.y - pb.y;
    float dz = pa.z - pb.z;
    float ge = end ? -pb.w * g : pa.w * g;
    return PBD_F4(ge * dx, ge * dy, ge * dz, 0.0f);
}

/* Projects one distance constraint on predictions pa, pb: writes the position corrections of
 * a and b and the multiplier increment (pbd_distance_gain). */
PBD_INLINE void pbd_project_distance(pbd_float4 pa, pbd_float4 pb, float rest, float compliance,
                                     float lambda, float inv_h2, pbd_float4 *da, pbd_float4 *db,
                                     float *dlambda)
{
    float g = pbd_distance_gain4(pa, pb, rest, compliance, lambda, inv_h2, dlambda);
    *da = pbd_distance_delta(pa, pb, g, 0);
    *db = pbd_distance_delta(pa, pb, g, 1);
}

/* |C| of a distance constraint, m. */
PBD_INLINE float pbd_distance_error(pbd_float4 pa, pbd_float4 pb, float rest)
{
    float dx = pa.x - pb.x;
    float dy = pa.y - pb.y;
    float dz = pa.z - pb.z;
    return pbd_fabsf(pbd_sqrtf(dx * dx + dy * dy + dz * dz) - rest);
}

/* Plane (n, offset): a particle with n.p < offset moves along n onto the plane: the
 * unilateral constraint of Müller 2007 sec. 3.4. */
PBD_INLINE pbd_float4 pbd_collide_plane(pbd_float4 p, PBD_GLOBAL const pbd_collider *c)
{
    pbd_float4 pl = c->shape;
    float d = pl.x * p.x + pl.y * p.y + pl.z * p.z - pl.w;
    if (d < 0.0f) {
        p.x = p.x - d * pl.x;
        p.y = p.y - d * pl.y;
        p.z = p.z - d * pl.z;
    }
    return p;
}

/* Sphere (centre c, radius r): a particle inside moves radially onto the surface. One at
 * the centre has no direction and stays (PBD_MIN_LENGTH). */
PBD_INLINE pbd_float4 pbd_collide_sphere(pbd_float4 p, PBD_GLOBAL const pbd_collider *c)
{
    pbd_float4 s = c->shape;
    float dx = p.x - s.x, dy = p.y - s.y, dz = p.z - s.z;
    float len = pbd_sqrtf(dx * dx + dy * dy + dz * dz);
    if (len < s.w && len >= PBD_MIN_LENGTH) {
        float f = (s.w - len) / len;
        p.x = p.x + f * dx;
        p.y = p.y + f * dy;
        p.z = p.z + f * dz;
    }
    return p;
}

/* v rotated by the unit quaternion q (conjugate: by its inverse): v + 2 w (u x v) +
 * 2 u x (u x v), u = (q.x, q.y, q.z) (negated for the inverse), w = q.w. */
PBD_INLINE void pbd_rotate(pbd_float4 q, int conjugate, const float *v, float *out)
{
    float s = conjugate ? -1.0f : 1.0f, ux = s * q.x, uy = s * q.y, uz = s * q.z;
    float tx = 2.0f * (uy * v[2] - uz * v[1]), ty = 2.0f * (uz * v[0] - ux * v[2]),
          tz = 2.0f * (ux * v[1] - uy * v[0]);
    out[0] = v[0] + q.w * tx + (uy * tz - uz * ty);
    out[1] = v[1] + q.w * ty + (uz * tx - ux * tz);
    out[2] = v[2] + q.w * tz + (ux * ty - uy * tx);
}

/* Oriented box (centre c, half extents e, orientation q): in the box's frame,
 * l = q^-1 (p - c); the signed distance along axis k is |l_k| - e_k. Returns the distance
 * (> 0 outside: the length of the outside part; <= 0 inside: the largest, the face nearest)
 * and the outward normal in n (world). */
PBD_INLINE float pbd_box_distance(pbd_float4 p, PBD_GLOBAL const pbd_collider *c, float *n)
{
    float r[3] = {p.x - c->shape.x, p.y - c->shape.y, p.z - c->shape.z}, l[3], d[3], m[3];
    const float e[3] = {c->shape2.x, c->shape2.y, c->shape2.z};
    pbd_rotate(c->shape3, 1, r, l);
    int face = 0;
    float out = 0.0f;
    for (int k = 0; k < 3; ++k) {
        d[k] = pbd_fabsf(l[k]) - e[k];
        if (d[k] > d[face])
            face = k;
        float o = d[k] > 0.0f ? d[k] : 0.0f;
        out += o * o;
        m[k] = d[k] > 0.0f ? (l[k] < 0.0f ? -d[k] : d[k]) : 0.0f;
    }
    if (out > 0.0f) { /* outside: the normal from the box's nearest point */
        float len = pbd_sqrtf(out);
        for (int k = 0; k < 3; ++k)
            m[k] = m[k] / len;
        pbd_rotate(c->shape3, 0, m, n);
        return len;
    }
    for (int k = 0; k < 3; ++k)
        m[k] = k == face ? (l[k] < 0.0f ? -1.0f : 1.0f) : 0.0f;
    pbd_rotate(c->shape3, 0, m, n);
    return d[face];
}

/* p moved out along the unit normal n by the depth -d, where d < 0 (inside). */
PBD_INLINE pbd_float4 pbd_push_out(pbd_float4 p, float d, const float *n)
{
    if (d < 0.0f) {
        p.x = p.x - d * n[0];
        p.y = p.y - d * n[1];
        p.z = p.z - d * n[2];
    }
    return p;
}

/* Box: a particle inside moves out through the nearest face. */
PBD_INLINE pbd_float4 pbd_collide_box(pbd_float4 p, PBD_GLOBAL const pbd_collider *c)
{
    float n[3];
    float d = pbd_box_distance(p, c, n);
    return pbd_push_out(p, d, n);
}

/* Capsule (axis a-b, radius r): the distance to the axis's nearest point, minus r, and the
 * outward normal. A particle on the axis has no direction (1 returned: no contact). */
PBD_INLINE float pbd_capsule_distance(pbd_float4 p, PBD_GLOBAL const pbd_collider *c, float *n)
{
    float ax = c->shape.x, ay = c->shape.y, az = c->shape.z;
    float bx = c->shape2.x - ax, by = c->shape2.y - ay, bz = c->shape2.z - az;
    float px = p.x - ax, py = p.y - ay, pz = p.z - az;
    float bb = bx * bx + by * by + bz * bz;
    float t = bb > 0.0f ? (px * bx + py * by + pz * bz) / bb : 0.0f;
    t = t < 0.0f ? 0.0f : t > 1.0f ? 1.0f : t;
    float dx = px - t * bx, dy = py - t * by, dz = pz - t * bz;
    float len = pbd_sqrtf(dx * dx + dy * dy + dz * dz);
    if (!(len >= PBD_MIN_LENGTH))
        return 1.0f;
    n[0] = dx / len, n[1] = dy / len, n[2] = dz / len;
    return len - c->shape.w;
}

/* Capsule: a particle inside moves radially from the axis onto the surface. */
PBD_INLINE pbd_float4 pbd_collide_capsule(pbd_float4 p, PBD_GLOBAL const pbd_collider *c)
{
    float n[3];
    float d = pbd_capsule_distance(p, c, n);
    return pbd_push_out(p, d, n);
}

/* p collided with one collider. */
PBD_INLINE pbd_float4 pbd_collide_one(pbd_float4 p, PBD_GLOBAL const pbd_collider *c)
{
    switch (c->kind) {
#define PBD_X_COLLIDE_CASE(id, name)                                                               \
    case PBD_COLLIDER_##id:                                                                        \
        return pbd_collide_##name(p, c);
        PBD_COLLIDER_LIST(PBD_X_COLLIDE_CASE)
#undef PBD_X_COLLIDE_CASE
    }
    return p;
}

/* A sliding contact's friction state after the prediction zeroed its budget (pbd_friction):
 * the smallest normal float, negated. Not -0, which fast float modes may not keep; the budget
 * it adds to is lost in rounding. */
#define PBD_SLIDING (-1.17549435e-38f)

/* The friction state (the w of a particle's collision displacement) as a substep starts: no
 * budget yet, and still sliding if it was. */
PBD_INLINE float pbd_friction_carry(float state)
{
    return state < 0.0f ? PBD_SLIDING : 0.0f;
}

/* Coulomb friction of a contact (Macklin et al. 2014, eq. 24-25): the collision moved the
 * particle from p0 to p1 (its depth, along the normal); the particle's motion over the
 * substep so far, p1 - x, has a tangential part dt. Static friction holds over the whole
 * substep, not one push: the budget, |*state|, is mu_s times the depth of the particle's
 * frictional pushes in the substep so far, less the tangential motion friction has taken
 * back in them (a body's constraints press its resting particles in and drag them along
 * between pushes, so one push's depth alone held a body on a slope only to about 0.6 mu_s).
 *
 * Whether the particle's friction slides is remembered from push to push and from substep to
 * substep (one state a particle, whichever collider pushes it), in the sign of *state
 * (negative: sliding; the prediction zeroes the budget and keeps the sign,
 * pbd_friction_carry), as Coulomb's law asks: mu_k applies to a contact already sliding. A
 * sticking contact takes back dt up to the budget, continuously at the cone's edge. A sliding
 * one takes back dt whole where it is within the budget, else mu_k times this push's depth.
 * Either way it slides on (or starts to) where what it keeps exceeds the budget, and sticks
 * otherwise. Deciding each
 * push afresh, with the kinetic rule at once past the cone, let a body's lightly pressed
 * particles slip first and drag the rest: a block with mu_s 0.6 and mu_k 0.4 slid from 0.79
 * mu_s. Either way what is taken back is spent from the budget. The normal is the push's
 * direction, so every kind of collider gets friction without a function of its own. */
PBD_INLINE pbd_float4 pbd_friction(pbd_float4 p0, pbd_float4 p1, pbd_float4 x, float mu_s,
                                   float mu_k, float *state)
{
    if (!(mu_s > 0.0f))
        return p1;
    float nx = p1.x - p0.x, ny = p1.y - p0.y, nz = p1.z - p0.z;
    float depth = pbd_sqrtf(nx * nx + ny * ny + nz * nz);
    if (!(depth > 0.0f))
        return p1;
    int sliding = *state < 0.0f;
    float budget = pbd_fabsf(*state) + mu_s * depth;
    nx = nx / depth, ny = ny / depth, nz = nz / depth;
    float mx = p1.x - x.x, my = p1.y - x.y, mz = p1.z - x.z;
    float mn = mx * nx + my * ny + mz * nz;
    float tx = mx - mn * nx, ty = my - mn * ny, tz = mz - mn * nz;
    float lt = pbd_sqrtf(tx * tx + ty * ty + tz * tz);
    float k = lt <= budget        ? 1.0f
              : !sliding          ? budget / lt
              : mu_k * depth < lt ? mu_k * depth / lt
                                  : 1.0f;
    float kept = lt - k * lt, left = budget - k * lt;
    left = left > 0.0f ? left : 0.0f;
    *state = kept > budget ? (left > 0.0f ? -left : PBD_SLIDING) : left;
    return PBD_F4(p1.x - k * tx, p1.y - k * ty, p1.z - k * tz, p1.w);
}

/* A collider's coefficient mixed with a body's (Box2D's rules): friction sqrt(c b),
 * restitution max(c, b); a body's value < 0 leaves the collider's. */
PBD_INLINE float pbd_mix_friction(float c, float b)
{
    return b < 0.0f ? c : pbd_sqrtf(c * b);
}

PBD_INLINE float pbd_mix_restitution(float c, float b)
{
    return b < 0.0f || c >= b ? c : b;
}

/* Pushes a free particle out of every collider, in list order, with friction against its
 * position x at the substep's start, the colliders' coefficients mixed with its body's
 * material m (mu_s, mu_k, e; < 0: none); *state is its friction's state: the budget in
 * the substep so far and whether it slides (pbd_friction). Pinned particles (inverse mass 0)
 * stay. */
PBD_INLINE pbd_float4 pbd_collide(pbd_float4 p, pbd_float4 x,
                                  PBD_GLOBAL const pbd_collider *colliders, int num_colliders,
                                  pbd_float4 m, float *state)
{
    if (p.w <= 0.0f)
        return p;
    for (int k = 0; k < num_colliders; ++k) {
        pbd_float4 q = pbd_collide_one(p, &colliders[k]);
        p = pbd_friction(p, q, x, pbd_mix_friction(colliders[k].friction, m.x),
                         pbd_mix_friction(colliders[k].friction_kinetic, m.y), state);
    }
    return p;
}

/* Particle i's material: its body's (mu_s, mu_k, e), or none (-1) without materials. */
PBD_INLINE pbd_float4 pbd_particle_material(int i, PBD_GLOBAL const int *particle_body,
                                            PBD_GLOBAL const pbd_float4 *body_material,
                                            int materials)
{
    return materials ? body_material[particle_body[i]] : PBD_F4(-1.0f, -1.0f, -1.0f, 0.0f);
}

/* Particle i's damping fraction, point (which = 0) or rigid (1): its body's pair in
 * body_damping where bodies damp differently (per_body), else the run's `k`. */
PBD_INLINE float pbd_particle_damping(int i, PBD_GLOBAL const int *particle_body,
                                      PBD_GLOBAL const float *body_damping, int per_body, int which,
                                      float k)
{
    return per_body ? body_damping[2 * particle_body[i] + which] : k;
}

/* Velocity update. First order (Algorithm 1 line 10): v = (p - x) / h; BDF2:
 * v = (3 p - 4 x + x') / (2 h). Then point damping v *= 1 - damping (Bullet's
 * mass-proportional model; 0 for none). v.w keeps the particle's mass. */
PBD_INLINE pbd_float4 pbd_update_velocity(pbd_float4 x, pbd_float4 p, pbd_float4 xp, int bdf2,
                                          float v_w, float inv_h, float damping)
{
    float f = 1.0f - damping;
    if (!bdf2)
        return PBD_F4((p.x - x.x) * inv_h * f, (p.y - x.y) * inv_h * f, (p.z - x.z) * inv_h * f,
                      v_w);
    float g = 0.5f * inv_h * f;
    return PBD_F4((3.0f * p.x - 4.0f * x.x + xp.x) * g, (3.0f * p.y - 4.0f * x.y + xp.y) * g,
                  (3.0f * p.z - 4.0f * x.z + xp.z) * g, v_w);
}

/* The update stage for particle i, on the arrays: keeps x and v for BDF2 when asked, writes
 * the new velocity and x = p, and returns the new velocity (and, in *pos, the new position)
 * for callers that go on with them. */
PBD_INLINE pbd_float4 pbd_update_particle(int i, PBD_GLOBAL pbd_float4 *x,
                                          PBD_GLOBAL const pbd_float4 *p, PBD_GLOBAL pbd_float4 *v,
                                          PBD_GLOBAL pbd_float4 *xp, PBD_GLOBAL pbd_float4 *vp,
                                          int bdf2, int keep_prev, float inv_h, float damping,
                                          pbd_float4 *pos)
{
    pbd_float4 xo = x[i], po = p[i], vo = v[i];
    pbd_float4 xprev = bdf2 ? xp[i] : xo;
    if (keep_prev) {
        xp[i] = xo;
        vp[i] = vo;
    }
    pbd_float4 vn = pbd_update_velocity(xo, po, xprev, bdf2, vo.w, inv_h, damping);
    v[i] = vn;
    x[i] = po;
    *pos = po;
    return vn;
}

/* Below this distance (m) from a collider's surface after the solve a particle is in contact
 * with it, for restitution (the collisions leave contacts on the surface, to rounding). */
#define PBD_CONTACT_SLOP 1e-5f

/* Signed distance of p from a collider's surface (> 0 outside) and the outward normal n. */
PBD_INLINE float pbd_collider_distance(pbd_float4 p, PBD_GLOBAL const pbd_collider *c, float *n)
{
    int kind = c->kind;
    pbd_float4 s = c->shape;
    if (kind == PBD_COLLIDER_BOX)
        return pbd_box_distance(p, c, n);
    if (kind == PBD_COLLIDER_CAPSULE)
        return pbd_capsule_distance(p, c, n);
    if (kind == PBD_COLLIDER_SPHERE) {
        float dx = p.x - s.x, dy = p.y - s.y, dz = p.z - s.z;
        float len = pbd_sqrtf(dx * dx + dy * dy + dz * dz);
        if (!(len >= PBD_MIN_LENGTH))
            return 1.0f; /* the centre: no direction, no contact */
        n[0] = dx / len, n[1] = dy / len, n[2] = dz / len;
        return len - s.w;
    }
    n[0] = s.x, n[1] = s.y, n[2] = s.z; /* the plane */
    return s.x * p.x + s.y * p.y + s.z * p.z - s.w;
}

/* The velocity update with restitution (Müller et al. 2020, sec. 3.6, for particles): after
 * pbd_update_particle, a particle left in contact with a collider of restitution e that it
 * approached faster than 2 |g| h (before the solve: v + h g) leaves it at e times that speed
 * along the normal. The velocity change is an external impulse (dx += dv h, with `track`). */
PBD_INLINE void pbd_update_bounce(int i, PBD_GLOBAL pbd_float4 *x, PBD_GLOBAL const pbd_float4 *p,
                                  PBD_GLOBAL pbd_float4 *v, PBD_GLOBAL pbd_float4 *xp,
                                  PBD_GLOBAL pbd_float4 *vp, PBD_GLOBAL pbd_float4 *dx, int bdf2,
                                  int keep_prev, float inv_h, float damping,
                                  PBD_GLOBAL const pbd_collider *colliders, int num_colliders,
                                  float gx, float gy, float gz, float h, int track, pbd_float4 m)
{
    pbd_float4 vo = v[i], pos;
    pbd_float4 vn = pbd_update_particle(i, x, p, v, xp, vp, bdf2, keep_prev, inv_h, damping, &pos);
    if (!(pos.w > 0.0f))
        return;
    float ux = vo.x + h * gx, uy = vo.y + h * gy, uz = vo.z + h * gz;
    float slow = 2.0f * h * pbd_sqrtf(gx * gx + gy * gy + gz * gz);
    float bx = 0.0f, by = 0.0f, bz = 0.0f;
    for (int k = 0; k < num_colliders; ++k) {
        float e = pbd_mix_restitution(colliders[k].restitution, m.z), n[3];
        if (!(e > 0.0f) || !(pbd_collider_distance(pos, &colliders[k], n) <= PBD_CONTACT_SLOP))
            continue;
        float before = n[0] * ux + n[1] * uy + n[2] * uz,
              now = n[0] * vn.x + n[1] * vn.y + n[2] * vn.z;
        float gain = -e * before - now;
        if (before < -slow && gain > 0.0f) {
            vn.x += gain * n[0], vn.y += gain * n[1], vn.z += gain * n[2];
            bx += gain * n[0], by += gain * n[1], bz += gain * n[2];
        }
    }
    v[i] = vn;
    if (track)
        dx[i] = PBD_F4(dx[i].x + bx * h, dx[i].y + by * h, dx[i].z + bz * h, dx[i].w);
}

/* Records a collision's displacement (p1 - p0) in dx, the impulse J = m dx / h that the
 * momentum tracker adds to the body's P_r and L_r. */
PBD_INLINE pbd_float4 pbd_add_displacement(pbd_float4 dx, pbd_float4 p0, pbd_float4 p1)
{
    return PBD_F4(dx.x + (p1.x - p0.x), dx.y + (p1.y - p0.y), dx.z + (p1.z - p0.z), dx.w);
}

/* Stores a projected particle: a pinned one (inverse mass 0), which a projection does not
 * move, is never written, so the constraints of a colour may share it (pbd_color_options). */
PBD_INLINE void pbd_store(PBD_GLOBAL pbd_float4 *p, int i, pbd_float4 v)
{
    if (v.w != 0.0f)
        p[i] = v;
}

/* Particle i's position p0 collided with the colliders (friction against x[i], its position
 * at the substep's start), stored in p[i]; with `track`, the collision's displacement is
 * added to dx[i], and dx[i].w keeps its friction's state (pbd_friction; the prediction
 * zeroes its budget, pbd_friction_carry). Every collision stage does this per particle. */
PBD_INLINE void pbd_collide_particle(PBD_GLOBAL pbd_float4 *p, PBD_GLOBAL pbd_float4 *dx, int i,
                                     pbd_float4 p0, PBD_GLOBAL const pbd_float4 *x,
                                     PBD_GLOBAL const pbd_collider *colliders, int num_colliders,
                                     int track, pbd_float4 m)
{
    float state = track ? dx[i].w : 0.0f;
    pbd_float4 p1 = pbd_collide(p0, x[i], colliders, num_colliders, m, &state);
    p[i] = p1;
    if (track) {
        pbd_float4 d = pbd_add_displacement(dx[i], p0, p1);
        d.w = state;
        dx[i] = d;
    }
}

/* Adds the xyz of d to p, keeping p.w (the inverse mass). */
PBD_INLINE pbd_float4 pbd_add3(pbd_float4 p, pbd_float4 d)
{
    return PBD_F4(p.x + d.x, p.y + d.y, p.z + d.z, p.w);
}

/* Gauss-Seidel for constraint c, in place: its two particles move and its multiplier grows
 * (from 0 when `reset_lambda`, the first iteration of a substep). The CPU reference and the
 * device's kernels project one constraint with this. */
PBD_INLINE void pbd_gs_project(PBD_GLOBAL pbd_float4 *p, PBD_GLOBAL const pbd_distance *distance,
                               PBD_GLOBAL float *lambda, int c, float inv_h2, int reset_lambda)
{
    pbd_distance d = distance[c];
    float l = reset_lambda ? 0.0f : lambda[c];
    pbd_float4 pa = p[d.a], pb = p[d.b], da, db;
    float dl;
    pbd_project_distance(pa, pb, d.rest, d.compliance, l, inv_h2, &da, &db, &dl);
    p[d.a] = pbd_add3(pa, da);
    p[d.b] = pbd_add3(pb, db);
    lambda[c] = l + dl;
}

/* The constraint types' projections, one signature for all (PBD_CONSTRAINT_LIST): constraint
 * c of `records` projected in place on the predictions p, its multiplier grown from 0 when
 * `reset_lambda`; a type the world takes part in adds its particles' displacements to dx
 * (with `track`), as a collision does. The CPU reference and every variant's project_<name>
 * kernel call these. */
PBD_INLINE void pbd_distance_project(PBD_GLOBAL pbd_float4 *p, PBD_GLOBAL pbd_float4 *dx,
                                     PBD_GLOBAL const pbd_distance *records,
                                     PBD_GLOBAL float *lambda, int c, float inv_h2,
                                     int reset_lambda, int track)
{
    (void)dx;
    (void)track; /* between two particles of one body: no external impulse */
    pbd_gs_project(p, records, lambda, c, inv_h2, reset_lambda);
}

PBD_INLINE void pbd_attachment_project(PBD_GLOBAL pbd_float4 *p, PBD_GLOBAL pbd_float4 *dx,
                                       PBD_GLOBAL const pbd_attachment *records,
                                       PBD_GLOBAL float *lambda, int c, float inv_h2,
                                       int reset_lambda, int track)
{
    pbd_attachment a = records[c];
    float l = reset_lambda ? 0.0f : lambda[c];
    pbd_float4 pa = p[a.particle], t = a.target, d, dt;
    float dl;
    t.w = 0.0f; /* the target does not move: inverse mass 0 */
    pbd_project_distance(pa, t, 0.0f, a.compliance, l, inv_h2, &d, &dt, &dl);
    pbd_store(p, a.particle, pbd_add3(pa, d));
    lambda[c] = l + dl;
    if (track)
        dx[a.particle] = pbd_add3(dx[a.particle], d);
}

/* A tet's volume gradients from its positions x (12 floats: a, b, c, d): at b, c, d
 * (c - a) x (d - a) / 6, (d - a) x (b - a) / 6 and (b - a) x (c - a) / 6, at a minus their
 * sum, in g (12 floats); returns the signed volume. Written once for T = float and, on the
 * device, float16 (sixteen tets at once in the CPU devices' kernels), as
 * PBD_DISTANCE_GAIN_BODY. */
#define PBD_VOLUME_BODY(T)                                                                         \
    T e1x = x[3] - x[0], e1y = x[4] - x[1], e1z = x[5] - x[2];                                     \
    T e2x = x[6] - x[0], e2y = x[7] - x[1], e2z = x[8] - x[2];                                     \
    T e3x = x[9] - x[0], e3y = x[10] - x[1], e3z = x[11] - x[2];                                   \
    const float sixth = 1.0f / 6.0f;                                                               \
    g[3] = (e2y * e3z - e2z * e3y) * sixth, g[4] = (e2z * e3x - e2x * e3z) * sixth;                \
    g[5] = (e2x * e3y - e2y * e3x) * sixth;                                                        \
    g[6] = (e3y * e1z - e3z * e1y) * sixth, g[7] = (e3z * e1x - e3x * e1z) * sixth;                \
    g[8] = (e3x * e1y - e3y * e1x) * sixth;                                                        \
    g[9] = (e1y * e2z - e1z * e2y) * sixth, g[10] = (e1z * e2x - e1x * e2z) * sixth;               \
    g[11] = (e1x * e2y - e1y * e2x) * sixth;                                                       \
    g[0] = -(g[3] + g[6] + g[9]), g[1] = -(g[4] + g[7] + g[10]), g[2] = -(g[5] + g[8] + g[11]);    \
    return e1x * g[3] + e1y * g[4] + e1z * g[5]

PBD_INLINE float pbd_volume_gradients(const float *x, float *g)
{
    PBD_VOLUME_BODY(float);
}

#ifdef __OPENCL_C_VERSION__
PBD_INLINE float16 pbd_volume_gradients16(const float16 *x, float16 *g)
{
    PBD_VOLUME_BODY(float16);
}
#endif

/* Four particles' positions as 12 floats (a, b, c, d), for the gradients above. */
PBD_INLINE void pbd_positions4(const pbd_float4 *q, float *x)
{
    PBD_UNROLL
    for (int i = 0; i < 4; ++i) {
        x[3 * i] = q[i].x;
        x[3 * i + 1] = q[i].y;
        x[3 * i + 2] = q[i].z;
    }
}

/* The volume constraint's projection (pbd_volume), along pbd_volume_gradients: the
 * corrections w_i grad_i s move no centre of mass and turn nothing (V is invariant under
 * translation and rotation). A flat tet (no gradient) is left alone, its multiplier too. */
PBD_INLINE void pbd_volume_project(PBD_GLOBAL pbd_float4 *p, PBD_GLOBAL pbd_float4 *dx,
                                   PBD_GLOBAL const pbd_volume *records, PBD_GLOBAL float *lambda,
                                   int c, float inv_h2, int reset_lambda, int track)
{
    (void)dx;
    (void)track; /* between particles of one body: no external impulse */
    pbd_volume v = records[c];
    float l = reset_lambda ? 0.0f : lambda[c];
    pbd_float4 q[4] = {p[v.a], p[v.b], p[v.c], p[v.d]};
    float x[12], g[12];
    pbd_positions4(q, x);
    float cval = pbd_volume_gradients(x, g) - v.rest;
    float wsum = q[0].w * (g[0] * g[0] + g[1] * g[1] + g[2] * g[2]) +
                 q[1].w * (g[3] * g[3] + g[4] * g[4] + g[5] * g[5]) +
                 q[2].w * (g[6] * g[6] + g[7] * g[7] + g[8] * g[8]) +
                 q[3].w * (g[9] * g[9] + g[10] * g[10] + g[11] * g[11]);
    float at = v.compliance * inv_h2;
    int xpbd = v.compliance >= 0.0f;
    float num = xpbd ? -cval - at * l : -v.compliance * -cval;
    float den = xpbd ? wsum + at : wsum;
    if (!(wsum > 0.0f) || !(den > 0.0f))
        return;
    float s = num / den;
    int ids[4] = {v.a, v.b, v.c, v.d};
    PBD_UNROLL
    for (int i = 0; i < 4; ++i)
        pbd_store(p, ids[i],
                  PBD_F4(q[i].x + q[i].w * s * g[3 * i], q[i].y + q[i].w * s * g[3 * i + 1],
                         q[i].z + q[i].w * s * g[3 * i + 2], q[i].w));
    lambda[c] = xpbd ? l + s : l;
}

/* A tether (pbd_tether): a distance constraint that acts only when stretched past `rest`; a
 * slack tether moves nothing and keeps its multiplier (a stretched one's is <= 0). */
PBD_INLINE void pbd_tether_project(PBD_GLOBAL pbd_float4 *p, PBD_GLOBAL pbd_float4 *dx,
                                   PBD_GLOBAL const pbd_tether *records, PBD_GLOBAL float *lambda,
                                   int c, float inv_h2, int reset_lambda, int track)
{
    (void)dx;
    (void)track; /* between particles of one body: no external impulse */
    pbd_tether t = records[c];
    float l = reset_lambda ? 0.0f : lambda[c];
    pbd_float4 pa = p[t.a], pb = p[t.b], da, db;
    float ex = pa.x - pb.x, ey = pa.y - pb.y, ez = pa.z - pb.z, dl = 0.0f;
    if (ex * ex + ey * ey + ez * ez > t.rest * t.rest) {
        pbd_project_distance(pa, pb, t.rest, t.compliance, l, inv_h2, &da, &db, &dl);
        pbd_store(p, t.a, pbd_add3(pa, da));
        pbd_store(p, t.b, pbd_add3(pb, db));
    }
    lambda[c] = l + dl;
}

/* atan2(y, x) in basic operations, so that the host and every device get the same bits
 * (libm and OpenCL built-ins differ in the last places): the angle reduced into
 * [-tan(pi/12), tan(pi/12)] and the odd Taylor series to t^11 (error below 1e-7 rad). Written
 * once for T = float and, on the device, float16 (M: int, int16; ANY: whether any element of an
 * M is set), as PBD_DISTANCE_GAIN_BODY. */
#define PBD_ANY1(m) (m)
#define PBD_ATAN2_BODY(T, M, ANY)                                                                  \
    T ax = pbd_fabsf(x), ay = pbd_fabsf(y);                                                        \
    M xbig = ax > ay;                                                                              \
    T hi = xbig ? ax : ay, lo = xbig ? ay : ax;                                                    \
    T a = lo / hi;                                                                                 \
    /* tan(pi/12) < a: atan(a) = pi/6 + atan((a sqrt3 - 1) / (a + sqrt3)) */                       \
    M far = a > 0.26794919f;                                                                       \
    T base = far ? (T)0.52359878f : (T)0.0f;                                                       \
    if (ANY(far)) /* the division only where some element needs it */                              \
        a = far ? (a * 1.7320508f - 1.0f) / (a + 1.7320508f) : a;                                  \
    T t2 = a * a;                                                                                  \
    T r = base +                                                                                   \
          a * (1.0f +                                                                              \
               t2 * (-0.33333333f +                                                                \
                     t2 * (0.2f + t2 * (-0.14285714f + t2 * (0.11111111f + t2 * -0.09090909f))))); \
    r = ay > ax ? 1.5707964f - r : r;                                                              \
    r = x < 0.0f ? 3.1415927f - r : r;                                                             \
    r = y < 0.0f ? -r : r;                                                                         \
    return hi > 0.0f ? r : (T)0.0f

PBD_INLINE float pbd_atan2f(float y, float x)
{
    PBD_ATAN2_BODY(float, int, PBD_ANY1);
}

#ifdef __OPENCL_C_VERSION__
PBD_INLINE float16 pbd_atan2f16(float16 y, float16 x)
{
    PBD_ATAN2_BODY(float16, int16, any);
}
#endif

/* Moves the four particles of a constraint along its gradients g (12 floats, a b c d):
 * x_i += w_i s g_i, with s from the XPBD (compliance >= 0) or PBD (< 0) step on value cval.
 * Returns the multiplier's change (0 for PBD, or where the gradients vanish). */
PBD_INLINE float pbd_project4(PBD_GLOBAL pbd_float4 *p, int a, int b, int c, int d, const float *g,
                              float cval, float compliance, float l, float inv_h2)
{
    pbd_float4 x[4] = {p[a], p[b], p[c], p[d]};
    float wsum = 0.0f;
    PBD_UNROLL
    for (int i = 0; i < 4; ++i)
        wsum += x[i].w *
                (g[3 * i] * g[3 * i] + g[3 * i + 1] * g[3 * i + 1] + g[3 * i + 2] * g[3 * i + 2]);
    float at = compliance * inv_h2;
    int xpbd = compliance >= 0.0f;
    float num = xpbd ? -cval - at * l : -compliance * -cval;
    float den = xpbd ? wsum + at : wsum;
    if (!(wsum > 0.0f) || !(den > 0.0f))
        return 0.0f;
    float s = num / den;
    int ids[4] = {a, b, c, d};
    PBD_UNROLL
    for (int i = 0; i < 4; ++i)
        pbd_store(p, ids[i],
                  PBD_F4(x[i].x + x[i].w * s * g[3 * i], x[i].y + x[i].w * s * g[3 * i + 1],
                         x[i].z + x[i].w * s * g[3 * i + 2], x[i].w));
    return xpbd ? s : 0.0f;
}

/* Dihedral bending (pbd_dihedral). With e = b - a, n1 = (c - a) x (c - b) and
 * n2 = (d - b) x (d - a), theta = atan2((n2 x n1) . e / |e|, n1 . n2),
 * and its gradients (Bridson et al. 2003): at c |e| n1 / |n1|^2, at d |e| n2 / |n2|^2, at a
 * and b the edge-projected mixes of both; they sum to zero and turn nothing (theta is
 * invariant under translation and rotation). From positions x (12 floats: a, b, c, d): the
 * gradients in g (12), C = theta - rest wrapped into (-pi, pi] in *cval; returns whether to
 * project (a pair with a degenerate triangle or edge is left alone). Written once for
 * T = float and, on the device, float16 (M: int, int16; ATAN2 T's pbd_atan2f). */
#define PBD_DIHEDRAL_BODY(T, M, ATAN2)                                                             \
    T ex = x[3] - x[0], ey = x[4] - x[1], ez = x[5] - x[2];                                        \
    T ca[3] = {x[6] - x[0], x[7] - x[1], x[8] - x[2]};                                             \
    T cb[3] = {x[6] - x[3], x[7] - x[4], x[8] - x[5]};                                             \
    T db[3] = {x[9] - x[3], x[10] - x[4], x[11] - x[5]};                                           \
    T da[3] = {x[9] - x[0], x[10] - x[1], x[11] - x[2]};                                           \
    T n1x = ca[1] * cb[2] - ca[2] * cb[1], n1y = ca[2] * cb[0] - ca[0] * cb[2],                    \
      n1z = ca[0] * cb[1] - ca[1] * cb[0];                                                         \
    T n2x = db[1] * da[2] - db[2] * da[1], n2y = db[2] * da[0] - db[0] * da[2],                    \
      n2z = db[0] * da[1] - db[1] * da[0];                                                         \
    T q1 = n1x * n1x + n1y * n1y + n1z * n1z, q2 = n2x * n2x + n2y * n2y + n2z * n2z;              \
    T e2 = ex * ex + ey * ey + ez * ez;                                                            \
    T el = pbd_sqrtf(e2), inv_el = 1.0f / el, inv_q1 = 1.0f / q1, inv_q2 = 1.0f / q2;              \
    /* theta from (n2 x n1) . e / |e| and n1 . n2, both scaled by |n1| |n2| */                     \
    T sx = n2y * n1z - n2z * n1y, sy = n2z * n1x - n2x * n1z, sz = n2x * n1y - n2y * n1x;          \
    T theta = ATAN2((sx * ex + sy * ey + sz * ez) * inv_el, n1x * n2x + n1y * n2y + n1z * n2z);    \
    T cv = theta - rest;                                                                           \
    *cval = cv > 3.1415927f ? cv - 6.2831853f : (cv < -3.1415927f ? cv + 6.2831853f : cv);         \
    T m1x = n1x * inv_q1, m1y = n1y * inv_q1, m1z = n1z * inv_q1;                                  \
    T m2x = n2x * inv_q2, m2y = n2y * inv_q2, m2z = n2z * inv_q2;                                  \
    /* projections onto the edge direction of (c - b), (d - b), (c - a), (d - a) */                \
    T pcb = (cb[0] * ex + cb[1] * ey + cb[2] * ez) * inv_el;                                       \
    T pdb = (db[0] * ex + db[1] * ey + db[2] * ez) * inv_el;                                       \
    T pca = (ca[0] * ex + ca[1] * ey + ca[2] * ez) * inv_el;                                       \
    T pda = (da[0] * ex + da[1] * ey + da[2] * ez) * inv_el;                                       \
    g[0] = pcb * m1x + pdb * m2x, g[1] = pcb * m1y + pdb * m2y, g[2] = pcb * m1z + pdb * m2z;      \
    g[3] = -pca * m1x - pda * m2x, g[4] = -pca * m1y - pda * m2y, g[5] = -pca * m1z - pda * m2z;   \
    g[6] = el * m1x, g[7] = el * m1y, g[8] = el * m1z;                                             \
    g[9] = el * m2x, g[10] = el * m2y, g[11] = el * m2z;                                           \
    return q1 > 1e-24f && q2 > 1e-24f && e2 > PBD_MIN_LENGTH * PBD_MIN_LENGTH

PBD_INLINE int pbd_dihedral_gradients(const float *x, float rest, float *g, float *cval)
{
    PBD_DIHEDRAL_BODY(float, int, pbd_atan2f);
}

#ifdef __OPENCL_C_VERSION__
PBD_INLINE int16 pbd_dihedral_gradients16(const float16 *x, float16 rest, float16 *g, float16 *cval)
{
    PBD_DIHEDRAL_BODY(float16, int16, pbd_atan2f16);
}
#endif

PBD_INLINE void pbd_dihedral_project(PBD_GLOBAL pbd_float4 *p, PBD_GLOBAL pbd_float4 *dx,
                                     PBD_GLOBAL const pbd_dihedral *records,
                                     PBD_GLOBAL float *lambda, int c, float inv_h2,
                                     int reset_lambda, int track)
{
    (void)dx;
    (void)track; /* between particles of one body: no external impulse */
    pbd_dihedral r = records[c];
    float l = reset_lambda ? 0.0f : lambda[c];
    pbd_float4 q[4] = {p[r.a], p[r.b], p[r.c], p[r.d]};
    float x[12], g[12], cval;
    pbd_positions4(q, x);
    if (pbd_dihedral_gradients(x, r.rest, g, &cval))
        lambda[c] = l + pbd_project4(p, r.a, r.b, r.c, r.d, g, cval, r.compliance, l, inv_h2);
}

/* Isometric bending (pbd_isometric): v = sum k_i x_i, C = |v|^2 / 2, gradient k_i v at
 * particle i. The weights sum to zero, so the corrections move no centre of mass, and the
 * gradients k_i v with sum k_i x_i = v turn nothing (sum x_i x k_i v = v x v = 0). From
 * weights k (4) and positions x (12: a, b, c, d): the gradients in g (12); returns C. Written
 * once for T = float and, on the device, float16. */
#define PBD_ISOMETRIC_BODY(T)                                                                      \
    T v[3];                                                                                        \
    /* relative to a, so that v does not lose digits far from the origin (the k sum to 0) */       \
    PBD_UNROLL                                                                                     \
    for (int j = 0; j < 3; ++j)                                                                    \
        v[j] = k[1] * (x[3 + j] - x[j]) + k[2] * (x[6 + j] - x[j]) + k[3] * (x[9 + j] - x[j]);     \
    PBD_UNROLL                                                                                     \
    for (int i = 0; i < 4; ++i) {                                                                  \
        g[3 * i] = k[i] * v[0];                                                                    \
        g[3 * i + 1] = k[i] * v[1];                                                                \
        g[3 * i + 2] = k[i] * v[2];                                                                \
    }                                                                                              \
    return 0.5f * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2])

PBD_INLINE float pbd_isometric_gradients(const float *k, const float *x, float *g)
{
    PBD_ISOMETRIC_BODY(float);
}

#ifdef __OPENCL_C_VERSION__
PBD_INLINE float16 pbd_isometric_gradients16(const float16 *k, const float16 *x, float16 *g)
{
    PBD_ISOMETRIC_BODY(float16);
}
#endif

PBD_INLINE void pbd_isometric_project(PBD_GLOBAL pbd_float4 *p, PBD_GLOBAL pbd_float4 *dx,
                                      PBD_GLOBAL const pbd_isometric *records,
                                      PBD_GLOBAL float *lambda, int c, float inv_h2,
                                      int reset_lambda, int track)
{
    (void)dx;
    (void)track; /* between particles of one body: no external impulse */
    pbd_isometric r = records[c];
    float l = reset_lambda ? 0.0f : lambda[c];
    pbd_float4 q[4] = {p[r.a], p[r.b], p[r.c], p[r.d]};
    float x[12], g[12];
    pbd_positions4(q, x);
    float cval = pbd_isometric_gradients(r.k, x, g);
    lambda[c] = l + pbd_project4(p, r.a, r.b, r.c, r.d, g, cval, r.compliance, l, inv_h2);
}

/* A tet's deformation gradient F (column k in f[3k .. 3k+2]) from its positions x (12 floats:
 * a, b, c, d) and Dm^-1 (dm, row-major): column k = sum_m (x_{m+1} - x_0) dm[3m + k]. Each
 * body below is written once for T = float and, on the device, float16 (sixteen tets at once
 * in the CPU devices' kernels; M: int, int16), as PBD_DISTANCE_GAIN_BODY. */
#define PBD_TET_DEFORMATION_BODY(T)                                                                \
    T e[9];                                                                                        \
    PBD_UNROLL                                                                                     \
    for (int j = 0; j < 3; ++j) {                                                                  \
        e[j] = x[3 + j] - x[j];                                                                    \
        e[3 + j] = x[6 + j] - x[j];                                                                \
        e[6 + j] = x[9 + j] - x[j];                                                                \
    }                                                                                              \
    PBD_UNROLL                                                                                     \
    for (int k = 0; k < 3; ++k) {                                                                  \
        PBD_UNROLL                                                                                 \
        for (int j = 0; j < 3; ++j)                                                                \
            f[3 * k + j] =                                                                         \
                pbd_fmaf(e[6 + j], dm[6 + k], pbd_fmaf(e[3 + j], dm[3 + k], e[j] * dm[k]));        \
    }

/* The particles' gradients from dC/dF (column k in pf[3k ..]): at b, c, d the columns of
 * dC/dF Dm^-T, at a minus their sum. */
#define PBD_TET_GRADIENTS_BODY(T)                                                                  \
    PBD_UNROLL                                                                                     \
    for (int m = 0; m < 3; ++m) {                                                                  \
        PBD_UNROLL                                                                                 \
        for (int j = 0; j < 3; ++j)                                                                \
            g[3 * (m + 1) + j] = pbd_fmaf(pf[6 + j], dm[3 * m + 2],                                \
                                          pbd_fmaf(pf[3 + j], dm[3 * m + 1], pf[j] * dm[3 * m]));  \
    }                                                                                              \
    PBD_UNROLL                                                                                     \
    for (int j = 0; j < 3; ++j)                                                                    \
    g[j] = -(g[3 + j] + g[6 + j] + g[9 + j])

/* The Neo-Hookean element's two gradients (pbd_neo_hookean_project): gh of C_H = det F -
 * gamma (the cofactor matrix, columns f1 x f2, f2 x f0, f0 x f1) and gd, |F| times that of
 * C_D = |F| (from F itself, not F / |F|: the solve takes the reciprocals of |F| and of its
 * determinant, two divisions where normalising F and the two quotients took eleven, the
 * element's dearest instructions on CPU devices), 12 each, with det F and |F|; returns
 * whether |F| > 0. */
#define PBD_NEO_HOOKEAN_BODY(T, TET_DEFORMATION, TET_GRADIENTS)                                    \
    T f[9], pf[9], n2 = 0.0f;                                                                      \
    TET_DEFORMATION(x, dm, f);                                                                     \
    PBD_UNROLL                                                                                     \
    for (int k = 0; k < 3; ++k) {                                                                  \
        const T *u = &f[3 * ((k + 1) % 3)], *v = &f[3 * ((k + 2) % 3)];                            \
        pf[3 * k] = pbd_fmaf(u[1], v[2], -(u[2] * v[1]));                                          \
        pf[3 * k + 1] = pbd_fmaf(u[2], v[0], -(u[0] * v[2]));                                      \
        pf[3 * k + 2] = pbd_fmaf(u[0], v[1], -(u[1] * v[0]));                                      \
    }                                                                                              \
    *det_f = pbd_fmaf(f[2], pf[2], pbd_fmaf(f[1], pf[1], f[0] * pf[0]));                           \
    TET_GRADIENTS(dm, pf, gh);                                                                     \
    PBD_UNROLL                                                                                     \
    for (int k = 0; k < 9; ++k)                                                                    \
        n2 = pbd_fmaf(f[k], f[k], n2);                                                             \
    T length = pbd_sqrtf(n2);                                                                      \
    TET_GRADIENTS(dm, f, gd);                                                                      \
    *norm = length;                                                                                \
    return n2 > 0.0f

/* The element's 2 x 2 solve (pbd_neo_hookean_project) for inverse masses w (4), from gh and
 * the unnormalised gd (its sums scaled by r = 1 / |F| and r^2): the multipliers' changes,
 * and sd = dld / |F|, the factor of gd in the correction; returns whether the system's
 * determinant is > 0. */
#define PBD_NEO_HOOKEAN_SOLVE_BODY(T)                                                              \
    T hh = 0.0f, hd = 0.0f, dd = 0.0f;                                                             \
    PBD_UNROLL                                                                                     \
    for (int k = 0; k < 12; ++k) {                                                                 \
        T wh = w[k / 3] * gh[k], wd = w[k / 3] * gd[k];                                            \
        hh = pbd_fmaf(wh, gh[k], hh);                                                              \
        hd = pbd_fmaf(wh, gd[k], hd);                                                              \
        dd = pbd_fmaf(wd, gd[k], dd);                                                              \
    }                                                                                              \
    T r = 1.0f / norm;                                                                             \
    hd = hd * r, dd = dd * r * r;                                                                  \
    T det = pbd_fmaf(hh + ah, dd + ad, -(hd * hd));                                                \
    T bh = pbd_fmaf(-ah, lh, -(det_f - gamma)), bd = pbd_fmaf(-ad, ld, -norm);                     \
    T inv = 1.0f / det;                                                                            \
    *dlh = pbd_fmaf(bh, dd + ad, -(bd * hd)) * inv;                                                \
    *dld = pbd_fmaf(hh + ah, bd, -(hd * bh)) * inv;                                                \
    *sd = *dld * r;                                                                                \
    return det > 0.0f

PBD_INLINE void pbd_tet_deformation_of(const float *x, const float *dm, float *f)
{
    PBD_TET_DEFORMATION_BODY(float);
}

PBD_INLINE void pbd_tet_gradients_of(const float *dm, const float *pf, float *g)
{
    PBD_TET_GRADIENTS_BODY(float);
}

PBD_FMA_CLONES PBD_INLINE int pbd_neo_hookean_gradients(const float *x, const float *dm, float *gh,
                                                        float *gd, float *det_f, float *norm)
{
    PBD_NEO_HOOKEAN_BODY(float, pbd_tet_deformation_of, pbd_tet_gradients_of);
}

PBD_INLINE int pbd_neo_hookean_solve(const float *w, const float *gh, const float *gd, float det_f,
                                     float norm, float gamma, float ah, float ad, float lh,
                                     float ld, float *dlh, float *dld, float *sd)
{
    PBD_NEO_HOOKEAN_SOLVE_BODY(float);
}

#ifdef __OPENCL_C_VERSION__
PBD_INLINE void pbd_tet_deformation_of16(const float16 *x, const float16 *dm, float16 *f)
{
    PBD_TET_DEFORMATION_BODY(float16);
}

PBD_INLINE void pbd_tet_gradients_of16(const float16 *dm, const float16 *pf, float16 *g)
{
    PBD_TET_GRADIENTS_BODY(float16);
}

PBD_INLINE int16 pbd_neo_hookean_gradients16(const float16 *x, const float16 *dm, float16 *gh,
                                             float16 *gd, float16 *det_f, float16 *norm)
{
    PBD_NEO_HOOKEAN_BODY(float16, pbd_tet_deformation_of16, pbd_tet_gradients_of16);
}

PBD_INLINE int16 pbd_neo_hookean_solve16(const float16 *w, const float16 *gh, const float16 *gd,
                                         float16 det_f, float16 norm, float16 gamma, float16 ah,
                                         float16 ad, float16 lh, float16 ld, float16 *dlh,
                                         float16 *dld, float16 *sd)
{
    PBD_NEO_HOOKEAN_SOLVE_BODY(float16);
}
#endif

/* A tet's deformation gradient F from its particles in p and its record. */
PBD_INLINE void pbd_tet_deformation(PBD_GLOBAL const pbd_float4 *p, pbd_neo_hookean r, float *f)
{
    pbd_float4 q[4] = {p[r.a], p[r.b], p[r.c], p[r.d]};
    float x[12];
    pbd_positions4(q, x);
    pbd_tet_deformation_of(x, r.dm_inv, f);
}

/* Neo-Hookean (pbd_neo_hookean): C_H = det F - gamma with dC_H/dF the cofactor matrix
 * (columns f1 x f2, f2 x f0, f0 x f1), C_D = |F| with dC_D/dF = F / |F|, solved together:
 *   [g_H.W g_H + a_H   g_H.W g_D      ] [dl_H]   [-C_H - a_H l_H]
 *   [g_D.W g_H         g_D.W g_D + a_D] [dl_D] = [-C_D - a_D l_D]
 * (a = compliance / h^2). At rest the two gradients are parallel, so the determinant rests
 * on the compliances: the solver refuses elements so stiff that a_D < g_D.W g_D there
 * (check_neo_hookean), which keeps it well away from cancelling. The multipliers are
 * lambda[2c] (H) and lambda[2c + 1] (D). */
PBD_FMA_CLONES PBD_INLINE void pbd_neo_hookean_project(PBD_GLOBAL pbd_float4 *p,
                                                       PBD_GLOBAL pbd_float4 *dx,
                                                       PBD_GLOBAL const pbd_neo_hookean *records,
                                                       PBD_GLOBAL float *lambda, int c,
                                                       float inv_h2, int reset_lambda, int track)
{
    (void)dx;
    (void)track; /* between particles of one body: no external impulse */
    pbd_neo_hookean r = records[c];
    float lh = reset_lambda ? 0.0f : lambda[2 * c], ld = reset_lambda ? 0.0f : lambda[2 * c + 1];
    pbd_float4 q[4] = {p[r.a], p[r.b], p[r.c], p[r.d]};
    float x[12], w[4] = {q[0].w, q[1].w, q[2].w, q[3].w}, gh[12], gd[12], det_f, norm, dlh, dld, sd;
    pbd_positions4(q, x);
    if (!pbd_neo_hookean_gradients(x, r.dm_inv, gh, gd, &det_f, &norm) ||
        !pbd_neo_hookean_solve(w, gh, gd, det_f, norm, r.gamma, r.compliance_h * inv_h2,
                               r.compliance * inv_h2, lh, ld, &dlh, &dld, &sd))
        return;
    int ids[4] = {r.a, r.b, r.c, r.d};
    PBD_UNROLL
    for (int i = 0; i < 4; ++i)
        pbd_store(p, ids[i],
                  PBD_F4(q[i].x + w[i] * pbd_fmaf(sd, gd[3 * i], dlh * gh[3 * i]),
                         q[i].y + w[i] * pbd_fmaf(sd, gd[3 * i + 1], dlh * gh[3 * i + 1]),
                         q[i].z + w[i] * pbd_fmaf(sd, gd[3 * i + 2], dlh * gh[3 * i + 2]), q[i].w));
    lambda[2 * c] = lh + dlh;
    lambda[2 * c + 1] = ld + dld;
}

/* Jacobi for constraint c: its gain (pbd_distance_gain) on the iterate p, which it does not
 * change, and its multiplier, grown from 0 when `reset_lambda`. The CPU reference and the
 * device's kernels project one constraint with this. */
PBD_INLINE void pbd_jacobi_project(PBD_GLOBAL const pbd_float4 *p,
                                   PBD_GLOBAL const pbd_distance *distance,
                                   PBD_GLOBAL float *lambda, PBD_GLOBAL float *gain, int c,
                                   float inv_h2, int reset_lambda)
{
    pbd_distance d = distance[c];
    float l = reset_lambda ? 0.0f : lambda[c];
    float dl;
    gain[c] = pbd_distance_gain4(p[d.a], p[d.b], d.rest, d.compliance, l, inv_h2, &dl);
    lambda[c] = l + dl;
}

/* Jacobi gather for particle i of the iterate p: the sum of its constraints' corrections, in
 * the fixed slot order of its CSR row, scaled by omega / n (Bender et al. survey, "Jacobi";
 * n = the particle's constraint count). Each correction is derived again from the
 * constraint's gain g and both ends' positions in p (`other`: the far end, per slot), which
 * is why the caller writes the result into another array than p. At either end it is
 * (w_i g) (p_i - p_other): at end b, pbd_distance_delta's (-w_b g) (p_a - p_b) is the same
 * bits, as negation is exact and rounding symmetric, so no branch on the end is needed. No
 * atomics: the order is fixed, so the result is the same on every run and every device. The
 * caller then collides. */
PBD_INLINE pbd_float4 pbd_gather(PBD_GLOBAL const pbd_float4 *p, int i,
                                 PBD_GLOBAL const float *gain, PBD_GLOBAL const int *slots,
                                 PBD_GLOBAL const int *other, int begin, int end, float omega)
{
    pbd_float4 pi = p[i];
    if (end > begin) {
        float sx = 0.0f, sy = 0.0f, sz = 0.0f;
        for (int s = begin; s < end; ++s) {
            pbd_float4 q = p[other[s]];
            float ge = pi.w * gain[slots[s] >> 1];
            sx = sx + ge * (pi.x - q.x);
            sy = sy + ge * (pi.y - q.y);
            sz = sz + ge * (pi.z - q.z);
        }
        float f = omega / (float)(end - begin);
        pi = PBD_F4(pi.x + f * sx, pi.y + f * sy, pi.z + f * sz, pi.w);
    }
    return pi;
}

/* Accumulator of the per-body reductions: double where the device has fp64 (always on the
 * host), float otherwise. */
#ifdef __OPENCL_C_VERSION__
#if defined(PBD_HAS_FP64) && !defined(PBD_FLOAT_ACC)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double pbd_acc;
#else
/* No fp64: float sums, compensated (Kahan) in each work-item's serial loop; the trees
 * after it add O(log n) rounding only. */
typedef float pbd_acc;
#define PBD_ACC_COMPENSATED 1
#endif
#else
typedef double pbd_acc;
#endif

/* out = a x b, each component as a1 b2 - a2 b1: the one order of every cross product in the
 * sums and the body solve (momentum.cl's cross8_add has it lane by lane). */
PBD_INLINE void pbd_cross(pbd_acc ax, pbd_acc ay, pbd_acc az, pbd_acc bx, pbd_acc by, pbd_acc bz,
                          pbd_acc *out)
{
    out[0] = ay * bz - az * by;
    out[1] = az * bx - ax * bz;
    out[2] = ax * by - ay * bx;
}

/* out += a x b, each component by two fused multiply-adds (pbd_particle_accumulate's). */
PBD_INLINE void pbd_cross_accumulate(pbd_acc ax, pbd_acc ay, pbd_acc az, pbd_acc bx, pbd_acc by,
                                     pbd_acc bz, pbd_acc *out)
{
    out[0] = fma(-az, by, fma(ay, bz, out[0]));
    out[1] = fma(-ax, bz, fma(az, bx, out[1]));
    out[2] = fma(-ay, bx, fma(ax, by, out[2]));
}

/* One particle's contribution to its body's sums (PBD_SUM_*), relative to the body's
 * reference point r. dx is the particle's collision displacement this substep, the impulse
 * J = m dx / h (Dahl & Bargteil 2019, eqs. 1-2); gravity's impulse is added per body in
 * pbd_body_solve. With `stats`, also the kinetic energy and err, the largest |C| among the
 * particle's constraints. momentum.cl has the same arithmetic in vector lanes. */
PBD_INLINE void pbd_particle_sums(pbd_float4 x, pbd_float4 v, pbd_float4 dx, pbd_float4 r,
                                  float err, int stats, float inv_h, pbd_acc *s)
{
    pbd_acc m = (pbd_acc)v.w;
    pbd_acc rx = (pbd_acc)x.x - (pbd_acc)r.x;
    pbd_acc ry = (pbd_acc)x.y - (pbd_acc)r.y;
    pbd_acc rz = (pbd_acc)x.z - (pbd_acc)r.z;
    pbd_acc px = m * (pbd_acc)v.x;
    pbd_acc py = m * (pbd_acc)v.y;
    pbd_acc pz = m * (pbd_acc)v.z;
    pbd_acc mx = m * rx, my = m * ry, mz = m * rz;
    pbd_acc jx = m * (pbd_acc)(dx.x * inv_h);
    pbd_acc jy = m * (pbd_acc)(dx.y * inv_h);
    pbd_acc jz = m * (pbd_acc)(dx.z * inv_h);
    s[PBD_SUM_M] = m;
    s[PBD_SUM_MX + 0] = mx;
    s[PBD_SUM_MX + 1] = my;
    s[PBD_SUM_MX + 2] = mz;
    s[PBD_SUM_P + 0] = px;
    s[PBD_SUM_P + 1] = py;
    s[PBD_SUM_P + 2] = pz;
    pbd_cross(rx, ry, rz, px, py, pz, s + PBD_SUM_XCP);
    s[PBD_SUM_KE] =
        stats ? (pbd_acc)0.5 * ((px * (pbd_acc)v.x + py * (pbd_acc)v.y) + pz * (pbd_acc)v.z)
              : (pbd_acc)0;
    s[PBD_SUM_XX + 0] = mx * rx;
    s[PBD_SUM_XX + 1] = mx * ry;
    s[PBD_SUM_XX + 2] = mx * rz;
    s[PBD_SUM_XX + 3] = my * ry;
    s[PBD_SUM_XX + 4] = my * rz;
    s[PBD_SUM_XX + 5] = mz * rz;
    s[PBD_SUM_J + 0] = jx;
    s[PBD_SUM_J + 1] = jy;
    s[PBD_SUM_J + 2] = jz;
    pbd_cross(rx, ry, rz, jx, jy, jz, s + PBD_SUM_XCJ);
    s[PBD_SUM_ERR] = stats ? (pbd_acc)err : (pbd_acc)0;
}

/* acc += s for every sum; the error entry keeps the maximum. */
PBD_INLINE void pbd_sums_add(pbd_acc *acc, const pbd_acc *s)
{
    for (int q = 0; q < PBD_SUM_ERR; ++q)
        acc[q] = acc[q] + s[q];
    acc[PBD_SUM_ERR] = acc[PBD_SUM_ERR] > s[PBD_SUM_ERR] ? acc[PBD_SUM_ERR] : s[PBD_SUM_ERR];
}

/* pbd_particle_sums added straight into acc, one lane of the PBD_SUM_LANES layout (CPU
 * devices, and the CPU reference in their order): each product that is summed is fused with
 * its addition (fma, one rounding where the product and the sum took two). A CPU device's
 * double8 lanes were bound by their additions; with the products folded in, the sums take
 * about a quarter less time, and they round less. The angular momentum takes (m r) x v where
 * pbd_particle_sums takes r x (m v): the same quantity, from the m r the sums need anyway. */
PBD_INLINE void pbd_particle_accumulate(pbd_acc *acc, pbd_float4 x, pbd_float4 v, pbd_float4 dx,
                                        pbd_float4 r, float err, int stats, float inv_h)
{
    pbd_acc m = (pbd_acc)v.w;
    pbd_acc rx = (pbd_acc)x.x - (pbd_acc)r.x;
    pbd_acc ry = (pbd_acc)x.y - (pbd_acc)r.y;
    pbd_acc rz = (pbd_acc)x.z - (pbd_acc)r.z;
    pbd_acc vx = (pbd_acc)v.x, vy = (pbd_acc)v.y, vz = (pbd_acc)v.z;
    pbd_acc mx = m * rx, my = m * ry, mz = m * rz;
    acc[PBD_SUM_M] = acc[PBD_SUM_M] + m;
    acc[PBD_SUM_MX + 0] = acc[PBD_SUM_MX + 0] + mx;
    acc[PBD_SUM_MX + 1] = acc[PBD_SUM_MX + 1] + my;
    acc[PBD_SUM_MX + 2] = acc[PBD_SUM_MX + 2] + mz;
    acc[PBD_SUM_P + 0] = fma(m, vx, acc[PBD_SUM_P + 0]);
    acc[PBD_SUM_P + 1] = fma(m, vy, acc[PBD_SUM_P + 1]);
    acc[PBD_SUM_P + 2] = fma(m, vz, acc[PBD_SUM_P + 2]);
    pbd_cross_accumulate(mx, my, mz, vx, vy, vz, acc + PBD_SUM_XCP);
    if (stats) {
        pbd_acc px = m * vx, py = m * vy, pz = m * vz;
        acc[PBD_SUM_KE] = acc[PBD_SUM_KE] + (pbd_acc)0.5 * ((px * vx + py * vy) + pz * vz);
        acc[PBD_SUM_ERR] = acc[PBD_SUM_ERR] > (pbd_acc)err ? acc[PBD_SUM_ERR] : (pbd_acc)err;
    }
    acc[PBD_SUM_XX + 0] = fma(mx, rx, acc[PBD_SUM_XX + 0]);
    acc[PBD_SUM_XX + 1] = fma(mx, ry, acc[PBD_SUM_XX + 1]);
    acc[PBD_SUM_XX + 2] = fma(mx, rz, acc[PBD_SUM_XX + 2]);
    acc[PBD_SUM_XX + 3] = fma(my, ry, acc[PBD_SUM_XX + 3]);
    acc[PBD_SUM_XX + 4] = fma(my, rz, acc[PBD_SUM_XX + 4]);
    acc[PBD_SUM_XX + 5] = fma(mz, rz, acc[PBD_SUM_XX + 5]);
    pbd_acc jx = m * (pbd_acc)(dx.x * inv_h);
    pbd_acc jy = m * (pbd_acc)(dx.y * inv_h);
    pbd_acc jz = m * (pbd_acc)(dx.z * inv_h);
    acc[PBD_SUM_J + 0] = acc[PBD_SUM_J + 0] + jx;
    acc[PBD_SUM_J + 1] = acc[PBD_SUM_J + 1] + jy;
    acc[PBD_SUM_J + 2] = acc[PBD_SUM_J + 2] + jz;
    pbd_cross_accumulate(rx, ry, rz, jx, jy, jz, acc + PBD_SUM_XCJ);
}

/* Kahan-compensated acc += s (float accumulators): comp carries the low-order bits lost in
 * each addition; fold it in with pbd_sums_fold at the end. */
PBD_INLINE void pbd_sums_add_compensated(pbd_acc *acc, pbd_acc *comp, const pbd_acc *s)
{
    for (int q = 0; q < PBD_SUM_ERR; ++q) {
        pbd_acc y = s[q] - comp[q];
        pbd_acc t = acc[q] + y;
        comp[q] = (t - acc[q]) - y;
        acc[q] = t;
    }
    acc[PBD_SUM_ERR] = acc[PBD_SUM_ERR] > s[PBD_SUM_ERR] ? acc[PBD_SUM_ERR] : s[PBD_SUM_ERR];
}

PBD_INLINE void pbd_sums_fold(pbd_acc *acc, const pbd_acc *comp)
{
    for (int q = 0; q < PBD_SUM_ERR; ++q)
        acc[q] = acc[q] - comp[q];
}

/* x = A^+ b and x2 = A^+ b2 for a symmetric positive semi-definite 3x3 A (xx xy xz yy yz zz).
 * Near-singular A: cyclic Jacobi eigen-decomposition, then 1/lambda on the eigenvalues above
 * PBD_PINV_RTOL of the largest and 0 below. A singular inertia tensor (two particles, a straight
 * rope) gives the least-norm angular velocity instead of NaN or a huge one. */
PBD_INLINE void pbd_sym3_pinv_apply2(const pbd_acc *a6, const pbd_acc *b, pbd_acc *x,
                                     const pbd_acc *b2, pbd_acc *x2)
{
    /* Well-conditioned (the usual case): the inverse by cofactors. Each eigenvalue is at
     * least det / tr^2 and at most tr, so det > 1e-4 tr^3 puts every eigenvalue above
     * 1e-4 of the largest (> PBD_PINV_RTOL): the pseudo-inverse is the inverse. */
    pbd_acc c00 = a6[3] * a6[5] - a6[4] * a6[4];
    pbd_acc c01 = a6[2] * a6[4] - a6[1] * a6[5];
    pbd_acc c02 = a6[1] * a6[4] - a6[2] * a6[3];
    pbd_acc c11 = a6[0] * a6[5] - a6[2] * a6[2];
    pbd_acc c12 = a6[1] * a6[2] - a6[0] * a6[4];
    pbd_acc c22 = a6[0] * a6[3] - a6[1] * a6[1];
    pbd_acc det = a6[0] * c00 + a6[1] * c01 + a6[2] * c02;
    pbd_acc tr = a6[0] + a6[3] + a6[5];
    if (tr > (pbd_acc)0 && det > (pbd_acc)1e-4 * tr * tr * tr) {
        pbd_acc inv = (pbd_acc)1 / det;
        x[0] = (c00 * b[0] + c01 * b[1] + c02 * b[2]) * inv;
        x[1] = (c01 * b[0] + c11 * b[1] + c12 * b[2]) * inv;
        x[2] = (c02 * b[0] + c12 * b[1] + c22 * b[2]) * inv;
        x2[0] = (c00 * b2[0] + c01 * b2[1] + c02 * b2[2]) * inv;
        x2[1] = (c01 * b2[0] + c11 * b2[1] + c12 * b2[2]) * inv;
        x2[2] = (c02 * b2[0] + c12 * b2[1] + c22 * b2[2]) * inv;
        return;
    }
    pbd_acc a[3][3] = {{a6[0], a6[1], a6[2]}, {a6[1], a6[3], a6[4]}, {a6[2], a6[4], a6[5]}};
    pbd_acc v[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    /* Cyclic Jacobi converges quadratically: a few sweeps reach rounding level, and a tensor
     * that is already diagonal (to rounding) needs none. */
    for (int sweep = 0; sweep < 8; ++sweep) {
        pbd_acc off = (a[0][1] < 0 ? -a[0][1] : a[0][1]) + (a[0][2] < 0 ? -a[0][2] : a[0][2]) +
                      (a[1][2] < 0 ? -a[1][2] : a[1][2]);
        pbd_acc diag = (a[0][0] < 0 ? -a[0][0] : a[0][0]) + (a[1][1] < 0 ? -a[1][1] : a[1][1]) +
                       (a[2][2] < 0 ? -a[2][2] : a[2][2]);
        if (!(off > (pbd_acc)1e-15 * diag))
            break;
        for (int pq = 0; pq < 3; ++pq) {
            int p = pq == 2 ? 1 : 0;
            int q = pq == 0 ? 1 : 2;
            pbd_acc apq = a[p][q];
            if (apq == (pbd_acc)0)
                continue;
            /* Rotation that zeroes a[p][q] (Numerical Recipes, section 11.1). */
            pbd_acc theta = (a[q][q] - a[p][p]) / ((pbd_acc)2 * apq);
            pbd_acc t = (pbd_acc)1 / ((theta < 0 ? -theta : theta) + sqrt(theta * theta + 1));
            if (theta < 0)
                t = -t;
            pbd_acc c = (pbd_acc)1 / sqrt(t * t + 1);
            pbd_acc sn = t * c;
            for (int k = 0; k < 3; ++k) {
                pbd_acc akp = a[k][p], akq = a[k][q];
                a[k][p] = c * akp - sn * akq;
                a[k][q] = sn * akp + c * akq;
            }
            for (int k = 0; k < 3; ++k) {
                pbd_acc apk = a[p][k], aqk = a[q][k];
                a[p][k] = c * apk - sn * aqk;
                a[q][k] = sn * apk + c * aqk;
            }
            for (int k = 0; k < 3; ++k) {
                pbd_acc vkp = v[k][p], vkq = v[k][q];
                v[k][p] = c * vkp - sn * vkq;
                v[k][q] = sn * vkp + c * vkq;
            }
        }
    }
    pbd_acc lmax = 0;
    for (int k = 0; k < 3; ++k)
        lmax = a[k][k] > lmax ? a[k][k] : lmax;
    x[0] = x[1] = x[2] = 0;
    x2[0] = x2[1] = x2[2] = 0;
    for (int k = 0; k < 3; ++k) {
        if (!(a[k][k] > (pbd_acc)PBD_PINV_RTOL * lmax) || lmax <= (pbd_acc)0)
            continue;
        pbd_acc d = (v[0][k] * b[0] + v[1][k] * b[1] + v[2][k] * b[2]) / a[k][k];
        pbd_acc d2 = (v[0][k] * b2[0] + v[1][k] * b2[1] + v[2][k] * b2[2]) / a[k][k];
        for (int i = 0; i < 3; ++i) {
            x[i] = x[i] + d * v[i][k];
            x2[i] = x2[i] + d2 * v[i][k];
        }
    }
}

/* x = A^+ b (one right-hand side). */
PBD_INLINE void pbd_sym3_pinv_apply(const pbd_acc *a6, const pbd_acc *b, pbd_acc *x)
{
    pbd_acc unused[3];
    pbd_sym3_pinv_apply2(a6, b, x, b, unused);
}

/* The per-body solve of Algorithm 2 (Dahl & Bargteil 2019) from the body's sums s about the
 * reference r: centre of mass, inertia tensor about it, P_pbd, L_pbd; in PBD_SOLVE_INIT mode
 * the tracked momenta `track` (P_r, L_r) are set from them; in PBD_SOLVE_STEP mode the
 * substep's external impulses (the collisions' in s, gravity g over the substep h) are added
 * to them (eqs. 1-2) and, for a body with PBD_BODY_MOMENTUM, v_cor = (P_r - P_pbd) / m and w_cor =
 * I^+ (L_r - L_pbd) (eqs. 3-4). Writes the PBD_OUT_* record. */
PBD_INLINE void pbd_body_solve(const pbd_acc *s, pbd_float4 r, pbd_acc *track, int flags, int mode,
                               float gx, float gy, float gz, float h, pbd_acc *out)
{
    /* One division: the body solve runs once per body and substep, and with many small
     * bodies its divisions are a good part of the correction's cost per body. */
    pbd_acc m = s[PBD_SUM_M], inv_m = (pbd_acc)1 / m;
    pbd_acc c[3] = {s[PBD_SUM_MX] * inv_m, s[PBD_SUM_MX + 1] * inv_m, s[PBD_SUM_MX + 2] * inv_m};
    const pbd_acc *p = s + PBD_SUM_P;
    const pbd_acc *j = s + PBD_SUM_J;
    pbd_acc l[3], lj[3], inertia[6], cp[3], cj[3];
    /* About the centre of mass: L = sum m x' x v - c x P, likewise for the impulses' moment. */
    pbd_cross(c[0], c[1], c[2], p[0], p[1], p[2], cp);
    pbd_cross(c[0], c[1], c[2], j[0], j[1], j[2], cj);
    for (int k = 0; k < 3; ++k) {
        l[k] = s[PBD_SUM_XCP + k] - cp[k];
        lj[k] = s[PBD_SUM_XCJ + k] - cj[k];
    }
    /* Second moment about the com, S = sum m x' x'^T - m c c^T; I = tr(S) Id - S
     * (= sum m r* r*^T, Algorithm 2 line 13). */
    pbd_acc sxx = s[PBD_SUM_XX + 0] - m * c[0] * c[0];
    pbd_acc sxy = s[PBD_SUM_XX + 1] - m * c[0] * c[1];
    pbd_acc sxz = s[PBD_SUM_XX + 2] - m * c[0] * c[2];
    pbd_acc syy = s[PBD_SUM_XX + 3] - m * c[1] * c[1];
    pbd_acc syz = s[PBD_SUM_XX + 4] - m * c[1] * c[2];
    pbd_acc szz = s[PBD_SUM_XX + 5] - m * c[2] * c[2];
    inertia[0] = syy + szz;
    inertia[1] = -sxy;
    inertia[2] = -sxz;
    inertia[3] = sxx + szz;
    inertia[4] = -syz;
    inertia[5] = sxx + syy;
    if (mode == PBD_SOLVE_INIT) {
        for (int k = 0; k < 3; ++k) {
            track[k] = p[k];
            track[3 + k] = l[k];
        }
    } else if (mode == PBD_SOLVE_STEP) {
        /* Gravity's impulse m g h on every particle of a body without pinned particles (the
         * only kind tracked) sums to M g h and has no moment about the centre of mass. */
        const pbd_acc g[3] = {(pbd_acc)gx, (pbd_acc)gy, (pbd_acc)gz};
        for (int k = 0; k < 3; ++k) {
            track[k] = track[k] + (j[k] + m * (g[k] * (pbd_acc)h));
            track[3 + k] = track[3 + k] + lj[k];
        }
    }
    int on = mode != PBD_SOLVE_STATS && (flags & PBD_BODY_MOMENTUM);
    pbd_acc dl[3], tl[3];
    for (int k = 0; k < 3; ++k) {
        out[PBD_OUT_COM + k] = (pbd_acc)(k == 0 ? r.x : k == 1 ? r.y : r.z) + c[k];
        out[PBD_OUT_P + k] = p[k];
        out[PBD_OUT_L + k] = l[k];
        out[PBD_OUT_PR + k] = track[k];
        out[PBD_OUT_LR + k] = track[3 + k];
        out[PBD_OUT_VCOR + k] = on ? (track[k] - p[k]) * inv_m : (pbd_acc)0;
        out[PBD_OUT_VRIG + k] = (on ? track[k] : p[k]) * inv_m;
        dl[k] = on ? track[3 + k] - l[k] : (pbd_acc)0;
        tl[k] = on ? track[3 + k] : l[k];
    }
    out[PBD_OUT_MASS] = m;
    out[PBD_OUT_KE] = s[PBD_SUM_KE];
    out[PBD_OUT_ERR] = s[PBD_SUM_ERR];
    pbd_sym3_pinv_apply2(inertia, dl, out + PBD_OUT_WCOR, tl, out + PBD_OUT_WRIG);
}

/* The float4 record momentum_apply reads (PBD_APPLY_COUNT entries) from a PBD_OUT_* record. */
PBD_INLINE void pbd_apply_record(const pbd_acc *out, pbd_float4 *rec)
{
    const int from[PBD_APPLY_COUNT] = {PBD_OUT_COM, PBD_OUT_VCOR, PBD_OUT_WCOR, PBD_OUT_VRIG,
                                       PBD_OUT_WRIG};
    for (int k = 0; k < PBD_APPLY_COUNT; ++k)
        rec[k] =
            PBD_F4((float)out[from[k]], (float)out[from[k] + 1], (float)out[from[k] + 2], 0.0f);
}

/* The broadcast of Algorithm 2 (lines 19-21) with the body's record `rec` (PBD_APPLY_COUNT
 * float4: com, v_cor, w_cor, rigid v, rigid w): v += v_cor + w_cor x (x - com); then, with
 * rigid_k > 0, Müller et al. 2007's damping (section 3.5), which removes the fraction
 * rigid_k of each velocity's deviation from the body's rigid motion and so leaves P and L
 * alone. Pinned particles keep v = 0. */
PBD_INLINE pbd_float4 pbd_apply_rigid(pbd_float4 x, pbd_float4 v, PBD_GLOBAL const pbd_float4 *rec,
                                      float rigid_k)
{
    if (x.w <= 0.0f)
        return v;
    pbd_float4 com = rec[0], vcor = rec[1], wcor = rec[2];
    float rx = x.x - com.x, ry = x.y - com.y, rz = x.z - com.z;
    v.x = v.x + (vcor.x + (wcor.y * rz - wcor.z * ry));
    v.y = v.y + (vcor.y + (wcor.z * rx - wcor.x * rz));
    v.z = v.z + (vcor.z + (wcor.x * ry - wcor.y * rx));
    if (rigid_k > 0.0f) {
        pbd_float4 vrig = rec[3], wrig = rec[4];
        v.x = v.x + rigid_k * (vrig.x + (wrig.y * rz - wrig.z * ry) - v.x);
        v.y = v.y + rigid_k * (vrig.y + (wrig.z * rx - wrig.x * rz) - v.y);
        v.z = v.z + rigid_k * (vrig.z + (wrig.x * ry - wrig.y * rx) - v.z);
    }
    return v;
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

/* ---- body constraints: one constraint a body, solved on per-body sums ---------------------
 *
 * Shape matching (Müller et al. 2005, "Meshless deformations based on shape matching",
 * section 3.3) pulls every particle of a body toward its goal g_i = R q_i + c, where q_i is
 * its rest offset from the rest centre of mass, c the current centre of mass and R the
 * rotation of A = sum m (p - c) q^T. Pressure (Müller et al. 2007's cloth balloons; Bender
 * et al.'s survey, section 4.2.4) keeps the volume V = sum_tri x0 . (x1 x x2) / 6 inside a
 * body's closed surface at `pressure` times its rest volume, with one multiplier a body.
 * Shape matching may instead run on overlapping clusters of a body (Müller et al. 2005,
 * section 4.4), a body constraint each, and a particle moves by the mean of its clusters'
 * pulls. All need sums over their members inside the iteration, so each iteration runs three
 * stages over the body constraints (one a body, the bodies' first, then one a cluster):
 * body_constraint_reduce (a segment's sums, its members in order), body_constraint_solve (a
 * constraint's: its segments in order; c, A, R, the pressure step) and body_constraint_apply
 * (a work-item a particle). A constraint's members
 * are entries of member_particle / member_rest: a body's are its particles themselves (entry
 * i is particle i), a cluster's come after the particles. The particles' distinct lists of
 * clusters are sets: a particle moves toward its set's goal, formed once a set from its
 * clusters' (pbd_shape_set_goal), not once a membership. Every sum is float in that fixed
 * order: the same bits on every device and in the CPU reference. */

/* Body constraint flags (pbd_body_constraint.flags). */
#define PBD_BODY_SHAPE    1 /* shape matching */
#define PBD_BODY_PRESSURE 2 /* the closed surface's volume */
/* shape matching's XPBD form (with PBD_BODY_SHAPE): the reduction also sums PBD_BSUM_MPP, and
 * the solve takes the constant sum m |q|^2 from the record (shape_mqq) */
#define PBD_BODY_SHAPE_XPBD 4

/* Members a segment of body_constraint_reduce sums (a constraint's members in pieces of
 * this many, pbd_plan.body_constraint_segments): small enough that a body's reduction is
 * spread over many work-items, which a CPU device also runs side by side in vector lanes; a
 * GPU's work-group holds a segment's members, one a work-item. */
#define PBD_BODY_SEGMENT 64

/* The most triangles around a pressure particle for which the CPU devices' reduction takes
 * sixteen particles at a time from a table (pbd_plan_pressure_table); with more, the sixteen
 * it is among go one by one, as the shared reduction does. */
#define PBD_PRESSURE_STEPS 16

/* Polar decomposition steps per solve, warm-started from the body's previous rotation. */
#define PBD_POLAR_ITERATIONS 4

/* A body constraint (a body's, or a shape-matching cluster's), as the solver runs it. 32 bytes. */
typedef struct pbd_body_constraint {
    int flags;        /* PBD_BODY_SHAPE (| PBD_BODY_SHAPE_XPBD) | PBD_BODY_PRESSURE; 0: none (the
                         stages skip it) */
    int first;        /* the member nearest the members' initial centroid: p[first] is the
                         sums' reference point */
    float shape_k;    /* shape matching's per-iteration stiffness 1 - (1 - k)^(1/n), (0, 1] */
    float volume;     /* the target volume: pressure x rest volume, m^3, > 0 */
    float compliance; /* pressure: >= 0 XPBD compliance, m^3/Pa (volume per pressure);
                         < 0 PBD stiffness -k', as pbd_distance's */
    float shape_compliance; /* shape matching's XPBD form: compliance > 0, s^2; else 0 */
    float shape_mqq;        /* the XPBD form's sum m |q|^2 over the members, kg m^2
                               (pbd_shape_mqq); else 0 */
    int base;               /* the body's first particle: its position at the solve is the
                               apply's reference point (pbd_shape_goal's o) */
} pbd_body_constraint;

/* Per-segment sums of the body constraints, relative to the reference point r = p[first]:
 * p' = p - r. */
enum {
    PBD_BSUM_M = 0,    /* sum m                                 kg     */
    PBD_BSUM_MP = 1,   /* sum m p'            (3)               kg m   */
    PBD_BSUM_MPQ = 4,  /* sum m p' q^T        (9, row-major)    kg m^2 */
    PBD_BSUM_MQ = 13,  /* sum m q             (3; 0 up to rounding) kg m */
    PBD_BSUM_VOL = 16, /* sum p' . grad_i = 3 V                 m^3    */
    PBD_BSUM_WG = 17,  /* sum w |grad_i|^2                      m^4/kg */
    PBD_BSUM_MPP = 18, /* sum m p'_k^2        (3: x, y, z)      kg m^2 */
    PBD_BSUM_COUNT = 21
};

/* What body_constraint_solve leaves per constraint for the apply stage and the next solve
 * (PBD_GOAL_COUNT float4): the rotation as a unit quaternion (x, y, z, w; kept from substep
 * to substep as the next polar decomposition's start), the centre c (xyz; w: the pressure
 * step s, so that particle i moves by w_i s grad_i), R's three rows (xyz; row 0's w: the
 * pressure multiplier lambda of the substep; row 1's w: shape matching's multiplier of the
 * substep, row 2's w: its step toward the goals, in its XPBD form); then shape matching's
 * goal as the apply takes it (PBD_GOAL_SHAPE on: pbd_shape_goal's four columns), and last
 * the centre of mass of the members' rest offsets from their body's centre (PBD_GOAL_CENTRE:
 * set by the plan, read only; xyz, w 0), then the reference point o (xyz; w 0). */
#define PBD_GOAL_COUNT  11
#define PBD_GOAL_SHAPE  5
#define PBD_GOAL_CENTRE 9
#define PBD_GOAL_BASE   10
/* A set of clusters' goal (pbd_shape_set_goal): four columns and the reference point. */
#define PBD_SET_GOAL_COUNT 5

/* The rotation matrix (row-major) of unit quaternion q. */
PBD_INLINE void pbd_quat_matrix(pbd_float4 q, float *r)
{
    float x2 = q.x + q.x, y2 = q.y + q.y, z2 = q.z + q.z;
    float xx = q.x * x2, yy = q.y * y2, zz = q.z * z2;
    float xy = q.x * y2, xz = q.x * z2, yz = q.y * z2;
    float wx = q.w * x2, wy = q.w * y2, wz = q.w * z2;
    r[0] = 1.0f - (yy + zz);
    r[1] = xy - wz;
    r[2] = xz + wy;
    r[3] = xy + wz;
    r[4] = 1.0f - (xx + zz);
    r[5] = yz - wx;
    r[6] = xz - wy;
    r[7] = yz + wx;
    r[8] = 1.0f - (xx + yy);
}

/* The rotation of A (3 x 3, row-major) by Müller et al. 2016 ("A robust method to extract
 * the rotational part of deformations"), from the quaternion q: each step turns R(q) by
 * omega = sum_i r_i x a_i / (|sum_i r_i . a_i| + 1e-9) (r_i, a_i the columns), which
 * vanishes where R^T A is symmetric, the polar decomposition's rotation. The step is the
 * unit quaternion (omega / 2, 1) / |(omega / 2, 1)|, a turn by 2 atan(|omega| / 2) about
 * omega rather than the paper's |omega|: the same fixed point and direction, and only
 * basic operations and a square root (correctly rounded on both sides), no sin or cos,
 * whose last bits differ between libm and OpenCL. A fixed number of steps, no early exit.
 * CPU devices run it eight constraints at a time, lane by lane in the same operations
 * (polar8 in kernels/cpu/body_constraint.cl): a change here goes there too. */
PBD_INLINE pbd_float4 pbd_polar_rotation(const float *a, pbd_float4 q, int steps)
{
    for (int it = 0; it < steps; ++it) {
        float r[9];
        pbd_quat_matrix(q, r);
        float ox = 0.0f, oy = 0.0f, oz = 0.0f, dot = 0.0f;
        for (int k = 0; k < 3; ++k) { /* column k: r (r[k], r[3+k], r[6+k]), a likewise */
            float rx = r[k], ry = r[3 + k], rz = r[6 + k];
            float ax = a[k], ay = a[3 + k], az = a[6 + k];
            ox = ox + (ry * az - rz * ay);
            oy = oy + (rz * ax - rx * az);
            oz = oz + (rx * ay - ry * ax);
            dot = dot + ((rx * ax + ry * ay) + rz * az);
        }
        float inv = 0.5f / (pbd_fabsf(dot) + 1e-9f);
        float hx = ox * inv, hy = oy * inv, hz = oz * inv;
        /* q = (h, 1) q, then normalised */
        pbd_float4 n = PBD_F4(
            q.x + (hy * q.z - hz * q.y) + hx * q.w, q.y + (hz * q.x - hx * q.z) + hy * q.w,
            q.z + (hx * q.y - hy * q.x) + hz * q.w, q.w - ((hx * q.x + hy * q.y) + hz * q.z));
        float len = pbd_sqrtf(((n.x * n.x + n.y * n.y) + n.z * n.z) + n.w * n.w);
        q = PBD_F4(n.x / len, n.y / len, n.z / len, n.w / len);
    }
    return q;
}

/* Particle i's gradient of its body's volume, sum over its surface triangles (x_j x x_k) / 6
 * with positions relative to r (a closed surface's gradient does not depend on the origin),
 * its CSR row pairs[2 begin .. 2 end) holding each triangle's other two particles in
 * counter-clockwise order, in ring order (a pair's j is the last one's k: read once). */
PBD_INLINE pbd_float4 pbd_volume_gradient(PBD_GLOBAL const pbd_float4 *p, pbd_float4 r,
                                          PBD_GLOBAL const int *pairs, int begin, int end)
{
    float gx = 0.0f, gy = 0.0f, gz = 0.0f, bx = 0.0f, by = 0.0f, bz = 0.0f;
    const float sixth = 1.0f / 6.0f;
    int last = -1;
    for (int s = begin; s < end; ++s) {
        float ax = bx, ay = by, az = bz;
        if (pairs[2 * s] != last) {
            pbd_float4 a = p[pairs[2 * s]];
            ax = a.x - r.x, ay = a.y - r.y, az = a.z - r.z;
        }
        last = pairs[2 * s + 1];
        pbd_float4 b = p[last];
        bx = b.x - r.x, by = b.y - r.y, bz = b.z - r.z;
        gx = gx + (ay * bz - az * by);
        gy = gy + (az * bx - ax * bz);
        gz = gz + (ax * by - ay * bx);
    }
    return PBD_F4(gx * sixth, gy * sixth, gz * sixth, 0.0f);
}

/* Adds particle i's terms to the body sums s (PBD_BSUM_*): p' = p - r, its rest offset q
 * and mass m (rest: xyz q, w m), and, for pressure, its volume gradient g. */
PBD_INLINE void pbd_body_constraint_sums(pbd_float4 p, pbd_float4 r, pbd_float4 rest, pbd_float4 g,
                                         int flags, float *s)
{
    float px = p.x - r.x, py = p.y - r.y, pz = p.z - r.z;
    if (flags & PBD_BODY_SHAPE) {
        float m = rest.w, mx = m * px, my = m * py, mz = m * pz;
        float q[3] = {rest.x, rest.y, rest.z};
        s[PBD_BSUM_M] = s[PBD_BSUM_M] + m;
        s[PBD_BSUM_MP] = s[PBD_BSUM_MP] + mx;
        s[PBD_BSUM_MP + 1] = s[PBD_BSUM_MP + 1] + my;
        s[PBD_BSUM_MP + 2] = s[PBD_BSUM_MP + 2] + mz;
        PBD_UNROLL
        for (int k = 0; k < 3; ++k) {
            s[PBD_BSUM_MPQ + k] = s[PBD_BSUM_MPQ + k] + mx * q[k];
            s[PBD_BSUM_MPQ + 3 + k] = s[PBD_BSUM_MPQ + 3 + k] + my * q[k];
            s[PBD_BSUM_MPQ + 6 + k] = s[PBD_BSUM_MPQ + 6 + k] + mz * q[k];
            s[PBD_BSUM_MQ + k] = s[PBD_BSUM_MQ + k] + m * q[k];
        }
        if (flags & PBD_BODY_SHAPE_XPBD) {
            s[PBD_BSUM_MPP] = s[PBD_BSUM_MPP] + mx * px;
            s[PBD_BSUM_MPP + 1] = s[PBD_BSUM_MPP + 1] + my * py;
            s[PBD_BSUM_MPP + 2] = s[PBD_BSUM_MPP + 2] + mz * pz;
        }
    }
    if (flags & PBD_BODY_PRESSURE) {
        s[PBD_BSUM_VOL] = s[PBD_BSUM_VOL] + ((px * g.x + py * g.y) + pz * g.z);
        s[PBD_BSUM_WG] = s[PBD_BSUM_WG] + p.w * ((g.x * g.x + g.y * g.y) + g.z * g.z);
    }
}

#ifndef __OPENCL_C_VERSION__
/* Shape matching's sum m |q|^2 over the rest records [first, end) (xyz: q, w: m), in order:
 * a constant of the constraint, summed once by the plan (pbd_body_constraint.shape_mqq). */
static inline float pbd_shape_mqq(const pbd_float4 *rest, int first, int end)
{
    float s = 0.0f;
    for (int e = first; e < end; ++e) {
        pbd_float4 q = rest[e];
        s = s + q.w * ((q.x * q.x + q.y * q.y) + q.z * q.z);
    }
    return s;
}

/* Shape matching's sums m q over the rest records [first, end) (a piece of a constraint), in
 * pbd_body_constraint_sums' order and operations: constants of the piece, summed once by the
 * plan (pbd_plan.body_constraint_mq). */
static inline pbd_float4 pbd_shape_mq(const pbd_float4 *rest, int first, int end)
{
    pbd_float4 s = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int e = first; e < end; ++e) {
        pbd_float4 q = rest[e];
        s.x = s.x + q.w * q.x;
        s.y = s.y + q.w * q.y;
        s.z = s.z + q.w * q.z;
    }
    return s;
}
#endif

/* Whether the solve turns shape matching's goal (the constraint has it, and mass). */
PBD_INLINE int pbd_shape_solved(const float *s, pbd_body_constraint bc)
{
    return (bc.flags & PBD_BODY_SHAPE) && s[PBD_BSUM_M] > 0.0f;
}

/* Shape matching's A (3 x 3, row-major) and centre offset dc = c - r from the sums: the
 * solve's first part. */
PBD_INLINE void pbd_shape_matrix(const float *s, float *a, float *dc)
{
    float inv_m = 1.0f / s[PBD_BSUM_M];
    for (int k = 0; k < 3; ++k)
        dc[k] = s[PBD_BSUM_MP + k] * inv_m;
    for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 3; ++k)
            a[3 * i + k] = s[PBD_BSUM_MPQ + 3 * i + k] - dc[i] * s[PBD_BSUM_MQ + k];
}

/* Shape matching's goal for the apply, from rotation R (row-major) and step k (the
 * stiffness shape_k, or the XPBD form's step; 0 without shape matching), centre c, and the
 * reference point o (the position of the body's first particle at the solve, the same for
 * all its constraints): the member of rest offset q from its body's rest centre moves by
 * d = k (R (q - q0) - (p - c)), q0 the members' centre of q (goal[PBD_GOAL_CENTRE]: so that
 * their mass-weighted sum of q - q0 is zero but for q0's rounding, and the goals' centre of
 * mass is c, leaving the momentum alone), as
 * d = M q + u - k (p - o) with M = k R and u = k (c - o) - k R q0: every term the size of the
 * body, none the size of its place in the world. Kept as four columns: (M's first column, k),
 * its second and third (w: 0), and (u, 0), then o. A particle in several clusters of a body
 * moves once, by the mean of their columns (pbd_shape_set_goal). */
PBD_INLINE void pbd_shape_goal(PBD_GLOBAL pbd_float4 *goal, const float *rot, float k, pbd_float4 c,
                               pbd_float4 o)
{
    pbd_float4 q0 = goal[PBD_GOAL_CENTRE];
    float ux = (rot[0] * q0.x + rot[1] * q0.y) + rot[2] * q0.z;
    float uy = (rot[3] * q0.x + rot[4] * q0.y) + rot[5] * q0.z;
    float uz = (rot[6] * q0.x + rot[7] * q0.y) + rot[8] * q0.z;
    goal[PBD_GOAL_SHAPE] = PBD_F4(k * rot[0], k * rot[3], k * rot[6], k);
    goal[PBD_GOAL_SHAPE + 1] = PBD_F4(k * rot[1], k * rot[4], k * rot[7], 0.0f);
    goal[PBD_GOAL_SHAPE + 2] = PBD_F4(k * rot[2], k * rot[5], k * rot[8], 0.0f);
    goal[PBD_GOAL_SHAPE + 3] =
        PBD_F4(k * (c.x - o.x) - k * ux, k * (c.y - o.y) - k * uy, k * (c.z - o.z) - k * uz, 0.0f);
    goal[PBD_GOAL_BASE] = PBD_F4(o.x, o.y, o.z, 0.0f);
}

/* The solve's last part, given the rotation q of A (pbd_polar_rotation) where `shaped`
 * (pbd_shape_solved; else a, dc and q are not read). */
PBD_INLINE void pbd_body_constraint_finish(const float *s, pbd_body_constraint bc, pbd_float4 r,
                                           pbd_float4 o, PBD_GLOBAL pbd_float4 *goal, float inv_h2,
                                           int reset_lambda, int shaped, const float *a,
                                           const float *dc, pbd_float4 q)
{
    pbd_float4 c = goal[1];
    float rot[9] = {1.0f, 0.0f, 0.0f, 0.0f, 1.0f, 0.0f, 0.0f, 0.0f, 1.0f};
    float l = reset_lambda ? 0.0f : goal[2].w, step = 0.0f;
    float ls = reset_lambda ? 0.0f : goal[3].w, ks = 0.0f;
    if (!shaped)
        q = goal[0];
    else {
        pbd_quat_matrix(q, rot);
        c = PBD_F4(r.x + dc[0], r.y + dc[1], r.z + dc[2], 0.0f);
        if (bc.flags & PBD_BODY_SHAPE_XPBD) {
            float ra = 0.0f;
            for (int k = 0; k < 9; ++k)
                ra = ra + rot[k] * a[k];
            float mc = s[PBD_BSUM_M] * ((dc[0] * dc[0] + dc[1] * dc[1]) + dc[2] * dc[2]);
            float mpp = (s[PBD_BSUM_MPP] + s[PBD_BSUM_MPP + 1]) + s[PBD_BSUM_MPP + 2];
            float c2 = ((mpp - mc) - 2.0f * ra) + bc.shape_mqq;
            float cs = c2 > 0.0f ? pbd_sqrtf(c2) : 0.0f, at = bc.shape_compliance * inv_h2;
            float dl = (-cs - at * ls) / (1.0f + at);
            ks = cs > 0.0f ? -dl / cs : 1.0f / (1.0f + at);
            ks = ks > 1.0f ? 1.0f : (ks < -1.0f ? -1.0f : ks);
            ls = ls + dl;
        }
    }
    if (bc.flags & PBD_BODY_PRESSURE) {
        float cval = s[PBD_BSUM_VOL] * (1.0f / 3.0f) - bc.volume, wsum = s[PBD_BSUM_WG];
        float at = bc.compliance * inv_h2;
        int xpbd = bc.compliance >= 0.0f;
        float num = xpbd ? -cval - at * l : -bc.compliance * -cval;
        float den = xpbd ? wsum + at : wsum;
        step = wsum > 0.0f && den > 0.0f ? num / den : 0.0f;
        l = xpbd ? l + step : l;
    }
    goal[0] = q;
    goal[1] = PBD_F4(c.x, c.y, c.z, step);
    goal[2] = PBD_F4(rot[0], rot[1], rot[2], l);
    goal[3] = PBD_F4(rot[3], rot[4], rot[5], ls);
    goal[4] = PBD_F4(rot[6], rot[7], rot[8], ks);
    pbd_shape_goal(goal, rot,
                   !(bc.flags & PBD_BODY_SHAPE)       ? 0.0f
                   : (bc.flags & PBD_BODY_SHAPE_XPBD) ? ks
                                                      : bc.shape_k,
                   c, o);
}

/* The per-body solve on the summed s: for shape matching the centre c = r + sum m p' / M
 * and A = sum m (p - c) q^T = sum m p' q^T - (c - r) (sum m q)^T, then its rotation from the
 * body's previous one; for pressure, C = V - volume and the XPBD (compliance >= 0) or PBD
 * (< 0) step s, lambda += s (reset at the substep's first iteration). goal: the body's
 * PBD_GOAL_COUNT float4, read and written.
 *
 * Shape matching's XPBD form takes the energy sum m |p - g|^2 / (2 alpha) as one constraint
 * of the body, C = sqrt(sum m |p - g|^2) (sum m |p - c|^2 - 2 tr(R^T A) + sum m |q|^2, from
 * the same sums, sum m |p'|^2 by component, and the constant sum m |q|^2 from the record),
 * with sum w |grad_i C|^2 = 1 (pinned particles counted as free):
 * dlambda = (-C - alpha~ lambda) / (1 + alpha~), and every particle moves toward its goal by
 * the same fraction k = -dlambda / C (clamped to [-1, 1]), so the step keeps the body's
 * momentum as the stiffness form does. A particle swings about its goal at the angular
 * frequency 1 / sqrt(alpha). */
PBD_INLINE void pbd_body_constraint_solve(const float *s, pbd_body_constraint bc, pbd_float4 r,
                                          pbd_float4 o, PBD_GLOBAL pbd_float4 *goal, float inv_h2,
                                          int reset_lambda)
{
    float a[9] = {0.0f}, dc[3] = {0.0f};
    pbd_float4 q = goal[0];
    int shaped = pbd_shape_solved(s, bc);
    if (shaped) {
        pbd_shape_matrix(s, a, dc);
        q = pbd_polar_rotation(a, q, PBD_POLAR_ITERATIONS);
    }
    pbd_body_constraint_finish(s, bc, r, o, goal, inv_h2, reset_lambda, shaped, a, dc, q);
}

/* The goal of a particle in the clusters set_constraints[begin .. end - 1] (of one body, so
 * of one reference point o = g[4]): the sum of their columns in that order, times 1 / n for
 * n > 1 clusters, so that the particle moves by the mean of their pulls. A cluster's member
 * weighs m / n in the cluster's sums, so that the mean keeps the body's momentum. */
PBD_INLINE void pbd_shape_set_goal(PBD_GLOBAL const int *set_constraints, int begin, int end,
                                   PBD_GLOBAL const pbd_float4 *goal, pbd_float4 *g)
{
    PBD_GLOBAL const pbd_float4 *f = goal + set_constraints[begin] * PBD_GOAL_COUNT;
    for (int j = 0; j < 4; ++j)
        g[j] = f[PBD_GOAL_SHAPE + j];
    g[4] = f[PBD_GOAL_BASE];
    for (int e = begin + 1; e < end; ++e) {
        f = goal + set_constraints[e] * PBD_GOAL_COUNT;
        for (int j = 0; j < 4; ++j) {
            pbd_float4 a = f[PBD_GOAL_SHAPE + j];
            g[j] = PBD_F4(g[j].x + a.x, g[j].y + a.y, g[j].z + a.z, g[j].w + a.w);
        }
    }
    if (end - begin > 1) {
        float inv = 1.0f / (float)(end - begin);
        for (int j = 0; j < 4; ++j)
            g[j] = PBD_F4(g[j].x * inv, g[j].y * inv, g[j].z * inv, g[j].w * inv);
    }
}

/* Shape matching's move of a particle at p, rest offset q, toward goal columns g0 .. g3 about
 * the reference point o: d = (((g0 q.x + g1 q.y) + g2 q.z) + g3) - g0.w (p - o), component by
 * component. */
PBD_INLINE pbd_float4 pbd_shape_move(pbd_float4 p, pbd_float4 q, pbd_float4 g0, pbd_float4 g1,
                                     pbd_float4 g2, pbd_float4 g3, pbd_float4 o)
{
    float k = g0.w;
    return PBD_F4((((g0.x * q.x + g1.x * q.y) + g2.x * q.z) + g3.x) - k * (p.x - o.x),
                  (((g0.y * q.x + g1.y * q.y) + g2.y * q.z) + g3.y) - k * (p.y - o.y),
                  (((g0.z * q.x + g1.z * q.y) + g2.z * q.z) + g3.z) - k * (p.z - o.z), 0.0f);
}

/* The apply's last part: p moved by d and, with pressure, along its volume gradient grad[i]
 * by w s (goal[1].w of body b). */
PBD_INLINE pbd_float4 pbd_body_constraint_pressure(pbd_float4 p, pbd_float4 d, int i, int b,
                                                   pbd_body_constraint bc,
                                                   PBD_GLOBAL const pbd_float4 *grad,
                                                   PBD_GLOBAL const pbd_float4 *goal)
{
    if (bc.flags & PBD_BODY_PRESSURE) {
        pbd_float4 gr = grad[i];
        float ws = p.w * goal[b * PBD_GOAL_COUNT + 1].w;
        d = PBD_F4(d.x + ws * gr.x, d.y + ws * gr.y, d.z + ws * gr.z, 0.0f);
    }
    return PBD_F4(p.x + d.x, p.y + d.y, p.z + d.z, p.w);
}

/* Particle i's new position (p its current one, b its body): toward its shape-matching goal
 * (its body's, or its set's of clusters, set particle_set[i] >= 0: the constraints
 * set_constraints[set_offsets[s] ..]), from its rest offset member_rest[i] from the body's
 * rest centre, and along its volume gradient grad[i] by w s (pressure). All from the same
 * iterate: they are applied together. Pinned particles (w = 0) stay. */
PBD_INLINE pbd_float4 pbd_body_constraint_apply(
    pbd_float4 p, int i, int b, PBD_GLOBAL const pbd_body_constraint *constraints,
    PBD_GLOBAL const pbd_float4 *member_rest, PBD_GLOBAL const pbd_float4 *grad,
    PBD_GLOBAL const int *particle_set, PBD_GLOBAL const int *set_offsets,
    PBD_GLOBAL const int *set_constraints, PBD_GLOBAL const pbd_float4 *goal)
{
    if (!(p.w > 0.0f))
        return p;
    pbd_body_constraint bc = constraints[b];
    pbd_float4 d = PBD_F4(0.0f, 0.0f, 0.0f, 0.0f);
    int s = particle_set[i];
    if (bc.flags & PBD_BODY_SHAPE) {
        PBD_GLOBAL const pbd_float4 *g = goal + b * PBD_GOAL_COUNT;
        d = pbd_shape_move(p, member_rest[i], g[PBD_GOAL_SHAPE], g[PBD_GOAL_SHAPE + 1],
                           g[PBD_GOAL_SHAPE + 2], g[PBD_GOAL_SHAPE + 3], g[PBD_GOAL_BASE]);
    } else if (s >= 0) {
        pbd_float4 g[PBD_SET_GOAL_COUNT];
        pbd_shape_set_goal(set_constraints, set_offsets[s], set_offsets[s + 1], goal, g);
        d = pbd_shape_move(p, member_rest[i], g[0], g[1], g[2], g[3], g[4]);
    }
    return pbd_body_constraint_pressure(p, d, i, b, bc, grad, goal);
}

/* ---- particle contacts -------------------------------------------------------------------
 * Particles of bodies with a radius are spheres. Every substep a uniform grid of cells of
 * PBD_CONTACT_REACH times the largest radii's sum is hashed into a table of a power-of-two
 * size (the particles' counting sort: cell_start[h] .. cell_start[h + 1] - 1 of cell_sorted
 * are the particles whose cell hashes to h, ascending). From each particle's 27 neighbouring
 * cells come its candidates, the particles within PBD_CONTACT_REACH radii's sums, listed
 * once a substep (contact_cand, contact_other); every iteration projects those closer than
 * their radii's sum as unilateral distance constraints, C = r_i + r_j - |p_i - p_j| > 0,
 * with a Jacobi gather: each particle sums its own side of every pair. Both sides of a pair
 * are computed from the same operands in the same order, so they are exactly opposite
 * (scaled by each end's inverse mass), and both ends are scaled by the same relaxation,
 * omega / max(n_i, n_j) (n: the contacts each end had at the substep's start), so a pair's
 * corrections carry no net momentum. */

/* Cells farther than this from the origin are clamped into the last one (NaN: the first). */
#define PBD_CELL_LIMIT 1048576.0f
/* The farthest two clamped cells are apart along an axis. */
#define PBD_CELL_SPAN (2.0f * PBD_CELL_LIMIT)

PBD_INLINE int pbd_cell_coord(float v, float inv_cell)
{
    float f = pbd_floorf(v * inv_cell);
    if (!(f >= -PBD_CELL_LIMIT))
        f = -PBD_CELL_LIMIT;
    if (f > PBD_CELL_LIMIT)
        f = PBD_CELL_LIMIT;
    return (int)f;
}

/* A cell's entry in a table of mask + 1 entries: its row of cells along x hashed (Teschner
 * et al. 2003's primes), then x added, so that the cells of a row that a search visits are
 * consecutive entries, one run of the sorted particles. Different cells may share an entry:
 * the contact test compares the cells themselves. */
PBD_INLINE int pbd_cell_hash(int x, int y, int z, int mask)
{
    unsigned h = (((unsigned)y * 19349663u) ^ ((unsigned)z * 83492791u)) + (unsigned)x;
    return (int)(h & (unsigned)mask);
}

/* Radius classes: where the radii differ more than twofold, the particles of each class
 * (radii up to grid_r[k], ascending; 0 where class k is unused) are hashed in cells of their
 * own, PBD_CONTACT_REACH times twice that radius, so that a fine particle does not search
 * cells sized for a coarse one, into a part of the table of their own: 2^b entries (b: byte
 * k of grid_bits) after the classes before. With one class, the whole table. */
#define PBD_CONTACT_CLASSES 4
/* With several classes, each class's cells are this much wider than its pairs' reach, and a
 * search of a finer class's cells reaches PBD_CONTACT_MARGIN further than its partners'
 * reach: so that neither a reach of a whole number of cells (radii 5 times apart: 3 cells)
 * nor rounding at a cell's edge makes a search a cell too narrow or too wide. */
#define PBD_CONTACT_CELL_WIDER 1.001f
#define PBD_CONTACT_MARGIN     1.00001f

PBD_INLINE float pbd_grid_at(pbd_float4 v, int k)
{
    return k == 0 ? v.x : k == 1 ? v.y : k == 2 ? v.z : v.w;
}

/* Whether class k is used: its part of the table has a size (16 entries or more). */
PBD_INLINE int pbd_grid_used(int grid_bits, int k)
{
    return ((grid_bits >> (8 * k)) & 255) != 0;
}

/* The class of a particle of radius r. */
PBD_INLINE int pbd_contact_class(float r, pbd_float4 grid_r, int grid_bits)
{
    return (pbd_grid_used(grid_bits, 1) && r > grid_r.x) +
           (pbd_grid_used(grid_bits, 2) && r > grid_r.y) +
           (pbd_grid_used(grid_bits, 3) && r > grid_r.z);
}

/* Class k's part of the table: its first entry, and its size less one (a mask). */
PBD_INLINE int pbd_grid_part(int grid_bits, int k, int *mask)
{
    int base = 0;
    for (int j = 0; j < k; ++j)
        base += 1 << ((grid_bits >> (8 * j)) & 31);
    *mask = (1 << ((grid_bits >> (8 * k)) & 31)) - 1;
    return base;
}

/* Particle i's cell from its position: cell[4 i .. 4 i + 2] its coordinates in its class's
 * cells, cell[4 i + 3] its table entry, which it returns. */
PBD_INLINE int pbd_contact_cell(PBD_GLOBAL const pbd_float4 *p, PBD_GLOBAL const float *radius,
                                PBD_GLOBAL int *cell, int i, pbd_float4 grid_inv, pbd_float4 grid_r,
                                int grid_bits)
{
    pbd_float4 q = p[i];
    int k = pbd_contact_class(radius[i], grid_r, grid_bits), mask;
    int base = pbd_grid_part(grid_bits, k, &mask);
    float inv_cell = pbd_grid_at(grid_inv, k);
    int x = pbd_cell_coord(q.x, inv_cell), y = pbd_cell_coord(q.y, inv_cell);
    int z = pbd_cell_coord(q.z, inv_cell), h = base + pbd_cell_hash(x, y, z, mask);
    cell[4 * i] = x, cell[4 * i + 1] = y, cell[4 * i + 2] = z, cell[4 * i + 3] = h;
    return h;
}

/* Pairs within this many radii's sums at the substep's start are contact candidates for its
 * iterations: a particle moves far less in a substep, and the list is much shorter than
 * the 27 cells it comes from. */
#define PBD_CONTACT_REACH 1.5f
/* A particle's candidates listed (contact_other[i PBD_CONTACT_LIST + k]); a particle with
 * more searches the cells again every iteration, in the same order, so the sums are the
 * same either way. */
#define PBD_CONTACT_LIST 32

/* One contact, particle i's side against j, added to out (pbd_contacts says what); state:
 * the pair's friction state in i's list, or null for a pair found by searching the cells; it
 * is used where j lists its partners too (cand[j], read only for a frictional contact).
 * Returns 0 where the pair has no contact with state and friction, else 1 where its
 * friction sticks, 2 where it slides. */
PBD_INLINE int pbd_contact_pair(PBD_GLOBAL const pbd_float4 *p, PBD_GLOBAL const pbd_float4 *x,
                                PBD_GLOBAL const float *radius, PBD_GLOBAL const int *body,
                                PBD_GLOBAL const pbd_float4 *material, PBD_GLOBAL const int *num,
                                PBD_GLOBAL const int *cand, float omega, int i, int j,
                                PBD_GLOBAL float *state, float *out)
{
    int bi = body[i], bj = body[j];
    float rs = radius[i] + radius[j];
    pbd_float4 pi = p[i], pj = p[j];
    float ex = pi.x - pj.x, ey = pi.y - pj.y, ez = pi.z - pj.z;
    float l2 = ex * ex + ey * ey + ez * ez, ws = pi.w + pj.w;
    if (!(l2 < rs * rs) || !(l2 > 0.0f))
        return 0;
    int ni = num[i], nj = num[j], nm = ni > nj ? ni : nj, kind = 0;
    float len = pbd_sqrtf(l2), depth = rs - len, share = omega / (float)(nm > 0 ? nm : 1);
    float f = pi.w * share;
    float g = depth / (len * ws);
    float cxv = g * ex, cyv = g * ey, czv = g * ez;
    pbd_float4 mi = material[bi], mj = material[bj], xi = x[i];
    if (mi.x > 0.0f && mj.x > 0.0f) {
        pbd_float4 xj = x[j];
        float nx = ex / len, ny = ey / len, nz = ez / len;
        float rx = (pi.x - xi.x) - (pj.x - xj.x);
        float ry = (pi.y - xi.y) - (pj.y - xj.y);
        float rz = (pi.z - xi.z) - (pj.z - xj.z);
        float rn = rx * nx + ry * ny + rz * nz;
        float tx = rx - rn * nx, ty = ry - rn * ny, tz = rz - rn * nz;
        float lt = pbd_sqrtf(tx * tx + ty * ty + tz * tz);
        float mus = pbd_sqrtf(mi.x * mj.x);
        float muk = mi.y > 0.0f && mj.y > 0.0f ? pbd_sqrtf(mi.y * mj.y) : 0.0f;
        float k;
        if (state && cand[j] <= PBD_CONTACT_LIST) { /* the same rule from either end */
            /* what this pass takes back of t, and the pair's budget: a share of each */
            float st = *state, want = share * lt, budget = pbd_fabsf(st) + share * (mus * depth);
            k = want <= budget     ? 1.0f
                : !(st < 0.0f)     ? budget / want
                : muk * depth < lt ? muk * depth / lt
                                   : 1.0f;
            float kept = want - k * want, left = budget - k * want;
            left = left > 0.0f ? left : 0.0f;
            *state = kept > budget ? (left > 0.0f ? -left : PBD_SLIDING) : left;
            kind = *state < 0.0f ? 2 : 1;
        } else {
            k = lt < mus * depth ? 1.0f
                : lt > 0.0f      ? (muk * depth < lt ? muk * depth / lt : 1.0f)
                                 : 0.0f;
        }
        float kw = k / ws;
        cxv = cxv - kw * tx, cyv = cyv - kw * ty, czv = czv - kw * tz;
    }
    cxv = f * cxv, cyv = f * cyv, czv = f * czv;
    out[0] = out[0] + cxv, out[1] = out[1] + cyv, out[2] = out[2] + czv;
    if (bj != bi) {
        /* the lever: the midpoint, the same bits from either end */
        float ax = (pi.x + pj.x) * 0.5f - xi.x, ay = (pi.y + pj.y) * 0.5f - xi.y;
        float az = (pi.z + pj.z) * 0.5f - xi.z;
        out[3] = out[3] + cxv, out[4] = out[4] + cyv, out[5] = out[5] + czv;
        out[6] = out[6] + (ay * czv - az * cyv);
        out[7] = out[7] + (az * cxv - ax * czv);
        out[8] = out[8] + (ax * cyv - ay * cxv);
    }
    return kind;
}

/* pbd_contact_search's candidates of particle i (radius ri, body bi, at pi, rest qi) in one
 * class's cells within r of (cx, cy, cz), or with `whole`, its whole part of the table
 * (base, mask); n: the candidates so far; returns them with these. Inlined twice, so that the
 * usual search (r = 1) gets fixed loops. */
PBD_ALWAYS_INLINE int pbd_contact_cells(
    PBD_GLOBAL const pbd_float4 *p0, PBD_GLOBAL const pbd_float4 *rest,
    PBD_GLOBAL const float *radius, PBD_GLOBAL const int *body, PBD_GLOBAL const int *cell,
    PBD_GLOBAL const int *cell_start, PBD_GLOBAL const int *cell_sorted, int i, int bi, int self,
    float ri, pbd_float4 pi, pbd_float4 qi, int cx, int cy, int cz, int r, int whole, int base,
    int mask, int n, int list, PBD_GLOBAL int *other, int *active, int solve,
    PBD_GLOBAL const pbd_float4 *p, PBD_GLOBAL const pbd_float4 *x,
    PBD_GLOBAL const pbd_float4 *material, PBD_GLOBAL const int *num, float omega, float *out)
{
    int span = 2 * r + 1, rows = whole ? 1 : span, width = whole ? 2 * r : 0;
    for (int dz = 0; dz < rows; ++dz)
        for (int dy = 0; dy < rows; ++dy) {
            /* the row's cells x - r to x + r, in that order: consecutive entries
             * (pbd_cell_hash), so one run of cell_sorted, or two where they wrap past the
             * part's end; a particle of the row's cell x + d lies in the entry of x + d; or
             * with `whole`, y and z within r as well */
            int hy = whole ? cy - r : cy + dy - r, hz = whole ? cz - r : cz + dz - r;
            int h = whole ? 0 : pbd_cell_hash(cx - r, hy, hz, mask);
            int wrap = !whole && h > mask - (span - 1);
            for (int part = 0; part <= wrap; ++part) {
                int lo = base + (part ? 0 : h);
                int hi = base + (whole  ? mask
                                 : part ? h + span - 2 - mask
                                 : wrap ? mask
                                        : h + span - 1);
                for (int s = cell_start[lo]; s < cell_start[hi + 1]; ++s) {
                    int j = cell_sorted[s], bj = body[j];
                    if ((bj == bi && !self) || j == i ||
                        (unsigned)(cell[4 * j] - cx + r) > (unsigned)(2 * r) ||
                        (unsigned)(cell[4 * j + 1] - hy) > (unsigned)width ||
                        (unsigned)(cell[4 * j + 2] - hz) > (unsigned)width)
                        continue;
                    float rj = radius[j];
                    if (!(rj > 0.0f))
                        continue;
                    float rs = ri + rj, reach = PBD_CONTACT_REACH * rs;
                    pbd_float4 pj = p0[j];
                    float ex = pi.x - pj.x, ey = pi.y - pj.y, ez = pi.z - pj.z;
                    float l2 = ex * ex + ey * ey + ez * ez;
                    if (!(l2 < reach * reach) || !(pi.w + pj.w > 0.0f))
                        continue;
                    if (bj == bi) {
                        pbd_float4 qj = rest[j];
                        float fx = qi.x - qj.x, fy = qi.y - qj.y, fz = qi.z - qj.z;
                        if (fx * fx + fy * fy + fz * fz < rs * rs)
                            continue;
                    }
                    if (list && n < PBD_CONTACT_LIST)
                        other[i * PBD_CONTACT_LIST + n] = j;
                    if (solve)
                        pbd_contact_pair(p, x, radius, body, material, num,
                                         (PBD_GLOBAL const int *)0, omega, i, j,
                                         (PBD_GLOBAL float *)0, out);
                    ++n;
                    *active += l2 < rs * rs && l2 > 0.0f;
                }
            }
        }
    return n;
}

/* Particle i's contact candidates at the positions the hash was built from (p0), the
 * neighbouring cells in a fixed order and each cell's particles by index: returns how many.
 * *active gets how many are closer than their radii's sum. With `list`, the first
 * PBD_CONTACT_LIST go to other[i PBD_CONTACT_LIST ..]; with `solve`, each one's contact at
 * the positions p is added to out (pbd_contact_pair). Pairs within a body count only with its
 * self-collision, and only if the two were at least r_i + r_j apart at rest. The test is
 * symmetric, and each class's search reaches its largest partner, so j is i's candidate
 * exactly when i is j's.
 *
 * Each radius class in turn (pbd_contact_class): the cells within R of i's cell in that
 * class's cells, 1 in its own class and coarser ones, in finer ones R = ceil((r_i's class +
 * r_k) PBD_CONTACT_REACH / cell_k PBD_CONTACT_MARGIN). Rows along x, z then y ascending, each row's
 * 2 R + 1 cells one run of entries of the class's part of the table (pbd_cell_hash), or two where
 * they wrap past its end. Where the cells to search outnumber the part's entries, one pass
 * over the whole part instead. */
PBD_INLINE int pbd_contact_search(
    PBD_GLOBAL const pbd_float4 *p0, PBD_GLOBAL const pbd_float4 *rest,
    PBD_GLOBAL const float *radius, PBD_GLOBAL const int *body, PBD_GLOBAL const int *body_self,
    PBD_GLOBAL const int *cell, PBD_GLOBAL const int *cell_start, PBD_GLOBAL const int *cell_sorted,
    int grid_bits, pbd_float4 grid_inv, pbd_float4 grid_r, int i, int list, PBD_GLOBAL int *other,
    int *active, int solve, PBD_GLOBAL const pbd_float4 *p, PBD_GLOBAL const pbd_float4 *x,
    PBD_GLOBAL const pbd_float4 *material, PBD_GLOBAL const int *num, float omega, float *out)
{
    float ri = radius[i];
    int n = 0, bi = body[i];
    *active = 0;
    if (!(ri > 0.0f))
        return 0;
    pbd_float4 pi = p0[i], qi = rest[i];
    int self = body_self[bi], own = pbd_contact_class(ri, grid_r, grid_bits);
    float r_own = pbd_grid_at(grid_r, own);
    for (int k = 0; k < PBD_CONTACT_CLASSES && pbd_grid_used(grid_bits, k); ++k) {
        int cx = cell[4 * i], cy = cell[4 * i + 1], cz = cell[4 * i + 2], r = 1, mask;
        int base = pbd_grid_part(grid_bits, k, &mask);
        if (k != own) {
            float inv_cell = pbd_grid_at(grid_inv, k), rk = pbd_grid_at(grid_r, k);
            /* the reach in cells, and its margin (PBD_CONTACT_CELL_WIDER) */
            float q = (r_own + rk) * (PBD_CONTACT_REACH * inv_cell) * PBD_CONTACT_MARGIN;
            cx = pbd_cell_coord(pi.x, inv_cell), cy = pbd_cell_coord(pi.y, inv_cell);
            cz = pbd_cell_coord(pi.z, inv_cell);
            /* q > 1 in a finer class, below or about 1 in a coarser one; at most the
             * widest distance of two cells within the cells' limit */
            r = q < 1.0f ? 1 : q < PBD_CELL_SPAN ? (int)q : (int)PBD_CELL_SPAN;
            r += (float)r < q && q < PBD_CELL_SPAN;
        }
        /* the class's whole part once, where a wider search's cells outnumber its entries */
        int span = 2 * r + 1, whole = r > 128 || span * span * span > mask;
        if (r == 1)
            n = pbd_contact_cells(p0, rest, radius, body, cell, cell_start, cell_sorted, i, bi,
                                  self, ri, pi, qi, cx, cy, cz, 1, 0, base, mask, n, list, other,
                                  active, solve, p, x, material, num, omega, out);
        else
            n = pbd_contact_cells(p0, rest, radius, body, cell, cell_start, cell_sorted, i, bi,
                                  self, ri, pi, qi, cx, cy, cz, r, whole, base, mask, n, list,
                                  other, active, solve, p, x, material, num, omega, out);
    }
    return n;
}

/* Particle i's contacts: its listed candidates, or with more than the list holds
 * (cand[i]), the cells again. out[0..2]: its correction; out[3..5]: the part of it that
 * other bodies cause; out[6..8]: that part's moment about x[i], taken at the contact point,
 * the pair's midpoint, so that a pair's moments cancel, friction's too.
 *
 * Friction (Macklin et al. 2014, eq. 24-25, as pbd_friction): the pair's relative motion
 * since the substep's start, (p_i - x_i) - (p_j - x_j), has a tangential part t, taken back
 * (relaxed as the push is) shared by inverse mass. A listed pair keeps a state over the
 * substep's passes (as pbd_friction's, its budget in relaxed units, and its sign): static
 * friction takes t back up to mu_s times the pushes' depths so far, less what it took
 * already; a pair that slides takes back mu_k times this pass's depth. A pair without state
 * (either end has more than the list holds) decides each pass: static where |t| < mu_s
 * depth, else kinetic. mu_s, mu_k: the two bodies' (material .x, .y) mixed as Box2D mixes,
 * sqrt(a b); a body without friction of its own (< 0) makes the contact frictionless.
 * The two copies of a pair's state, one in each end's list, stay the same bits. Returns 1
 * where i has listed frictional contacts and all of them slide. */
PBD_INLINE int pbd_contacts(PBD_GLOBAL const pbd_float4 *p, PBD_GLOBAL const pbd_float4 *x,
                            PBD_GLOBAL const pbd_float4 *p0, PBD_GLOBAL const pbd_float4 *rest,
                            PBD_GLOBAL const float *radius, PBD_GLOBAL const int *body,
                            PBD_GLOBAL const int *body_self, PBD_GLOBAL const pbd_float4 *material,
                            PBD_GLOBAL const int *cell, PBD_GLOBAL const int *cell_start,
                            PBD_GLOBAL const int *cell_sorted, int grid_bits, pbd_float4 grid_inv,
                            pbd_float4 grid_r, PBD_GLOBAL const int *cand,
                            PBD_GLOBAL const int *other, PBD_GLOBAL const int *num,
                            PBD_GLOBAL float *state, float omega, int i, float *out)
{
    for (int k = 0; k < 9; ++k)
        out[k] = 0.0f;
    int n = cand[i], active, stick = 0, slide = 0;
    if (n <= PBD_CONTACT_LIST) {
        for (int k = 0; k < n; ++k) {
            int kind = pbd_contact_pair(p, x, radius, body, material, num, cand, omega, i,
                                        other[i * PBD_CONTACT_LIST + k],
                                        state + i * PBD_CONTACT_LIST + k, out);
            stick += kind == 1;
            slide += kind == 2;
        }
    } else {
        pbd_contact_search(p0, rest, radius, body, body_self, cell, cell_start, cell_sorted,
                           grid_bits, grid_inv, grid_r, i, 0, (PBD_GLOBAL int *)0, &active, 1, p, x,
                           material, num, omega, out);
    }
    return slide > 0 && stick == 0;
}

/* Particle i's contact correction into dp[i] (applied by pbd_contact_apply once every
 * particle has its own). What other bodies push it by is, with `track`, an external impulse
 * for the momentum tracker (dx), as a collider's push is. The tracker takes every impulse's
 * moment at the particle's final position, but a pair's pushes cancel in moment only where
 * they act, so the push is also kept apart (cdx) with its moment there about x[i] (a), from
 * which pbd_contact_moment corrects the tracked angular momentum. */
PBD_INLINE void pbd_contact_solve(
    PBD_GLOBAL const pbd_float4 *p, PBD_GLOBAL const pbd_float4 *x, PBD_GLOBAL const pbd_float4 *p0,
    PBD_GLOBAL const pbd_float4 *rest, PBD_GLOBAL const float *radius, PBD_GLOBAL const int *body,
    PBD_GLOBAL const int *body_self, PBD_GLOBAL const pbd_float4 *material,
    PBD_GLOBAL const int *cell, PBD_GLOBAL const int *cell_start, PBD_GLOBAL const int *cell_sorted,
    int grid_bits, pbd_float4 grid_inv, pbd_float4 grid_r, PBD_GLOBAL const int *cand,
    PBD_GLOBAL const int *other, PBD_GLOBAL const int *num, PBD_GLOBAL float *state,
    PBD_GLOBAL int *slide, float omega, PBD_GLOBAL pbd_float4 *dp, PBD_GLOBAL pbd_float4 *dx,
    PBD_GLOBAL pbd_float4 *cdx, PBD_GLOBAL pbd_float4 *a, int track, int i)
{
    float o[9];
    /* whether its frictional contacts all slide: carried to the next substep's pairs (any one
     * of them sliding, carried, passed the slide to the particle's other pairs, and a box with
     * mu_k 0.4 on a particle floor crept at 0.89 mu_s again); a pinned particle's never,
     * which would reach every pair it holds */
    slide[i] = pbd_contacts(p, x, p0, rest, radius, body, body_self, material, cell, cell_start,
                            cell_sorted, grid_bits, grid_inv, grid_r, cand, other, num, state,
                            omega, i, o) &&
               p[i].w > 0.0f;
    dp[i] = PBD_F4(o[0], o[1], o[2], 0.0f);
    if (track && (o[3] != 0.0f || o[4] != 0.0f || o[5] != 0.0f)) {
        pbd_float4 c = cdx[i], m = a[i];
        dx[i] = PBD_F4(dx[i].x + o[3], dx[i].y + o[4], dx[i].z + o[5], dx[i].w); /* w: friction's */
        cdx[i] = PBD_F4(c.x + o[3], c.y + o[4], c.z + o[5], 0.0f);
        a[i] = PBD_F4(m.x + o[6], m.y + o[7], m.z + o[8], 0.0f);
    }
}

/* Particle i's listed pairs' friction state as its list is made, once a substep: no budget
 * yet, and sliding where either particle's frictional contacts all slid at the end of the
 * last substep (slide, pbd_contact_solve), which both ends read alike. */
PBD_INLINE void pbd_contact_list_start(PBD_GLOBAL const int *cand, PBD_GLOBAL const int *other,
                                       PBD_GLOBAL const int *slide, PBD_GLOBAL float *state, int i)
{
    int n = cand[i] <= PBD_CONTACT_LIST ? cand[i] : 0;
    for (int k = 0; k < n; ++k)
        state[i * PBD_CONTACT_LIST + k] =
            slide[i] || slide[other[i * PBD_CONTACT_LIST + k]] ? PBD_SLIDING : 0.0f;
}

/* The substep's contact bookkeeping: the positions the hash is built from, and no contact
 * displacement yet. */
PBD_INLINE void pbd_contact_start(PBD_GLOBAL const pbd_float4 *p, PBD_GLOBAL pbd_float4 *p0,
                                  PBD_GLOBAL pbd_float4 *cdx, PBD_GLOBAL pbd_float4 *a, int i)
{
    p0[i] = p[i];
    cdx[i] = PBD_F4(0.0f, 0.0f, 0.0f, 0.0f);
    a[i] = PBD_F4(0.0f, 0.0f, 0.0f, 0.0f);
}

/* After the iterations (p final), body b's tracked angular momentum L_r gets two terms that
 * make a pair's contacts change the pair's total L (about any fixed point) by no more than
 * rounding:
 * - the difference between its contact impulses' moments where they acted and where the
 *   tracker takes them, at the final positions: sum of m / h (a - (p - x) x cdx);
 * - L_r is about the centre of mass, which the substep moves by h P_new / M, where P_new
 *   includes the contacts' impulse J: its moment c x P about a fixed point then changes by
 *   h / M (J x P_r) more than the impulses' own moment, which this takes back:
 *   P_r x (sum m cdx) / M, P_r the tracked momentum before the substep's impulses.
 * Sums in particle order. */
PBD_INLINE void pbd_contact_moment(int b, PBD_GLOBAL const int *body_first,
                                   PBD_GLOBAL const int *flags, PBD_GLOBAL const pbd_float4 *p,
                                   PBD_GLOBAL const pbd_float4 *v, PBD_GLOBAL const pbd_float4 *x,
                                   PBD_GLOBAL const pbd_float4 *cdx, PBD_GLOBAL const pbd_float4 *a,
                                   float inv_h, PBD_GLOBAL pbd_acc *track)
{
    if (!(flags[b] & PBD_BODY_MOMENTUM))
        return;
    pbd_acc s[3] = {(pbd_acc)0, (pbd_acc)0, (pbd_acc)0};
    pbd_acc j[3] = {(pbd_acc)0, (pbd_acc)0, (pbd_acc)0}, mass = (pbd_acc)0, pj[3];
    for (int i = body_first[b]; i < body_first[b + 1]; ++i) {
        pbd_float4 q = p[i], o = x[i], c = cdx[i], m = a[i];
        float rx = q.x - o.x, ry = q.y - o.y, rz = q.z - o.z;
        float dx = m.x - (ry * c.z - rz * c.y), dy = m.y - (rz * c.x - rx * c.z);
        float dz = m.z - (rx * c.y - ry * c.x);
        pbd_acc mi = (pbd_acc)v[i].w;
        s[0] = s[0] + mi * (pbd_acc)(dx * inv_h);
        s[1] = s[1] + mi * (pbd_acc)(dy * inv_h);
        s[2] = s[2] + mi * (pbd_acc)(dz * inv_h);
        j[0] = j[0] + mi * (pbd_acc)c.x;
        j[1] = j[1] + mi * (pbd_acc)c.y;
        j[2] = j[2] + mi * (pbd_acc)c.z;
        mass = mass + mi;
    }
    PBD_GLOBAL pbd_acc *t = track + 6 * b;
    pbd_cross(t[0], t[1], t[2], j[0], j[1], j[2], pj);
    for (int k = 0; k < 3; ++k)
        t[3 + k] = t[3 + k] + (s[k] + pj[k] / mass);
}

PBD_INLINE void pbd_contact_apply(PBD_GLOBAL pbd_float4 *p, PBD_GLOBAL const pbd_float4 *dp, int i)
{
    pbd_float4 q = p[i], d = dp[i];
    p[i] = PBD_F4(q.x + d.x, q.y + d.y, q.z + d.z, q.w);
}

#endif
