#include <stdlib.h>

#include "model/csr.h"

pbd_status pbd_csr_build(int num_particles, const pbd_distance *cons, int num_cons, int **offsets,
                         int **slots, int **other, pbd_error *err)
{
    int *off = calloc((size_t)num_particles + 1, sizeof *off);
    int *sl = malloc(((size_t)num_cons * 2 + 1) * sizeof *sl);
    int *fill = calloc((size_t)num_particles + 1, sizeof *fill);
    int *ot = other ? malloc(((size_t)num_cons * 2 + 1) * sizeof *ot) : NULL;
    if (!off || !sl || !fill || (other && !ot)) {
        free(off);
        free(sl);
        free(fill);
        free(ot);
        return pbd_error_set(err, PBD_ERR_MEMORY,
                             "out of memory building the particle slots "
                             "of %d constraints",
                             num_cons);
    }
    for (int c = 0; c < num_cons; ++c) {
        off[cons[c].a + 1]++;
        off[cons[c].b + 1]++;
    }
    for (int i = 0; i < num_particles; ++i)
        off[i + 1] += off[i];
    /* Slots visited in ascending order, so each row comes out sorted. */
    for (int s = 0; s < 2 * num_cons; ++s) {
        int i = (s & 1) ? cons[s >> 1].b : cons[s >> 1].a;
        if (ot)
            ot[off[i] + fill[i]] = (s & 1) ? cons[s >> 1].a : cons[s >> 1].b;
        sl[off[i] + fill[i]++] = s;
    }
    free(fill);
    *offsets = off;
    *slots = sl;
    if (other)
        *other = ot;
    return PBD_OK;
}
