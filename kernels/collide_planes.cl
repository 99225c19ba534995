/* Static plane colliders, once per Gauss-Seidel iteration (the Jacobi gather does the same
 * inline). Built after pbd_shared.h. */
__kernel void collide_planes(__global pbd_float4 *particle_p, __global const pbd_float4 *planes,
                             int num_planes, int num_particles)
{
    int i = get_global_id(0);
    if (i >= num_particles)
        return;
    particle_p[i] = pbd_collide_planes(particle_p[i], planes, num_planes);
}
