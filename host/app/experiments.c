/* `pbd experiments OUTDIR`: the paper's experiments (Dahl & Bargteil 2019), reproduced as
 * CSV files, a Markdown table and PNG plots. Part of the command line (it prints progress),
 * not of the library. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "app/bench.h"
#include "app/experiments.h"
#include "app/output.h"
#include "app/plot.h"

#define MAX_TABLE 64

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double norm3(const double *v)
{
    return sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
}

static int report(const pbd_error *err)
{
    fprintf(stderr, "pbd: %s\n", err->message);
    if (err->log && err->log[0])
        fprintf(stderr, "--- build log ---\n%s\n--- end of build log ---\n", err->log);
    return 1;
}

static void out_path(char *buf, size_t n, const char *dir, const char *name)
{
    snprintf(buf, n, "%s/%s", dir, name);
}

/* Runs `frames` frames and records, after each `every` frames (and at 0), the first body's
 * kinetic energy, |L| and |P|. Arrays hold frames / every + 1 entries. */
static int record(const pbd_model *m, const pbd_config *c, const pbd_solver_desc *desc, int frames,
                  int every, double *ke, double *l, double *p, pbd_error *err)
{
    pbd_solver *sv = NULL;
    pbd_body_stats *st = calloc((size_t)m->num_bodies, sizeof *st);
    int rc = 1;
    if (!st || pbd_solver_create(m, c, desc, &sv, err) != PBD_OK)
        goto done;
    for (int k = 0; k <= frames / every; ++k) {
        if ((k > 0 && pbd_solver_step(sv, every, err) != PBD_OK) ||
            pbd_solver_stats(sv, st, err) != PBD_OK)
            goto done;
        if (ke)
            ke[k] = st[0].kinetic_energy;
        if (l)
            l[k] = norm3(st[0].l);
        if (p)
            p[k] = norm3(st[0].p);
    }
    rc = 0;
done:
    pbd_solver_destroy(sv);
    free(st);
    return rc;
}

/* Figure 3: two unit masses on one constraint, spinning in 3D without gravity: a hard
 * constraint, a soft one, and a soft one with point damping, each with and without the
 * correction. Kinetic energy and |L| over 20 s. */
static int figure3(const char *dir, const pbd_solver_desc *desc, int quick, pbd_error *err)
{
    enum { VARIANTS = 6 };
    static const char *const labels[VARIANTS] = {
        "hard, preserved", "soft, preserved", "soft + point damping, preserved",
        "hard, plain PBD", "soft, plain PBD", "soft + point damping, plain PBD"};
    static const unsigned colors[3] = {0x7b3294, 0x1b9e3b, 0x2166ac}; /* as the paper's */
    const int frames = quick ? 240 : 1200;
    const int n = frames + 1;
    double *t = malloc((size_t)n * sizeof *t);
    double *ke = malloc((size_t)n * VARIANTS * sizeof *ke);
    double *l = malloc((size_t)n * VARIANTS * sizeof *l);
    pbd_model m = {0};
    int rc = 1;
    if (!t || !ke || !l || pbd_model_add_particles(&m, 2, "dumbbell") != 0 ||
        pbd_model_add_distance(&m, 0, 1, 1.0f, 0.0f) != 0) {
        pbd_error_set(err, PBD_ERR_MEMORY, "out of memory");
        goto done;
    }
    m.x[0] = (pbd_float4){0.5f, 0.0f, 0.0f, 1.0f};
    m.x[1] = (pbd_float4){-0.5f, 0.0f, 0.0f, 1.0f};
    m.v[0] = (pbd_float4){0.0f, 1.0f, 0.5f, 1.0f};
    m.v[1] = (pbd_float4){0.0f, -1.0f, -0.5f, 1.0f};
    pbd_config c = pbd_config_default();
    c.gravity[1] = 0.0f;
    for (int k = 0; k < n; ++k)
        t[k] = k * (double)c.dt;
    for (int v = 0; v < VARIANTS; ++v) {
        int kind = v % 3;
        c.momentum = v < 3;
        m.distance[0].compliance = kind == 0 ? 0.0f : 0.01f; /* m/N: 2.5 % stretch here */
        c.damping = kind == 2 ? PBD_DAMPING_POINT : PBD_DAMPING_NONE;
        c.damping_k = kind == 2 ? 0.01f : 0.0f;
        if (record(&m, &c, desc, frames, 1, ke + (size_t)v * n, l + (size_t)v * n, NULL, err))
            goto done;
    }
    char path[4096];
    pbd_output csv;
    out_path(path, sizeof path, dir, "figure3.csv");
    if (pbd_output_open(&csv, path, err) != PBD_OK)
        goto done;
    fputs("time", csv.f);
    for (int v = 0; v < VARIANTS; ++v)
        fprintf(csv.f, ",ke_%d,l_%d", v, v);
    fputs("\n", csv.f);
    for (int k = 0; k < n; ++k) {
        fprintf(csv.f, "%.9g", t[k]);
        for (int v = 0; v < VARIANTS; ++v)
            fprintf(csv.f, ",%.9g,%.9g", ke[(size_t)v * n + k], l[(size_t)v * n + k]);
        fputs("\n", csv.f);
    }
    if (pbd_output_commit(&csv, err) != PBD_OK)
        goto done;
    pbd_plot_series s[VARIANTS];
    for (int pass = 0; pass < 2; ++pass) {
        for (int v = 0; v < VARIANTS; ++v)
            s[v] = (pbd_plot_series){labels[v],     t,     (pass ? l : ke) + (size_t)v * n, n,
                                     colors[v % 3], v >= 3};
        pbd_plot plot = {.title = pass ? "Two mass points: angular momentum"
                                       : "Two mass points: kinetic energy",
                         .xlabel = "time (s)",
                         .ylabel = pass ? "|L| (kg m^2/s)" : "kinetic energy (J)",
                         .series = s,
                         .num_series = VARIANTS};
        out_path(path, sizeof path, dir, pass ? "figure3_momentum.png" : "figure3_energy.png");
        if (pbd_plot_write(&plot, 1, path, err) != PBD_OK)
            goto done;
    }
    printf("figure 3: after %.0f s, |L| kept %.4f / %.4f / %.4f (hard / soft / damped) with the "
           "correction, %.4f / %.4f / %.4f without (of %.4f)\n",
           t[n - 1], l[(size_t)1 * n - 1], l[(size_t)2 * n - 1], l[(size_t)3 * n - 1],
           l[(size_t)4 * n - 1], l[(size_t)5 * n - 1], l[(size_t)6 * n - 1], l[0]);
    rc = 0;
done:
    pbd_model_free(&m);
    free(t);
    free(ke);
    free(l);
    return rc;
}

/* The spinning soft box over 10,000 steps: |L| and |P| with and without the correction. */
static int spinning_box(const char *dir, const char *scenes, const pbd_solver_desc *desc, int quick,
                        pbd_error *err)
{
    const int frames = quick ? 1000 : 10000, every = 10, n = frames / every + 1;
    char path[4096];
    pbd_scene s = {0};
    double *buf = malloc((size_t)n * 5 * sizeof *buf);
    int rc = 1;
    snprintf(path, sizeof path, "%s/spinning_box.json", scenes);
    if (!buf) {
        pbd_error_set(err, PBD_ERR_MEMORY, "out of memory");
        goto done;
    }
    if (pbd_scene_load(path, &s, err) != PBD_OK)
        goto done;
    double *step = buf, *l_on = buf + n, *p_on = buf + 2 * n, *l_off = buf + 3 * n,
           *p_off = buf + 4 * n;
    for (int k = 0; k < n; ++k)
        step[k] = k * every;
    s.config.momentum = 1;
    if (record(&s.model, &s.config, desc, frames, every, NULL, l_on, p_on, err))
        goto done;
    s.config.momentum = 0;
    if (record(&s.model, &s.config, desc, frames, every, NULL, l_off, p_off, err))
        goto done;
    pbd_output csv;
    out_path(path, sizeof path, dir, "spinning_box.csv");
    if (pbd_output_open(&csv, path, err) != PBD_OK)
        goto done;
    fputs("step,l_preserved,p_preserved,l_plain,p_plain\n", csv.f);
    for (int k = 0; k < n; ++k)
        fprintf(csv.f, "%.0f,%.9g,%.9g,%.9g,%.9g\n", step[k], l_on[k], p_on[k], l_off[k], p_off[k]);
    if (pbd_output_commit(&csv, err) != PBD_OK)
        goto done;
    for (int pass = 0; pass < 2; ++pass) {
        pbd_plot_series ser[2] = {
            {"with momentum preservation", step, pass ? p_on : l_on, n, 0x2166ac, 0},
            {"plain PBD", step, pass ? p_off : l_off, n, 0xb2182b, 1}};
        pbd_plot plot = {.title = pass ? "Spinning soft box: linear momentum"
                                       : "Spinning soft box: angular momentum",
                         .xlabel = "step",
                         .ylabel = pass ? "|P| (kg m/s)" : "|L| (kg m^2/s)",
                         .series = ser,
                         .num_series = 2};
        out_path(path, sizeof path, dir,
                 pass ? "spinning_box_linear.png" : "spinning_box_angular.png");
        if (pbd_plot_write(&plot, 1, path, err) != PBD_OK)
            goto done;
    }
    printf("spinning box: after %d steps |L| %.6g with the correction, %.6g without (of %.6g); "
           "|P| %.6g and %.6g (of %.6g)\n",
           frames, l_on[n - 1], l_off[n - 1], l_on[0], p_on[n - 1], p_off[n - 1], p_on[0]);
    rc = 0;
done:
    pbd_scene_free(&s);
    free(buf);
    return rc;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

typedef struct row {
    char name[256];
    int particles, bodies, preserved;
    double ms_step, ms_device, ms_momentum, share;
} row;

/* One Table 1 row from the benchmark's measurement over `runs` runs: wall-clock ms per step
 * (the median), the step's device time (the sum of its kernels' profiled times, which leaves
 * out the gaps between launches), and the correction's device time (pbd_cli_profile: the
 * median of `runs` pairs of runs with and without it) as a share of the latter: the
 * stricter of the two shares. */
static int measure(const char *path, const char *name, const pbd_solver_desc *desc, int runs,
                   int quick, row *r, pbd_error *err)
{
    pbd_bench_row b;
    if (pbd_cli_bench_row(path, desc, -1, runs, quick ? 2 : 0, NULL, NULL, &b, err))
        return 1;
    snprintf(r->name, sizeof r->name, "%s", name);
    r->particles = b.particles;
    r->bodies = b.bodies;
    r->preserved = b.preserved_bodies;
    r->ms_step = b.ms_median;
    r->ms_device = b.device_ms;
    r->ms_momentum = b.momentum_ms;
    r->share = b.device_ms > 0.0 ? 100.0 * b.momentum_ms / b.device_ms : 0.0;
    return 0;
}

/* The same boxes' momentum preserved as 1, 10 and 100 bodies (@boxes-BxP-asG): the step's
 * work is the same in all three, so only the correction's cost per body can change their
 * shares. They are measured in turn, one run (and profiled pair) each per round, so that
 * all three see the same machine; each figure is the median over the rounds. */
enum { GROUPED = 3 };
static int measure_grouped(const char *const names[GROUPED], const pbd_solver_desc *desc,
                           int rounds, int quick, row *out, pbd_error *err)
{
    enum { MAX_ROUNDS = 15 };
    row r[GROUPED][MAX_ROUNDS];
    double v[MAX_ROUNDS];
    rounds = rounds > MAX_ROUNDS ? MAX_ROUNDS : rounds;
    for (int k = 0; k < rounds; ++k)
        for (int g = 0; g < GROUPED; ++g) {
            fprintf(stderr, "pbd: table 1: %s (round %d of %d)\n", names[g], k + 1, rounds);
            if (measure(names[g], names[g], desc, 1, quick, &r[g][k], err))
                return 1;
        }
    for (int g = 0; g < GROUPED; ++g) {
        out[g] = r[g][0];
#define MEDIAN_OF(field)                                                                           \
    do {                                                                                           \
        for (int k = 0; k < rounds; ++k)                                                           \
            v[k] = r[g][k].field;                                                                  \
        out[g].field = pbd_cli_median(v, rounds);                                                  \
    } while (0)
        MEDIAN_OF(ms_step);
        MEDIAN_OF(ms_device);
        MEDIAN_OF(ms_momentum);
        MEDIAN_OF(share);
#undef MEDIAN_OF
    }
    return 0;
}

/* Table 1: every shipped scene, then one box of 10,000 particles, 100 boxes of 100 as 1, 10
 * and 100 bodies, and the same at 100,000 particles. */
static int table1(const char *dir, const char *scenes, const pbd_solver_desc *desc, int quick,
                  pbd_error *err)
{
    static const char *const singles[] = {"@boxes-1x10000", "@boxes-1x100000"};
    static const char *const grouped[][GROUPED] = {
        {"@boxes-100x100-as1", "@boxes-100x100-as10", "@boxes-100x100"},
        {"@boxes-100x1000-as1", "@boxes-100x1000-as10", "@boxes-100x1000"}};
    const int sizes = quick ? 1 : 2, runs = quick ? 3 : 9;
    char *names[MAX_TABLE];
    int count = 0, rc = 1;
    row *rows = calloc(MAX_TABLE, sizeof *rows);
    DIR *d = opendir(scenes);
    if (!rows || !d) {
        pbd_error_set(err, PBD_ERR_IO, "%s: cannot list the shipped scenes: %s", scenes,
                      strerror(errno));
        free(rows);
        if (d)
            closedir(d);
        return 1;
    }
    struct dirent *e;
    while ((e = readdir(d)) && count < MAX_TABLE - 8) {
        size_t len = strlen(e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".json") == 0)
            names[count++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)count, sizeof names[0], cmp_name);
    char path[4096];
    for (int k = 0; k < count; ++k) {
        if (!names[k]) {
            pbd_error_set(err, PBD_ERR_MEMORY, "out of memory");
            goto done;
        }
        snprintf(path, sizeof path, "%s/%s", scenes, names[k]);
        fprintf(stderr, "pbd: table 1: %s\n", names[k]);
        if (measure(path, names[k], desc, runs, quick, &rows[k], err))
            goto done;
    }
    int nrows = count;
    for (int z = 0; z < sizes; ++z) {
        fprintf(stderr, "pbd: table 1: %s\n", singles[z]);
        if (measure(singles[z], singles[z], desc, runs, quick, &rows[nrows++], err) ||
            measure_grouped(grouped[z], desc, runs, quick, rows + nrows, err))
            goto done;
        nrows += GROUPED;
    }
    pbd_output csv, md;
    out_path(path, sizeof path, dir, "table1.csv");
    if (pbd_output_open(&csv, path, err) != PBD_OK)
        goto done;
    fputs("scene,particles,bodies,preserved_bodies,ms_per_step,device_ms_per_step,ms_momentum,"
          "momentum_share_percent\n",
          csv.f);
    for (int k = 0; k < nrows; ++k)
        fprintf(csv.f, "%s,%d,%d,%d,%.4f,%.4f,%.4f,%.3f\n", rows[k].name, rows[k].particles,
                rows[k].bodies, rows[k].preserved, rows[k].ms_step, rows[k].ms_device,
                rows[k].ms_momentum, rows[k].share);
    if (pbd_output_commit(&csv, err) != PBD_OK)
        goto done;
    out_path(path, sizeof path, dir, "table1.md");
    if (pbd_output_open(&md, path, err) != PBD_OK)
        goto done;
    fprintf(md.f, "| scene | particles | bodies (preserved) | ms per step | device ms per step "
                  "| ms in the correction | share of the device time |\n"
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (int k = 0; k < nrows; ++k)
        fprintf(md.f, "| %s | %d | %d (%d) | %.3f | %.3f | %.4f | %.2f %% |\n", rows[k].name,
                rows[k].particles, rows[k].bodies, rows[k].preserved, rows[k].ms_step,
                rows[k].ms_device, rows[k].ms_momentum, rows[k].share);
    if (pbd_output_commit(&md, err) != PBD_OK)
        goto done;
    printf("table 1 (%s):\n", path);
    for (int k = 0; k < nrows; ++k)
        printf("  %-22s %8d particles %4d bodies  %9.3f ms/step (%.3f on the device)  %8.4f ms "
               "correction  %6.2f %%\n",
               rows[k].name, rows[k].particles, rows[k].bodies, rows[k].ms_step, rows[k].ms_device,
               rows[k].ms_momentum, rows[k].share);
    rc = 0;
done:
    for (int k = 0; k < count; ++k)
        free(names[k]);
    free(rows);
    return rc;
}

int pbd_cli_experiments(const char *outdir, const char *scenes, const pbd_solver_desc *desc,
                        int quick)
{
    pbd_error err = {0};
    struct stat st;
    if (mkdir(outdir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "pbd: %s: cannot create the output folder: %s\n", outdir, strerror(errno));
        return 1;
    }
    if (stat(outdir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "pbd: %s: exists and is not a folder\n", outdir);
        return 1;
    }
    double t0 = now_s();
    int rc = figure3(outdir, desc, quick, &err) ||
             spinning_box(outdir, scenes, desc, quick, &err) ||
             table1(outdir, scenes, desc, quick, &err);
    if (rc)
        report(&err);
    else
        printf("wrote figure3.csv, figure3_energy.png, figure3_momentum.png, spinning_box.csv, "
               "spinning_box_angular.png, spinning_box_linear.png, table1.csv, table1.md to %s "
               "in %.0f s\n",
               outdir, now_s() - t0);
    pbd_error_clear(&err);
    return rc;
}
