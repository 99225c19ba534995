/* Output files that appear whole or not at all: written to a temporary name beside the
 * target and renamed over it only when complete (part of the CLI: the library writes no
 * files). */
#ifndef PBD_APP_OUTPUT_H
#define PBD_APP_OUTPUT_H

#include <stdio.h>

#include "pbd.h"

typedef struct pbd_output {
    FILE *f;
    char *path;
    char *tmp;
} pbd_output;

pbd_status pbd_output_open(pbd_output *o, const char *path, pbd_error *err);
/* Flushes, closes and renames into place. On failure the temporary file is removed. */
pbd_status pbd_output_commit(pbd_output *o, pbd_error *err);
/* The same without the sync: renamed into place whole (no stop of the process leaves a
 * partial file under the path), not yet on disk (a power cut may lose it). For files that
 * many are written of at once and synced together (pbd_output_sync_path). */
pbd_status pbd_output_commit_unsynced(pbd_output *o, pbd_error *err);
/* Syncs the file at `path` to disk. */
pbd_status pbd_output_sync_path(const char *path, pbd_error *err);
/* Closes and removes the temporary file; safe on a zeroed or committed output. */
void pbd_output_abort(pbd_output *o);
/* Removes the temporary files of the outputs open now (the first 64), and nothing else:
 * async-signal-safe, for a handler of a signal that ends the process. */
void pbd_output_remove_pending(void);

/* Reads a whole file of at most `max` bytes into *data (malloc'd; the caller frees it). A
 * longer file is refused before it is read (a stream with no size is read to max + 1), with a
 * message saying it expected `what` ("a checkpoint"). */
pbd_status pbd_read_file(const char *path, size_t max, const char *what, void **data, size_t *size,
                         pbd_error *err);

/* Stats CSV (DESIGN.md "Interfaces"): one row per body at a step. */
void pbd_stats_write_header(FILE *f);
void pbd_stats_write_rows(FILE *f, long step, double time, const pbd_body_stats *s, int n);
/* State dump: one line per particle, "x y z vx vy vz" in %.9g (round-trips floats exactly). */
void pbd_dump_write(FILE *f, const pbd_float4 *x, const pbd_float4 *v, int n);
/* The first particle in [from, to) whose position or velocity is not finite or beyond
 * PBD_MAX_COORD (the run's NaN guard), or -1. */
int pbd_state_first_bad(const pbd_float4 *x, const pbd_float4 *v, int from, int to);

#endif
