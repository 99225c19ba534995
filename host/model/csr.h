/* Particle -> constraint-slot adjacency (CSR), the fixed order of the Jacobi gather. */
#ifndef PBD_MODEL_CSR_H
#define PBD_MODEL_CSR_H

#include "pbd.h"

/* For `count` constraints of `arity` particles each (constraint c's are ends[arity c ..]),
 * for each particle i, slots[offsets[i] .. offsets[i+1]) are the slots arity c + e of the
 * constraints c whose end e is i, ascending (for distance: 2c at end a, 2c + 1 at end b).
 * With `other` (arity 2 only), other[s] is the particle at the far end of slot s's
 * constraint (for the Jacobi gather). The arrays are malloc'd. */
pbd_status pbd_csr_build(int num_particles, const int *ends, int arity, int count, int **offsets,
                         int **slots, int **other, pbd_error *err);

#endif
