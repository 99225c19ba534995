/* The prediction on CPU devices (predict_one: common/predict.cl), a run of PBD_PARTICLE_RUN
 * particles a work-item, eight at a time, held as they are stored: two float16 of four particles
 * each. The stage is element-wise but for the cross products, whose operands are permuted within
 * each particle (yzx, zxy), so there is nothing to transpose; each lane does predict_one's
 * operations (pbd_apply_rigid's and pbd_predict's) in their order: the same bits. A run keeps its
 * body's records in registers while its particles stay in that body (a load of them for every
 * eight, each waiting on the particle's body index, cost more than the correction's arithmetic).
 * The last few particles go one by one. */

/* Within each particle of four: (y, z, x, w) and (z, x, y, w), and w everywhere. */
#define PBD_YZX ((uint16)(1, 2, 0, 3, 5, 6, 4, 7, 9, 10, 8, 11, 13, 14, 12, 15))
#define PBD_ZXY ((uint16)(2, 0, 1, 3, 6, 4, 5, 7, 10, 8, 9, 11, 14, 12, 13, 15))
#define PBD_WWW ((uint16)(3, 3, 3, 3, 7, 7, 7, 7, 11, 11, 11, 11, 15, 15, 15, 15))

/* The body records of four particles (com, v_cor, w_cor, rigid v, rigid w), each a float16
 * of four float4 side by side. */
typedef struct rec4 {
    float16 c, u, w, ur, wr;
} rec4;

/* Record q of four particles' bodies k (PBD_APPLY_COUNT k). */
VEC8_INLINE float16 record4(__global const pbd_float4 *a, int4 k, int q)
{
    return (float16)(a[k.s0 + q], a[k.s1 + q], a[k.s2 + q], a[k.s3 + q]);
}

VEC8_INLINE void records4(rec4 *r, __global const pbd_float4 *a, int4 k, int rigid)
{
    r->c = record4(a, k, 0);
    r->u = record4(a, k, 1);
    r->w = record4(a, k, 2);
    if (rigid) {
        r->ur = record4(a, k, 3);
        r->wr = record4(a, k, 4);
    }
}

/* u + w x r per particle of four. */
VEC8_INLINE float16 rigid4(float16 u, float16 w, float16 r)
{
    return u +
           (shuffle(w, PBD_YZX) * shuffle(r, PBD_ZXY) - shuffle(w, PBD_ZXY) * shuffle(r, PBD_YZX));
}

/* Particles i .. i + 3, their bodies' records in b when `apply`. */
VEC8_INLINE void predict4(int i, __global const pbd_float4 *particle_x,
                          __global pbd_float4 *particle_p, __global pbd_float4 *particle_v,
                          __global const pbd_float4 *particle_xp,
                          __global const pbd_float4 *particle_vp, const rec4 *b, float rigid_k,
                          int apply, int keep_v, float16 g, float h, int bdf2)
{
    float16 x = VEC8_LOAD16(particle_x + i);
    float16 v = VEC8_LOAD16(particle_v + i);
    int16 keep = (shuffle(x, PBD_WWW) <= 0.0f) | VEC8_W_LANES; /* pinned, and the w lanes */
    if (apply) {
        float16 r = x - b->c;
        float16 n = v + rigid4(b->u, b->w, r);
        if (rigid_k > 0.0f)
            n = n + rigid_k * (rigid4(b->ur, b->wr, r) - n);
        v = select(n, v, keep);
        if (keep_v)
            VEC8_STORE16(v, particle_v + i);
    }
    float16 p;
    if (!bdf2)
        p = x + h * (v + h * g);
    else {
        const float a = 4.0f / 3.0f, c = 2.0f / 3.0f, d = 1.0f / 3.0f;
        float16 xp = VEC8_LOAD16(particle_xp + i);
        float16 vp = VEC8_LOAD16(particle_vp + i);
        float16 u = a * v - d * vp + c * h * g;
        p = a * x - d * xp + c * h * u;
    }
    VEC8_STORE16(select(p, x, keep), particle_p + i);
}

__kernel void predict_runs(__global const pbd_float4 *particle_x, __global pbd_float4 *particle_p,
                           __global pbd_float4 *particle_v, __global const pbd_float4 *particle_xp,
                           __global const pbd_float4 *particle_vp, __global pbd_float4 *particle_dx,
                           __global const int *particle_body, __global const pbd_float4 *body_apply,
                           float rigid_k, __global const float *body_damping, int damping_per_body,
                           int apply, int keep_v, float gx, float gy, float gz, float h, int bdf2,
                           int track, int num_particles)
{
    int first = PBD_PARTICLE_RUN * get_global_id(0);
    int end = min(first + PBD_PARTICLE_RUN, num_particles);
    const float4 g4 = (float4)(gx, gy, gz, 0.0f);
    const float16 g = (float16)(g4, g4, g4, g4);
    const int rigid = rigid_k > 0.0f;
    rec4 one; /* the records of body `cached`, four times over */
    one.c = one.u = one.w = one.ur = one.wr = (float16)(0.0f);
    int cached = -1;
    int i = first;
    /* Bodies that damp differently, with a correction to apply: one by one (predict_one). */
    for (; i + 8 <= end && !(apply && damping_per_body); i += 8) {
        rec4 b0 = one, b1 = one;
        if (apply) {
            int body = particle_body[i];
            if (body != particle_body[i + 7]) { /* two bodies: each particle's own */
                int8 k = vload8(0, particle_body + i) * PBD_APPLY_COUNT;
                records4(&b0, body_apply, k.lo, rigid);
                records4(&b1, body_apply, k.hi, rigid);
            } else if (body != cached) {
                records4(&one, body_apply, (int4)(body * PBD_APPLY_COUNT), rigid);
                cached = body;
                b0 = b1 = one;
            }
        }
        predict4(i, particle_x, particle_p, particle_v, particle_xp, particle_vp, &b0, rigid_k,
                 apply, keep_v, g, h, bdf2);
        predict4(i + 4, particle_x, particle_p, particle_v, particle_xp, particle_vp, &b1, rigid_k,
                 apply, keep_v, g, h, bdf2);
        if (track) { /* pbd_friction_carry on the w lanes, 0 elsewhere */
            float16 d0 = VEC8_LOAD16(particle_dx + i), d1 = VEC8_LOAD16(particle_dx + i + 4);
            VEC8_STORE16(
                select((float16)(0.0f), (float16)(PBD_SLIDING), VEC8_W_LANES & (d0 < 0.0f)),
                particle_dx + i);
            VEC8_STORE16(
                select((float16)(0.0f), (float16)(PBD_SLIDING), VEC8_W_LANES & (d1 < 0.0f)),
                particle_dx + i + 4);
        }
    }
    for (; i < end; ++i)
        predict_one(i, particle_x, particle_p, particle_v, particle_xp, particle_vp, particle_dx,
                    particle_body, body_apply, rigid_k, body_damping, damping_per_body, apply,
                    keep_v, gx, gy, gz, h, bdf2, track);
}
