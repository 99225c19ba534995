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
 * to the stores is long, and one core overlaps too little of the next group's with it.
 *
 * The particles come and go three ways (`kind`, PBD_RUN_*): one by one (a gather and a
 * scatter of 32 records, with their indices taken from the constraints), as two runs of
 * consecutive particles (a = a0 .. a0 + 15, b likewise: four whole-vector loads each), or
 * as interleaved pairs (a = a0 + 2j, b = a + 1: eight loads, and a shuffle for each half of
 * the records). The plan sorts each block's part of a colour into the runs, then the pairs,
 * then the rest (PBD_RUN_*). On @cloth-256 88 % of the blocks' constraints come in runs or
 * pairs, and the iteration takes about two thirds of the time it took with every group
 * gathered and scattered. */
VEC8_INLINE void pbd_gs16(__global float4 *particle_p, __global const int *distance_records,
                          __global float *distance_lambda, int c, float inv_h2, int reset_lambda,
                          int kind)
{
    /* The constraints' records as four float16, split like particle records (the indices,
     * fa and fb, are read as scalars where they are used: gather8_at). */
    float8 fa0, fb0, r0, k0, fa1, fb1, r1, k1;
    split8(VEC8_LOAD16(distance_records + 4 * c), VEC8_LOAD16(distance_records + 4 * c + 16), &fa0,
           &fb0, &r0, &k0);
    split8(VEC8_LOAD16(distance_records + 4 * c + 32), VEC8_LOAD16(distance_records + 4 * c + 48),
           &fa1, &fb1, &r1, &k1);
    float16 rest = (float16)(r0, r1), compliance = (float16)(k0, k1);
    /* Arrays here would not be kept in registers. */
    float16 a0, a1, a2, a3, b0, b1, b2, b3;
    __global float4 *pa = particle_p + distance_records[4 * c],
                    *pb = particle_p + distance_records[4 * c + 1];
    if (kind == PBD_RUN_CONSECUTIVE) {
        a0 = VEC8_LOAD16(pa), a1 = VEC8_LOAD16(pa + 4);
        a2 = VEC8_LOAD16(pa + 8), a3 = VEC8_LOAD16(pa + 12);
        b0 = VEC8_LOAD16(pb), b1 = VEC8_LOAD16(pb + 4);
        b2 = VEC8_LOAD16(pb + 8), b3 = VEC8_LOAD16(pb + 12);
    } else if (kind == PBD_RUN_PAIRS) {
        float16 r0 = VEC8_LOAD16(pa), r1 = VEC8_LOAD16(pa + 4);
        float16 r2 = VEC8_LOAD16(pa + 8), r3 = VEC8_LOAD16(pa + 12);
        float16 r4 = VEC8_LOAD16(pa + 16), r5 = VEC8_LOAD16(pa + 20);
        float16 r6 = VEC8_LOAD16(pa + 24), r7 = VEC8_LOAD16(pa + 28);
        vec8_pairs_split(r0, r1, &a0, &b0);
        vec8_pairs_split(r2, r3, &a1, &b1);
        vec8_pairs_split(r4, r5, &a2, &b2);
        vec8_pairs_split(r6, r7, &a3, &b3);
    } else {
        __global const int *k = distance_records + 4 * c;
        gather8_at(particle_p, k, 4, &a0, &a1);
        gather8_at(particle_p, k + 32, 4, &a2, &a3);
        gather8_at(particle_p, k + 1, 4, &b0, &b1);
        gather8_at(particle_p, k + 33, 4, &b2, &b3);
    }
    float16 e0 = a0 - b0, e1 = a1 - b1, e2 = a2 - b2, e3 = a3 - b3;
    float8 x0, y0, z0, x1, y1, z1, wa0, wa1, wb0, wb1, unused;
    split8(e0, e1, &x0, &y0, &z0, &unused);
    split8(e2, e3, &x1, &y1, &z1, &unused);
    split8(a0, a1, &unused, &unused, &unused, &wa0);
    split8(a2, a3, &unused, &unused, &unused, &wa1);
    split8(b0, b1, &unused, &unused, &unused, &wb0);
    split8(b2, b3, &unused, &unused, &unused, &wb1);
    float16 wa = (float16)(wa0, wa1), wb = (float16)(wb0, wb1), dl;
    float16 lambda = reset_lambda ? (float16)0.0f : VEC8_LOADF16(distance_lambda + c);
    float16 g = pbd_distance_gain16((float16)(x0, x1), (float16)(y0, y1), (float16)(z0, z1), wa, wb,
                                    rest, compliance, lambda, inv_h2, &dl);
    float16 ga = wa * g, gb = -wb * g;
    const uint16 spread = (uint16)(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    e0 = select(e0, (float16)(0.0f), VEC8_W_LANES);
    e1 = select(e1, (float16)(0.0f), VEC8_W_LANES);
    e2 = select(e2, (float16)(0.0f), VEC8_W_LANES);
    e3 = select(e3, (float16)(0.0f), VEC8_W_LANES);
    a0 = a0 + shuffle(ga, spread) * e0;
    a1 = a1 + shuffle(ga, spread + 4) * e1;
    a2 = a2 + shuffle(ga, spread + 8) * e2;
    a3 = a3 + shuffle(ga, spread + 12) * e3;
    b0 = b0 + shuffle(gb, spread) * e0;
    b1 = b1 + shuffle(gb, spread + 4) * e1;
    b2 = b2 + shuffle(gb, spread + 8) * e2;
    b3 = b3 + shuffle(gb, spread + 12) * e3;
    if (kind == PBD_RUN_CONSECUTIVE) {
        VEC8_STORE16(a0, pa);
        VEC8_STORE16(a1, pa + 4);
        VEC8_STORE16(a2, pa + 8);
        VEC8_STORE16(a3, pa + 12);
        VEC8_STORE16(b0, pb);
        VEC8_STORE16(b1, pb + 4);
        VEC8_STORE16(b2, pb + 8);
        VEC8_STORE16(b3, pb + 12);
    } else if (kind == PBD_RUN_PAIRS) {
        float16 r0, r1;
        vec8_pairs_join(a0, b0, &r0, &r1);
        VEC8_STORE16(r0, pa);
        VEC8_STORE16(r1, pa + 4);
        vec8_pairs_join(a1, b1, &r0, &r1);
        VEC8_STORE16(r0, pa + 8);
        VEC8_STORE16(r1, pa + 12);
        vec8_pairs_join(a2, b2, &r0, &r1);
        VEC8_STORE16(r0, pa + 16);
        VEC8_STORE16(r1, pa + 20);
        vec8_pairs_join(a3, b3, &r0, &r1);
        VEC8_STORE16(r0, pa + 24);
        VEC8_STORE16(r1, pa + 28);
    } else {
        __global const int *k = distance_records + 4 * c;
        scatter8_at(particle_p, k, 4, a0, a1);
        scatter8_at(particle_p, k + 32, 4, a2, a3);
        scatter8_at(particle_p, k + 1, 4, b0, b1);
        scatter8_at(particle_p, k + 33, 4, b2, b3);
    }
    VEC8_STOREF16(lambda + dl, distance_lambda + c);
}

/* Constraints [lo, hi) of one colour: sixteen at a time, the rest one by one. */
static inline void pbd_gs_range(__global float4 *particle_p, __global const int *distance_records,
                                __global float *distance_lambda, int lo, int hi, float inv_h2,
                                int reset_lambda)
{
    __global const pbd_distance *dist = (__global const pbd_distance *)distance_records;
    int c = lo;
    for (; c + 16 <= hi; c += 16)
        pbd_gs16(particle_p, distance_records, distance_lambda, c, inv_h2, reset_lambda,
                 PBD_RUN_NONE);
    for (; c < hi; ++c)
        pbd_gs_project(particle_p, dist, distance_lambda, c, inv_h2, reset_lambda);
}

/* Constraints [lo, hi) of one colour, sorted by the plan: runs of consecutive particles up to
 * `pairs`, interleaved pairs up to `rest`, then any (PBD_RUN_*). */
static inline void pbd_gs_part(__global float4 *particle_p, __global const int *distance_records,
                               __global float *distance_lambda, int lo, int pairs, int rest, int hi,
                               float inv_h2, int reset_lambda)
{
    int c = lo;
    for (; c < pairs; c += 16)
        pbd_gs16(particle_p, distance_records, distance_lambda, c, inv_h2, reset_lambda,
                 PBD_RUN_CONSECUTIVE);
    for (; c < rest; c += 16)
        pbd_gs16(particle_p, distance_records, distance_lambda, c, inv_h2, reset_lambda,
                 PBD_RUN_PAIRS);
    pbd_gs_range(particle_p, distance_records, distance_lambda, c, hi, inv_h2, reset_lambda);
}

/* One colour, constraints [offset, offset + count), of which [offset, pairs) are runs of
 * consecutive particles and [pairs, rest) interleaved pairs: work-item j takes sixteen. With
 * `serial` (the overflow set, whose constraints share particles) one work-item projects them
 * one after another. */
__kernel void project_distance_gs16(__global pbd_float4 *particle_p,
                                    __global const int *distance_records,
                                    __global float *distance_lambda, int offset, int count,
                                    float inv_h2, int reset_lambda, int pairs, int rest, int serial)
{
    int k = 16 * (int)get_global_id(0), c = offset + k;
    if (serial) {
        __global const pbd_distance *dist = (__global const pbd_distance *)distance_records;
        for (int j = offset; k == 0 && j < offset + count; ++j)
            pbd_gs_project(particle_p, dist, distance_lambda, j, inv_h2, reset_lambda);
    } else if (c < pairs)
        pbd_gs16(particle_p, distance_records, distance_lambda, c, inv_h2, reset_lambda,
                 PBD_RUN_CONSECUTIVE);
    else if (c < rest)
        pbd_gs16(particle_p, distance_records, distance_lambda, c, inv_h2, reset_lambda,
                 PBD_RUN_PAIRS);
    else if (k < count)
        pbd_gs_range(particle_p, distance_records, distance_lambda, c, offset + min(k + 16, count),
                     inv_h2, reset_lambda);
}

/* The blocks' colours: work-item b projects block b's share of each interior colour in turn
 * (no other block touches its particles), then collides the block's particles with the
 * colliders, as the collide kernel would after the last colour. The boundary colours run through
 * it too, before, with the groups of cuts (pbd_blocks.cut_offsets) for blocks and no colliders. */
__kernel void project_gs_blocks(
    __global pbd_float4 *particle_p, __global const int *distance_records,
    __global float *distance_lambda, __global const int *block_offsets,
    __global const int *block_runs, int num_colors, __global const int *block_first, int num_blocks,
    float inv_h2, int reset_lambda, __global const pbd_collider *colliders, int num_colliders,
    __global pbd_float4 *particle_dx, __global const pbd_float4 *particle_x, int track,
    __global const int *particle_body, __global const pbd_float4 *body_material, int materials)
{
    int b = get_global_id(0);
    if (b >= num_blocks)
        return;
    for (int k = 0; k < num_colors; ++k) {
        __global const int *bo = block_offsets + k * (num_blocks + 1);
        __global const int *br = block_runs + 2 * (k * num_blocks + b);
        pbd_gs_part(particle_p, distance_records, distance_lambda, bo[b], br[0], br[1], bo[b + 1],
                    inv_h2, reset_lambda);
    }
    collide_range8(particle_p, particle_dx, particle_x, block_first[b], block_first[b + 1],
                   colliders, num_colliders, track, particle_body, body_material, materials);
}
