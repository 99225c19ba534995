/* `pbd bench`: one scene in detail, or a named suite of scenes and sizes on both backends and
 * both solvers, as a table, CSV, JSON and a plot. Part of the command line (it prints). */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app/bench.h"
#include "app/output.h"
#include "app/plot.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int is_momentum_stage(int k)
{
    return k == PBD_STAGE_REDUCE || k == PBD_STAGE_SOLVE || k == PBD_STAGE_APPLY;
}

/* Profiled run of `frames` frames: per-kernel device time and launches per step. */
static int profiled(const pbd_scene *s, const pbd_config *c, const pbd_solver_desc *desc,
                    int frames, double *ms, long *launches, pbd_error *err)
{
    pbd_solver_desc d = *desc;
    d.profile = 1;
    pbd_solver *sv = NULL;
    const pbd_kernel_time *kt;
    int nk, rc = 1;
    if (pbd_solver_create(&s->model, c, &d, &sv, err) != PBD_OK ||
        pbd_solver_step(sv, 3, err) != PBD_OK || pbd_solver_finish(sv, err) != PBD_OK)
        goto done;
    pbd_solver_reset_kernel_times(sv);
    if (pbd_solver_step(sv, frames, err) != PBD_OK || pbd_solver_finish(sv, err) != PBD_OK ||
        pbd_solver_kernel_times(sv, &kt, &nk, err) != PBD_OK)
        goto done;
    for (int k = 0; k < PBD_STAGE_COUNT; ++k) {
        ms[k] = k < nk ? kt[k].ms / frames : 0.0;
        launches[k] = k < nk ? (kt[k].launches + frames / 2) / frames : 0;
    }
    rc = 0;
done:
    pbd_solver_destroy(sv);
    return rc;
}

/* Bodies whose momentum the scene preserves: free ones that did not opt out (pbd_plan_build's
 * rule). */
static int preserved_bodies(const pbd_scene *s)
{
    int n = 0;
    for (int b = 0; b < s->model.num_bodies; ++b)
        n += pbd_body_preserved(&s->model.bodies[b], &s->config);
    return n;
}

void pbd_cli_name_scene(pbd_error *err, const char *scene)
{
    if (!err || !scene || (err->status != PBD_ERR_MODEL && err->status != PBD_ERR_ARGUMENT))
        return;
    char message[sizeof err->message];
    memcpy(message, err->message, sizeof message);
    if (snprintf(err->message, sizeof err->message, "%s: %s", scene, message) < 0)
        memcpy(err->message, message, sizeof message);
}

double pbd_cli_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int pbd_cli_profile(const pbd_scene *s, const pbd_solver_desc *desc, int frames, int runs,
                    double *total_ms, double *momentum_ms, double *kernel_ms, long *kernel_launches,
                    pbd_error *err)
{
    enum { MAX_RUNS = 15 };
    double on[MAX_RUNS][PBD_STAGE_COUNT], off[PBD_STAGE_COUNT], v[MAX_RUNS];
    double total[MAX_RUNS], corr[MAX_RUNS];
    long lon[PBD_STAGE_COUNT], loff[PBD_STAGE_COUNT];
    runs = runs < 1 ? 1 : runs > MAX_RUNS ? MAX_RUNS : runs;
    pbd_config c_off = s->config;
    c_off.momentum = 0;
    c_off.damping = c_off.damping == PBD_DAMPING_RIGID ? PBD_DAMPING_NONE : c_off.damping;
    /* The correction runs when a body is preserved or damps rigidly (pbd_plan_build); the
     * runs without it are of a copy whose bodies damp rigidly no more. (Where that leaves
     * all bodies damping alike, what their differing cost the update and the prediction
     * counts as the correction's.) */
    int active = preserved_bodies(s) > 0, nb = s->model.num_bodies;
    pbd_scene s_off = *s;
    pbd_body *b_off = malloc(((size_t)nb + 1) * sizeof *b_off);
    if (!b_off) {
        pbd_error_set(err, PBD_ERR_MEMORY, "out of memory");
        return 1;
    }
    for (int b = 0; b < nb; ++b) {
        const pbd_body *bd = &s->model.bodies[b];
        float k;
        pbd_damping_kind kind = pbd_body_damping(bd, &s->config, &k);
        active |= kind == PBD_DAMPING_RIGID && k > 0.0f;
        b_off[b] = *bd;
        if (bd->damping == PBD_DAMPING_RIGID)
            b_off[b].damping = PBD_DAMPING_NONE;
    }
    s_off.model.bodies = b_off;
    for (int r = 0; r < runs; ++r) {
        /* Odd pairs run momentum off first, so that a drift in the machine's speed during
         * a pair does not always fall on the same side of the difference. */
        int off_first = active && r % 2 == 1;
        if ((off_first && profiled(&s_off, &c_off, desc, frames, off, loff, err)) ||
            profiled(s, &s->config, desc, frames, on[r], lon, err)) {
            free(b_off);
            return 1;
        }
        total[r] = corr[r] = 0.0;
        for (int k = 0; k < PBD_STAGE_COUNT; ++k) {
            total[r] += on[r][k];
            if (is_momentum_stage(k))
                corr[r] += on[r][k];
        }
        if (!active)
            continue;
        /* The broadcast rides on predict; on CPU devices the sums (and for bodies of one
         * segment the solve) ride on update_velocity: what they add is measured against a
         * run with momentum off, alternating with the runs with it on so that both see the
         * same machine. */
        if (!off_first && profiled(&s_off, &c_off, desc, frames, off, loff, err)) {
            free(b_off);
            return 1;
        }
        corr[r] += (on[r][PBD_STAGE_PREDICT] - off[PBD_STAGE_PREDICT]) +
                   (on[r][PBD_STAGE_UPDATE] - off[PBD_STAGE_UPDATE]);
    }
    free(b_off);
    double kernels = 0.0;
    for (int k = 0; k < PBD_STAGE_COUNT; ++k) {
        for (int r = 0; r < runs; ++r)
            v[r] = on[r][k];
        double med = pbd_cli_median(v, runs);
        if (is_momentum_stage(k))
            kernels += med;
        if (kernel_ms)
            kernel_ms[k] = med;
        if (kernel_launches)
            kernel_launches[k] = lon[k];
    }
    *total_ms = pbd_cli_median(total, runs);
    /* The median of the paired differences; below the correction's own kernels (noise larger
     * than what rides on predict and update) it says nothing, and those kernels are what can
     * be stated. */
    double m = pbd_cli_median(corr, runs);
    *momentum_ms = m > kernels ? m : kernels;
    return 0;
}

int pbd_cli_bench_row(const char *scene, const pbd_solver_desc *desc, int solver, int runs,
                      int frames, pbd_bench_tweak tweak, const void *ctx, pbd_bench_row *row,
                      pbd_error *err)
{
    pbd_scene s = {0};
    pbd_solver *sv = NULL;
    double *ms = calloc((size_t)runs, sizeof *ms);
    int rc = 1;
    memset(row, 0, sizeof *row);
    if (!ms) {
        pbd_error_set(err, PBD_ERR_MEMORY, "out of memory");
        return 1;
    }
    if (pbd_scene_load(scene, &s, err) != PBD_OK)
        goto done;
    if (tweak)
        tweak(ctx, &s);
    if (solver >= 0)
        s.config.solver = (pbd_solver_kind)solver;
    if (pbd_solver_create(&s.model, &s.config, desc, &sv, err) != PBD_OK) {
        pbd_cli_name_scene(err, scene);
        goto done;
    }
    /* Warm-up: the first launches pay for code generation and first-touch page faults, so
     * the run length is chosen from 3 frames after it (a first run after a kernel change
     * spends most of a second compiling, which used to leave runs of 2 frames). Those 3
     * frames run whether or not they are needed, so that rows given the same frame count
     * (the suite's CPU rows take their OpenCL row's) end in the same state. */
    if (pbd_solver_step(sv, 3, err) != PBD_OK || pbd_solver_finish(sv, err) != PBD_OK)
        goto done;
    double t0 = now_s();
    if (pbd_solver_step(sv, 3, err) != PBD_OK || pbd_solver_finish(sv, err) != PBD_OK)
        goto done;
    if (frames <= 0) {
        double per = (now_s() - t0) / 3.0;
        frames = per > 0.0 ? (int)(0.25 / per) : 200;
        frames = frames < 2 ? 2 : frames > 200 ? 200 : frames;
    }
    for (int r = 0; r < runs; ++r) {
        t0 = now_s();
        if (pbd_solver_step(sv, frames, err) != PBD_OK || pbd_solver_finish(sv, err) != PBD_OK)
            goto done;
        ms[r] = 1e3 * (now_s() - t0) / frames;
    }
    qsort(ms, (size_t)runs, sizeof *ms, cmp_double);
    snprintf(row->scene, sizeof row->scene, "%s", scene);
    snprintf(row->device, sizeof row->device, "%s", pbd_solver_device_name(sv));
    row->backend = desc->backend;
    row->solver = s.config.solver;
    row->particles = s.model.num_particles;
    row->constraints = (int)pbd_model_num_constraints(&s.model);
    row->distance_constraints = s.model.num_distance;
    row->colors = pbd_solver_num_colors(sv);
    row->iterations = s.config.iterations;
    row->substeps = s.config.substeps;
    row->bodies = s.model.num_bodies;
    row->preserved_bodies = preserved_bodies(&s);
    row->runs = runs;
    row->frames = frames;
    row->ms_median = runs % 2 ? ms[runs / 2] : 0.5 * (ms[runs / 2 - 1] + ms[runs / 2]);
    row->ms_min = ms[0];
    row->ms_max = ms[runs - 1];
    row->projections_per_s = pbd_solver_projections_per_frame(sv) / (row->ms_median * 1e-3);
    row->launches = pbd_solver_launches_per_frame(sv);
    row->bytes_per_particle = (double)pbd_solver_memory_bytes(sv) / s.model.num_particles;
    if (pbd_solver_constraint_error(sv, &row->mean_rel_error, &row->max_error, err) != PBD_OK)
        goto done;
    pbd_solver_destroy(sv);
    sv = NULL;
    if (pbd_cli_profile(&s, desc, frames, runs, &row->device_ms, &row->momentum_ms, row->kernel_ms,
                        row->kernel_launches, err))
        goto done;
    rc = 0;
done:
    pbd_solver_destroy(sv);
    pbd_scene_free(&s);
    free(ms);
    return rc;
}

static const char *backend_name(pbd_backend_kind b)
{
    return b == PBD_BACKEND_CPU ? "cpu" : "cl";
}

static const char *solver_name(pbd_solver_kind s)
{
    return s == PBD_SOLVER_JACOBI ? "jacobi" : "gs";
}

static void csv_header(FILE *f)
{
    fputs("scene,backend,solver,device,particles,constraints,colors,iterations,substeps,runs,"
          "frames,ms_median,ms_min,ms_max,projections_per_s,launches_per_step,"
          "bytes_per_particle,mean_relative_error,max_error,device_ms,momentum_ms",
          f);
    for (int k = 0; k < PBD_STAGE_COUNT; ++k)
        fprintf(f, ",%s_ms", pbd_stage_names[k]);
    fputs("\n", f);
}

static void csv_row(FILE *f, const pbd_bench_row *r)
{
    fprintf(f,
            "%s,%s,%s,\"%s\",%d,%d,%d,%d,%d,%d,%d,%.6g,%.6g,%.6g,%.6g,%ld,%.1f,%.6g,%.6g,"
            "%.6g,%.6g",
            r->scene, backend_name(r->backend), solver_name(r->solver), r->device, r->particles,
            r->constraints, r->colors, r->iterations, r->substeps, r->runs, r->frames, r->ms_median,
            r->ms_min, r->ms_max, r->projections_per_s, r->launches, r->bytes_per_particle,
            r->mean_rel_error, r->max_error, r->device_ms, r->momentum_ms);
    for (int k = 0; k < PBD_STAGE_COUNT; ++k)
        fprintf(f, ",%.6g", r->kernel_ms[k]);
    fputs("\n", f);
}

static void json_row(FILE *f, const pbd_bench_row *r, int last)
{
    fprintf(f,
            "  {\"scene\": \"%s\", \"backend\": \"%s\", \"solver\": \"%s\", \"device\": \"%s\", "
            "\"particles\": %d, \"constraints\": %d, \"colors\": %d, \"iterations\": %d, "
            "\"substeps\": %d, \"runs\": %d, \"frames\": %d, \"ms_median\": %.6g, "
            "\"ms_min\": %.6g, \"ms_max\": %.6g, \"projections_per_s\": %.6g, "
            "\"launches_per_step\": %ld, \"bytes_per_particle\": %.1f, "
            "\"mean_relative_error\": %.6g, \"max_error\": %.6g, \"device_ms\": %.6g, "
            "\"momentum_ms\": %.6g, \"kernels\": {",
            r->scene, backend_name(r->backend), solver_name(r->solver), r->device, r->particles,
            r->constraints, r->colors, r->iterations, r->substeps, r->runs, r->frames, r->ms_median,
            r->ms_min, r->ms_max, r->projections_per_s, r->launches, r->bytes_per_particle,
            r->mean_rel_error, r->max_error, r->device_ms, r->momentum_ms);
    int first = 1;
    for (int k = 0; k < PBD_STAGE_COUNT; ++k) {
        if (!r->kernel_launches[k] && r->kernel_ms[k] == 0.0)
            continue;
        fprintf(f, "%s\"%s\": {\"ms\": %.6g, \"launches\": %ld}", first ? "" : ", ",
                pbd_stage_names[k], r->kernel_ms[k], r->kernel_launches[k]);
        first = 0;
    }
    fprintf(f, "}}%s\n", last ? "" : ",");
}

/* Writes rows as CSV and / or JSON (paths may be NULL). */
static int write_rows(const pbd_bench_row *rows, int n, const char *csv, const char *json)
{
    pbd_error err = {0};
    pbd_output o;
    if (csv) {
        if (pbd_output_open(&o, csv, &err) != PBD_OK)
            goto failed;
        csv_header(o.f);
        for (int k = 0; k < n; ++k)
            csv_row(o.f, &rows[k]);
        if (pbd_output_commit(&o, &err) != PBD_OK)
            goto failed;
    }
    if (json) {
        if (pbd_output_open(&o, json, &err) != PBD_OK)
            goto failed;
        fputs("[\n", o.f);
        for (int k = 0; k < n; ++k)
            json_row(o.f, &rows[k], k == n - 1);
        fputs("]\n", o.f);
        if (pbd_output_commit(&o, &err) != PBD_OK)
            goto failed;
    }
    return 0;
failed:
    fprintf(stderr, "pbd: %s\n", err.message);
    return 1;
}

int pbd_cli_bench_print(const pbd_bench_row *r, const char *csv, const char *json)
{
    printf("scene %s: %d particles, %d constraints, %d colours, %s, %d iterations, %d substeps\n",
           r->scene, r->particles, r->constraints, r->colors, solver_name(r->solver), r->iterations,
           r->substeps);
    printf("device %s\n", r->device);
    printf("ms per step: median %.4f (min %.4f, max %.4f) over %d runs of %d steps\n", r->ms_median,
           r->ms_min, r->ms_max, r->runs, r->frames);
    printf("launches per step: %ld; %.3g constraint projections per second; %.0f bytes per "
           "particle\n",
           r->launches, r->projections_per_s, r->bytes_per_particle);
    if (r->distance_constraints > 0)
        printf("distance constraints' error after the runs: mean |C|/rest %.3g, max |C| %.3g m\n",
               r->mean_rel_error, r->max_error);
    else
        printf("distance constraints' error after the runs: none in the scene\n");
    printf("%-26s %12s %12s %8s\n", "kernel", "launches", "ms/step", "share");
    for (int k = 0; k < PBD_STAGE_COUNT; ++k)
        if (r->kernel_launches[k])
            printf("%-26s %12ld %12.4f %7.1f%%\n", pbd_stage_names[k], r->kernel_launches[k],
                   r->kernel_ms[k],
                   r->device_ms > 0 ? 100.0 * r->kernel_ms[k] / r->device_ms : 0.0);
    printf("%-26s %12s %12.4f\n", "total (device time)", "", r->device_ms);
    printf("momentum correction: %.4f ms per step, %.2f%% of the step's device time (%d bod%s "
           "preserved; includes what it adds to predict and update_velocity)\n",
           r->momentum_ms, r->device_ms > 0 ? 100.0 * r->momentum_ms / r->device_ms : 0.0,
           r->preserved_bodies, r->preserved_bodies == 1 ? "y" : "ies");
    return write_rows(r, 1, csv, json);
}

/* The suites. "standard": the cloth from 64 x 64 to 1024 x 1024, tet boxes of 1,000 to
 * 100,000 particles, and every shipped scene; "quick": two small scenes (for tests). */
static const char *const standard_scenes[] = {"@cloth-64",      "@cloth-128",      "@cloth-256",
                                              "@cloth-512",     "@cloth-1024",     "@boxes-1x1000",
                                              "@boxes-1x10000", "@boxes-1x100000", NULL};
static const char *const quick_scenes[] = {"@cloth-64", "@boxes-1x1000", NULL};
/* "contacts": piles of 20 to 2,000 soft cubes (10,240 to 1,024,000 particles), OpenCL and
 * Gauss-Seidel only (the CPU reference would take hours at the top). */
static const char *const contact_scenes[] = {"@pile-20",  "@pile-60",   "@pile-100", "@pile-200",
                                             "@pile-600", "@pile-2000", NULL};

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ms per step against particles for the cloth sweep, one line per backend and solver. */
static int plot_sweep(const pbd_bench_row *rows, int n, const char *path)
{
    double x[4][16], y[4][16];
    int cnt[4] = {0, 0, 0, 0};
    static const char *const labels[4] = {"OpenCL, Gauss-Seidel", "CPU reference, Gauss-Seidel",
                                          "OpenCL, Jacobi", "CPU reference, Jacobi"};
    for (int k = 0; k < n; ++k) {
        if (strncmp(rows[k].scene, "@cloth-", 7) != 0)
            continue;
        int s = (rows[k].solver == PBD_SOLVER_JACOBI) * 2 + (rows[k].backend == PBD_BACKEND_CPU);
        if (cnt[s] < 16) {
            x[s][cnt[s]] = rows[k].particles;
            y[s][cnt[s]++] = rows[k].ms_median;
        }
    }
    pbd_plot_series ser[4];
    int ns = 0;
    for (int s = 0; s < 4; ++s)
        if (cnt[s] > 0)
            ser[ns++] = (pbd_plot_series){labels[s], x[s], y[s], cnt[s], 0, s % 2};
    if (ns == 0) {
        fprintf(stderr, "pbd: %s: the suite has no cloth rows to plot\n", path);
        return 1;
    }
    pbd_plot p = {.title = "Cloth, 10 iterations: time per step",
                  .xlabel = "particles",
                  .ylabel = "ms per step",
                  .series = ser,
                  .num_series = ns,
                  .log_y = 1,
                  .log_x = 1};
    pbd_error err = {0};
    if (pbd_plot_write(&p, 1, path, &err) != PBD_OK) {
        fprintf(stderr, "pbd: %s\n", err.message);
        return 1;
    }
    return 0;
}

/* The contacts suite's sweep: the step's device time and its stages against particles. */
static int plot_contacts(const pbd_bench_row *rows, int n, const char *path)
{
    enum { MAXN = 16 };
    double x[MAXN], y[4][MAXN];
    int cnt = 0;
    for (int k = 0; k < n && cnt < MAXN; ++k) {
        const pbd_bench_row *r = &rows[k];
        double project = 0.0;
        for (int t = 0; t < PBD_CONSTRAINT_COUNT; ++t)
            project += r->kernel_ms[PBD_STAGE_PROJECT + t];
        x[cnt] = r->particles;
        y[0][cnt] = r->device_ms;
        y[1][cnt] = project;
        y[2][cnt] = r->kernel_ms[PBD_STAGE_HASH];
        y[3][cnt++] = r->kernel_ms[PBD_STAGE_CONTACT];
    }
    pbd_plot_series ser[4] = {{"step (device time)", x, y[0], cnt, 0, 0},
                              {"constraint projection", x, y[1], cnt, 0, 0},
                              {"hash and candidate lists", x, y[2], cnt, 0, 0},
                              {"contacts", x, y[3], cnt, 0, 1}};
    pbd_plot p = {.title = "Piles of soft cubes with particle contacts: device time per step",
                  .xlabel = "particles",
                  .ylabel = "ms per step",
                  .series = ser,
                  .num_series = 4,
                  .log_y = 1,
                  .log_x = 1,
                  .legend_bottom = 1};
    pbd_error err = {0};
    if (pbd_plot_write(&p, 1, path, &err) != PBD_OK) {
        fprintf(stderr, "pbd: %s\n", err.message);
        return 1;
    }
    return 0;
}

/* The types suite: each constraint type's projection against the distance constraint's, per
 * particle touched (the type's records times their arity, or a body constraint's particles,
 * times iterations and substeps), in rounds that take every type once. The ratio is each
 * round's own, then the median over the rounds. */
static const char *const type_names[] = {"distance",  "tether",      "volume",         "dihedral",
                                         "isometric", "neo_hookean", "shape_matching", "pressure"};
enum { TYPE_SUITE = sizeof type_names / sizeof type_names[0], TYPE_ROUNDS = 101 };
/* The constraint types among them, in their order; the body constraints follow. */
static const int type_ids[] = {PBD_CONSTRAINT_DISTANCE,  PBD_CONSTRAINT_TETHER,
                               PBD_CONSTRAINT_VOLUME,    PBD_CONSTRAINT_DIHEDRAL,
                               PBD_CONSTRAINT_ISOMETRIC, PBD_CONSTRAINT_NEO_HOOKEAN};
enum { TYPE_RECORDS = sizeof type_ids / sizeof type_ids[0] };

/* The items (records, or body constraints) and the particles type `k` of the suite projects a
 * step in scene s. */
static void type_work(int k, const pbd_scene *s, double *items, double *touched)
{
    const pbd_model *m = &s->model;
    double passes = (double)s->config.iterations * s->config.substeps, n = 0.0, t = 0.0;
    if (k < TYPE_RECORDS) {
        const int counts[PBD_CONSTRAINT_COUNT] = {
#define PBD_X_COUNT(id, name, type, arity, world) m->num_##name,
            PBD_CONSTRAINT_LIST(PBD_X_COUNT)
#undef PBD_X_COUNT
        };
        n = counts[type_ids[k]];
        t = n * pbd_constraint_types[type_ids[k]].arity;
    } else {
        for (int b = 0; b < m->num_bodies; ++b) {
            const pbd_body *bd = &m->bodies[b];
            int on = k == TYPE_RECORDS ? bd->shape_stiffness > 0.0f || bd->shape_compliance > 0.0f
                                       : bd->pressure > 0.0f;
            n += on;
            t += on ? bd->count : 0;
        }
    }
    *items = n * passes;
    *touched = t * passes;
}

/* Type `k`'s device time a step from a profile's stages: its projection, or the body
 * constraints' three stages. */
static double type_ms(int k, const double *ms)
{
    return k < TYPE_RECORDS
               ? ms[PBD_STAGE_PROJECT + type_ids[k]]
               : ms[PBD_STAGE_BODY_REDUCE] + ms[PBD_STAGE_BODY_SOLVE] + ms[PBD_STAGE_BODY_APPLY];
}

static int types_suite(const pbd_solver_desc *desc, int rounds, int frames, pbd_bench_tweak tweak,
                       const void *ctx, const char *csv)
{
    pbd_scene scenes[TYPE_SUITE];
    double items[TYPE_SUITE], touched[TYPE_SUITE], ms[TYPE_SUITE][TYPE_ROUNDS];
    double ratio[TYPE_SUITE][TYPE_ROUNDS], v[TYPE_ROUNDS], stage[PBD_STAGE_COUNT];
    long launches[PBD_STAGE_COUNT];
    int loaded = 0, rc = 1;
    pbd_error err = {0};
    char name[64];
    rounds = rounds > TYPE_ROUNDS ? TYPE_ROUNDS : rounds;
    frames = frames > 0 ? frames : 10;
    for (; loaded < TYPE_SUITE; ++loaded) {
        snprintf(name, sizeof name, "@type-%s", type_names[loaded]);
        if (pbd_scene_load(name, &scenes[loaded], &err) != PBD_OK)
            goto done;
        if (tweak)
            tweak(ctx, &scenes[loaded]);
        type_work(loaded, &scenes[loaded], &items[loaded], &touched[loaded]);
    }
    for (int r = 0; r < rounds; ++r) {
        fprintf(stderr, "pbd: bench --suite types: round %d of %d\n", r + 1, rounds);
        for (int k = 0; k < TYPE_SUITE; ++k) {
            if (profiled(&scenes[k], &scenes[k].config, desc, frames, stage, launches, &err)) {
                snprintf(name, sizeof name, "@type-%s", type_names[k]);
                pbd_cli_name_scene(&err, name);
                goto done;
            }
            ms[k][r] = type_ms(k, stage);
            if (!(ms[k][r] > 0.0)) {
                pbd_error_set(&err, PBD_ERR_ARGUMENT,
                              "@type-%s: found no device time for its kernels (expected the "
                              "OpenCL backend or the CPU reference, which time them)",
                              type_names[k]);
                goto done;
            }
        }
        for (int k = 0; k < TYPE_SUITE; ++k)
            ratio[k][r] = (ms[k][r] / touched[k]) / (ms[0][r] / touched[0]);
    }
    pbd_output o;
    int out = csv != NULL;
    if (out && pbd_output_open(&o, csv, &err) != PBD_OK)
        goto done;
    if (out)
        fputs("type,items_per_step,touched_per_step,ms_per_step,ns_per_item,ns_per_touched,"
              "vs_distance,vs_distance_min,vs_distance_max,rounds,frames\n",
              o.f);
    printf("%-15s %12s %13s %9s %9s %11s %12s %13s\n", "type", "items/step", "touched/step",
           "ms/step", "ns/item", "ns/touched", "vs distance", "(range)");
    for (int k = 0; k < TYPE_SUITE; ++k) {
        memcpy(v, ms[k], (size_t)rounds * sizeof *v);
        double t = pbd_cli_median(v, rounds);
        memcpy(v, ratio[k], (size_t)rounds * sizeof *v);
        double q = pbd_cli_median(v, rounds), lo = v[0], hi = v[rounds - 1];
        double per_item = 1e6 * t / items[k], per_touched = 1e6 * t / touched[k];
        printf("%-15s %12.0f %13.0f %9.3f %9.3f %11.3f %11.2fx %6.2f-%.2fx\n", type_names[k],
               items[k], touched[k], t, per_item, per_touched, q, lo, hi);
        if (out)
            fprintf(o.f, "%s,%.0f,%.0f,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%d,%d\n", type_names[k],
                    items[k], touched[k], t, per_item, per_touched, q, lo, hi, rounds, frames);
    }
    if (out && pbd_output_commit(&o, &err) != PBD_OK)
        goto done;
    rc = 0;
done:
    if (rc)
        fprintf(stderr, "pbd: %s\n", err.message);
    for (int k = 0; k < loaded; ++k)
        pbd_scene_free(&scenes[k]);
    return rc;
}

int pbd_cli_bench_suite(const char *name, const char *scenes_dir, const pbd_solver_desc *desc,
                        int runs, int frames, pbd_bench_tweak tweak, const void *ctx,
                        const char *csv, const char *json, const char *plot)
{
    if (strcmp(name, "soak") == 0) {
        if (json || plot) {
            fprintf(stderr, "pbd: --suite soak: writes --csv only, found --%s\n",
                    json ? "json" : "plot");
            return 2;
        }
        return pbd_cli_soak(scenes_dir, desc, frames > 0 ? frames : 100000, tweak, ctx, csv);
    }
    if (strcmp(name, "types") == 0) {
        if (json || plot) {
            fprintf(stderr, "pbd: --suite types: writes --csv only, found --%s\n",
                    json ? "json" : "plot");
            return 2;
        }
        return types_suite(desc, runs, frames, tweak, ctx, csv);
    }
    int contacts = strcmp(name, "contacts") == 0;
    const char *const *list = strcmp(name, "standard") == 0 ? standard_scenes
                              : strcmp(name, "quick") == 0  ? quick_scenes
                              : contacts                    ? contact_scenes
                                                            : NULL;
    if (!list) {
        fprintf(stderr,
                "pbd: --suite: found '%s', expected standard, quick, contacts, types or soak\n",
                name);
        return 2;
    }
    char *scenes[96];
    int ns = 0;
    for (; list[ns] && ns < 64; ++ns)
        scenes[ns] = strdup(list[ns]);
    if (strcmp(name, "standard") == 0) {
        DIR *d = opendir(scenes_dir);
        struct dirent *e;
        int first = ns;
        while (d && (e = readdir(d)) && ns < 96) {
            size_t len = strlen(e->d_name);
            if (len > 5 && strcmp(e->d_name + len - 5, ".json") == 0) {
                size_t n = strlen(scenes_dir) + len + 2;
                scenes[ns] = malloc(n);
                if (scenes[ns])
                    snprintf(scenes[ns++], n, "%s/%s", scenes_dir, e->d_name);
            }
        }
        if (d)
            closedir(d);
        else
            fprintf(stderr,
                    "pbd: %s: cannot list the shipped scenes; measuring the built-in "
                    "ones only\n",
                    scenes_dir);
        qsort(scenes + first, (size_t)(ns - first), sizeof scenes[0], cmp_name);
    }
    int nrows = 0, rc = 1;
    pbd_bench_row *rows = calloc((size_t)ns * 4, sizeof *rows);
    if (!rows)
        goto done;
    printf("%-34s %-4s %-6s %9s %11s %11s %9s %8s %9s %10s %9s\n", "scene", "back", "solver",
           "particles", "ms/step", "Mproj/s", "launches", "B/part", "mean|C|/l", "momentum%",
           "cpu/cl");
    for (int k = 0; k < ns; ++k) {
        const char *scene = scenes[k];
        for (int solver = 0; solver < (contacts ? 1 : 2); ++solver) {
            for (int backend = 0; backend < (contacts ? 1 : 2); ++backend) {
                pbd_solver_desc d = *desc;
                d.backend = backend ? PBD_BACKEND_CPU : PBD_BACKEND_CL;
                pbd_error err = {0};
                pbd_bench_row *r = &rows[nrows];
                fprintf(stderr, "pbd: bench %s, %s, %s\n", scene, backend ? "cpu" : "cl",
                        solver ? "jacobi" : "gs");
                /* The CPU row runs the OpenCL row's frames: both end in the same state, so
                 * their errors compare (equal quality), and on PoCL they are identical. */
                int f = backend ? rows[nrows - 1].frames : frames;
                if (pbd_cli_bench_row(scene, &d, solver, runs, f, tweak, ctx, r, &err)) {
                    fprintf(stderr, "pbd: %s\n", err.message);
                    pbd_error_clear(&err);
                    goto done;
                }
                ++nrows;
                const char *short_name = strrchr(scene, '/') ? strrchr(scene, '/') + 1 : scene;
                char ratio[32] = "";
                if (backend == 1 && r->ms_median > 0.0)
                    snprintf(ratio, sizeof ratio, "%.2fx",
                             r->ms_median / rows[nrows - 2].ms_median);
                printf("%-34s %-4s %-6s %9d %11.3f %11.1f %9ld %8.0f %9.3g %9.2f%% %9s\n",
                       short_name, backend_name(r->backend), solver_name(r->solver), r->particles,
                       r->ms_median, r->projections_per_s * 1e-6, r->launches,
                       r->bytes_per_particle, r->mean_rel_error,
                       r->device_ms > 0 ? 100.0 * r->momentum_ms / r->device_ms : 0.0, ratio);
                fflush(stdout);
            }
        }
    }
    rc = write_rows(rows, nrows, csv, json);
    if (rc == 0 && plot)
        rc = contacts ? plot_contacts(rows, nrows, plot) : plot_sweep(rows, nrows, plot);
done:
    for (int k = 0; k < ns; ++k)
        free(scenes[k]);
    free(rows);
    return rc;
}
