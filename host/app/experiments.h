/* `pbd experiments`: the paper's experiments as CSV, Markdown and PNG (part of the CLI). */
#ifndef PBD_APP_EXPERIMENTS_H
#define PBD_APP_EXPERIMENTS_H

#include "pbd.h"

/* Writes figure 3, table 1 and the spinning box's momenta into `outdir` (created if needed),
 * taking the shipped scenes from `scenes`. `quick` shortens every run (for tests). Prints
 * progress and a summary; returns the exit code. */
int pbd_cli_experiments(const char *outdir, const char *scenes, const pbd_solver_desc *desc,
                        int quick);

#endif
