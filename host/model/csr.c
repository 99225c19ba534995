#include <stdlib.h>

#include "model/csr.h"

pbd_status pbd_csr_build(int num_particles, const int *ends, int arity, int count, int **offsets,
                         int **slots, int **other, pbd_error *err)
{
    size_t n = (size_t)count * (size_t)arity;
    int *off = calloc((size_t)num_particles + 1, sizeof *off);
    int *sl = malloc((n + 1) * sizeof *sl);
    int *fill = calloc((size_t)num_particles + 1, sizeof *fill);
    int *ot = other && arity == 2 ? malloc((n + 1) * sizeof *ot) : NULL;
    if (!off || !sl || !fill || (other && !ot)) {
        free(off);
        free(sl);
        free(fill);
        free(ot);
        return pbd_error_set(err, other && arity != 2 ? PBD_ERR_ARGUMENT : PBD_ERR_MEMORY,
                             "%s the particle slots of %d constraints",
                             other && arity != 2 ? "far ends need two particles a constraint in"
                                                 : "out of memory building",
                             count);
    }
    for (size_t s = 0; s < n; ++s)
        off[ends[s] + 1]++;
    for (int i = 0; i < num_particles; ++i)
        off[i + 1] += off[i];
    /* Slots visited in ascending order, so each row comes out sorted. */
    for (size_t s = 0; s < n; ++s) {
        int i = ends[s];
        if (ot)
            ot[off[i] + fill[i]] = ends[s ^ 1];
        sl[off[i] + fill[i]++] = (int)s;
    }
    free(fill);
    *offsets = off;
    *slots = sl;
    if (other)
        *other = ot;
    return PBD_OK;
}
