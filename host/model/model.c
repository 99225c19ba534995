/* The host-side model: growable structure-of-arrays storage and its validation. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pbd.h"

_Static_assert(sizeof(pbd_float4) == 16, "pbd_float4 must match cl_float4");
_Static_assert(_Alignof(pbd_float4) == 16, "pbd_float4 must be 16-byte aligned");
_Static_assert(sizeof(pbd_distance) == 16, "pbd_distance is 16 bytes on both sides");
_Static_assert(sizeof(pbd_segment) == 16, "pbd_segment is 16 bytes on both sides");

void pbd_model_free(pbd_model *m)
{
    if (!m)
        return;
    free(m->x);
    free(m->v);
    free(m->body);
    free(m->bodies);
    free(m->distance);
    free(m->planes);
    memset(m, 0, sizeof *m);
}

/* Grows *p to hold at least `need` elements of `size` bytes; capacities are powers of two so
 * the count alone says when to grow. */
static int grow(void **p, int count, int need, size_t size)
{
    int cap = 1;
    while (cap < count)
        cap *= 2;
    if (count > 0 && need <= cap)
        return 0;
    int ncap = cap;
    while (ncap < need)
        ncap *= 2;
    void *q = realloc(*p, (size_t)ncap * size);
    if (!q)
        return -1;
    *p = q;
    return 0;
}

int pbd_model_add_particles(pbd_model *m, int count, const char *body_name)
{
    int first = m->num_particles;
    int need = first + count;
    if (count < 1 || need < first)
        return -1;
    if (grow((void **)&m->bodies, m->num_bodies, m->num_bodies + 1, sizeof *m->bodies) ||
        grow((void **)&m->body, first, need, sizeof *m->body))
        return -1;
    /* float4 arrays must stay 16-byte aligned: realloc gives max_align_t, which is 16 on
     * the platforms we build for; checked here rather than assumed. */
    if (grow((void **)&m->x, first, need, sizeof *m->x) ||
        grow((void **)&m->v, first, need, sizeof *m->v))
        return -1;
    if (((uintptr_t)m->x | (uintptr_t)m->v) % 16u)
        return -1;
    pbd_body *b = &m->bodies[m->num_bodies];
    memset(b, 0, sizeof *b);
    b->first = first;
    b->count = count;
    b->momentum = 1;
    snprintf(b->name, sizeof b->name, "%s", body_name ? body_name : "body");
    for (int i = first; i < need; ++i) {
        m->body[i] = m->num_bodies;
        m->x[i] = (pbd_float4){0.0f, 0.0f, 0.0f, 1.0f};
        m->v[i] = (pbd_float4){0.0f, 0.0f, 0.0f, 1.0f};
    }
    m->num_bodies++;
    m->num_particles = need;
    return first;
}

int pbd_model_add_distance(pbd_model *m, int a, int b, float rest, float compliance)
{
    if (grow((void **)&m->distance, m->num_distance, m->num_distance + 1, sizeof *m->distance))
        return -1;
    m->distance[m->num_distance++] = (pbd_distance){a, b, rest, compliance};
    return 0;
}

int pbd_model_add_plane(pbd_model *m, float nx, float ny, float nz, float offset)
{
    if (grow((void **)&m->planes, m->num_planes, m->num_planes + 1, sizeof *m->planes))
        return -1;
    m->planes[m->num_planes++] = (pbd_float4){nx, ny, nz, offset};
    return 0;
}

static int finite4(pbd_float4 f)
{
    return isfinite(f.x) && isfinite(f.y) && isfinite(f.z) && isfinite(f.w);
}

pbd_status pbd_model_validate(const pbd_model *m, pbd_error *err)
{
    if (m->num_particles < 1)
        return pbd_error_set(err, PBD_ERR_MODEL, "the model has no particles");
    int next = 0;
    for (int b = 0; b < m->num_bodies; ++b) {
        const pbd_body *bd = &m->bodies[b];
        if (bd->first != next || bd->count < 1)
            return pbd_error_set(err, PBD_ERR_MODEL,
                                 "body %d: particles [%d, %d) do not follow the previous body "
                                 "(expected first = %d)",
                                 b, bd->first, bd->first + bd->count, next);
        int pinned = 0;
        for (int i = bd->first; i < bd->first + bd->count && i < m->num_particles; ++i) {
            if (m->body[i] != b)
                return pbd_error_set(err, PBD_ERR_MODEL,
                                     "particle %d: body %d (expected %d, the body whose range "
                                     "[%d, %d) holds it)",
                                     i, m->body[i], b, bd->first, bd->first + bd->count);
            pinned += m->x[i].w == 0.0f;
        }
        if (pinned != bd->pinned)
            return pbd_error_set(err, PBD_ERR_MODEL,
                                 "body %d: %d pinned particles recorded, %d found (inverse mass 0)",
                                 b, bd->pinned, pinned);
        next += bd->count;
    }
    if (next != m->num_particles)
        return pbd_error_set(err, PBD_ERR_MODEL, "bodies cover %d of %d particles", next,
                             m->num_particles);
    for (int i = 0; i < m->num_particles; ++i) {
        if (!finite4(m->x[i]) || !finite4(m->v[i]))
            return pbd_error_set(err, PBD_ERR_MODEL,
                                 "particle %d: non-finite position or "
                                 "velocity",
                                 i);
        if (m->x[i].w < 0.0f || m->v[i].w <= 0.0f)
            return pbd_error_set(err, PBD_ERR_MODEL,
                                 "particle %d: mass %g, inverse mass %g (expected mass > 0, "
                                 "inverse mass >= 0)",
                                 i, (double)m->v[i].w, (double)m->x[i].w);
    }
    for (int c = 0; c < m->num_distance; ++c) {
        const pbd_distance *d = &m->distance[c];
        if (d->a < 0 || d->b < 0 || d->a >= m->num_particles || d->b >= m->num_particles ||
            d->a == d->b)
            return pbd_error_set(err, PBD_ERR_MODEL,
                                 "constraint %d: particles (%d, %d) (expected two different "
                                 "indices in [0, %d))",
                                 c, d->a, d->b, m->num_particles);
        if (!(d->rest >= 0.0f) || !isfinite(d->rest) || !isfinite(d->compliance) ||
            d->compliance < -1.0f)
            return pbd_error_set(err, PBD_ERR_MODEL,
                                 "constraint %d: rest %g, compliance %g (expected rest >= 0, "
                                 "compliance >= 0 or stiffness in (0, 1])",
                                 c, (double)d->rest, (double)d->compliance);
    }
    for (int k = 0; k < m->num_planes; ++k) {
        pbd_float4 p = m->planes[k];
        double n = sqrt((double)p.x * p.x + (double)p.y * p.y + (double)p.z * p.z);
        if (!finite4(p) || fabs(n - 1.0) > 1e-5)
            return pbd_error_set(err, PBD_ERR_MODEL, "plane %d: normal length %g (expected 1)", k,
                                 n);
    }
    return PBD_OK;
}

float pbd_model_extent(const pbd_model *m)
{
    if (m->num_particles < 1)
        return 1.0f;
    double lo[3], hi[3];
    for (int k = 0; k < 3; ++k)
        lo[k] = hi[k] = (&m->x[0].x)[k];
    for (int i = 1; i < m->num_particles; ++i)
        for (int k = 0; k < 3; ++k) {
            double c = (&m->x[i].x)[k];
            lo[k] = c < lo[k] ? c : lo[k];
            hi[k] = c > hi[k] ? c : hi[k];
        }
    double d = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                    (hi[2] - lo[2]) * (hi[2] - lo[2]));
    return d > 0.0 ? (float)d : 1.0f;
}

pbd_config pbd_config_default(void)
{
    pbd_config c;
    memset(&c, 0, sizeof c);
    c.dt = 1.0f / 60.0f;
    c.substeps = 1;
    c.iterations = 10;
    c.solver = PBD_SOLVER_GS;
    c.omega = 1.0f;
    c.gravity[1] = -9.81f;
    c.frames = 300;
    c.momentum = 1;
    c.damping = PBD_DAMPING_NONE;
    c.damping_k = 0.0f;
    c.velocity_update = PBD_VELOCITY_FIRST_ORDER;
    return c;
}
