/* The CPU reference backend: plain single-threaded C over the same structs and the same
 * projection math (kernels/pbd_shared.h) as the device. It is also the baseline the
 * benchmark compares against, so it is built with the release flags and does no extra work:
 * each stage is the loop a device kernel runs, visited in index order. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "solver/solver_impl.h"

enum { T_PREDICT, T_PROJECT_GS, T_COLLIDE, T_PROJECT_JACOBI, T_GATHER, T_UPDATE, T_REDUCE, T_N };

static const char *const stage_names[T_N] = {
    "predict",       "project_distance_gs", "collide_planes", "project_distance_jacobi",
    "gather_jacobi", "update_velocity",     "body_reduce",
};

typedef struct cpu_impl {
    const pbd_plan *plan;
    pbd_float4 *x;
    pbd_float4 *p;
    pbd_float4 *v;
    pbd_float4 *delta; /* 2 per constraint (Jacobi) */
    float *lambda;
    pbd_kernel_time times[T_N];
} cpu_impl;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void charge(cpu_impl *c, int stage, double t0)
{
    c->times[stage].ms += now_ms() - t0;
    c->times[stage].launches++;
}

static pbd_status cpu_predict(void *impl, pbd_error *err)
{
    (void)err;
    cpu_impl *c = impl;
    const pbd_plan *pl = c->plan;
    double t0 = now_ms();
    const float *g = pl->cfg.gravity;
    for (int i = 0; i < pl->num_particles; ++i)
        pbd_predict(c->x[i], &c->v[i], &c->p[i], g[0], g[1], g[2], pl->h);
    charge(c, T_PREDICT, t0);
    return PBD_OK;
}

static pbd_status cpu_project_color(void *impl, int color, int reset, pbd_error *err)
{
    (void)err;
    cpu_impl *c = impl;
    const pbd_plan *pl = c->plan;
    double t0 = now_ms();
    pbd_float4 *p = c->p;
    for (int k = pl->color_offsets[color]; k < pl->color_offsets[color + 1]; ++k) {
        pbd_distance d = pl->distance[k];
        float lambda = reset ? 0.0f : c->lambda[k];
        pbd_float4 da, db;
        float dl;
        pbd_project_distance(p[d.a], p[d.b], d.rest, d.compliance, lambda, pl->inv_h2, &da, &db,
                             &dl);
        p[d.a] = pbd_add3(p[d.a], da);
        p[d.b] = pbd_add3(p[d.b], db);
        c->lambda[k] = lambda + dl;
    }
    charge(c, T_PROJECT_GS, t0);
    return PBD_OK;
}

static pbd_status cpu_collide(void *impl, pbd_error *err)
{
    (void)err;
    cpu_impl *c = impl;
    const pbd_plan *pl = c->plan;
    double t0 = now_ms();
    for (int i = 0; i < pl->num_particles; ++i)
        c->p[i] = pbd_collide_planes(c->p[i], pl->planes, pl->num_planes);
    charge(c, T_COLLIDE, t0);
    return PBD_OK;
}

static pbd_status cpu_project_jacobi(void *impl, int reset, pbd_error *err)
{
    (void)err;
    cpu_impl *c = impl;
    const pbd_plan *pl = c->plan;
    double t0 = now_ms();
    for (int k = 0; k < pl->num_distance; ++k) {
        pbd_distance d = pl->distance[k];
        float lambda = reset ? 0.0f : c->lambda[k];
        float dl;
        pbd_project_distance(c->p[d.a], c->p[d.b], d.rest, d.compliance, lambda, pl->inv_h2,
                             &c->delta[2 * k], &c->delta[2 * k + 1], &dl);
        c->lambda[k] = lambda + dl;
    }
    charge(c, T_PROJECT_JACOBI, t0);
    return PBD_OK;
}

static pbd_status cpu_gather_jacobi(void *impl, pbd_error *err)
{
    (void)err;
    cpu_impl *c = impl;
    const pbd_plan *pl = c->plan;
    double t0 = now_ms();
    for (int i = 0; i < pl->num_particles; ++i)
        c->p[i] = pbd_gather(c->p[i], c->delta, pl->csr_slots, pl->csr_offsets[i],
                             pl->csr_offsets[i + 1], pl->cfg.omega, pl->planes, pl->num_planes);
    charge(c, T_GATHER, t0);
    return PBD_OK;
}

static pbd_status cpu_update(void *impl, pbd_error *err)
{
    (void)err;
    cpu_impl *c = impl;
    const pbd_plan *pl = c->plan;
    double t0 = now_ms();
    for (int i = 0; i < pl->num_particles; ++i) {
        c->v[i] = pbd_update_velocity(c->x[i], c->p[i], c->v[i].w, pl->inv_h);
        c->x[i] = c->p[i];
    }
    charge(c, T_UPDATE, t0);
    return PBD_OK;
}

static pbd_status cpu_body_sums(void *impl, double *out, pbd_error *err)
{
    (void)err;
    cpu_impl *c = impl;
    const pbd_plan *pl = c->plan;
    double t0 = now_ms();
    memset(out, 0, (size_t)pl->num_bodies * PBD_SUM_COUNT * sizeof *out);
    for (int g = 0; g < pl->num_segments; ++g) {
        pbd_segment seg = pl->segments[g];
        double *acc = out + (size_t)seg.body * PBD_SUM_COUNT;
        double s[PBD_SUM_COUNT];
        for (int i = seg.first; i < seg.first + seg.count; ++i) {
            float e = pbd_particle_error(c->x, pl->distance, pl->csr_slots, pl->csr_offsets[i],
                                         pl->csr_offsets[i + 1]);
            pbd_particle_sums(c->x[i], c->v[i], pl->body_ref[seg.body], e, s);
            pbd_sums_add(acc, s);
        }
    }
    charge(c, T_REDUCE, t0);
    return PBD_OK;
}

static pbd_status cpu_finish(void *impl, pbd_error *err)
{
    (void)impl;
    (void)err;
    return PBD_OK;
}

static pbd_status cpu_read(void *impl, pbd_float4 *x, pbd_float4 *v, pbd_error *err)
{
    (void)err;
    cpu_impl *c = impl;
    size_t bytes = (size_t)c->plan->num_particles * sizeof *x;
    if (x)
        memcpy(x, c->x, bytes);
    if (v)
        memcpy(v, c->v, bytes);
    return PBD_OK;
}

static pbd_status cpu_kernel_times(void *impl, const pbd_kernel_time **out, int *count,
                                   pbd_error *err)
{
    (void)err;
    cpu_impl *c = impl;
    *out = c->times;
    *count = T_N;
    return PBD_OK;
}

static void cpu_reset_times(void *impl)
{
    cpu_impl *c = impl;
    for (int k = 0; k < T_N; ++k) {
        c->times[k].ms = 0.0;
        c->times[k].launches = 0;
    }
}

static const char *cpu_device_name(const void *impl)
{
    (void)impl;
    return "cpu (reference, single thread)";
}

static void cpu_destroy(void *impl)
{
    cpu_impl *c = impl;
    free(c->x);
    free(c->p);
    free(c->v);
    free(c->delta);
    free(c->lambda);
    free(c);
}

pbd_status pbd_cpu_create(const pbd_model *m, const pbd_plan *plan, void **impl, pbd_error *err)
{
    cpu_impl *c = calloc(1, sizeof *c);
    size_t np = (size_t)plan->num_particles, nc = (size_t)plan->num_distance + 1;
    if (c) {
        c->plan = plan;
        c->x = aligned_alloc(16, np * sizeof(pbd_float4));
        c->p = aligned_alloc(16, np * sizeof(pbd_float4));
        c->v = aligned_alloc(16, np * sizeof(pbd_float4));
        c->delta = aligned_alloc(16, 2 * nc * sizeof(pbd_float4));
        c->lambda = calloc(nc, sizeof(float));
    }
    if (!c || !c->x || !c->p || !c->v || !c->delta || !c->lambda) {
        if (c)
            cpu_destroy(c);
        return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory for %zu particles", np);
    }
    memcpy(c->x, m->x, np * sizeof(pbd_float4));
    memcpy(c->p, m->x, np * sizeof(pbd_float4));
    memcpy(c->v, m->v, np * sizeof(pbd_float4));
    memset(c->delta, 0, 2 * nc * sizeof(pbd_float4));
    for (int k = 0; k < T_N; ++k)
        c->times[k].name = stage_names[k];
    *impl = c;
    return PBD_OK;
}

const pbd_backend_ops pbd_cpu_ops = {
    cpu_predict,     cpu_project_color, cpu_collide, cpu_project_jacobi, cpu_gather_jacobi,
    cpu_update,      cpu_body_sums,     cpu_finish,  cpu_read,           cpu_kernel_times,
    cpu_reset_times, cpu_device_name,   cpu_destroy,
};
