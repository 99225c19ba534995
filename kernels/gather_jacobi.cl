/* Jacobi gather: each particle sums its constraints' delta slots in the fixed order of its
 * CSR row (built on the host), then collides with the planes (recording the displacement
 * with `track`, as collide_planes does). Built after pbd_shared.h. */
__kernel void gather_jacobi(__global pbd_float4 *particle_p,
                            __global const pbd_float4 *distance_delta,
                            __global const int *csr_offsets, __global const int *csr_slots,
                            float omega, __global pbd_float4 *particle_dx,
                            __global const pbd_float4 *planes, int num_planes, int track,
                            int num_particles)
{
    int i = get_global_id(0);
    if (i >= num_particles)
        return;
    pbd_float4 p0 = pbd_gather(particle_p[i], distance_delta, csr_slots, csr_offsets[i],
                               csr_offsets[i + 1], omega);
    pbd_float4 p1 = pbd_collide_planes(p0, planes, num_planes);
    particle_p[i] = p1;
    if (track)
        particle_dx[i] = pbd_add_displacement(particle_dx[i], p0, p1);
}
