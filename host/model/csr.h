/* Particle -> constraint-slot adjacency (CSR), the fixed order of the Jacobi gather. */
#ifndef PBD_MODEL_CSR_H
#define PBD_MODEL_CSR_H

#include "pbd.h"

/* For each particle i, slots[offsets[i] .. offsets[i+1]) are the slots 2c (end a) and 2c + 1
 * (end b) of the constraints c touching it, ascending. With `other`, other[s] is the particle
 * at the far end of slot s's constraint (for the Jacobi gather). The arrays are malloc'd. */
pbd_status pbd_csr_build(int num_particles, const pbd_distance *cons, int num_cons, int **offsets,
                         int **slots, int **other, pbd_error *err);

#endif
