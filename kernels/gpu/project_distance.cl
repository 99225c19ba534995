/* Distance constraints on GPUs. Gauss-Seidel: project_distance (common/project.cl), a
 * launch a colour. */

/* Jacobi: every constraint reads the same iterate and writes its gain (pbd_distance_gain)
 * and multiplier; gather_jacobi derives each end's correction from the gain. */
__kernel void project_distance_jacobi(__global const pbd_float4 *particle_p,
                                      __global const pbd_distance *distance_records,
                                      __global float *distance_lambda,
                                      __global float *distance_gain, int count, float inv_h2,
                                      int reset_lambda)
{
    int c = get_global_id(0);
    if (c < count)
        pbd_jacobi_project(particle_p, distance_records, distance_lambda, distance_gain, c, inv_h2,
                           reset_lambda);
}
