/* The colliders, once per Gauss-Seidel iteration (the Jacobi gather and the block
 * Gauss-Seidel kernel collide with the same pbd_collide_particle). With `track`, each
 * particle's displacement is added to particle_dx: the collision impulse of the momentum
 * tracker. Built after pbd_shared.h. */
__kernel void collide(__global pbd_float4 *particle_p, __global pbd_float4 *particle_dx,
                      __global const pbd_float4 *particle_x, __global const int *particle_body,
                      __global const pbd_float4 *body_material, int materials,
                      __global const pbd_collider *colliders, int num_colliders, int track,
                      int num_particles)
{
    int i = get_global_id(0);
    if (i >= num_particles)
        return;
    pbd_collide_particle(particle_p, particle_dx, i, particle_p[i], particle_x, colliders,
                         num_colliders, track,
                         pbd_particle_material(i, particle_body, body_material, materials));
}
