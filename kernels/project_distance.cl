/* Distance constraint projection, both solvers. Built after pbd_shared.h. */

/* Gauss-Seidel: one launch per colour. Constraints of a colour share no particle, so each
 * work-item reads and writes its two particles without races or atomics, and the result is
 * the serial result for that colour. */
__kernel void project_distance_gs(__global pbd_float4 *particle_p,
                                  __global const pbd_distance *distance,
                                  __global float *distance_lambda, int offset, int count,
                                  float inv_h2, int reset_lambda)
{
    int k = get_global_id(0);
    if (k >= count)
        return;
    int c = offset + k;
    pbd_distance d = distance[c];
    float lambda = reset_lambda ? 0.0f : distance_lambda[c];
    pbd_float4 pa = particle_p[d.a];
    pbd_float4 pb = particle_p[d.b];
    pbd_float4 da, db;
    float dl;
    pbd_project_distance(pa, pb, d.rest, d.compliance, lambda, inv_h2, &da, &db, &dl);
    particle_p[d.a] = pbd_add3(pa, da);
    particle_p[d.b] = pbd_add3(pb, db);
    distance_lambda[c] = lambda + dl;
}

/* Jacobi: every constraint reads the same predictions and writes its two corrections into
 * its own slots 2c and 2c + 1; gather_jacobi sums them per particle. */
__kernel void project_distance_jacobi(__global const pbd_float4 *particle_p,
                                      __global const pbd_distance *distance,
                                      __global float *distance_lambda,
                                      __global pbd_float4 *distance_delta, int count, float inv_h2,
                                      int reset_lambda)
{
    int c = get_global_id(0);
    if (c >= count)
        return;
    pbd_distance d = distance[c];
    float lambda = reset_lambda ? 0.0f : distance_lambda[c];
    pbd_float4 da, db;
    float dl;
    pbd_project_distance(particle_p[d.a], particle_p[d.b], d.rest, d.compliance, lambda, inv_h2,
                         &da, &db, &dl);
    distance_delta[2 * c] = da;
    distance_delta[2 * c + 1] = db;
    distance_lambda[c] = lambda + dl;
}
