/* The body constraints (shape matching, its clusters, pressure; pbd_shared.h), three stages an
 * iteration over the constraints, every sum in a fixed order. The sums run in each variant's
 * kernels (cpu/ and gpu/body_constraint.cl) in the order of body_constraint_reduce_one here,
 * and each variant's solve adds a constraint's segment sums in order before
 * pbd_body_constraint_solve, as the CPU reference does. Constraints with flags 0 (bodies
 * without any) return at once. Built after pbd_shared.h. */

/* Adds member m's terms to the sums s (r: its constraint's central member, the sums' origin),
 * and keeps a pressure particle's volume gradient. */
PBD_INLINE void
body_constraint_member(int m, pbd_float4 r, int flags, __global const pbd_float4 *particle_p,
                       __global const int *member_particle, __global const pbd_float4 *member_rest,
                       __global pbd_float4 *particle_grad, __global const int *pressure_offsets,
                       __global const int *pressure_pairs, float *s)
{
    int i = member_particle[m];
    pbd_float4 g = PBD_F4(0.0f, 0.0f, 0.0f, 0.0f);
    if (flags & PBD_BODY_PRESSURE) {
        g = pbd_volume_gradient(particle_p, r, pressure_pairs, pressure_offsets[i],
                                pressure_offsets[i + 1]);
        particle_grad[i] = g;
    }
    pbd_body_constraint_sums(particle_p[i], r, member_rest[m], g, flags, s);
}

/* Stage one (body_constraint_reduce) for segment gi (of at most PBD_BODY_SEGMENT members of a
 * constraint): its members' sums in order into body_constraint_sums (PBD_BSUM_COUNT floats), and
 * each pressure particle's volume gradient. */
PBD_INLINE void body_constraint_reduce_one(
    int gi, __global const pbd_segment *body_constraint_segments,
    __global const pbd_float4 *particle_p, __global const int *member_particle,
    __global const pbd_float4 *member_rest, __global pbd_float4 *particle_grad,
    __global const int *pressure_offsets, __global const int *pressure_pairs,
    __global const pbd_body_constraint *body_constraints, __global float *body_constraint_sums)
{
    pbd_segment seg = body_constraint_segments[gi];
    pbd_body_constraint bc = body_constraints[seg.body];
    float s[PBD_BSUM_COUNT];
    PBD_UNROLL
    for (int q = 0; q < PBD_BSUM_COUNT; ++q)
        s[q] = 0.0f;
    pbd_float4 r = particle_p[bc.first];
    for (int m = seg.first; m < seg.first + seg.count; ++m)
        body_constraint_member(m, r, bc.flags, particle_p, member_particle, member_rest,
                               particle_grad, pressure_offsets, pressure_pairs, s);
    PBD_UNROLL
    for (int q = 0; q < PBD_BSUM_COUNT; ++q)
        body_constraint_sums[gi * PBD_BSUM_COUNT + q] = s[q];
}

/* Stage three: a work-item a particle moves toward its goals and along its gradient. */
__kernel void
body_constraint_apply(__global pbd_float4 *particle_p, __global const int *particle_body,
                      __global const pbd_float4 *member_rest,
                      __global const pbd_float4 *particle_grad, __global const int *particle_set,
                      __global const int *set_offsets, __global const int *set_constraints,
                      __global const pbd_body_constraint *body_constraints,
                      __global const pbd_float4 *body_goal, int num_particles)
{
    int i = get_global_id(0);
    if (i >= num_particles)
        return;
    int b = particle_body[i];
    if (body_constraints[b].flags == 0 && particle_set[i] < 0)
        return;
    particle_p[i] =
        pbd_body_constraint_apply(particle_p[i], i, b, body_constraints, member_rest, particle_grad,
                                  particle_set, set_offsets, set_constraints, body_goal);
}
