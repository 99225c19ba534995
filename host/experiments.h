/* `pbd experiments`: the paper's experiments as CSV, Markdown and PNG (part of the CLI). */
#ifndef PBD_EXPERIMENTS_H
#define PBD_EXPERIMENTS_H

#include "pbd.h"

/* Writes figure 3, table 1 and the spinning box's momenta into `outdir` (created if needed),
 * taking the shipped scenes from `scenes`. `quick` shortens every run (for tests). Prints
 * progress and a summary; returns the exit code. */
int pbd_cli_experiments(const char *outdir, const char *scenes, const pbd_solver_desc *desc,
                        int quick);

/* Device time per step (profiling events) of all kernels and of the momentum correction:
 * body_reduce, body_solve, momentum_apply, plus what the folded-in broadcast adds to predict
 * (predict's time less that of a run with momentum off). `frames` after 3 of warm-up. */
int pbd_cli_profile(const pbd_scene *s, const pbd_solver_desc *desc, int frames, double *total_ms,
                    double *momentum_ms, pbd_error *err);

#endif
