/* `pbd bench --suite soak`: long runs that must stay finite, hold their memory flat and keep
 * the preserved bodies' momenta (part of the CLI; not run by the tests: it takes minutes). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app/bench.h"
#include "app/output.h"

/* Resident memory of this process, KiB (0 where /proc is not there). */
static double rss_kib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, resident = 0;
    if (!f)
        return 0.0;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
        resident = 0;
    fclose(f);
    return (double)resident * (double)sysconf(_SC_PAGESIZE) / 1024.0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double norm3(const double *a, const double *b)
{
    double d[3] = {a[0] - b[0], a[1] - b[1], a[2] - b[2]};
    return sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
}

static double len3(const double *a)
{
    return sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
}

/* RSS may grow by this much after the first sample (allocator and driver warm-up beyond
 * it is a leak). */
#define SOAK_RSS_SLACK_KIB 4096.0
#define SOAK_SAMPLE        1000 /* frames between samples */

typedef struct soak_result {
    double seconds, rss_first, rss_last, rss_max;
    double rss_half;   /* at the first sample of the second half */
    double dp, dl_rel; /* largest |P - P0| (kg m/s) and |L - L0| / |L0| of preserved bodies */
    int preserved, finite;
    long frames;
} soak_result;

static int soak_scene(const char *path, const pbd_solver_desc *desc, long frames,
                      pbd_bench_tweak tweak, const void *ctx, FILE *csv, soak_result *r)
{
    pbd_scene s = {0};
    pbd_error err = {0};
    pbd_solver *sv = NULL;
    pbd_body_stats *st = NULL, *st0 = NULL;
    int rc = 1;
    memset(r, 0, sizeof *r);
    r->finite = 1;
    if (pbd_scene_load(path, &s, &err) != PBD_OK)
        goto done;
    if (tweak)
        tweak(ctx, &s);
    int nb = s.model.num_bodies;
    st = calloc((size_t)nb, sizeof *st);
    st0 = calloc((size_t)nb, sizeof *st0);
    if (!st || !st0) {
        pbd_error_set(&err, PBD_ERR_MEMORY, "out of memory");
        goto done;
    }
    if (pbd_solver_create(&s.model, &s.config, desc, &sv, &err) != PBD_OK ||
        pbd_solver_stats(sv, st0, &err) != PBD_OK)
        goto done;
    for (int b = 0; b < nb; ++b)
        r->preserved += pbd_body_preserved(&s.model.bodies[b], &s.config);
    double t0 = now_s();
    for (long f = 0; f < frames && r->finite;) {
        int n = (int)(frames - f < SOAK_SAMPLE ? frames - f : SOAK_SAMPLE);
        if (pbd_solver_step(sv, n, &err) != PBD_OK || pbd_solver_stats(sv, st, &err) != PBD_OK)
            goto done;
        f += n;
        double rss = rss_kib();
        if (f == n)
            r->rss_first = rss;
        if (2 * f >= frames && r->rss_half == 0.0)
            r->rss_half = rss;
        r->rss_last = rss;
        r->rss_max = rss > r->rss_max ? rss : r->rss_max;
        for (int b = 0; b < nb; ++b) {
            const pbd_body_stats *a = &st[b], *z = &st0[b];
            double sum = a->kinetic_energy + len3(a->com) + len3(a->p) + len3(a->l);
            r->finite &= isfinite(sum);
            if (pbd_body_preserved(&s.model.bodies[b], &s.config)) {
                double dp = norm3(a->p, z->p);
                double dl = norm3(a->l, z->l) / (len3(z->l) > 0.0 ? len3(z->l) : 1.0);
                r->dp = dp > r->dp ? dp : r->dp;
                r->dl_rel = dl > r->dl_rel ? dl : r->dl_rel;
            }
        }
        r->frames = f;
        if (csv)
            fprintf(csv, "%s,%ld,%.3f,%.0f,%.9g,%.9g,%d\n", path, f, now_s() - t0, rss, r->dp,
                    r->dl_rel, r->finite);
    }
    r->seconds = now_s() - t0;
    rc = 0;
done:
    /* The loader's messages name the file already; the solver's and the device's do not. */
    if (rc && strncmp(err.message, path, strlen(path)) == 0)
        fprintf(stderr, "pbd: %s\n", err.message);
    else if (rc)
        fprintf(stderr, "pbd: %s: %s\n", path, err.message);
    pbd_solver_destroy(sv);
    free(st);
    free(st0);
    pbd_scene_free(&s);
    return rc;
}

int pbd_cli_soak(const char *scenes_dir, const pbd_solver_desc *desc, long frames,
                 pbd_bench_tweak tweak, const void *ctx, const char *csv_path)
{
    static const char *const names[] = {"spinning_box.json", "cloth.json"};
    FILE *csv = NULL;
    pbd_output out = {0};
    pbd_error err = {0};
    if (csv_path) {
        if (pbd_output_open(&out, csv_path, &err) != PBD_OK) {
            fprintf(stderr, "pbd: %s\n", err.message);
            return 1;
        }
        csv = out.f;
        fprintf(csv, "scene,frame,seconds,rss_kib,max_dp,max_dl_rel,finite\n");
    }
    int rc = 0;
    printf("%-18s %7s %8s %-6s %11s %11s %15s %9s %12s\n", "scene", "frames", "seconds", "finite",
           "rss_first", "rss_last", "2nd_half_growth", "max|dP|", "max|dL|/|L0|");
    for (size_t k = 0; k < sizeof names / sizeof names[0]; ++k) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", scenes_dir, names[k]);
        soak_result r;
        if (soak_scene(path, desc, frames, tweak, ctx, csv, &r)) {
            rc = 1;
            continue;
        }
        char dp[32] = "-", dl[32] = "-";
        if (r.preserved) {
            snprintf(dp, sizeof dp, "%.3g", r.dp);
            snprintf(dl, sizeof dl, "%.3g", r.dl_rel);
        }
        printf("%-18s %7ld %8.1f %-6s %7.1f MiB %7.1f MiB %11.0f KiB %9s %12s\n", names[k],
               r.frames, r.seconds, r.finite ? "yes" : "NO", r.rss_first / 1024.0,
               r.rss_last / 1024.0, r.rss_last - r.rss_half, dp, dl);
        if (!r.finite || r.rss_max > r.rss_first + SOAK_RSS_SLACK_KIB) {
            fprintf(stderr, "pbd: %s: %s\n", names[k],
                    !r.finite ? "a body's state turned non-finite"
                              : "resident memory grew by more than 4 MiB after the first sample");
            rc = 1;
        }
    }
    /* The file appears whole, and only for a soak that passed. */
    if (csv && rc == 0 && pbd_output_commit(&out, &err) != PBD_OK) {
        fprintf(stderr, "pbd: %s\n", err.message);
        rc = 1;
    }
    pbd_output_abort(&out);
    return rc;
}
