/* Static plane colliders, once per Gauss-Seidel iteration (the Jacobi gather does the same
 * inline). With `track`, each particle's displacement is added to particle_dx: the collision
 * impulse of the momentum tracker. Built after pbd_shared.h. */
__kernel void collide_planes(__global pbd_float4 *particle_p, __global pbd_float4 *particle_dx,
                             __global const pbd_float4 *planes, int num_planes, int track,
                             int num_particles)
{
    int i = get_global_id(0);
    if (i >= num_particles)
        return;
    pbd_float4 p0 = particle_p[i];
    pbd_float4 p1 = pbd_collide_planes(p0, planes, num_planes);
    particle_p[i] = p1;
    if (track)
        particle_dx[i] = pbd_add_displacement(particle_dx[i], p0, p1);
}
