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

/* The same two kernels for CPU devices, reading and writing the 4-float records (particles,
 * constraints, Jacobi slots) one component at a time. The components' offsets within a
 * record come in at run time as `one` (= 1) and its multiples: with constant offsets, LLVM's
 * SLP pass (run by PoCL before its work-item loops are formed) packs one record's components
 * into <2 x float> operations, and its loop vectorizer then refuses the work-item loop
 * ("instruction return type cannot be vectorized"). With run-time offsets each component is
 * a gather, and the work-item loop is vectorised 8 wide. The arithmetic is the kernels'
 * above, operation for operation, so the results are bit-identical. */
#define PBD_LANE_OFFSETS(one) const int o1 = (one), o2 = o1 + o1, o3 = o2 + o1

__kernel void project_distance_gs_lanes(__global float *particle_p, __global const int *distance,
                                        __global float *distance_lambda, int offset, int count,
                                        float inv_h2, int reset_lambda, int one)
{
    PBD_LANE_OFFSETS(one);
    int k = get_global_id(0);
    if (k < count) {
        int c = offset + k;
        int a = 4 * distance[4 * c], b = 4 * distance[4 * c + o1];
        float rest = as_float(distance[4 * c + o2]);
        float compliance = as_float(distance[4 * c + o3]);
        float lambda = reset_lambda ? 0.0f : distance_lambda[c];
        float ax = particle_p[a], ay = particle_p[a + o1], az = particle_p[a + o2];
        float bx = particle_p[b], by = particle_p[b + o1], bz = particle_p[b + o2];
        float wa = particle_p[a + o3], wb = particle_p[b + o3];
        float dx = ax - bx, dy = ay - by, dz = az - bz;
        float dl;
        float g = pbd_distance_gain(dx, dy, dz, wa, wb, rest, compliance, lambda, inv_h2, &dl);
        float ga = wa * g, gb = -wb * g;
        particle_p[a] = ax + ga * dx;
        particle_p[a + o1] = ay + ga * dy;
        particle_p[a + o2] = az + ga * dz;
        particle_p[b] = bx + gb * dx;
        particle_p[b + o1] = by + gb * dy;
        particle_p[b + o2] = bz + gb * dz;
        distance_lambda[c] = lambda + dl;
    }
}

__kernel void project_distance_jacobi_lanes(__global const float *particle_p,
                                            __global const int *distance,
                                            __global float *distance_lambda,
                                            __global float *distance_delta, int count, float inv_h2,
                                            int reset_lambda, int one)
{
    PBD_LANE_OFFSETS(one);
    int c = get_global_id(0);
    if (c < count) {
        int a = 4 * distance[4 * c], b = 4 * distance[4 * c + o1];
        float rest = as_float(distance[4 * c + o2]);
        float compliance = as_float(distance[4 * c + o3]);
        float lambda = reset_lambda ? 0.0f : distance_lambda[c];
        float wa = particle_p[a + o3], wb = particle_p[b + o3];
        float dx = particle_p[a] - particle_p[b];
        float dy = particle_p[a + o1] - particle_p[b + o1];
        float dz = particle_p[a + o2] - particle_p[b + o2];
        float dl;
        float g = pbd_distance_gain(dx, dy, dz, wa, wb, rest, compliance, lambda, inv_h2, &dl);
        float ga = wa * g, gb = -wb * g;
        int sa = 8 * c, sb = sa + 4;
        distance_delta[sa] = ga * dx;
        distance_delta[sa + o1] = ga * dy;
        distance_delta[sa + o2] = ga * dz;
        distance_delta[sa + o3] = 0.0f;
        distance_delta[sb] = gb * dx;
        distance_delta[sb + o1] = gb * dy;
        distance_delta[sb + o2] = gb * dz;
        distance_delta[sb + o3] = 0.0f;
        distance_lambda[c] = lambda + dl;
    }
}
