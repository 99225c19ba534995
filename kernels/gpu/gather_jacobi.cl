/* Jacobi gather: particle i's new position from the iterate particle_p (pbd_gather: its
 * constraints' corrections, in the fixed order of its CSR row), collided with the colliders
 * (recording the displacement with `track`, as the collide kernel does), into particle_out.
 * The host alternates the two position buffers. Built after pbd_shared.h. */
__kernel void gather_jacobi(__global const pbd_float4 *particle_p,
                            __global pbd_float4 *particle_out, __global const float *distance_gain,
                            __global const int *csr_offsets, __global const int *csr_slots,
                            __global const int *csr_other, float omega,
                            __global pbd_float4 *particle_dx, __global const pbd_float4 *particle_x,
                            __global const pbd_collider *colliders, int num_colliders, int track,
                            __global const int *particle_body,
                            __global const pbd_float4 *body_material, int materials,
                            int num_particles)
{
    int i = get_global_id(0);
    if (i >= num_particles)
        return;
    pbd_float4 p0 = pbd_gather(particle_p, i, distance_gain, csr_slots, csr_other, csr_offsets[i],
                               csr_offsets[i + 1], omega);
    pbd_collide_particle(particle_out, particle_dx, i, p0, particle_x, colliders, num_colliders,
                         track, pbd_particle_material(i, particle_body, body_material, materials));
}
