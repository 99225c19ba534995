/* `pbd bench`: timing one scene or a named suite (part of the CLI). */
#ifndef PBD_APP_BENCH_H
#define PBD_APP_BENCH_H

#include "pbd.h"
#include "solver/solver_impl.h"

/* One measured configuration. Times are per step (frame); device times from profiling. */
typedef struct pbd_bench_row {
    char scene[160];
    char device[128];
    pbd_backend_kind backend;
    pbd_solver_kind solver;
    int particles, colors, iterations, substeps, bodies, preserved_bodies;
    int constraints;          /* of every type (the body constraints not counted) */
    int distance_constraints; /* those the error below is of */
    int runs, frames;         /* timed runs of `frames` steps */
    double ms_median, ms_min, ms_max;
    double projections_per_s;  /* constraint projections per second at the median */
    long launches;             /* per step */
    double bytes_per_particle; /* memory where it steps / particles */
    double mean_rel_error;     /* the distance constraints' mean |C| / rest after the runs */
    double max_error;          /* their max |C|, m (0 for both where there are none) */
    double device_ms;          /* all kernels' device time per step (profiled run) */
    double momentum_ms;        /* the correction's share of it, see pbd_cli_profile */
    double kernel_ms[PBD_STAGE_COUNT];
    long kernel_launches[PBD_STAGE_COUNT]; /* per step */
} pbd_bench_row;

/* Changes a scene before it is measured (the command line's overrides). */
typedef void (*pbd_bench_tweak)(const void *ctx, pbd_scene *s);

/* Measures `scene` (a path or a built-in name) with `solver` (-1: the scene's) on the backend
 * of `desc`: 3 frames of warm-up, `runs` timed runs of `frames` steps (0: about 0.25 s a
 * run), the constraint error after them, then `runs` profiled runs for the device times
 * (pbd_cli_profile). */
int pbd_cli_bench_row(const char *scene, const pbd_solver_desc *desc, int solver, int runs,
                      int frames, pbd_bench_tweak tweak, const void *ctx, pbd_bench_row *row,
                      pbd_error *err);

/* Device time per step (profiling events) of all kernels and of the momentum correction, the
 * medians of `runs` profiled runs of `frames` steps (at most 15): body_reduce, body_solve,
 * momentum_apply, plus what the folded-in broadcast and sums add to predict and
 * update_velocity (their time less that of a run with momentum off, each run paired with
 * one, the median of the paired differences; at least the correction's own kernels). Per-kernel
 * times (ms and launches per step, PBD_STAGE_COUNT entries) go to kernel_ms / kernel_launches
 * when not NULL. */
int pbd_cli_profile(const pbd_scene *s, const pbd_solver_desc *desc, int frames, int runs,
                    double *total_ms, double *momentum_ms, double *kernel_ms, long *kernel_launches,
                    pbd_error *err);

/* Where a solver refused a scene's model or settings (PBD_ERR_MODEL, PBD_ERR_ARGUMENT), puts
 * the scene's path (or built-in name) in front of the message, as the scene loader's errors
 * have it; other errors (a device's) are left as they are. */
void pbd_cli_name_scene(pbd_error *err, const char *scene);

/* The median of v[0..n) (sorts v). */
double pbd_cli_median(double *v, int n);

/* `pbd bench --suite NAME`: the rows of a named suite on both backends and solvers, printed
 * as a table and written to csv / json / a plot (each may be NULL). Returns the exit code. */
int pbd_cli_bench_suite(const char *name, const char *scenes_dir, const pbd_solver_desc *desc,
                        int runs, int frames, pbd_bench_tweak tweak, const void *ctx,
                        const char *csv, const char *json, const char *plot);

/* `pbd bench --suite soak`: `frames` frames (100,000 when 0) of the spinning box and the
 * default cloth from scenes_dir, sampled every 1,000 frames: finite state, resident memory
 * (flat: at most 4 MiB above the first sample) and the preserved bodies' drift of P and L
 * from the start. A table on stdout, the samples as CSV when csv is given. Returns the exit
 * code (1 on a non-finite state or memory growth). */
int pbd_cli_soak(const char *scenes_dir, const pbd_solver_desc *desc, long frames,
                 pbd_bench_tweak tweak, const void *ctx, const char *csv);

/* Prints one row in detail (per-kernel breakdown) and writes csv / json when given. */
int pbd_cli_bench_print(const pbd_bench_row *row, const char *csv, const char *json);

#endif
