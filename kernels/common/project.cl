/* A kernel for every constraint type (PBD_CONSTRAINT_LIST), project_<name>: one constraint a
 * work-item, constraints [offset, offset + count) of `records`, which are one colour (they
 * share no particle that they write: no races, no atomics, and the serial result). With
 * `serial` (a type's overflow set, whose constraints may share particles, or, on the CPU
 * variant, all of a type's small colours in order) one work-item projects them all in
 * order, as the CPU reference does. Otherwise both variants launch them colour by colour;
 * distance has faster kernels of its own, and the CPU variant takes volume, dihedral,
 * isometric and Neo-Hookean constraints sixteen a work-item (cpu/project4.cl). Built after
 * pbd_shared.h. */
#define PBD_X_PROJECT_KERNEL(id, name, type, arity, world)                                         \
    __kernel void project_##name(__global pbd_float4 *particle_p,                                  \
                                 __global pbd_float4 *particle_dx, __global const type *records,   \
                                 __global float *lambda, int offset, int count, float inv_h2,      \
                                 int reset_lambda, int track, int serial)                          \
    {                                                                                              \
        int k = get_global_id(0);                                                                  \
        int lo = serial ? 0 : k, hi = serial ? (k == 0 ? count : 0) : (k < count ? k + 1 : k);     \
        for (int j = lo; j < hi; ++j)                                                              \
            pbd_##name##_project(particle_p, particle_dx, records, lambda, offset + j, inv_h2,     \
                                 reset_lambda, track);                                             \
    }
PBD_CONSTRAINT_LIST(PBD_X_PROJECT_KERNEL)
#undef PBD_X_PROJECT_KERNEL
