/* The body constraints' apply stage (common/body_constraint.cl's body_constraint_apply) on CPU
 * devices, a run of PBD_PARTICLE_RUN particles a work-item: four particles at a time as they
 * are stored (a float16) where the four share a body that has a constraint of its own and none
 * is in a cluster, each lane doing pbd_body_constraint_apply's operations in its order (the
 * same bits); any other particle one by one through pbd_body_constraint_apply. Built after
 * vec8.cl. */

/* Lane k of each particle of a float16 of four, in all four of its lanes. */
#define BODY_LANE16(v, k)                                                                          \
    shuffle((v), (uint16)(k, k, k, k, 4 + k, 4 + k, 4 + k, 4 + k, 8 + k, 8 + k, 8 + k, 8 + k,      \
                          12 + k, 12 + k, 12 + k, 12 + k))

/* (a, b, c, 0) four times. */
#define BODY_ABC16(a, b, c) ((float16)((float4)((a), (b), (c), 0.0f).s0123012301230123))

__kernel void body_constraint_apply_runs(__global pbd_float4 *particle_p,
                                         __global const int *particle_body,
                                         __global const pbd_float4 *member_rest,
                                         __global const pbd_float4 *particle_grad,
                                         __global const int *cluster_offsets,
                                         __global const int *cluster_pairs,
                                         __global const pbd_body_constraint *body_constraints,
                                         __global const pbd_float4 *body_goal, int num_particles)
{
    int first = PBD_PARTICLE_RUN * get_global_id(0);
    int end = min(first + PBD_PARTICLE_RUN, num_particles);
    for (int i = first; i < end;) {
        int b = particle_body[i];
        pbd_body_constraint bc = body_constraints[b];
        /* bodies are runs of particles: the first and fourth share a body, so all four do */
        if (i + 4 <= end && bc.flags != 0 && particle_body[i + 3] == b &&
            cluster_offsets[i] == cluster_offsets[i + 4]) {
            __global const pbd_float4 *goal = body_goal + b * PBD_GOAL_COUNT;
            pbd_float4 c = goal[1], r0 = goal[2], r1 = goal[3], r2 = goal[4];
            float16 p = VEC8_LOAD16(particle_p + i), d = (float16)(0.0f);
            float16 pw = BODY_LANE16(p, 3);
            if (bc.flags & PBD_BODY_SHAPE) { /* pbd_shape_pull */
                float16 q = VEC8_LOAD16(member_rest + i);
                float16 g = ((BODY_ABC16(r0.x, r1.x, r2.x) * BODY_LANE16(q, 0) +
                              BODY_ABC16(r0.y, r1.y, r2.y) * BODY_LANE16(q, 1)) +
                             BODY_ABC16(r0.z, r1.z, r2.z) * BODY_LANE16(q, 2)) +
                            BODY_ABC16(c.x, c.y, c.z);
                float k = (bc.flags & PBD_BODY_SHAPE_XPBD) ? r2.w : bc.shape_k;
                d = k * (g - p);
            }
            if (bc.flags & PBD_BODY_PRESSURE)
                d = d + (pw * c.w) * VEC8_LOAD16(particle_grad + i);
            float16 out = select(p + d, p, VEC8_W_LANES); /* w: the inverse mass stays */
            VEC8_STORE16(select(p, out, isgreater(pw, (float16)(0.0f))), particle_p + i);
            i += 4;
            continue;
        }
        if (bc.flags != 0 || cluster_offsets[i] != cluster_offsets[i + 1])
            particle_p[i] =
                pbd_body_constraint_apply(particle_p[i], i, b, body_constraints, member_rest,
                                          particle_grad, cluster_offsets, cluster_pairs, body_goal);
        ++i;
    }
}
