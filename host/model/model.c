/* The host-side model: growable structure-of-arrays storage and its validation. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pbd.h"
#include "pbd_shared.h"

_Static_assert(sizeof(pbd_float4) == 16, "pbd_float4 must match cl_float4");
_Static_assert(_Alignof(pbd_float4) == 16, "pbd_float4 must be 16-byte aligned");
_Static_assert(sizeof(pbd_distance) == 16, "pbd_distance is 16 bytes on both sides");
_Static_assert(sizeof(pbd_attachment) == 32, "pbd_attachment is 32 bytes on both sides");
_Static_assert(sizeof(pbd_collider) == 96, "pbd_collider is 96 bytes on both sides");
_Static_assert(sizeof(pbd_segment) == 16, "pbd_segment is 16 bytes on both sides");
_Static_assert(sizeof(pbd_body_constraint) == 32, "pbd_body_constraint is 32 bytes on both sides");

const pbd_constraint_info pbd_constraint_types[PBD_CONSTRAINT_COUNT] = {
#define PBD_X_INFO(id, name, type, arity, world) {#name, arity, world, sizeof(type)},
    PBD_CONSTRAINT_LIST(PBD_X_INFO)
#undef PBD_X_INFO
};

static const char *const collider_names[PBD_COLLIDER_COUNT] = {
#define PBD_X_COLLIDER_NAME(id, name) #name,
    PBD_COLLIDER_LIST(PBD_X_COLLIDER_NAME)
#undef PBD_X_COLLIDER_NAME
};

void pbd_model_free(pbd_model *m)
{
    if (!m)
        return;
    free(m->x);
    free(m->v);
    free(m->body);
    free(m->bodies);
#define PBD_X_FREE(id, name, type, arity, world) free(m->name);
    PBD_CONSTRAINT_LIST(PBD_X_FREE)
#undef PBD_X_FREE
    free(m->colliders);
    free(m->triangles);
    memset(m, 0, sizeof *m);
}

/* Grows *p to hold at least `need` elements of `size` bytes; capacities are powers of two so
 * the count alone says when to grow. */
static int grow(void **p, int count, int need, size_t size)
{
    long long cap = 1;
    while (cap < count)
        cap *= 2;
    if (count > 0 && need <= cap)
        return 0;
    long long ncap = cap;
    while (ncap < need)
        ncap *= 2;
    if ((unsigned long long)ncap > SIZE_MAX / size)
        return -1;
    void *q = realloc(*p, (size_t)ncap * size);
    if (!q)
        return -1;
    *p = q;
    return 0;
}

int pbd_model_add_particles(pbd_model *m, int count, const char *body_name)
{
    if (!m || count < 1 || count > INT_MAX - m->num_particles)
        return -1;
    int first = m->num_particles;
    int need = first + count;
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
    b->damping = -1;
    b->damping_k = -1.0f;
    b->friction = b->friction_kinetic = b->restitution = -1.0f;
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

/* The model's array of constraint `type` and its count, as untyped storage. */
static int constraint_array(pbd_model *m, int type, void ***records, int **count)
{
    switch (type) {
#define PBD_X_ARRAY(id, name, t, arity, world)                                                     \
    case PBD_CONSTRAINT_##id:                                                                      \
        *records = (void **)&m->name;                                                              \
        *count = &m->num_##name;                                                                   \
        return 0;
        PBD_CONSTRAINT_LIST(PBD_X_ARRAY)
#undef PBD_X_ARRAY
    }
    return -1;
}

int pbd_model_add_constraint(pbd_model *m, int type, const void *record)
{
    void **records;
    int *count;
    if (!m || !record || constraint_array(m, type, &records, &count) || *count == INT_MAX)
        return -1;
    size_t size = pbd_constraint_types[type].size;
    if (grow(records, *count, *count + 1, size))
        return -1;
    memcpy((char *)*records + (size_t)*count * size, record, size);
    ++*count;
    return 0;
}

const void *pbd_model_constraints(const pbd_model *m, int type, int *count)
{
    void **records;
    int *n;
    if (constraint_array((pbd_model *)m, type, &records, &n)) {
        *count = 0;
        return NULL;
    }
    *count = *n;
    return *records;
}

long long pbd_model_num_constraints(const pbd_model *m)
{
    long long total = 0;
    for (int t = 0; t < PBD_CONSTRAINT_COUNT; ++t) {
        int n = 0;
        pbd_model_constraints(m, t, &n);
        total += n;
    }
    return total;
}

int *pbd_model_constraint_ends(const pbd_model *m, int type)
{
    int n = 0;
    const char *rec = pbd_model_constraints(m, type, &n);
    int arity = type >= 0 && type < PBD_CONSTRAINT_COUNT ? pbd_constraint_types[type].arity : 0;
    int *ends = malloc(((size_t)n * (size_t)arity + 1) * sizeof *ends);
    if (!ends)
        return NULL;
    size_t size = n ? pbd_constraint_types[type].size : 0;
    for (int c = 0; c < n; ++c)
        memcpy(ends + (size_t)c * (size_t)arity, rec + (size_t)c * size,
               (size_t)arity * sizeof *ends);
    return ends;
}

int pbd_model_add_distance(pbd_model *m, int a, int b, float rest, float compliance)
{
    pbd_distance d = {a, b, rest, compliance};
    return pbd_model_add_constraint(m, PBD_CONSTRAINT_DISTANCE, &d);
}

int pbd_model_add_collider(pbd_model *m, const pbd_collider *c)
{
    if (grow((void **)&m->colliders, m->num_colliders, m->num_colliders + 1, sizeof *m->colliders))
        return -1;
    m->colliders[m->num_colliders++] = *c;
    return 0;
}

int pbd_model_add_triangle(pbd_model *m, int a, int b, int c)
{
    if (grow((void **)&m->triangles, m->num_triangles, m->num_triangles + 1,
             3 * sizeof *m->triangles))
        return -1;
    int *t = m->triangles + 3 * (size_t)m->num_triangles++;
    t[0] = a;
    t[1] = b;
    t[2] = c;
    return 0;
}

int pbd_model_add_plane(pbd_model *m, float nx, float ny, float nz, float offset)
{
    pbd_collider c = {.kind = PBD_COLLIDER_PLANE, .shape = {nx, ny, nz, offset}};
    return pbd_model_add_collider(m, &c);
}

static int finite3(pbd_float4 f)
{
    return isfinite(f.x) && isfinite(f.y) && isfinite(f.z);
}

static int finite4(pbd_float4 f)
{
    return isfinite(f.x) && isfinite(f.y) && isfinite(f.z) && isfinite(f.w);
}

/* xyz finite and within PBD_MAX_COORD. */
static int bounded3(pbd_float4 f)
{
    return fabsf(f.x) <= PBD_MAX_COORD && fabsf(f.y) <= PBD_MAX_COORD &&
           fabsf(f.z) <= PBD_MAX_COORD;
}

/* The values of one record: each type's own expectations. Returns what was expected where a
 * value is out of them, with the value found written to found, else NULL. */
static const char *record_problem(int type, const void *record, char *found, size_t size)
{
    switch (type) {
    case PBD_CONSTRAINT_DISTANCE: {
        const pbd_distance *d = record;
        if (!(d->rest >= 0.0f) || !(d->rest <= 2.0f * PBD_MAX_COORD)) {
            snprintf(found, size, "rest length %g", (double)d->rest);
            return "a rest length >= 0, within 2e9 m";
        }
        break;
    }
    case PBD_CONSTRAINT_ATTACHMENT: {
        const pbd_attachment *a = record;
        if (!finite4(a->target) || !bounded3(a->target)) {
            snprintf(found, size, "target (%g, %g, %g, w %g)", (double)a->target.x,
                     (double)a->target.y, (double)a->target.z, (double)a->target.w);
            return "a finite target within 1e9 m of the origin";
        }
        break;
    }
    case PBD_CONSTRAINT_TETHER: {
        const pbd_tether *t = record;
        if (!(t->rest >= 0.0f) || !(t->rest <= 2.0f * PBD_MAX_COORD)) {
            snprintf(found, size, "longest length %g", (double)t->rest);
            return "a longest length >= 0, within 2e9 m";
        }
        break;
    }
    case PBD_CONSTRAINT_DIHEDRAL: {
        const pbd_dihedral *d = record;
        if (!(d->rest >= -3.1415927f && d->rest <= 3.1415927f)) {
            snprintf(found, size, "rest angle %g", (double)d->rest);
            return "a rest angle in [-pi, pi]";
        }
        break;
    }
    case PBD_CONSTRAINT_ISOMETRIC: {
        const pbd_isometric *r = record;
        /* sqrt(3 / area) times cotangents: 1e9 allows needles of 1e-12 m^2 */
        for (int k = 0; k < 4; ++k)
            if (!(fabsf(r->k[k]) <= 1e9f)) {
                snprintf(found, size, "weight k[%d] %g", k, (double)r->k[k]);
                return "weights k within 1e9 (1/m)";
            }
        break;
    }
    case PBD_CONSTRAINT_NEO_HOOKEAN: {
        const pbd_neo_hookean *r = record;
        for (int k = 0; k < 9; ++k)
            if (!(fabsf(r->dm_inv[k]) <= 1e9f)) {
                snprintf(found, size, "Dm^-1 entry %d %g", k, (double)r->dm_inv[k]);
                return "Dm^-1 entries within 1e9 (1/m)";
            }
        if (!(r->compliance > 0.0f)) {
            snprintf(found, size, "deviatoric compliance %g", (double)r->compliance);
            return "a deviatoric compliance > 0 (the element has no hard form, nor a PBD "
                   "stiffness one)";
        }
        if (!(r->compliance_h >= 0.0f) || !(r->compliance_h <= PBD_MAX_COMPLIANCE)) {
            snprintf(found, size, "hydrostatic compliance %g", (double)r->compliance_h);
            return "a hydrostatic compliance in [0, 1e20]";
        }
        if (!(r->gamma >= 0.0f && r->gamma <= 1e6f)) {
            snprintf(found, size, "gamma %g", (double)r->gamma);
            return "gamma in [0, 1e6]";
        }
        break;
    }
    case PBD_CONSTRAINT_VOLUME: {
        const pbd_volume *v = record;
        /* (1e9 m)^3 bounds it; a zero rest volume would push every tet flat */
        if (!isfinite(v->rest) || v->rest == 0.0f || !(fabsf(v->rest) <= 1e27f)) {
            snprintf(found, size, "rest volume %g", (double)v->rest);
            return "a rest volume other than 0, within 1e27 m^3";
        }
        break;
    }
    }
    return NULL;
}

pbd_status pbd_constraint_validate(int type, const void *r, int index, int num_particles,
                                   pbd_error *err)
{
    if (type < 0 || type >= PBD_CONSTRAINT_COUNT)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "constraint type %d (expected 0 .. %d)", type,
                             PBD_CONSTRAINT_COUNT - 1);
    const pbd_constraint_info *info = &pbd_constraint_types[type];
    const int *ends = r;
    for (int e = 0; e < info->arity; ++e) {
        int same = 0;
        for (int f = 0; f < e; ++f)
            same |= ends[f] == ends[e];
        if (ends[e] < 0 || ends[e] >= num_particles || same)
            return pbd_error_set(err, PBD_ERR_MODEL,
                                 "%s constraint %d: particle %d is %d (expected %s index in "
                                 "[0, %d))",
                                 info->name, index, e, ends[e],
                                 info->arity > 1 ? "a different" : "an", num_particles);
    }
    float compliance = 0.0f;
    switch (type) {
#define PBD_X_COMPLIANCE(id, name, t, arity, world)                                                \
    case PBD_CONSTRAINT_##id:                                                                      \
        compliance = ((const t *)r)->compliance;                                                   \
        break;
        PBD_CONSTRAINT_LIST(PBD_X_COMPLIANCE)
#undef PBD_X_COMPLIANCE
    }
    if (!isfinite(compliance) || compliance < -1.0f || compliance > PBD_MAX_COMPLIANCE)
        return pbd_error_set(err, PBD_ERR_MODEL,
                             "%s constraint %d: compliance %g (expected compliance in [0, %g] "
                             "or stiffness in (0, 1])",
                             info->name, index, (double)compliance, (double)PBD_MAX_COMPLIANCE);
    char found[96];
    const char *problem = record_problem(type, r, found, sizeof found);
    if (problem)
        return pbd_error_set(err, PBD_ERR_MODEL, "%s constraint %d: %s (expected %s)", info->name,
                             index, found, problem);
    return PBD_OK;
}

/* Every constraint of `type`. */
static pbd_status validate_constraints(const pbd_model *m, int type, pbd_error *err)
{
    int n = 0;
    const char *rec = pbd_model_constraints(m, type, &n);
    for (int c = 0; c < n; ++c) {
        pbd_status st = pbd_constraint_validate(
            type, rec + (size_t)c * pbd_constraint_types[type].size, c, m->num_particles, err);
        if (st != PBD_OK)
            return st;
    }
    return PBD_OK;
}

/* A collider's shape for its kind. */
pbd_status pbd_collider_validate(const pbd_collider *c, int k, pbd_error *err)
{
    pbd_float4 s = c->shape;
    if (!finite4(c->velocity) || !bounded3(c->velocity) || !finite4(c->angular_velocity) ||
        !bounded3(c->angular_velocity))
        return pbd_error_set(err, PBD_ERR_MODEL,
                             "collider %d: velocity (%g, %g, %g, w %g) m/s, angular velocity "
                             "(%g, %g, %g, w %g) rad/s (expected each finite, within 1e9)",
                             k, (double)c->velocity.x, (double)c->velocity.y, (double)c->velocity.z,
                             (double)c->velocity.w, (double)c->angular_velocity.x,
                             (double)c->angular_velocity.y, (double)c->angular_velocity.z,
                             (double)c->angular_velocity.w);
    if (c->kind < 0 || c->kind >= PBD_COLLIDER_COUNT)
        return pbd_error_set(err, PBD_ERR_MODEL, "collider %d: kind %d (expected 0 .. %d)", k,
                             c->kind, PBD_COLLIDER_COUNT - 1);
    if (!finite4(s) || !bounded3(s) || !(fabsf(s.w) <= PBD_MAX_COORD) ||
        !(c->friction >= 0.0f && c->friction <= 100.0f) ||
        !(c->friction_kinetic >= 0.0f && c->friction_kinetic <= c->friction) ||
        !(c->restitution >= 0.0f) || !(c->restitution <= 1.0f))
        return pbd_error_set(err, PBD_ERR_MODEL,
                             "collider %d (%s): shape (%g, %g, %g, %g), friction %g static and "
                             "%g kinetic, restitution %g (expected the shape finite, within 1e9 "
                             "m; friction in [0, 100] and [0, static]; restitution in [0, 1])",
                             k, collider_names[c->kind], (double)s.x, (double)s.y, (double)s.z,
                             (double)s.w, (double)c->friction, (double)c->friction_kinetic,
                             (double)c->restitution);
    if (c->kind == PBD_COLLIDER_PLANE) {
        double n = sqrt((double)s.x * s.x + (double)s.y * s.y + (double)s.z * s.z);
        if (fabs(n - 1.0) > 1e-5)
            return pbd_error_set(err, PBD_ERR_MODEL, "plane %d: normal length %g (expected 1)", k,
                                 n);
    } else if (c->kind == PBD_COLLIDER_SPHERE && !(s.w > 0.0f)) {
        return pbd_error_set(err, PBD_ERR_MODEL, "sphere %d: radius %g (expected > 0)", k,
                             (double)s.w);
    } else if (c->kind == PBD_COLLIDER_BOX) {
        pbd_float4 e = c->shape2, q = c->shape3;
        double qn =
            sqrt((double)q.x * q.x + (double)q.y * q.y + (double)q.z * q.z + (double)q.w * q.w);
        if (!finite4(e) || !(e.x > 0.0f && e.y > 0.0f && e.z > 0.0f) || !bounded3(e) ||
            !finite4(q) || fabs(qn - 1.0) > 1e-5)
            return pbd_error_set(err, PBD_ERR_MODEL,
                                 "box %d: half extents (%g, %g, %g), orientation of length %g "
                                 "(expected > 0 and within 1e9 m, a unit quaternion)",
                                 k, (double)e.x, (double)e.y, (double)e.z, qn);
    } else if (c->kind == PBD_COLLIDER_CAPSULE) {
        if (!(s.w > 0.0f) || !finite4(c->shape2) || !bounded3(c->shape2))
            return pbd_error_set(err, PBD_ERR_MODEL,
                                 "capsule %d: radius %g, end (%g, %g, %g) (expected > 0, within "
                                 "1e9 m)",
                                 k, (double)s.w, (double)c->shape2.x, (double)c->shape2.y,
                                 (double)c->shape2.z);
    }
    return PBD_OK;
}

/* A body's surface: each coefficient unset (< 0, exactly -1) or in its range. */
static int material_ok(const pbd_body *b)
{
    int set = b->friction >= 0.0f;
    return (set ? b->friction <= 100.0f && b->friction_kinetic >= 0.0f &&
                      b->friction_kinetic <= b->friction
                : b->friction == -1.0f && b->friction_kinetic == -1.0f) &&
           (b->restitution == -1.0f || (b->restitution >= 0.0f && b->restitution <= 1.0f));
}

/* A body's particle radius: 0 (no contacts) or in (0, 1e3] m; self-collision needs one. */
static int contact_ok(const pbd_body *b)
{
    return (b->radius == 0.0f || (b->radius > 0.0f && b->radius <= 1e3f)) &&
           (b->self_collision == 0 || (b->self_collision == 1 && b->radius > 0.0f));
}

/* The counts and arrays every check below and the solver's allocations trust: none
 * negative, none NULL with a count. */
static pbd_status validate_counts(const pbd_model *m, pbd_error *err)
{
    if (m->num_particles < 1)
        return pbd_error_set(err, PBD_ERR_MODEL, "the model has no particles");
    if (!m->x || !m->v || !m->body)
        return pbd_error_set(err, PBD_ERR_MODEL,
                             "%d particles but no %s array (expected x, v and body)",
                             m->num_particles,
                             !m->x   ? "x"
                             : !m->v ? "v"
                                     : "body");
    if (m->num_bodies < 1 || !m->bodies)
        return pbd_error_set(err, PBD_ERR_MODEL, "%d bodies%s (expected at least one)",
                             m->num_bodies, m->num_bodies >= 1 ? " but no bodies array" : "");
    for (int t = 0; t < PBD_CONSTRAINT_COUNT; ++t) {
        int n = 0;
        const void *rec = pbd_model_constraints(m, t, &n);
        if (n < 0 || (n > 0 && !rec))
            return pbd_error_set(err, PBD_ERR_MODEL,
                                 "%d %s constraints%s (expected a count >= 0 and its array)", n,
                                 pbd_constraint_types[t].name, n > 0 ? " but no array" : "");
    }
    if (m->num_colliders < 0 || (m->num_colliders > 0 && !m->colliders))
        return pbd_error_set(err, PBD_ERR_MODEL,
                             "%d colliders%s (expected a count >= 0 and its array)",
                             m->num_colliders, m->num_colliders > 0 ? " but no array" : "");
    if (m->num_triangles < 0 || (m->num_triangles > 0 && !m->triangles))
        return pbd_error_set(err, PBD_ERR_MODEL,
                             "%d triangles%s (expected a count >= 0 and its array)",
                             m->num_triangles, m->num_triangles > 0 ? " but no array" : "");
    return PBD_OK;
}

pbd_status pbd_model_validate(const pbd_model *m, pbd_error *err)
{
    if (!m)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "no model");
    pbd_status counts = validate_counts(m, err);
    if (counts != PBD_OK)
        return counts;
    int next = 0;
    for (int b = 0; b < m->num_bodies; ++b) {
        const pbd_body *bd = &m->bodies[b];
        /* names go into one-line messages and exports: no control characters */
        size_t len = strnlen(bd->name, sizeof bd->name);
        for (size_t k = 0; k < len; ++k)
            if ((unsigned char)bd->name[k] < 0x20 || bd->name[k] == 0x7f)
                return pbd_error_set(err, PBD_ERR_MODEL,
                                     "body %d: its name has the control character 0x%02x at "
                                     "byte %zu, expected printable text",
                                     b, (unsigned)(unsigned char)bd->name[k], k);
        if (len == sizeof bd->name)
            return pbd_error_set(err, PBD_ERR_MODEL,
                                 "body %d: its name is not terminated within %zu bytes", b,
                                 sizeof bd->name);
        if (bd->momentum != 0 && bd->momentum != 1)
            return pbd_error_set(err, PBD_ERR_MODEL, "body %d: momentum %d (expected 0 or 1)", b,
                                 bd->momentum);
        if (!material_ok(bd))
            return pbd_error_set(err, PBD_ERR_MODEL,
                                 "body %d: friction %g static and %g kinetic, restitution %g "
                                 "(expected -1 for the colliders' own, or [0, 100], [0, static], "
                                 "[0, 1])",
                                 b, (double)bd->friction, (double)bd->friction_kinetic,
                                 (double)bd->restitution);
        if (!(bd->damping >= -1 && bd->damping <= PBD_DAMPING_RIGID) ||
            !(bd->damping_k == -1.0f || (bd->damping_k >= 0.0f && bd->damping_k <= 1.0f)))
            return pbd_error_set(err, PBD_ERR_MODEL,
                                 "body %d: damping %d, damping_k %g (expected -1 for the run's, "
                                 "or a pbd_damping_kind and a fraction in [0, 1])",
                                 b, bd->damping, (double)bd->damping_k);
        if (!(bd->shape_stiffness >= 0.0f && bd->shape_stiffness <= 1.0f) ||
            !(bd->shape_compliance >= 0.0f && bd->shape_compliance <= PBD_MAX_COMPLIANCE) ||
            (bd->shape_stiffness > 0.0f && bd->shape_compliance > 0.0f))
            return pbd_error_set(err, PBD_ERR_MODEL,
                                 "body %d: shape_stiffness %g, shape_compliance %g (expected one "
                                 "of them: a stiffness in (0, 1] or a compliance in (0, %g] s^2; "
                                 "both 0: none)",
                                 b, (double)bd->shape_stiffness, (double)bd->shape_compliance,
                                 (double)PBD_MAX_COMPLIANCE);
        if (!(bd->shape_cluster_spacing >= 0.0f && bd->shape_cluster_spacing <= 1e9f) ||
            !(bd->shape_cluster_radius >= 0.0f && bd->shape_cluster_radius <= 1e9f) ||
            (bd->shape_cluster_radius > 0.0f && !(bd->shape_cluster_spacing > 0.0f)) ||
            bd->shape_cluster_radius > PBD_MAX_CLUSTER_REACH * bd->shape_cluster_spacing ||
            (bd->shape_cluster_spacing > 0.0f && !(bd->shape_stiffness > 0.0f) &&
             !(bd->shape_compliance > 0.0f)))
            return pbd_error_set(err, PBD_ERR_MODEL,
                                 "body %d: shape_cluster_spacing %g m, shape_cluster_radius %g m "
                                 "(expected [0, 1e9], with shape matching, the radius only with "
                                 "a spacing and at most %g times it; 0: the whole body)",
                                 b, (double)bd->shape_cluster_spacing,
                                 (double)bd->shape_cluster_radius, (double)PBD_MAX_CLUSTER_REACH);
        if (!(bd->pressure >= 0.0f && bd->pressure <= 1e3f) ||
            !(bd->pressure_compliance >= -1.0f && bd->pressure_compliance <= PBD_MAX_COMPLIANCE))
            return pbd_error_set(err, PBD_ERR_MODEL,
                                 "body %d: pressure %g, pressure_compliance %g "
                                 "(expected [0, 1000], 0: none; and a compliance in [0, %g] or a "
                                 "stiffness k in (0, 1] as -k)",
                                 b, (double)bd->pressure, (double)bd->pressure_compliance,
                                 (double)PBD_MAX_COMPLIANCE);
        if (!contact_ok(bd))
            return pbd_error_set(err, PBD_ERR_MODEL,
                                 "body %d: particle radius %g, self-collision %d (expected 0, or "
                                 "(0, 1000] m; self-collision 0, or 1 with a radius)",
                                 b, (double)bd->radius, bd->self_collision);
        if (bd->first != next || bd->count < 1 || bd->count > m->num_particles - next)
            return pbd_error_set(err, PBD_ERR_MODEL,
                                 "body %d: first %d, count %d (expected first = %d, the end of "
                                 "the previous body, and a count in [1, %d])",
                                 b, bd->first, bd->count, next, m->num_particles - next);
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
        if (!finite3(m->x[i]) || !finite3(m->v[i]) || !bounded3(m->x[i]) || !bounded3(m->v[i]))
            return pbd_error_set(err, PBD_ERR_MODEL,
                                 "particle %d: position (%g, %g, %g) m, velocity (%g, %g, %g) "
                                 "m/s (expected finite components of magnitude at most %g)",
                                 i, (double)m->x[i].x, (double)m->x[i].y, (double)m->x[i].z,
                                 (double)m->v[i].x, (double)m->v[i].y, (double)m->v[i].z,
                                 (double)PBD_MAX_COORD);
        /* The solver moves a particle by its inverse mass (x.w), the sums weigh it by its mass
         * (v.w): the two must agree, or a pinned particle (0) have a mass. */
        float w = m->x[i].w, mass = m->v[i].w;
        if (!(w >= 0.0f && isfinite(w)) || !(mass > 0.0f && isfinite(mass)) ||
            (w > 0.0f && !(fabsf(w * mass - 1.0f) <= 1e-5f)))
            return pbd_error_set(err, PBD_ERR_MODEL,
                                 "particle %d: mass %g, inverse mass %g (expected a finite mass > "
                                 "0, and its inverse, or 0 for a pinned particle)",
                                 i, (double)mass, (double)w);
    }
    for (int t = 0; t < PBD_CONSTRAINT_COUNT; ++t) {
        pbd_status st = validate_constraints(m, t, err);
        if (st != PBD_OK)
            return st;
    }
    for (int k = 0; k < m->num_colliders; ++k) {
        pbd_status st = pbd_collider_validate(&m->colliders[k], k, err);
        if (st != PBD_OK)
            return st;
    }
    for (int k = 0; k < m->num_triangles; ++k) {
        const int *t = m->triangles + 3 * (size_t)k;
        int ok = 1;
        for (int c = 0; c < 3; ++c)
            ok &= t[c] >= 0 && t[c] < m->num_particles;
        if (!ok || m->body[t[0]] != m->body[t[1]] || m->body[t[0]] != m->body[t[2]] ||
            t[0] == t[1] || t[1] == t[2] || t[0] == t[2])
            return pbd_error_set(err, PBD_ERR_MODEL,
                                 "triangle %d: particles (%d, %d, %d), expected three different "
                                 "particles of one body among %d",
                                 k, t[0], t[1], t[2], m->num_particles);
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
    c.max_colors = 32;
    c.serial_color_size = 64;
    return c;
}

int pbd_body_preserved(const pbd_body *b, const pbd_config *c)
{
    return c->momentum && b->momentum && b->pinned == 0;
}

pbd_damping_kind pbd_body_damping(const pbd_body *b, const pbd_config *c, float *k)
{
    if (k)
        *k = b->damping_k >= 0.0f ? b->damping_k : c->damping_k;
    return b->damping >= 0 ? (pbd_damping_kind)b->damping : c->damping;
}
