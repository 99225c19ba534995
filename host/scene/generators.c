/* Body generators: cloth grid, rope, tetrahedral box lattice, explicit particles. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scene/generators.h"

/* The body being appended, and the model's counts before it (to roll back). */
typedef struct build {
    pbd_model *m;
    int particles, bodies, triangles;
    int constraints[PBD_CONSTRAINT_COUNT]; /* the model's counts before the body */
    int first, count;
    float compliance;
} build;

static pbd_status bad(pbd_error *err, const char *key, double found, const char *expected)
{
    return pbd_error_set(err, PBD_ERR_ARGUMENT, "%s: found %.15g, expected %s", key, found,
                         expected);
}

static pbd_status rollback(build *b, pbd_error *err)
{
    b->m->num_particles = b->particles;
    b->m->num_bodies = b->bodies;
#define PBD_X_RESTORE(id, name, type, arity, world)                                                \
    b->m->num_##name = b->constraints[PBD_CONSTRAINT_##id];
    PBD_CONSTRAINT_LIST(PBD_X_RESTORE)
#undef PBD_X_RESTORE
    b->m->num_triangles = b->triangles;
    return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory");
}

/* Checks what every body shares (mass, compliance, pins, the scene limits), then appends
 * `np` particles with their masses; positions and velocities are the caller's. `measure` is
 * the area, length or volume that a density multiplies; `masses` (or NULL) each particle's
 * mass; `count_key` the scene key that sets the body's size, named when a limit is hit. */
static pbd_status begin(build *b, pbd_model *m, const pbd_gen_common *c, const char *type,
                        int64_t np, int64_t nc, const char *count_key, double measure,
                        const float *masses, pbd_error *err)
{
    if (!m || !c)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "%s: no model or descriptor", type);
    if (!(c->mass >= 0.0 && c->mass <= FLT_MAX))
        return bad(err, "mass", c->mass, "a number > 0");
    if (!(c->density >= 0.0 && c->density <= FLT_MAX))
        return bad(err, "density", c->density, "a number > 0");
    if (c->mass > 0.0 && c->density > 0.0)
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "density: found together with mass, expected one of them");
    if (masses && c->mass > 0.0)
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "masses: found together with mass, expected one of them");
    if (!(c->compliance >= -1.0f && c->compliance <= PBD_MAX_COMPLIANCE))
        return bad(err, "compliance", c->compliance,
                   "a compliance in [0, 1e20] or a stiffness in (0, 1]");
    if (np < 1 || m->num_particles + np > PBD_MAX_PARTICLES)
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "%s: found %lld particles (%lld in the scene), expected 1 to %d "
                             "in a scene",
                             count_key, (long long)np, (long long)(m->num_particles + np),
                             PBD_MAX_PARTICLES);
    if (m->num_distance + nc > PBD_MAX_DISTANCE)
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "%s: found %lld constraints (%lld in the scene), expected at most "
                             "%d in a scene",
                             count_key, (long long)nc, (long long)(m->num_distance + nc),
                             PBD_MAX_DISTANCE);
    double total = c->density > 0.0 ? c->density * measure : c->mass > 0.0 ? c->mass : 1.0;
    double share = total / (double)np;
    if (!masses && !(share >= FLT_MIN && share <= FLT_MAX) && c->density > 0.0)
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "density: found %.15g kg a particle (%g times the body's area, "
                             "length or volume of %g, over %lld particles), expected [%g, %g] kg",
                             share, c->density, measure, (long long)np, (double)FLT_MIN,
                             (double)FLT_MAX);
    if (!masses && !(share >= FLT_MIN && share <= FLT_MAX))
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "mass: found %.15g kg a particle (%g over %lld particles), expected "
                             "[%g, %g] kg",
                             share, total, (long long)np, (double)FLT_MIN, (double)FLT_MAX);
    for (int64_t i = 0; masses && i < np; ++i)
        if (!(masses[i] >= FLT_MIN && masses[i] <= FLT_MAX)) {
            char key[48];
            snprintf(key, sizeof key, "masses[%lld]", (long long)i);
            return bad(err, key, masses[i], "a mass in [1.17549435e-38, 3.40282347e+38] kg");
        }
    if (c->num_pinned > 0 && !c->pinned)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "pinned: no array");
    /* Duplicates are found with one mark per particle, before anything is appended. */
    unsigned char *seen = c->num_pinned > 0 ? calloc((size_t)np, 1) : NULL;
    if (c->num_pinned > 0 && !seen)
        return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory");
    for (int k = 0; k < c->num_pinned; ++k) {
        int p = c->pinned[k];
        char key[48], expected[64];
        snprintf(key, sizeof key, "pinned[%d]", k);
        snprintf(expected, sizeof expected, "an index in [0, %lld]", (long long)np - 1);
        if (p < 0 || p >= np || seen[p]) {
            free(seen);
            if (p >= 0 && p < np)
                return pbd_error_set(err, PBD_ERR_ARGUMENT,
                                     "%s: found %d again, expected each index once", key, p);
            return bad(err, key, p, expected);
        }
        seen[p] = 1;
    }
    free(seen);

    memset(b, 0, sizeof *b);
    b->m = m;
    b->particles = m->num_particles;
    b->bodies = m->num_bodies;
#define PBD_X_SAVE(id, name, type, arity, world)                                                   \
    b->constraints[PBD_CONSTRAINT_##id] = m->num_##name;
    PBD_CONSTRAINT_LIST(PBD_X_SAVE)
#undef PBD_X_SAVE
    b->triangles = m->num_triangles;
    b->count = (int)np;
    b->compliance = c->compliance;
    b->first = pbd_model_add_particles(m, (int)np, c->name ? c->name : type);
    if (b->first < 0)
        return rollback(b, err);
    for (int i = 0; i < b->count; ++i) {
        float mi = masses ? masses[i] : (float)share;
        m->v[b->first + i].w = mi;
        m->x[b->first + i].w = 1.0f / mi;
    }
    for (int k = 0; k < c->num_pinned; ++k)
        m->x[b->first + c->pinned[k]].w = 0.0f;
    return PBD_OK;
}

static void set_position(build *b, int i, double x, double y, double z)
{
    pbd_float4 *p = &b->m->x[b->first + i];
    p->x = (float)x;
    p->y = (float)y;
    p->z = (float)z;
}

/* A constraint between local particles i and j; rest < 0 takes the initial distance.
 * Returns 1 on allocation failure so that callers can sum failures over a loop. */
static int link(build *b, int i, int j, float rest)
{
    const pbd_float4 *p = &b->m->x[b->first + i], *q = &b->m->x[b->first + j];
    if (rest < 0.0f) {
        double dx = (double)p->x - q->x, dy = (double)p->y - q->y, dz = (double)p->z - q->z;
        rest = (float)sqrt(dx * dx + dy * dy + dz * dz);
    }
    return pbd_model_add_distance(b->m, b->first + i, b->first + j, rest, b->compliance) != 0;
}

/* Velocities (`vel` per particle, or v + w x (x - com) about the mass-weighted centre), zero
 * for pinned particles, and the body's pin count. `failures` counts failed links. */
static pbd_status finish(build *b, const pbd_gen_common *c, const float (*vel)[3], int failures,
                         pbd_error *err)
{
    if (failures)
        return rollback(b, err);
    pbd_float4 *x = b->m->x + b->first, *v = b->m->v + b->first;
    /* A pinned particle's velocity is zero: one given otherwise would be dropped. */
    for (int i = 0; vel && i < b->count; ++i)
        if (x[i].w == 0.0f && (vel[i][0] != 0.0f || vel[i][1] != 0.0f || vel[i][2] != 0.0f)) {
            rollback(b, err);
            return pbd_error_set(err, PBD_ERR_ARGUMENT,
                                 "velocities[%d]: found [%g, %g, %g] for a pinned particle, "
                                 "expected [0, 0, 0] (it never moves)",
                                 i, (double)vel[i][0], (double)vel[i][1], (double)vel[i][2]);
        }
    double mass = 0.0, com[3] = {0.0, 0.0, 0.0};
    for (int i = 0; i < b->count; ++i) {
        mass += v[i].w;
        com[0] += (double)v[i].w * x[i].x;
        com[1] += (double)v[i].w * x[i].y;
        com[2] += (double)v[i].w * x[i].z;
    }
    for (int k = 0; k < 3; ++k)
        com[k] /= mass;
    const float *w = c->angular_velocity;
    int pinned = 0;
    for (int i = 0; i < b->count; ++i) {
        double r[3] = {x[i].x - com[0], x[i].y - com[1], x[i].z - com[2]};
        double u[3] = {c->velocity[0] + (w[1] * r[2] - w[2] * r[1]),
                       c->velocity[1] + (w[2] * r[0] - w[0] * r[2]),
                       c->velocity[2] + (w[0] * r[1] - w[1] * r[0])};
        if (vel)
            for (int k = 0; k < 3; ++k)
                u[k] = vel[i][k];
        if (x[i].w == 0.0f) {
            pinned++;
            u[0] = u[1] = u[2] = 0.0;
        }
        v[i].x = (float)u[0];
        v[i].y = (float)u[1];
        v[i].z = (float)u[2];
    }
    b->m->bodies[b->m->num_bodies - 1].pinned = pinned;
    return PBD_OK;
}

/* Checks count values against [lo, hi]; key is e.g. "resolution" and gets "[k]". */
static pbd_status check_ints(const int *v, int n, int lo, int hi, const char *key, pbd_error *err)
{
    for (int k = 0; k < n; ++k)
        if (v[k] < lo || v[k] > hi) {
            char name[48], expected[64];
            snprintf(name, sizeof name, "%s[%d]", key, k);
            snprintf(expected, sizeof expected, "an integer in [%d, %d]", lo, hi);
            return bad(err, name, v[k], expected);
        }
    return PBD_OK;
}

static pbd_status check_sizes(const float *v, int n, pbd_error *err)
{
    for (int k = 0; k < n; ++k)
        if (!(v[k] > 0.0f && v[k] <= FLT_MAX)) {
            char name[48];
            snprintf(name, sizeof name, "size[%d]", k);
            return bad(err, name, v[k], "a number > 0");
        }
    return PBD_OK;
}

static pbd_gen_common common_default(void)
{
    pbd_gen_common c;
    memset(&c, 0, sizeof c);
    return c;
}

/* ---- cloth ------------------------------------------------------------------------------ */

pbd_cloth_desc pbd_cloth_desc_default(void)
{
    pbd_cloth_desc d;
    memset(&d, 0, sizeof d);
    d.common = common_default();
    d.resolution[0] = d.resolution[1] = 2;
    d.size[0] = d.size[1] = 1.0f;
    d.shear = 1;
    d.bending = PBD_BENDING_SPRINGS;
    d.bending_compliance = NAN;
    return d;
}

void pbd_cloth_counts(const pbd_cloth_desc *d, int64_t *particles, int64_t *constraints)
{
    int64_t nu = d->resolution[0], nv = d->resolution[1];
    int64_t structural = (nu - 1) * nv + nu * (nv - 1);
    int64_t shear = d->shear ? 2 * (nu - 1) * (nv - 1) : 0;
    int64_t bending = d->bending == PBD_BENDING_SPRINGS ? (nu - 2) * nv + nu * (nv - 2)
                      : d->bending != PBD_BENDING_NONE
                          ? (nu - 1) * (nv - 1) * 3 - (nu - 2) - (nv - 2) - 2 /* interior edges */
                          : 0;
    *particles = nu * nv;
    /* tethers: at most one a particle */
    *constraints = structural + shear + bending + (d->tethers ? nu * nv : 0);
}

/* Tethers every free particle of a cloth to a pinned one: the first reached by a
 * breadth-first walk over the grid from all the pins at once (O(particles)), at the distance
 * they start apart. 0, or 1 on an allocation failure. */
static int add_tethers(build *b, int nu, int nv, float compliance)
{
    int n = nu * nv, head = 0, tail = 0, failures = 0;
    int *queue = malloc((size_t)n * sizeof *queue), *pin = malloc((size_t)n * sizeof *pin);
    if (!queue || !pin) {
        free(queue);
        free(pin);
        return 1;
    }
    const pbd_float4 *x = b->m->x + b->first;
    for (int i = 0; i < n; ++i) {
        pin[i] = x[i].w == 0.0f ? i : -1;
        if (pin[i] >= 0)
            queue[tail++] = i;
    }
    while (head < tail) {
        int p = queue[head++], i = p % nu, j = p / nu;
        int next[4] = {i > 0 ? p - 1 : -1, i + 1 < nu ? p + 1 : -1, j > 0 ? p - nu : -1,
                       j + 1 < nv ? p + nu : -1};
        for (int k = 0; k < 4; ++k)
            if (next[k] >= 0 && pin[next[k]] < 0) {
                pin[next[k]] = pin[p];
                queue[tail++] = next[k];
            }
    }
    for (int i = 0; i < n && !failures; ++i) {
        if (x[i].w == 0.0f || pin[i] < 0)
            continue;
        const pbd_float4 *p = &x[i], *q = &x[pin[i]];
        double dx = (double)p->x - q->x, dy = (double)p->y - q->y, dz = (double)p->z - q->z;
        pbd_tether t = {b->first + i, b->first + pin[i], (float)sqrt(dx * dx + dy * dy + dz * dz),
                        compliance};
        failures += pbd_model_add_constraint(b->m, PBD_CONSTRAINT_TETHER, &t) != 0;
    }
    free(queue);
    free(pin);
    return failures;
}

/* A cloth's or mesh cloth's bending: its kind, and its compliance (NaN: the body's). */
static pbd_status check_bending(pbd_bending kind, float compliance, pbd_error *err)
{
    if (kind < PBD_BENDING_NONE || kind > PBD_BENDING_ISOMETRIC)
        return bad(err, "bending", kind, "none, springs, dihedral or isometric");
    if (!isnan(compliance) && !(compliance >= -1.0f && compliance <= PBD_MAX_COMPLIANCE))
        return bad(err, "bending_compliance", compliance,
                   "a compliance in [0, 1e20] or a stiffness in (0, 1]");
    return PBD_OK;
}

/* A Neo-Hookean solid's Young's modulus E (0: none) and Poisson ratio, not with volume
 * constraints; *mu and *lambda are Lame's mu and the model's lambda: the linear one plus mu
 * (the energy's linearisation at rest has lambda - mu where linear elasticity has lambda). */
static pbd_status check_elastic(double E, double nu, int volume, double *mu, double *lambda,
                                pbd_error *err)
{
    if (!(E >= 0.0 && E <= 1e15))
        return bad(err, "young_modulus", E, "a modulus in (0, 1e15] Pa");
    if (!(nu >= 0.0 && nu <= 0.49))
        return bad(err, "poisson_ratio", nu, "a ratio in [0, 0.49]");
    if (E > 0.0 && volume)
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "volume: found with young_modulus, expected one of them (a "
                             "Neo-Hookean solid keeps its volume through poisson_ratio)");
    *mu = E / (2.0 * (1.0 + nu));
    *lambda = E * nu / ((1.0 + nu) * (1.0 - 2.0 * nu)) + *mu;
    return PBD_OK;
}

/* An edge of a surface triangle and the triangle's third particle (model indices). */
typedef struct tri_edge {
    int lo, hi, opposite;
} tri_edge;

static int compare_edges(const void *pa, const void *pb)
{
    const tri_edge *a = pa, *b = pb;
    if (a->lo != b->lo)
        return a->lo < b->lo ? -1 : 1;
    if (a->hi != b->hi)
        return a->hi < b->hi ? -1 : 1;
    return (a->opposite > b->opposite) - (a->opposite < b->opposite);
}

/* The edges of `nt` triangles (vertices t[3k .. 3k + 2], numbered through `map` where it is
 * not NULL), each with its triangle's third vertex, sorted: triangles that share an edge
 * lie next to each other. malloc'd; NULL when out of memory. */
static tri_edge *triangle_edges(const int *t, int nt, const int *map)
{
    tri_edge *e = malloc((size_t)(3 * nt > 0 ? 3 * nt : 1) * sizeof *e);
    if (!e)
        return NULL;
    for (int k = 0; k < nt; ++k)
        for (int s = 0; s < 3; ++s) {
            int p = t[3 * k + s], q = t[3 * k + (s + 1) % 3], o = t[3 * k + (s + 2) % 3];
            if (map) {
                p = map[p];
                q = map[q];
                o = map[o];
            }
            e[3 * k + s] = (tri_edge){p < q ? p : q, p < q ? q : p, o};
        }
    qsort(e, (size_t)(3 * nt), sizeof *e, compare_edges);
    return e;
}

/* The next edge from *k on that exactly two triangles share, with different third vertices
 * (its first entry; the second follows it), moving *k past it; -1 after the last. */
static int next_hinge(const tri_edge *e, int n, int *k)
{
    while (*k < n) {
        int first = *k, count = 1;
        while (first + count < n && e[first + count].lo == e[first].lo &&
               e[first + count].hi == e[first].hi)
            ++count;
        *k += count;
        if (count == 2 && e[first].opposite != e[first + 1].opposite)
            return first;
    }
    return -1;
}

static double dot3(const double *a, const double *b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static void cross3(const double *a, const double *b, double *out)
{
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

/* cot of the angle between u and v, and |u x v|. */
static double cotangent(const double *u, const double *v, double *cross_len)
{
    double w[3];
    cross3(u, v, w);
    *cross_len = sqrt(dot3(w, w));
    return dot3(u, v) / *cross_len;
}

/* The angle of the hinge over edge a-b with opposite corners c and d (0: flat), as
 * pbd_dihedral_project measures it; 0 where a triangle is degenerate. */
static int hinge_angle(const pbd_model *m, int a, int b, int c, int d, double *angle)
{
    const pbd_float4 *X[4] = {&m->x[a], &m->x[b], &m->x[c], &m->x[d]};
    double e0[3], e1[3], e2[3], e3[3], e4[3];
    e0[0] = (double)X[1]->x - X[0]->x, e0[1] = (double)X[1]->y - X[0]->y;
    e0[2] = (double)X[1]->z - X[0]->z;
    e1[0] = (double)X[2]->x - X[0]->x, e1[1] = (double)X[2]->y - X[0]->y;
    e1[2] = (double)X[2]->z - X[0]->z;
    e2[0] = (double)X[3]->x - X[0]->x, e2[1] = (double)X[3]->y - X[0]->y;
    e2[2] = (double)X[3]->z - X[0]->z;
    e3[0] = (double)X[2]->x - X[1]->x, e3[1] = (double)X[2]->y - X[1]->y;
    e3[2] = (double)X[2]->z - X[1]->z;
    e4[0] = (double)X[3]->x - X[1]->x, e4[1] = (double)X[3]->y - X[1]->y;
    e4[2] = (double)X[3]->z - X[1]->z;
    double n1[3], n2[3], s[3];
    cross3(e1, e3, n1);
    cross3(e4, e2, n2);
    cross3(n2, n1, s);
    double el = sqrt(dot3(e0, e0));
    if (!(dot3(n1, n1) > 0.0 && dot3(n2, n2) > 0.0 && el > 0.0))
        return 0;
    *angle = atan2(dot3(s, e0) / el, dot3(n1, n2));
    return 1;
}

int pbd_scene_add_bending_pair(pbd_model *m, pbd_bending kind, float compliance, int a, int b,
                               int c, int d)
{
    const pbd_float4 *X[4] = {&m->x[a], &m->x[b], &m->x[c], &m->x[d]};
    double x[4][3];
    for (int i = 0; i < 4; ++i) {
        x[i][0] = X[i]->x;
        x[i][1] = X[i]->y;
        x[i][2] = X[i]->z;
    }
    double e0[3], e1[3], e2[3], e3[3], e4[3];
    for (int k = 0; k < 3; ++k) {
        e0[k] = x[1][k] - x[0][k]; /* the edge, a to b */
        e1[k] = x[2][k] - x[0][k];
        e2[k] = x[3][k] - x[0][k];
        e3[k] = x[2][k] - x[1][k];
        e4[k] = x[3][k] - x[1][k];
    }
    if (kind == PBD_BENDING_ISOMETRIC) {
        double me0[3] = {-e0[0], -e0[1], -e0[2]}, l01, l02, l03, l04;
        double c01 = cotangent(e0, e1, &l01), c02 = cotangent(e0, e2, &l02);
        double c03 = cotangent(me0, e3, &l03), c04 = cotangent(me0, e4, &l04);
        double area = 0.5 * (l01 + l02); /* A0 + A1 */
        if (!(l01 > 0.0 && l02 > 0.0 && l03 > 0.0 && l04 > 0.0 && area > 0.0))
            return 0;
        double scale = sqrt(3.0 / area);
        pbd_isometric r = {a, b, c, d, {0}, compliance, 0, 0, 0};
        double K[4] = {c03 + c04, c01 + c02, -c01 - c03, -c02 - c04};
        for (int i = 0; i < 4; ++i)
            r.k[i] = (float)(scale * K[i]);
        return pbd_model_add_constraint(m, PBD_CONSTRAINT_ISOMETRIC, &r) != 0;
    }
    double rest;
    if (!hinge_angle(m, a, b, c, d, &rest))
        return 0;
    pbd_dihedral r = {a, b, c, d, (float)rest, compliance, 0, 0};
    return pbd_model_add_constraint(m, PBD_CONSTRAINT_DIHEDRAL, &r) != 0;
}

/* Isometric bending (Bergou et al. 2006) takes a flat rest shape: its energy is 0 only
 * there, so it pulls any other flat. A hinge folded more than this at rest is refused. */
#define PBD_ISOMETRIC_MAX_FOLD 1.0 /* degrees */

/* The hinge of the body's surface folded most at rest: its angle from flat (degrees) and
 * its edge's particles, or 0 without hinges; -1 on an allocation failure. */
static double most_folded(build *b, int *lo, int *hi)
{
    int nt = b->m->num_triangles - b->triangles;
    tri_edge *e = triangle_edges(b->m->triangles + 3 * (size_t)b->triangles, nt, NULL);
    if (!e)
        return -1.0;
    double most = 0.0, angle;
    for (int k = 0, h; (h = next_hinge(e, 3 * nt, &k)) >= 0;)
        if (hinge_angle(b->m, e[h].lo, e[h].hi, e[h].opposite, e[h + 1].opposite, &angle) &&
            fabs(angle) * (180.0 / 3.14159265358979323846) > most) {
            most = fabs(angle) * (180.0 / 3.14159265358979323846);
            *lo = e[h].lo;
            *hi = e[h].hi;
        }
    free(e);
    return most;
}

/* Bending elements (dihedral or isometric) for every edge that exactly two of the body's
 * surface triangles share (an edge of three or more is not bent). 0, or 1 on an allocation
 * failure. */
static int add_surface_bending(build *b, pbd_bending kind, float compliance)
{
    int nt = b->m->num_triangles - b->triangles;
    tri_edge *e = triangle_edges(b->m->triangles + 3 * (size_t)b->triangles, nt, NULL);
    if (!e)
        return 1;
    int failures = 0;
    for (int k = 0, h; !failures && (h = next_hinge(e, 3 * nt, &k)) >= 0;)
        failures += pbd_scene_add_bending_pair(b->m, kind, compliance, e[h].lo, e[h].hi,
                                               e[h].opposite, e[h + 1].opposite);
    free(e);
    return failures;
}

pbd_status pbd_scene_add_cloth(pbd_model *m, const pbd_cloth_desc *d, pbd_error *err)
{
    pbd_status st =
        check_ints(d->resolution, 2, PBD_CLOTH_RES_MIN, PBD_CLOTH_RES_MAX, "resolution", err);
    if (st == PBD_OK)
        st = check_sizes(d->size, 2, err);
    if (st != PBD_OK)
        return st;
    if (d->orientation != PBD_CLOTH_XZ && d->orientation != PBD_CLOTH_XY)
        return bad(err, "orientation", d->orientation, "xz or xy");
    if (d->pin != PBD_PIN_NONE && d->pin != PBD_PIN_CORNERS && d->pin != PBD_PIN_EDGE)
        return bad(err, "pin", d->pin, "none, corners or edge");
    if ((st = check_bending(d->bending, d->bending_compliance, err)) != PBD_OK)
        return st;
    if (!(d->tether_compliance >= -1.0f && d->tether_compliance <= PBD_MAX_COMPLIANCE))
        return bad(err, "tether_compliance", d->tether_compliance,
                   "a compliance in [0, 1e20] or a stiffness in (0, 1]");
    float bend = isnan(d->bending_compliance) ? d->common.compliance : d->bending_compliance;
    int64_t np, nc;
    pbd_cloth_counts(d, &np, &nc);
    build b;
    st = begin(&b, m, &d->common, "cloth", np, nc, "resolution", (double)d->size[0] * d->size[1],
               NULL, err);
    if (st != PBD_OK)
        return st;
    int nu = d->resolution[0], nv = d->resolution[1];
    double du = (double)d->size[0] / (nu - 1), dv = (double)d->size[1] / (nv - 1);
    const float *c = d->center;
    for (int j = 0; j < nv; ++j)
        for (int i = 0; i < nu; ++i) {
            double u = -0.5 * d->size[0] + i * du, w = -0.5 * d->size[1] + j * dv;
            if (d->orientation == PBD_CLOTH_XZ)
                set_position(&b, j * nu + i, c[0] + u, c[1], c[2] + w);
            else
                set_position(&b, j * nu + i, c[0] + u, c[1] - w, c[2]);
        }
    for (int i = 0; d->pin != PBD_PIN_NONE && i < nu; ++i)
        if (d->pin == PBD_PIN_EDGE || i == 0 || i == nu - 1)
            m->x[b.first + i].w = 0.0f;
    int failures = 0;
    for (int j = 0; j < nv; ++j)
        for (int i = 0; i < nu; ++i) {
            int p = j * nu + i;
            if (i + 1 < nu)
                failures += link(&b, p, p + 1, -1.0f);
            if (j + 1 < nv)
                failures += link(&b, p, p + nu, -1.0f);
            if (d->shear && i + 1 < nu && j + 1 < nv) {
                failures += link(&b, p, p + nu + 1, -1.0f);
                failures += link(&b, p + 1, p + nu, -1.0f);
            }
            b.compliance = bend;
            if (d->bending == PBD_BENDING_SPRINGS && i + 2 < nu)
                failures += link(&b, p, p + 2, -1.0f);
            if (d->bending == PBD_BENDING_SPRINGS && j + 2 < nv)
                failures += link(&b, p, p + 2 * nu, -1.0f);
            b.compliance = d->common.compliance;
        }
    if (d->tethers) {
        int pinned = 0;
        for (int i = 0; i < nu * nv; ++i)
            pinned += m->x[b.first + i].w == 0.0f;
        if (pinned == 0) {
            rollback(&b, NULL);
            return pbd_error_set(err, PBD_ERR_ARGUMENT,
                                 "tethers: found true with no particle pinned, expected a "
                                 "pinned particle to tether to (pin or pinned)");
        }
        failures += add_tethers(&b, nu, nv, d->tether_compliance);
    }
    /* The surface: two triangles a quad. */
    for (int j = 0; j + 1 < nv; ++j)
        for (int i = 0; i + 1 < nu; ++i) {
            int p = b.first + j * nu + i;
            failures += pbd_model_add_triangle(m, p, p + nu, p + 1) != 0;
            failures += pbd_model_add_triangle(m, p + 1, p + nu, p + nu + 1) != 0;
        }
    if (!failures && (d->bending == PBD_BENDING_DIHEDRAL || d->bending == PBD_BENDING_ISOMETRIC))
        failures += add_surface_bending(&b, d->bending, bend);
    return finish(&b, &d->common, NULL, failures, err);
}

/* ---- rope ------------------------------------------------------------------------------- */

pbd_rope_desc pbd_rope_desc_default(void)
{
    pbd_rope_desc d;
    memset(&d, 0, sizeof d);
    d.common = common_default();
    d.segments = 1;
    d.end[0] = 1.0f;
    return d;
}

void pbd_rope_counts(const pbd_rope_desc *d, int64_t *particles, int64_t *constraints)
{
    *particles = (int64_t)d->segments + 1;
    *constraints = (int64_t)d->segments + (d->bending ? d->segments - 1 : 0);
}

pbd_status pbd_scene_add_rope(pbd_model *m, const pbd_rope_desc *d, pbd_error *err)
{
    pbd_status st = check_ints(&d->segments, 1, 1, PBD_ROPE_SEGMENTS_MAX, "segments", err);
    if (st != PBD_OK)
        return st;
    double e[3], len = 0.0;
    for (int k = 0; k < 3; ++k) {
        e[k] = (double)d->end[k] - d->start[k];
        len += e[k] * e[k];
    }
    len = sqrt(len);
    if (!(len > 0.0))
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "end: found [%g, %g, %g] (the start), expected a point other "
                             "than start",
                             (double)d->end[0], (double)d->end[1], (double)d->end[2]);
    int64_t np, nc;
    pbd_rope_counts(d, &np, &nc);
    build b;
    st = begin(&b, m, &d->common, "rope", np, nc, "segments", len, NULL, err);
    if (st != PBD_OK)
        return st;
    int n = d->segments;
    for (int i = 0; i <= n; ++i) {
        double t = (double)i / n;
        set_position(&b, i, d->start[0] + t * e[0], d->start[1] + t * e[1], d->start[2] + t * e[2]);
    }
    int failures = 0;
    for (int i = 0; i < n; ++i)
        failures += link(&b, i, i + 1, -1.0f);
    for (int i = 0; d->bending && i + 2 <= n; ++i)
        failures += link(&b, i, i + 2, -1.0f);
    return finish(&b, &d->common, NULL, failures, err);
}

/* ---- tet_box ---------------------------------------------------------------------------- */

/* The edges of the six Kuhn tetrahedra of a cell, as steps from a lattice point: the three
 * axes, the three face diagonals and the body diagonal, all from the (0,0,0) side, so that
 * neighbouring cells share their face diagonals and the split conforms. */
static const int tet_steps[7][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 0},
                                    {1, 0, 1}, {0, 1, 1}, {1, 1, 1}};

pbd_tet_box_desc pbd_tet_box_desc_default(void)
{
    pbd_tet_box_desc d;
    memset(&d, 0, sizeof d);
    d.common = common_default();
    d.cells[0] = d.cells[1] = d.cells[2] = 1;
    d.size[0] = d.size[1] = d.size[2] = 1.0f;
    return d;
}

void pbd_tet_box_counts(const pbd_tet_box_desc *d, int64_t *particles, int64_t *constraints)
{
    *particles = (int64_t)(d->cells[0] + 1) * (d->cells[1] + 1) * (d->cells[2] + 1);
    *constraints = 0;
    if (d->young_modulus > 0.0) { /* a Neo-Hookean element a tetrahedron, no edges */
        *constraints = 6 * (int64_t)d->cells[0] * d->cells[1] * d->cells[2];
        return;
    }
    for (int s = 0; s < 7; ++s) {
        int64_t n = 1;
        for (int k = 0; k < 3; ++k)
            n *= d->cells[k] + 1 - tet_steps[s][k];
        *constraints += n;
    }
    if (d->volume)
        *constraints += 6 * (int64_t)d->cells[0] * d->cells[1] * d->cells[2];
}

/* The six tetrahedra of a cell around its (0,0,0)-(1,1,1) diagonal: (0,0,0), e_p, e_p + e_q,
 * (1,1,1) for each order p, q, r of the axes (the distance constraints' edges are theirs). */
static const int tet_orders[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                     {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};

/* Appends the volume constraint of the tetrahedron of body particles q[0..3], its rest volume
 * the signed volume it has now; 1 on allocation failure. */
static int add_tet(build *b, const int *q, float compliance)
{
    const pbd_float4 *x = b->m->x + b->first;
    double e[3][3];
    for (int r = 0; r < 3; ++r) {
        e[r][0] = (double)x[q[r + 1]].x - x[q[0]].x;
        e[r][1] = (double)x[q[r + 1]].y - x[q[0]].y;
        e[r][2] = (double)x[q[r + 1]].z - x[q[0]].z;
    }
    double vol = (e[0][0] * (e[1][1] * e[2][2] - e[1][2] * e[2][1]) +
                  e[0][1] * (e[1][2] * e[2][0] - e[1][0] * e[2][2]) +
                  e[0][2] * (e[1][0] * e[2][1] - e[1][1] * e[2][0])) /
                 6.0;
    pbd_volume v = {b->first + q[0],
                    b->first + q[1],
                    b->first + q[2],
                    b->first + q[3],
                    (float)vol,
                    compliance,
                    0,
                    0};
    return pbd_model_add_constraint(b->m, PBD_CONSTRAINT_VOLUME, &v) != 0;
}

pbd_status pbd_scene_add_neo_hookean(pbd_model *m, const int *q, double mu, double lambda,
                                     pbd_error *err)
{
    const pbd_float4 *x = m->x;
    double e[3][3]; /* e[m] = x_{m+1} - x_0: the columns of Dm */
    for (int r = 0; r < 3; ++r) {
        e[r][0] = (double)x[q[r + 1]].x - x[q[0]].x;
        e[r][1] = (double)x[q[r + 1]].y - x[q[0]].y;
        e[r][2] = (double)x[q[r + 1]].z - x[q[0]].z;
    }
    /* det Dm and Dm^-1 = adj(Dm) / det; Dm[j][m] = e[m][j] */
    double det = e[0][0] * (e[1][1] * e[2][2] - e[2][1] * e[1][2]) -
                 e[1][0] * (e[0][1] * e[2][2] - e[2][1] * e[0][2]) +
                 e[2][0] * (e[0][1] * e[1][2] - e[1][1] * e[0][2]);
    double vol = fabs(det) / 6.0;
    if (!(vol > 0.0)) /* a flat tetrahedron has no deformation gradient */
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "found tetrahedron flat in float (rest volume 0), expected a rest "
                             "volume other than 0");
    pbd_neo_hookean r = {q[0], q[1], q[2], q[3], {0}, 0.0f, 0.0f, 0.0f};
    for (int i = 0; i < 3; ++i)       /* row i of Dm^-1: (column i of Dm's cofactors) / det */
        for (int j = 0; j < 3; ++j) { /* (Dm^-1)_ij = C_ji / det, C the cofactor matrix */
            int j1 = (j + 1) % 3, j2 = (j + 2) % 3, i1 = (i + 1) % 3, i2 = (i + 2) % 3;
            /* Dm[a][b] = e[b][a]; cofactor C_ji = Dm[j1][i1] Dm[j2][i2] - Dm[j1][i2] Dm[j2][i1] */
            double cof = e[i1][j1] * e[i2][j2] - e[i2][j1] * e[i1][j2];
            r.dm_inv[3 * i + j] = (float)(cof / det);
        }
    r.compliance = (float)(1.0 / (mu * vol));
    r.compliance_h = (float)(1.0 / (lambda * vol));
    r.gamma = (float)(1.0 + mu / lambda);
    double inv = 0.0;
    for (int k = 0; k < 9; ++k)
        inv = fmax(inv, fabs((double)r.dm_inv[k]));
    if (!(inv <= 1e9))
        return pbd_error_set(
            err, PBD_ERR_ARGUMENT,
            "found tetrahedron too small or nearly flat in float (rest volume %g m^3, an "
            "inverse rest shape entry of %g 1/m), expected entries within 1e9",
            vol, inv);
    if (!(r.compliance <= PBD_MAX_COMPLIANCE && r.compliance_h <= PBD_MAX_COMPLIANCE))
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "found tetrahedron of rest volume %g m^3 with a compliance 1 / "
                             "(mu V) of %g m/N, expected at most 1e20 (a larger modulus or "
                             "larger elements)",
                             vol, fmax((double)r.compliance, (double)r.compliance_h));
    if (pbd_model_add_constraint(m, PBD_CONSTRAINT_NEO_HOOKEAN, &r) != 0)
        return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory");
    return PBD_OK;
}

/* The volume constraint of tetrahedron `e` just added: in float a tiny tetrahedron can be
 * flat, and a huge one beyond what a volume constraint holds (pbd_model_validate). Refused
 * naming the key and the tetrahedron, the body rolled back. */
static pbd_status tet_rest_refused(build *b, int e, pbd_error *err)
{
    float rest = b->m->volume[b->m->num_volume - 1].rest;
    if (rest != 0.0f && fabsf(rest) <= 1e27f)
        return PBD_OK;
    rollback(b, NULL);
    return pbd_error_set(err, PBD_ERR_ARGUMENT,
                         "volume: found tetrahedron %d (from 0) with a rest volume of %g m^3 in "
                         "float, expected a volume other than 0, within 1e27 m^3",
                         e, (double)rest);
}

/* Appends the Neo-Hookean element of tetrahedron `e` (body particles q[0..3]) to the body
 * being built; on a refusal rolls the body back, the message naming young_modulus and `e`. */
static pbd_status add_elastic(build *b, int e, const int *q, double mu, double lambda,
                              pbd_error *err)
{
    int at[4];
    for (int c = 0; c < 4; ++c)
        at[c] = b->first + q[c];
    pbd_error local = {0};
    pbd_status st = pbd_scene_add_neo_hookean(b->m, at, mu, lambda, &local);
    if (st == PBD_OK)
        return PBD_OK;
    rollback(b, NULL);
    if (st == PBD_ERR_MEMORY)
        return pbd_error_set(err, st, "out of memory");
    /* "found tetrahedron ..." becomes "young_modulus: found tetrahedron E (from 0) ..." */
    const char *rest = local.message + strlen("found tetrahedron");
    return pbd_error_set(err, st, "young_modulus: found tetrahedron %d (from 0)%s", e, rest);
}

pbd_status pbd_scene_add_tet_box(pbd_model *m, const pbd_tet_box_desc *d, pbd_error *err)
{
    pbd_status st = check_ints(d->cells, 3, 1, PBD_TET_CELLS_MAX, "cells", err);
    if (st == PBD_OK)
        st = check_sizes(d->size, 3, err);
    if (st != PBD_OK)
        return st;
    int64_t np, nc;
    pbd_tet_box_counts(d, &np, &nc);
    build b;
    st = begin(&b, m, &d->common, "tet_box", np, nc, "cells",
               (double)d->size[0] * d->size[1] * d->size[2], NULL, err);
    if (st != PBD_OK)
        return st;
    if (d->volume && !(d->volume_compliance >= -1.0f && d->volume_compliance <= PBD_MAX_COMPLIANCE))
        return bad(err, "volume_compliance", d->volume_compliance,
                   "a compliance in [0, 1e20] or a stiffness in (0, 1]");
    int elastic = d->young_modulus > 0.0;
    double mu, lambda;
    if ((st = check_elastic(d->young_modulus, d->poisson_ratio, d->volume, &mu, &lambda, err)) !=
        PBD_OK)
        return st;
    int n[3] = {d->cells[0] + 1, d->cells[1] + 1, d->cells[2] + 1};
    double h[3];
    for (int k = 0; k < 3; ++k)
        h[k] = (double)d->size[k] / d->cells[k];
    int failures = 0;
    for (int pass = 0; pass < 2; ++pass)
        for (int k = 0; k < n[2]; ++k)
            for (int j = 0; j < n[1]; ++j)
                for (int i = 0; i < n[0]; ++i) {
                    int p = (k * n[1] + j) * n[0] + i;
                    if (pass == 0) {
                        set_position(&b, p, d->center[0] + (i * h[0] - 0.5 * d->size[0]),
                                     d->center[1] + (j * h[1] - 0.5 * d->size[1]),
                                     d->center[2] + (k * h[2] - 0.5 * d->size[2]));
                        continue;
                    }
                    for (int s = 0; s < 7 && !elastic; ++s) {
                        const int *st3 = tet_steps[s];
                        if (i + st3[0] < n[0] && j + st3[1] < n[1] && k + st3[2] < n[2])
                            failures +=
                                link(&b, p, ((k + st3[2]) * n[1] + j + st3[1]) * n[0] + i + st3[0],
                                     -1.0f);
                    }
                }
    for (int k = 0; (d->volume || elastic) && k + 1 < n[2]; ++k)
        for (int j = 0; j + 1 < n[1]; ++j)
            for (int i = 0; i + 1 < n[0]; ++i)
                for (int t = 0; t < 6; ++t) {
                    int at[3] = {i, j, k}, q[4];
                    q[0] = (k * n[1] + j) * n[0] + i;
                    at[tet_orders[t][0]]++;
                    q[1] = (at[2] * n[1] + at[1]) * n[0] + at[0];
                    at[tet_orders[t][1]]++;
                    q[2] = (at[2] * n[1] + at[1]) * n[0] + at[0];
                    q[3] = ((k + 1) * n[1] + j + 1) * n[0] + i + 1;
                    int e = 6 * ((k * (n[1] - 1) + j) * (n[0] - 1) + i) + t;
                    if (elastic) {
                        if (!failures && (st = add_elastic(&b, e, q, mu, lambda, err)) != PBD_OK)
                            return st;
                    } else {
                        failures += add_tet(&b, q, d->volume_compliance);
                        if (!failures && (st = tet_rest_refused(&b, e, err)) != PBD_OK)
                            return st;
                    }
                }
    /* The surface: the lattice's six faces, two triangles a cell face, counter-clockwise
     * seen from outside. Face f is normal to axis a = f / 2, at its low (f even) or high end;
     * u and v are the other two axes in cyclic order, so that u x v points along +a. */
    for (int f = 0; f < 6; ++f) {
        int a = f / 2, u = (a + 1) % 3, w = (a + 2) % 3, high = f % 2;
        for (int jv = 0; jv + 1 < n[w]; ++jv)
            for (int ju = 0; ju + 1 < n[u]; ++ju) {
                int q[4];
                for (int c = 0; c < 4; ++c) {
                    int ijk[3];
                    ijk[a] = high ? n[a] - 1 : 0;
                    ijk[u] = ju + (c == 1 || c == 2);
                    ijk[w] = jv + (c >= 2);
                    q[c] = b.first + (ijk[2] * n[1] + ijk[1]) * n[0] + ijk[0];
                }
                /* q0 (u, v), q1 (u+1, v), q2 (u+1, v+1), q3 (u, v+1): counter-clockwise about
                 * +a; the low face is seen from -a, so reversed. */
                if (high) {
                    failures += pbd_model_add_triangle(m, q[0], q[1], q[2]) != 0;
                    failures += pbd_model_add_triangle(m, q[0], q[2], q[3]) != 0;
                } else {
                    failures += pbd_model_add_triangle(m, q[0], q[2], q[1]) != 0;
                    failures += pbd_model_add_triangle(m, q[0], q[3], q[2]) != 0;
                }
            }
    }
    return finish(&b, &d->common, NULL, failures, err);
}

/* ---- particles -------------------------------------------------------------------------- */

pbd_particles_desc pbd_particles_desc_default(void)
{
    pbd_particles_desc d;
    memset(&d, 0, sizeof d);
    d.common = common_default();
    return d;
}

pbd_status pbd_scene_add_particles(pbd_model *m, const pbd_particles_desc *d, pbd_error *err)
{
    if (d->count < 1 || !d->positions)
        return bad(err, "positions", d->count, "at least 1 position");
    if (d->common.density != 0.0)
        return bad(err, "density", d->common.density, "no density (use mass or masses)");
    if (d->num_constraints < 0 || (d->num_constraints > 0 && !d->constraints))
        return bad(err, "constraints", d->num_constraints, "an array");
    for (int c = 0; c < d->num_constraints; ++c)
        for (int e = 0; e < 2; ++e) {
            int p = d->constraints[c][e];
            char key[64], expected[80];
            snprintf(key, sizeof key, "constraints[%d][%d]", c, e);
            int n = snprintf(expected, sizeof expected, "an index in [0, %d]", d->count - 1);
            if (e == 1)
                snprintf(expected + n, sizeof expected - (size_t)n, " other than %d",
                         d->constraints[c][0]);
            if (p < 0 || p >= d->count || (e == 1 && p == d->constraints[c][0]))
                return bad(err, key, p, expected);
        }
    build b;
    pbd_status st = begin(&b, m, &d->common, "particles", d->count, d->num_constraints, "positions",
                          0.0, d->masses, err);
    if (st != PBD_OK)
        return st;
    for (int i = 0; i < d->count; ++i)
        set_position(&b, i, d->positions[i][0], d->positions[i][1], d->positions[i][2]);
    int failures = 0;
    for (int c = 0; c < d->num_constraints; ++c)
        failures +=
            link(&b, d->constraints[c][0], d->constraints[c][1], d->rest ? d->rest[c] : -1.0f);
    return finish(&b, &d->common, d->velocities, failures, err);
}

/* ---- mesh ------------------------------------------------------------------------------- */

pbd_mesh_desc pbd_mesh_desc_default(void)
{
    pbd_mesh_desc d;
    memset(&d, 0, sizeof d);
    d.common = common_default();
    d.bending = PBD_BENDING_SPRINGS;
    d.bending_compliance = NAN;
    d.scale[0] = d.scale[1] = d.scale[2] = 1.0f;
    return d;
}

/* What a mesh body is made of: the particle of each mesh vertex (-1: unused) and the
 * distance constraints as particle pairs, sorted and each once. */
typedef struct mesh_plan {
    int np;
    int *particle;
    int ne;
    int (*pairs)[2];
} mesh_plan;

static void plan_free(mesh_plan *p)
{
    free(p->particle);
    free(p->pairs);
    memset(p, 0, sizeof *p);
}

static int pair_cmp(const void *pa, const void *pb)
{
    const int *a = pa, *b = pb;
    if (a[0] != b[0])
        return a[0] < b[0] ? -1 : 1;
    return (a[1] > b[1]) - (a[1] < b[1]);
}

static void put_pair(int (*pairs)[2], size_t *n, int a, int b)
{
    pairs[*n][0] = a < b ? a : b;
    pairs[*n][1] = a < b ? b : a;
    ++*n;
}

/* The elements `as` uses: PBD_ERR_ARGUMENT when the mesh has none. */
static pbd_status mesh_elements(const pbd_mesh_desc *d, const int **el, int *count, int *arity,
                                pbd_error *err)
{
    const pbd_mesh *mesh = d->mesh;
    if (!mesh)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "file: no mesh");
    if (d->as != PBD_MESH_CLOTH && d->as != PBD_MESH_SOFT)
        return bad(err, "as", d->as, "cloth or soft");
    *arity = d->as == PBD_MESH_CLOTH ? 3 : 4;
    *count = d->as == PBD_MESH_CLOTH ? mesh->num_triangles : mesh->num_tets;
    *el = d->as == PBD_MESH_CLOTH ? mesh->triangles : mesh->tets;
    if (*count < 1)
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "as: found a mesh with %s, expected %s for \"%s\"",
                             d->as == PBD_MESH_CLOTH ? "no triangles" : "no tetrahedra",
                             d->as == PBD_MESH_CLOTH ? "triangles"
                                                     : "tetrahedra (.node/.ele or "
                                                       "a .msh with tetrahedra)",
                             d->as == PBD_MESH_CLOTH ? "cloth" : "soft");
    return PBD_OK;
}

static pbd_status plan_mesh(const pbd_mesh_desc *d, mesh_plan *p, pbd_error *err)
{
    const int *el = NULL;
    int count = 0, arity = 3;
    memset(p, 0, sizeof *p);
    pbd_status st = mesh_elements(d, &el, &count, &arity, err);
    if (st != PBD_OK)
        return st;
    int nv = d->mesh->num_vertices;
    size_t per = arity == 3 ? 3 : 6, cap = per * (size_t)count;
    int bending = arity == 3 && d->bending == PBD_BENDING_SPRINGS;
    int edges = !(arity == 4 && d->young_modulus > 0.0); /* a Neo-Hookean solid has none */
    p->particle = malloc((size_t)(nv ? nv : 1) * sizeof *p->particle);
    p->pairs = malloc((cap + (bending ? 3 * (size_t)count : 0)) * sizeof *p->pairs);
    if (!p->particle || !p->pairs) {
        plan_free(p);
        return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory");
    }
    for (int i = 0; i < nv; ++i)
        p->particle[i] = -1;
    for (size_t k = 0; k < (size_t)count * arity; ++k)
        p->particle[el[k]] = 0;
    for (int i = 0; i < nv; ++i)
        if (p->particle[i] == 0)
            p->particle[i] = p->np++;
    size_t n = 0;
    for (int e = 0; e < count; ++e) {
        const int *v = el + (size_t)arity * e;
        for (int i = 0; edges && i < arity; ++i)
            for (int j = i + 1; j < arity; ++j)
                put_pair(p->pairs, &n, p->particle[v[i]], p->particle[v[j]]);
    }
    /* Bending: across every edge that exactly two triangles share, their far corners. */
    if (bending) {
        tri_edge *w = triangle_edges(el, count, p->particle);
        if (!w) {
            plan_free(p);
            return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory");
        }
        for (int k = 0, h; (h = next_hinge(w, 3 * count, &k)) >= 0;)
            put_pair(p->pairs, &n, w[h].opposite, w[h + 1].opposite);
        free(w);
    }
    qsort(p->pairs, n, sizeof *p->pairs, pair_cmp);
    size_t u = 0;
    for (size_t k = 0; k < n; ++k)
        if (u == 0 || pair_cmp(p->pairs[k], p->pairs[u - 1]) != 0) {
            p->pairs[u][0] = p->pairs[k][0];
            p->pairs[u][1] = p->pairs[k][1];
            ++u;
        }
    p->ne = (int)u;
    return PBD_OK;
}

/* A mesh body's constraints besides its distance constraints: volume or Neo-Hookean
 * elements a tetrahedron, or at most one bending element an edge of two triangles. */
static int64_t mesh_extra_constraints(const pbd_mesh_desc *d)
{
    int soft = d->as == PBD_MESH_SOFT;
    if (soft)
        return d->volume || d->young_modulus > 0.0 ? d->mesh->num_tets : 0;
    int elements = d->bending == PBD_BENDING_DIHEDRAL || d->bending == PBD_BENDING_ISOMETRIC;
    return elements ? 3 * (int64_t)d->mesh->num_triangles / 2 : 0;
}

pbd_status pbd_mesh_counts(const pbd_mesh_desc *d, int64_t *particles, int64_t *constraints,
                           pbd_error *err)
{
    mesh_plan p;
    pbd_status st = plan_mesh(d, &p, err);
    if (st != PBD_OK)
        return st;
    *particles = p.np;
    *constraints = p.ne + mesh_extra_constraints(d);
    plan_free(&p);
    return PBD_OK;
}

/* The rotation matrix of a rotation vector (Rodrigues' formula); exactly the identity for
 * the zero vector. */
static void rotation(const float r[3], double m[3][3])
{
    double angle = sqrt((double)r[0] * r[0] + (double)r[1] * r[1] + (double)r[2] * r[2]);
    double k[3] = {0.0, 0.0, 0.0}, c = cos(angle), s = sin(angle);
    for (int i = 0; i < 3 && angle > 0.0; ++i)
        k[i] = r[i] / angle;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            m[i][j] = (i == j ? c : 0.0) + (1.0 - c) * k[i] * k[j];
    m[0][1] -= s * k[2];
    m[0][2] += s * k[1];
    m[1][0] += s * k[2];
    m[1][2] -= s * k[0];
    m[2][0] -= s * k[1];
    m[2][1] += s * k[0];
}

pbd_status pbd_scene_add_mesh(pbd_model *m, const pbd_mesh_desc *d, pbd_error *err)
{
    for (int k = 0; k < 3; ++k) {
        char key[48];
        snprintf(key, sizeof key, "scale[%d]", k);
        if (!(d->scale[k] > 0.0f && d->scale[k] <= FLT_MAX))
            return bad(err, key, d->scale[k], "a number > 0");
        snprintf(key, sizeof key, "rotate[%d]", k);
        if (!isfinite(d->rotate[k]))
            return bad(err, key, d->rotate[k], "a finite number");
        snprintf(key, sizeof key, "translate[%d]", k);
        if (!isfinite(d->translate[k]))
            return bad(err, key, d->translate[k], "a finite number");
    }
    if (d->as == PBD_MESH_SOFT && d->volume &&
        !(d->volume_compliance >= -1.0f && d->volume_compliance <= PBD_MAX_COMPLIANCE))
        return bad(err, "volume_compliance", d->volume_compliance,
                   "a compliance in [0, 1e20] or a stiffness in (0, 1]");
    double mu, lambda;
    pbd_status st = check_bending(d->bending, d->bending_compliance, err);
    if (st == PBD_OK)
        st = check_elastic(d->young_modulus, d->poisson_ratio, d->volume, &mu, &lambda, err);
    if (st != PBD_OK)
        return st;
    mesh_plan p;
    st = plan_mesh(d, &p, err);
    if (st != PBD_OK)
        return st;
    const pbd_mesh *mesh = d->mesh;
    double r[3][3], *y = malloc(3 * (size_t)p.np * sizeof *y);
    if (!y) {
        plan_free(&p);
        return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory");
    }
    rotation(d->rotate, r);
    for (int i = 0; i < mesh->num_vertices; ++i) {
        int q = p.particle[i];
        if (q < 0)
            continue;
        double s[3], *out = y + 3 * (size_t)q;
        int turned_in = 1; /* within the bounds before the translation */
        for (int k = 0; k < 3; ++k)
            s[k] = mesh->vertices[3 * (size_t)i + k] * d->scale[k];
        for (int k = 0; k < 3; ++k) {
            out[k] = r[k][0] * s[0] + r[k][1] * s[1] + r[k][2] * s[2];
            turned_in &= fabs(out[k]) <= PBD_MAX_COORD;
            out[k] += d->translate[k];
        }
        if (!(fabs(out[0]) <= PBD_MAX_COORD && fabs(out[1]) <= PBD_MAX_COORD &&
              fabs(out[2]) <= PBD_MAX_COORD)) {
            st = pbd_error_set(err, PBD_ERR_ARGUMENT,
                               "%s: found mesh vertex %d (from 0) at (%g, %g, %g) m after "
                               "scale, rotate and translate, expected coordinates of magnitude "
                               "at most %g",
                               turned_in ? "translate" : "scale", i, out[0], out[1], out[2],
                               (double)PBD_MAX_COORD);
            free(y);
            plan_free(&p);
            return st;
        }
    }
    /* The measure a density multiplies: the surface's area, or the tetrahedra's volume. */
    double measure = 0.0;
    int soft = d->as == PBD_MESH_SOFT;
    for (int e = 0; e < (soft ? mesh->num_tets : mesh->num_triangles); ++e) {
        const int *v = soft ? mesh->tets + 4 * (size_t)e : mesh->triangles + 3 * (size_t)e;
        const double *a = y + 3 * (size_t)p.particle[v[0]];
        double u[3][3];
        for (int j = 0; j < (soft ? 3 : 2); ++j)
            for (int k = 0; k < 3; ++k)
                u[j][k] = y[3 * (size_t)p.particle[v[j + 1]] + k] - a[k];
        double c[3] = {u[0][1] * u[1][2] - u[0][2] * u[1][1], u[0][2] * u[1][0] - u[0][0] * u[1][2],
                       u[0][0] * u[1][1] - u[0][1] * u[1][0]};
        measure += soft ? fabs(c[0] * u[2][0] + c[1] * u[2][1] + c[2] * u[2][2]) / 6.0
                        : sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]) / 2.0;
    }
    int64_t nc = p.ne + mesh_extra_constraints(d);
    build b;
    st = begin(&b, m, &d->common, "mesh", p.np, nc, "file", measure, NULL, err);
    if (st != PBD_OK) {
        free(y);
        plan_free(&p);
        return st;
    }
    for (int q = 0; q < p.np; ++q)
        set_position(&b, q, y[3 * (size_t)q], y[3 * (size_t)q + 1], y[3 * (size_t)q + 2]);
    free(y);
    int failures = 0;
    for (int k = 0; k < p.ne; ++k)
        failures += link(&b, p.pairs[k][0], p.pairs[k][1], -1.0f);
    for (int e = 0; soft && d->volume && e < mesh->num_tets; ++e) {
        int q[4];
        for (int k = 0; k < 4; ++k)
            q[k] = p.particle[mesh->tets[4 * (size_t)e + k]];
        failures += add_tet(&b, q, d->volume_compliance);
        if (!failures && (st = tet_rest_refused(&b, e, err)) != PBD_OK) {
            plan_free(&p);
            return st;
        }
    }
    if (soft && d->young_modulus > 0.0) {
        for (int e = 0; e < mesh->num_tets && !failures; ++e) {
            int q[4];
            for (int k = 0; k < 4; ++k)
                q[k] = p.particle[mesh->tets[4 * (size_t)e + k]];
            if ((st = add_elastic(&b, e, q, mu, lambda, err)) != PBD_OK) {
                plan_free(&p);
                return st;
            }
        }
    }
    for (int t = 0; t < mesh->num_triangles; ++t) {
        const int *v = mesh->triangles + 3 * (size_t)t;
        int q[3] = {p.particle[v[0]], p.particle[v[1]], p.particle[v[2]]};
        /* A soft body's surface is the faces of its tetrahedra, so every corner is a
         * particle; a cloth's triangles are its elements. */
        if (q[0] >= 0 && q[1] >= 0 && q[2] >= 0)
            failures +=
                pbd_model_add_triangle(m, b.first + q[0], b.first + q[1], b.first + q[2]) != 0;
    }
    plan_free(&p);
    if (!failures && !soft && d->bending == PBD_BENDING_ISOMETRIC) {
        int lo = 0, hi = 0;
        double fold = most_folded(&b, &lo, &hi);
        failures += fold < 0.0;
        if (fold > PBD_ISOMETRIC_MAX_FOLD) {
            rollback(&b, NULL);
            return pbd_error_set(err, PBD_ERR_ARGUMENT,
                                 "bending: found \"isometric\" on a surface folded %.3g degrees "
                                 "at rest at the edge of particles %d and %d (from 0), expected "
                                 "one flat within %g degrees (isometric bending pulls any other "
                                 "shape flat; \"dihedral\" keeps it)",
                                 fold, lo - b.first, hi - b.first, PBD_ISOMETRIC_MAX_FOLD);
        }
    }
    if (!failures && !soft &&
        (d->bending == PBD_BENDING_DIHEDRAL || d->bending == PBD_BENDING_ISOMETRIC))
        failures += add_surface_bending(&b, d->bending,
                                        isnan(d->bending_compliance) ? d->common.compliance
                                                                     : d->bending_compliance);
    return finish(&b, &d->common, NULL, failures, err);
}
