/* JSON scenes: every key is checked against the format (cJSON itself ignores keys it is not
 * asked for), values are read through field tables, and the bodies are built by the
 * generators. Errors are one line, "FILE: KEY: found X, expected Y". */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "mesh/mesh.h"
#include "pbd_shared.h"
#include "scene/generators.h"
#include "scene/read_file.h"

#define KEY_MAX 256

typedef struct ctx {
    const char *file; /* the name put in front of every message */
    const char *dir;  /* mesh files are relative to it: the scene's folder with its '/', or "" */
    int dir_len;
    pbd_error *err;
    pbd_status status; /* of the first failure */
} ctx;

/* Records a failure as "FILE: KEY: text" (or "FILE: text" without a key) and returns -1.
 * Control characters (from JSON escapes in keys and names) are blanked to keep one line. */
static int fail(ctx *c, pbd_status st, const char *key, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static int fail(ctx *c, pbd_status st, const char *key, const char *fmt, ...)
{
    char text[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    c->status = st;
    if (key)
        pbd_error_set(c->err, st, "%s: %s: %s", c->file, key, text);
    else
        pbd_error_set(c->err, st, "%s: %s", c->file, text);
    for (char *s = c->err ? c->err->message : NULL; s && *s; ++s)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = ' ';
    return -1;
}

static const char *kind(const cJSON *it)
{
    if (cJSON_IsNumber(it))
        return "a number";
    if (cJSON_IsString(it))
        return "a string";
    if (cJSON_IsBool(it))
        return "a boolean";
    if (cJSON_IsNull(it))
        return "null";
    if (cJSON_IsArray(it))
        return "an array";
    return "an object";
}

static int wrong_type(ctx *c, const char *key, const cJSON *it, const char *expected)
{
    return fail(c, PBD_ERR_SCENE, key, "found %s, expected %s", kind(it), expected);
}

/* A key too long for the buffer (absurd key names) ends in "..." so that the cut shows. */
static const char *clip(char *buf, int written)
{
    if (written >= KEY_MAX)
        memcpy(buf + KEY_MAX - 4, "...", 4);
    return buf;
}

/* "parent.name", or "name" at the top level. */
static const char *join(char *buf, const char *parent, const char *name)
{
    return clip(buf, snprintf(buf, KEY_MAX, "%s%s%s", parent, parent[0] ? "." : "", name));
}

static const char *at_index(char *buf, const char *parent, int i)
{
    return clip(buf, snprintf(buf, KEY_MAX, "%s[%d]", parent, i));
}

/* ---- numbers ------------------------------------------------------------------------------ */

/* Accepted values: [lo, hi], either end open; integer: integral values only. Numbers that are
 * stored as float are kept within float range. */
typedef struct num_spec {
    double lo, hi;
    int lo_open, hi_open, integer;
} num_spec;

#define ANY_FLOAT                                                                                  \
    {                                                                                              \
        -FLT_MAX, FLT_MAX, 0, 0, 0                                                                 \
    }
#define POSITIVE                                                                                   \
    {                                                                                              \
        0.0, FLT_MAX, 1, 0, 0                                                                      \
    }
/* Coordinates, speeds and sizes: within PBD_MAX_COORD (m, m/s), as the model check asks of
 * every particle and collider, so a value beyond it is named by its key. */
#define WITHIN                                                                                     \
    {                                                                                              \
        -PBD_MAX_COORD, PBD_MAX_COORD, 0, 0, 0                                                     \
    }
#define POSITIVE_WITHIN                                                                            \
    {                                                                                              \
        0.0, PBD_MAX_COORD, 1, 0, 0                                                                \
    }
#define NON_NEGATIVE                                                                               \
    {                                                                                              \
        0.0, FLT_MAX, 0, 0, 0                                                                      \
    }
#define INT_IN(lo, hi)                                                                             \
    {                                                                                              \
        (lo), (hi), 0, 0, 1                                                                        \
    }

static void describe(num_spec s, char *buf, size_t n)
{
    const char *what = s.integer ? "an integer" : "a number";
    /* An index, checked against what it indexes by a generator; here only against int. */
    if (s.integer && s.lo == INT_MIN && s.hi == INT_MAX)
        snprintf(buf, n, "an integer index in [0, %d]", INT_MAX);
    else if (s.lo == -FLT_MAX && s.hi == FLT_MAX)
        snprintf(buf, n, "a finite number of magnitude at most %g", (double)FLT_MAX);
    else if (s.hi == FLT_MAX)
        snprintf(buf, n, "%s %s %.15g", what, s.lo_open ? ">" : ">=", s.lo);
    else
        snprintf(buf, n, "%s in %c%.15g, %.15g%c", what, s.lo_open ? '(' : '[', s.lo, s.hi,
                 s.hi_open ? ')' : ']');
}

/* Reads one number item at `key` into *out. Returns 0, or -1 on failure. */
static int read_number(ctx *c, const cJSON *it, const char *key, num_spec s, double *out)
{
    *out = 0.0;
    if (!cJSON_IsNumber(it))
        return wrong_type(c, key, it, s.integer ? "an integer" : "a number");
    double x = it->valuedouble;
    int in_spec = isfinite(x) && (s.lo_open ? x > s.lo : x >= s.lo) &&
                  (s.hi_open ? x < s.hi : x <= s.hi) && (!s.integer || x == floor(x));
    /* Beyond a float where only the float's range bounds the key ("a number > 0" would not
     * say why 1e300 is refused); a key of its own range says that range. */
    if (!in_spec && isfinite(x) && fabs(x) > FLT_MAX && (s.hi == FLT_MAX || s.lo == -FLT_MAX))
        return fail(c, PBD_ERR_SCENE, key,
                    "found %.15g, expected a magnitude of at most %g "
                    "(float range)",
                    x, (double)FLT_MAX);
    if (!in_spec) {
        char expected[128];
        describe(s, expected, sizeof expected);
        return fail(c, PBD_ERR_SCENE, key, "found %.15g, expected %s", x, expected);
    }
    /* The value is stored as a float: one that rounds onto an open bound is out of range
     * there (omega 1.99999999999 is 2 in float). */
    float xf = (float)x;
    if (!s.integer && ((s.lo_open && xf <= s.lo) || (s.hi_open && xf >= s.hi))) {
        char expected[128];
        describe(s, expected, sizeof expected);
        return fail(c, PBD_ERR_SCENE, key, "found %.15g, %.9g in float precision, expected %s", x,
                    (double)xf, expected);
    }
    *out = x;
    return 0;
}

/* Where a number goes: exactly one of the pointers is set; k indexes into it. */
typedef struct sink {
    float *f;
    int *i;
    double *d;
} sink;

static void put(sink to, int k, double x)
{
    if (to.f)
        to.f[k] = (float)x;
    else if (to.i)
        to.i[k] = (int)x;
    else
        to.d[k] = x;
}

/* Reads a number (n = 0) or an array of exactly n numbers. */
static int read_numbers(ctx *c, const cJSON *it, const char *key, int n, num_spec s, sink to)
{
    double x;
    if (n == 0) {
        if (read_number(c, it, key, s, &x))
            return -1;
        put(to, 0, x);
        return 0;
    }
    if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != n) {
        if (cJSON_IsArray(it))
            return fail(c, PBD_ERR_SCENE, key,
                        "found an array of %d, expected an array of %d "
                        "numbers",
                        cJSON_GetArraySize(it), n);
        return fail(c, PBD_ERR_SCENE, key, "found %s, expected an array of %d numbers", kind(it),
                    n);
    }
    int k = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, it)
    {
        char sub[KEY_MAX];
        if (read_number(c, e, at_index(sub, key, k), s, &x))
            return -1;
        put(to, k++, x);
    }
    return 0;
}

/* A numeric key of an object, read into the struct at `base`. */
typedef struct field {
    const char *name;
    char kind; /* 'f' float, 'i' int, 'd' double, 'b' bool (int), 'k' stiffness k stored as -k */
    int n;     /* 0: a scalar; else an array of n */
    num_spec spec;
    size_t offset;
} field;

/* Reads the keys of `fields` present in obj. */
static int read_fields(ctx *c, const cJSON *obj, const char *parent, const field *fields, int count,
                       void *base)
{
    for (int f = 0; f < count; ++f) {
        const field *fd = &fields[f];
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, fd->name);
        char key[KEY_MAX];
        if (!it)
            continue;
        join(key, parent, fd->name);
        void *p = (char *)base + fd->offset;
        if (fd->kind == 'b') {
            if (!cJSON_IsBool(it))
                return wrong_type(c, key, it, "true or false");
            *(int *)p = cJSON_IsTrue(it);
            continue;
        }
        sink to = {fd->kind == 'f' || fd->kind == 'k' ? p : NULL, fd->kind == 'i' ? p : NULL,
                   fd->kind == 'd' ? p : NULL};
        if (read_numbers(c, it, key, fd->n, fd->spec, to))
            return -1;
        if (fd->kind == 'k')
            *(float *)p = -*(float *)p;
    }
    return 0;
}

/* ---- strings and keys --------------------------------------------------------------------- */

/* Optional string child: 1 found, 0 absent, -1 failure. */
static int opt_string(ctx *c, const cJSON *obj, const char *parent, const char *name,
                      const char **out)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);
    char key[KEY_MAX];
    if (!it)
        return 0;
    if (!cJSON_IsString(it))
        return wrong_type(c, join(key, parent, name), it, "a string");
    *out = it->valuestring;
    return 1;
}

static void list_names(char *buf, size_t n, const char *const *a, const char *const *b)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int l = 0; l < 2; ++l)
        for (const char *const *s = l ? b : a; s && *s && len < n; ++s)
            len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? ", " : "", *s);
}

/* Optional string child that must be one of `names` (NULL-terminated): sets *out to its
 * index. 1 found, 0 absent, -1 failure. */
static int opt_enum(ctx *c, const cJSON *obj, const char *parent, const char *name,
                    const char *const *names, int *out)
{
    const char *s = NULL;
    char key[KEY_MAX], list[256];
    int r = opt_string(c, obj, parent, name, &s);
    if (r <= 0)
        return r;
    for (int k = 0; names[k]; ++k)
        if (strcmp(s, names[k]) == 0) {
            *out = k;
            return 1;
        }
    list_names(list, sizeof list, names, NULL);
    return fail(c, PBD_ERR_SCENE, join(key, parent, name), "found \"%.64s\", expected one of: %s",
                s, list);
}

static int listed(const char *const *names, const char *s)
{
    for (; names && *names; ++names)
        if (strcmp(*names, s) == 0)
            return 1;
    return 0;
}

/* Every key of obj must be in list a or b, and appear once. */
static int check_keys(ctx *c, const cJSON *obj, const char *parent, const char *const *a,
                      const char *const *b)
{
    for (const cJSON *k = obj->child; k; k = k->next) {
        char key[KEY_MAX], list[512];
        join(key, parent, k->string);
        if (!listed(a, k->string) && !listed(b, k->string)) {
            list_names(list, sizeof list, a, b);
            return fail(c, PBD_ERR_SCENE, key, "unknown key (expected one of: %s)", list);
        }
        for (const cJSON *e = obj->child; e != k; e = e->next)
            if (strcmp(e->string, k->string) == 0)
                return fail(c, PBD_ERR_SCENE, key, "duplicate key (expected each key once)");
    }
    return 0;
}

/* Pairs of keys of which a body may give one. */
static const char *const exclusive[][2] = {
    {"compliance", "stiffness"},
    {"bending_compliance", "bending_stiffness"},
    {"volume_compliance", "volume_stiffness"},
    {"pressure_compliance", "pressure_stiffness"},
    {"tether_compliance", "tether_stiffness"},
    {"mass", "density"},
    {"mass", "masses"},
    {"velocity", "velocities"},
    {"angular_velocity", "velocities"},
};

/* The first of keys a and b that obj has, or NULL. */
static const char *either(const cJSON *obj, const char *a, const char *b)
{
    return cJSON_GetObjectItemCaseSensitive(obj, a)   ? a
           : cJSON_GetObjectItemCaseSensitive(obj, b) ? b
                                                      : NULL;
}

static int check_exclusive(ctx *c, const cJSON *obj, const char *parent)
{
    for (size_t p = 0; p < sizeof exclusive / sizeof exclusive[0]; ++p) {
        char key[KEY_MAX];
        if (cJSON_GetObjectItemCaseSensitive(obj, exclusive[p][0]) &&
            cJSON_GetObjectItemCaseSensitive(obj, exclusive[p][1]))
            return fail(c, PBD_ERR_SCENE, join(key, parent, exclusive[p][1]),
                        "found together with %s, expected only one of %s and %s", exclusive[p][0],
                        exclusive[p][0], exclusive[p][1]);
    }
    return 0;
}

/* Optional array child of entries that are each n numbers (n = 0: plain numbers): *out gets
 * a malloc'd copy (ints if is_int, else floats; the caller frees it, also on failure) and
 * *count the entries. 1 found, 0 absent, -1 failure. */
static int opt_list(ctx *c, const cJSON *obj, const char *parent, const char *name, int n,
                    num_spec s, int is_int, void **out, int *count)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);
    char key[KEY_MAX];
    if (!it)
        return 0;
    join(key, parent, name);
    if (!cJSON_IsArray(it))
        return wrong_type(c, key, it, "an array");
    int len = cJSON_GetArraySize(it), w = n ? n : 1;
    if (len > PBD_MAX_PARTICLES)
        return fail(c, PBD_ERR_SCENE, key, "found %d entries, expected at most %d", len,
                    PBD_MAX_PARTICLES);
    *out = malloc((size_t)(len ? len : 1) * (size_t)w * (is_int ? sizeof(int) : sizeof(float)));
    if (!*out)
        return fail(c, PBD_ERR_MEMORY, key, "out of memory");
    *count = len;
    int k = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, it)
    {
        char sub[KEY_MAX];
        sink to = {is_int ? NULL : (float *)*out + (size_t)k * w,
                   is_int ? (int *)*out + (size_t)k * w : NULL, NULL};
        if (read_numbers(c, e, at_index(sub, key, k), n, s, to))
            return -1;
        k++;
    }
    return 1;
}

/* ---- bodies ------------------------------------------------------------------------------- */

enum { CLOTH, ROPE, TET_BOX, PARTICLES, MESH };
/* The damping models (pbd_damping_kind), for the scene and for a body. */
static const char *const dampings[] = {"none", "point", "rigid", NULL};
static const char *const body_types[] = {"cloth", "rope", "tet_box", "particles", "mesh", NULL};

static const char *const common_keys[] = {"type",
                                          "name",
                                          "velocity",
                                          "angular_velocity",
                                          "pinned",
                                          "compliance",
                                          "stiffness",
                                          "mass",
                                          "momentum",
                                          "damping",
                                          "damping_k",
                                          "friction",
                                          "kinetic_friction",
                                          "restitution",
                                          "shape_matching",
                                          "pressure",
                                          "pressure_compliance",
                                          "pressure_stiffness",
                                          "particle_radius",
                                          "self_collision",
                                          NULL};

/* Body keys that are not the generator's: written to the model after generating. */
typedef struct body_opts {
    int momentum;           /* 0: opt out of momentum preservation */
    int damping;            /* the body's own damping model (pbd_body): -1 the scene's */
    float damping_k;        /* its fraction per substep: -1 the scene's */
    float friction;         /* the body's surface (pbd_body): < 0 unset */
    float friction_kinetic; /* < 0: the static one */
    float restitution;
    float shape_stiffness;     /* "shape_matching": {"stiffness": k}; 0: none */
    float shape_compliance;    /* "shape_matching": {"compliance": alpha}, s^2; 0: none */
    float cluster_spacing;     /* "shape_matching": {"clusters": {"spacing": s}}, m; 0: none */
    float cluster_radius;      /* ... {"radius": r}, m; 0: the spacing */
    float pressure;            /* 0: none */
    float pressure_compliance; /* m^3/Pa */
    float radius;              /* particle contacts (pbd_body): < 0 unset */
    int self_collision;        /* 1: contacts within the body too */
} body_opts;
static const field body_opt_fields[] = {
    {"momentum", 'b', 0, ANY_FLOAT, offsetof(body_opts, momentum)},
    {"damping_k", 'f', 0, {0.0, 1.0, 0, 0, 0}, offsetof(body_opts, damping_k)},
    {"friction", 'f', 0, {0.0, 100.0, 0, 0, 0}, offsetof(body_opts, friction)},
    {"kinetic_friction", 'f', 0, {0.0, 100.0, 0, 0, 0}, offsetof(body_opts, friction_kinetic)},
    {"restitution", 'f', 0, {0.0, 1.0, 0, 0, 0}, offsetof(body_opts, restitution)},
    {"pressure", 'f', 0, {0.0, 1000.0, 1, 0, 0}, offsetof(body_opts, pressure)},
    {"pressure_compliance",
     'f',
     0,
     {0.0, PBD_MAX_COMPLIANCE, 0, 0, 0},
     offsetof(body_opts, pressure_compliance)},
    {"pressure_stiffness", 'k', 0, {0.0, 1.0, 1, 0, 0}, offsetof(body_opts, pressure_compliance)},
    {"particle_radius", 'f', 0, {0.0, 1e3, 1, 0, 0}, offsetof(body_opts, radius)},
    {"self_collision", 'b', 0, ANY_FLOAT, offsetof(body_opts, self_collision)},
};
static const field shape_matching_fields[] = {
    {"stiffness", 'f', 0, {0.0, 1.0, 1, 0, 0}, offsetof(body_opts, shape_stiffness)},
    {"compliance",
     'f',
     0,
     {0.0, 1e20, 1, 0, 0}, /* PBD_MAX_COMPLIANCE */
     offsetof(body_opts, shape_compliance)},
};

static const field cluster_fields[] = {
    {"spacing", 'f', 0, {0.0, 1e9, 1, 0, 0}, offsetof(body_opts, cluster_spacing)},
    {"radius", 'f', 0, {0.0, 1e9, 1, 0, 0}, offsetof(body_opts, cluster_radius)},
};

/* "shape_matching": {"stiffness": k}, k in (0, 1], or {"compliance": alpha}, alpha > 0 in
 * s^2 (its XPBD form): one of them; and optionally "clusters": {"spacing": s, "radius": r}. */
static int read_shape_matching(ctx *c, const cJSON *obj, const char *key, body_opts *o)
{
    static const char *const keys[] = {"stiffness", "compliance", "clusters", NULL};
    static const char *const cluster_keys[] = {"spacing", "radius", NULL};
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, "shape_matching");
    char sub[KEY_MAX], sub2[KEY_MAX];
    if (!it)
        return 0;
    join(sub, key, "shape_matching");
    if (!cJSON_IsObject(it))
        return wrong_type(c, sub, it, "an object such as {\"stiffness\": 0.5}");
    if (check_keys(c, it, sub, keys, NULL) || read_fields(c, it, sub, shape_matching_fields, 2, o))
        return -1;
    int has_k = cJSON_GetObjectItemCaseSensitive(it, "stiffness") != NULL;
    int has_a = cJSON_GetObjectItemCaseSensitive(it, "compliance") != NULL;
    if (has_k && has_a)
        return fail(c, PBD_ERR_SCENE, join(sub2, sub, "compliance"),
                    "found beside \"stiffness\", expected one of the two");
    if (!has_k && !has_a)
        return fail(c, PBD_ERR_SCENE, join(sub2, sub, "stiffness"),
                    "missing (required: \"stiffness\" or \"compliance\")");
    const cJSON *cl = cJSON_GetObjectItemCaseSensitive(it, "clusters");
    if (!cl)
        return 0;
    join(sub2, sub, "clusters");
    if (!cJSON_IsObject(cl))
        return wrong_type(c, sub2, cl, "an object such as {\"spacing\": 0.1}");
    if (check_keys(c, cl, sub2, cluster_keys, NULL) ||
        read_fields(c, cl, sub2, cluster_fields, 2, o))
        return -1;
    if (!cJSON_GetObjectItemCaseSensitive(cl, "spacing"))
        return fail(c, PBD_ERR_SCENE, join(sub, sub2, "spacing"), "missing (required, in m)");
    if (o->cluster_radius > PBD_MAX_CLUSTER_REACH * o->cluster_spacing)
        return fail(c, PBD_ERR_SCENE, join(sub, sub2, "radius"),
                    "found %g, expected at most %g times the spacing (%g m)",
                    (double)o->cluster_radius, (double)PBD_MAX_CLUSTER_REACH,
                    (double)o->cluster_spacing);
    return 0;
}
static const char *const type_keys[][16] = {
    [CLOTH] = {"density", "resolution", "size", "center", "orientation", "shear", "bending",
               "bending_compliance", "bending_stiffness", "pin", "tethers", "tether_compliance",
               "tether_stiffness", NULL},
    [ROPE] = {"density", "segments", "start", "end", "bending", NULL},
    [TET_BOX] = {"density", "cells", "size", "center", "volume", "volume_compliance",
                 "volume_stiffness", "young_modulus", "poisson_ratio", NULL},
    [PARTICLES] = {"positions", "masses", "velocities", "constraints", NULL},
    [MESH] = {"density", "file", "as", "bending", "bending_compliance", "bending_stiffness",
              "volume", "volume_compliance", "volume_stiffness", "young_modulus", "poisson_ratio",
              "scale", "rotate", "translate", NULL},
};

#define STIFFNESS                                                                                  \
    {                                                                                              \
        0.0, 1.0, 1, 0, 0                                                                          \
    }
static const field common_fields[] = {
    {"velocity", 'f', 3, WITHIN, offsetof(pbd_gen_common, velocity)},
    {"angular_velocity", 'f', 3, WITHIN, offsetof(pbd_gen_common, angular_velocity)},
    {"compliance", 'f', 0, NON_NEGATIVE, offsetof(pbd_gen_common, compliance)},
    {"stiffness", 'k', 0, STIFFNESS, offsetof(pbd_gen_common, compliance)},
    {"mass", 'd', 0, POSITIVE, offsetof(pbd_gen_common, mass)},
    {"density", 'd', 0, POSITIVE, offsetof(pbd_gen_common, density)},
};

static const field cloth_fields[] = {
    {"resolution", 'i', 2, INT_IN(PBD_CLOTH_RES_MIN, PBD_CLOTH_RES_MAX),
     offsetof(pbd_cloth_desc, resolution)},
    {"size", 'f', 2, POSITIVE_WITHIN, offsetof(pbd_cloth_desc, size)},
    {"center", 'f', 3, WITHIN, offsetof(pbd_cloth_desc, center)},
    {"shear", 'b', 0, ANY_FLOAT, offsetof(pbd_cloth_desc, shear)},
    {"bending_compliance", 'f', 0, NON_NEGATIVE, offsetof(pbd_cloth_desc, bending_compliance)},
    {"bending_stiffness", 'k', 0, STIFFNESS, offsetof(pbd_cloth_desc, bending_compliance)},
    {"tethers", 'b', 0, ANY_FLOAT, offsetof(pbd_cloth_desc, tethers)},
    {"tether_compliance", 'f', 0, NON_NEGATIVE, offsetof(pbd_cloth_desc, tether_compliance)},
    {"tether_stiffness", 'k', 0, STIFFNESS, offsetof(pbd_cloth_desc, tether_compliance)},
};
static const field rope_fields[] = {
    {"segments", 'i', 0, INT_IN(1, PBD_ROPE_SEGMENTS_MAX), offsetof(pbd_rope_desc, segments)},
    {"start", 'f', 3, WITHIN, offsetof(pbd_rope_desc, start)},
    {"end", 'f', 3, WITHIN, offsetof(pbd_rope_desc, end)},
    {"bending", 'b', 0, ANY_FLOAT, offsetof(pbd_rope_desc, bending)},
};
static const field tet_box_fields[] = {
    {"cells", 'i', 3, INT_IN(1, PBD_TET_CELLS_MAX), offsetof(pbd_tet_box_desc, cells)},
    {"size", 'f', 3, POSITIVE_WITHIN, offsetof(pbd_tet_box_desc, size)},
    {"center", 'f', 3, WITHIN, offsetof(pbd_tet_box_desc, center)},
    {"volume", 'b', 0, ANY_FLOAT, offsetof(pbd_tet_box_desc, volume)},
    {"volume_compliance", 'f', 0, NON_NEGATIVE, offsetof(pbd_tet_box_desc, volume_compliance)},
    {"volume_stiffness", 'k', 0, STIFFNESS, offsetof(pbd_tet_box_desc, volume_compliance)},
    {"young_modulus", 'd', 0, {0.0, 1e15, 1, 0, 0}, offsetof(pbd_tet_box_desc, young_modulus)},
    {"poisson_ratio", 'd', 0, {0.0, 0.49, 0, 0, 0}, offsetof(pbd_tet_box_desc, poisson_ratio)},
};

static const field mesh_fields[] = {
    {"bending_compliance", 'f', 0, NON_NEGATIVE, offsetof(pbd_mesh_desc, bending_compliance)},
    {"bending_stiffness", 'k', 0, STIFFNESS, offsetof(pbd_mesh_desc, bending_compliance)},
    {"young_modulus", 'd', 0, {0.0, 1e15, 1, 0, 0}, offsetof(pbd_mesh_desc, young_modulus)},
    {"poisson_ratio", 'd', 0, {0.0, 0.49, 0, 0, 0}, offsetof(pbd_mesh_desc, poisson_ratio)},
    {"volume", 'b', 0, ANY_FLOAT, offsetof(pbd_mesh_desc, volume)},
    {"volume_compliance", 'f', 0, NON_NEGATIVE, offsetof(pbd_mesh_desc, volume_compliance)},
    {"volume_stiffness", 'k', 0, STIFFNESS, offsetof(pbd_mesh_desc, volume_compliance)},
    {"rotate", 'f', 3, ANY_FLOAT, offsetof(pbd_mesh_desc, rotate)},
    {"translate", 'f', 3, WITHIN, offsetof(pbd_mesh_desc, translate)},
};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Arrays read for one body, freed together. */
typedef struct lists {
    void *pinned, *positions, *masses, *velocities, *rest, *pairs;
} lists;

static void lists_free(lists *l)
{
    free(l->pinned);
    free(l->positions);
    free(l->masses);
    free(l->velocities);
    free(l->rest);
    free(l->pairs);
}

/* "constraints": [[a, b], ...] or [[a, b, rest], ...]; a missing rest is -1 (the initial
 * distance). Index ranges are the generator's to check. */
static int read_constraints(ctx *c, const cJSON *obj, const char *parent, lists *l, int *count)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, "constraints");
    char key[KEY_MAX];
    *count = 0;
    if (!it)
        return 0;
    join(key, parent, "constraints");
    if (!cJSON_IsArray(it))
        return wrong_type(c, key, it, "an array");
    int len = cJSON_GetArraySize(it);
    if (len > PBD_MAX_DISTANCE)
        return fail(c, PBD_ERR_SCENE, key, "found %d entries, expected at most %d", len,
                    PBD_MAX_DISTANCE);
    int *pairs = malloc((size_t)(len ? len : 1) * 2 * sizeof(int));
    float *rests = malloc((size_t)(len ? len : 1) * sizeof(float));
    l->pairs = pairs;
    l->rest = rests;
    if (!pairs || !rests)
        return fail(c, PBD_ERR_MEMORY, key, "out of memory");
    /* rest lengths as a tether's: within 2e9 m, the span of coordinates within 1e9 */
    const num_spec index = INT_IN(INT_MIN, INT_MAX), rest = {0.0, 2.0 * PBD_MAX_COORD, 0, 0, 0};
    const cJSON *e;
    cJSON_ArrayForEach(e, it)
    {
        char sub[KEY_MAX], part[KEY_MAX];
        int n = cJSON_GetArraySize(e);
        at_index(sub, key, *count);
        if (!cJSON_IsArray(e) || n < 2 || n > 3)
            return fail(c, PBD_ERR_SCENE, sub, "found %s%s, expected [a, b] or [a, b, rest]",
                        kind(e), cJSON_IsArray(e) ? " of the wrong length" : "");
        rests[*count] = -1.0f;
        for (int k = 0; k < n; ++k) {
            sink to = {k == 2 ? &rests[*count] : NULL, k < 2 ? &pairs[2 * *count + k] : NULL, NULL};
            if (read_numbers(c, cJSON_GetArrayItem(e, k), at_index(part, sub, k), 0,
                             k < 2 ? index : rest, to))
                return -1;
        }
        ++*count;
    }
    return 0;
}

/* Reads what the generators leave to the loader for the explicit particles. */
static int read_particles(ctx *c, const cJSON *obj, const char *key, pbd_particles_desc *d,
                          lists *l)
{
    char sub[KEY_MAX];
    const num_spec any = WITHIN, positive = POSITIVE;
    int n_masses = 0, n_vel = 0;
    int r = opt_list(c, obj, key, "positions", 3, any, 0, &l->positions, &d->count);
    if (r == 0)
        return fail(c, PBD_ERR_SCENE, join(sub, key, "positions"),
                    "missing (required for type \"particles\")");
    if (r < 0 || opt_list(c, obj, key, "masses", 0, positive, 0, &l->masses, &n_masses) < 0 ||
        opt_list(c, obj, key, "velocities", 3, any, 0, &l->velocities, &n_vel) < 0 ||
        read_constraints(c, obj, key, l, &d->num_constraints) < 0)
        return -1;
    if (d->count < 1)
        return fail(c, PBD_ERR_SCENE, join(sub, key, "positions"),
                    "found an empty array, expected at least one position");
    if ((l->masses && n_masses != d->count) || (l->velocities && n_vel != d->count))
        return fail(c, PBD_ERR_SCENE,
                    join(sub, key, l->masses && n_masses != d->count ? "masses" : "velocities"),
                    "found an array of %d, expected %d entries (one per position)",
                    l->masses && n_masses != d->count ? n_masses : n_vel, d->count);
    d->positions = (const float(*)[3])l->positions;
    d->masses = l->masses;
    d->velocities = (const float(*)[3])l->velocities;
    d->constraints = (const int(*)[2])l->pairs;
    d->rest = l->rest;
    return 0;
}

/* Passes a generator's failure on: its message starts with the key within the body. */
static int generated(ctx *c, const char *key, pbd_status st, const pbd_error *gerr)
{
    if (st == PBD_OK)
        return 0;
    if (st == PBD_ERR_ARGUMENT)
        return fail(c, PBD_ERR_SCENE, NULL, "%s.%s", key, gerr->message);
    return fail(c, st, key, "%s", gerr->message);
}

/* Per type: the key without which the body cannot be built, and its numeric fields. */
static const char *const required_keys[] = {"resolution", "segments", "cells", "positions", "file"};
static const field *const type_fields[] = {cloth_fields, rope_fields, tet_box_fields, NULL,
                                           mesh_fields};
static const int type_field_counts[] = {COUNT(cloth_fields), COUNT(rope_fields),
                                        COUNT(tet_box_fields), 0, COUNT(mesh_fields)};

/* "bending": a name, or true (springs) or false (none); and "bending_compliance" or
 * "bending_stiffness" only with some bending. */
static int read_bending(ctx *c, const cJSON *obj, const char *key, pbd_bending *out)
{
    static const char *const bendings[] = {"none", "springs", "dihedral", "isometric", NULL};
    int bending = (int)*out;
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(obj, "bending");
    char sub[KEY_MAX];
    if (b && cJSON_IsBool(b))
        bending = cJSON_IsTrue(b) ? PBD_BENDING_SPRINGS : PBD_BENDING_NONE;
    else if (b && !cJSON_IsString(b))
        return wrong_type(c, join(sub, key, "bending"), b,
                          "true, false, or one of: none, springs, dihedral, isometric");
    if (b && cJSON_IsString(b) && opt_enum(c, obj, key, "bending", bendings, &bending) < 0)
        return -1;
    *out = (pbd_bending)bending;
    const char *bk = either(obj, "bending_compliance", "bending_stiffness");
    if (*out == PBD_BENDING_NONE && bk)
        return fail(c, PBD_ERR_SCENE, join(sub, key, bk),
                    "found with no bending, expected \"bending\" too");
    return 0;
}

/* The cloth's named options. */
static int read_cloth_enums(ctx *c, const cJSON *obj, const char *key, pbd_cloth_desc *d)
{
    static const char *const orientations[] = {"xz", "xy", NULL};
    static const char *const pins[] = {"none", "corners", "edge", NULL};
    int orientation = 0, pin = 0;
    if (opt_enum(c, obj, key, "orientation", orientations, &orientation) < 0 ||
        opt_enum(c, obj, key, "pin", pins, &pin) < 0 || read_bending(c, obj, key, &d->bending))
        return -1;
    d->orientation = orientation ? PBD_CLOTH_XY : PBD_CLOTH_XZ;
    d->pin = pin == 2 ? PBD_PIN_EDGE : pin == 1 ? PBD_PIN_CORNERS : PBD_PIN_NONE;
    return 0;
}

/* One body as read from the scene, before anything is generated: the descriptor of its type
 * (every descriptor starts with its pbd_gen_common) and the arrays it points into. */
typedef struct body_read {
    int type;
    pbd_cloth_desc cloth;
    pbd_rope_desc rope;
    pbd_tet_box_desc tet;
    pbd_particles_desc parts;
    pbd_mesh_desc mesh_desc;
    pbd_mesh mesh;          /* a mesh body's mesh, read with the body */
    int64_t mesh_particles; /* and its counts, for the scene's totals */
    int64_t mesh_constraints;
    lists l;
    body_opts opts;
} body_read;

static pbd_gen_common *body_common(body_read *b)
{
    void *const desc[] = {&b->cloth, &b->rope, &b->tet, &b->parts, &b->mesh_desc};
    return desc[b->type];
}

/* A mesh body's own keys: "as" (required), "scale" (a number or three), "file" (read here,
 * relative to the scene's folder), and the keys that belong to one "as" only. */
static int read_mesh(ctx *c, const cJSON *obj, const char *key, body_read *b)
{
    static const char *const kinds[] = {"cloth", "soft", NULL};
    static const char *const soft_only[] = {
        "volume", "volume_compliance", "volume_stiffness", "young_modulus", "poisson_ratio", NULL};
    static const char *const cloth_only[] = {"bending", "bending_compliance", "bending_stiffness",
                                             NULL};
    char sub[KEY_MAX];
    const char *file = NULL;
    int as = 0;
    pbd_mesh_desc *d = &b->mesh_desc;
    int r = opt_enum(c, obj, key, "as", kinds, &as);
    if (r <= 0)
        return r < 0 ? -1
                     : fail(c, PBD_ERR_SCENE, join(sub, key, "as"),
                            "missing (required for type \"mesh\"; one of: cloth, soft)");
    d->as = as ? PBD_MESH_SOFT : PBD_MESH_CLOTH;
    for (const char *const *k = soft_only; *k; ++k)
        if (!as && cJSON_GetObjectItemCaseSensitive(obj, *k))
            return fail(c, PBD_ERR_SCENE, join(sub, key, *k),
                        "found with \"as\": \"cloth\", expected it only with \"as\": \"soft\"");
    for (const char *const *k = cloth_only; *k; ++k)
        if (as && cJSON_GetObjectItemCaseSensitive(obj, *k))
            return fail(c, PBD_ERR_SCENE, join(sub, key, *k),
                        "found with \"as\": \"soft\", expected it only with \"as\": \"cloth\"");
    const char *vk = either(obj, "volume_compliance", "volume_stiffness");
    if (as && !d->volume && vk)
        return fail(c, PBD_ERR_SCENE, join(sub, key, vk),
                    "found without \"volume\": true, expected both or neither");
    if (as && !(d->young_modulus > 0.0) && cJSON_GetObjectItemCaseSensitive(obj, "poisson_ratio"))
        return fail(c, PBD_ERR_SCENE, join(sub, key, "poisson_ratio"),
                    "found without \"young_modulus\", expected both or neither");
    if (as && d->young_modulus > 0.0 && d->volume)
        return fail(c, PBD_ERR_SCENE, join(sub, key, "volume"),
                    "found with \"young_modulus\", expected one of them (a Neo-Hookean solid "
                    "keeps its volume through poisson_ratio)");
    if (!as && read_bending(c, obj, key, &d->bending))
        return -1;
    const char *bk = either(obj, "bending_compliance", "bending_stiffness");
    if (!as && d->bending == PBD_BENDING_SPRINGS && bk)
        return fail(c, PBD_ERR_SCENE, join(sub, key, bk),
                    "found with \"bending\": springs, expected dihedral or isometric (a mesh's "
                    "bending springs take the body's compliance)");
    const cJSON *scale = cJSON_GetObjectItemCaseSensitive(obj, "scale");
    const num_spec positive = POSITIVE;
    join(sub, key, "scale");
    if (scale && cJSON_IsNumber(scale)) {
        if (read_numbers(c, scale, sub, 0, positive, (sink){d->scale, NULL, NULL}))
            return -1;
        d->scale[1] = d->scale[2] = d->scale[0];
    } else if (scale && !cJSON_IsArray(scale)) {
        return wrong_type(c, sub, scale, "a number or an array of 3 numbers");
    } else if (scale && read_numbers(c, scale, sub, 3, positive, (sink){d->scale, NULL, NULL})) {
        return -1;
    }
    if (opt_string(c, obj, key, "file", &file) < 0)
        return -1;
    join(sub, key, "file");
    if (file[0] == '\0')
        return fail(c, PBD_ERR_SCENE, sub, "found an empty string, expected a mesh file");
    /* Relative to the scene's folder, so that a scene finds its meshes from any folder. */
    int abs = file[0] == '/';
    size_t len = (abs ? 0 : (size_t)c->dir_len) + strlen(file) + 1;
    char *path = malloc(len);
    if (!path)
        return fail(c, PBD_ERR_MEMORY, sub, "out of memory");
    snprintf(path, len, "%.*s%s", abs ? 0 : c->dir_len, c->dir, file);
    pbd_error merr = {0};
    pbd_status st = pbd_mesh_load(path, &b->mesh, &merr);
    free(path);
    if (st != PBD_OK)
        return fail(c, st, sub, "%s", merr.message);
    d->mesh = &b->mesh;
    st = pbd_mesh_counts(d, &b->mesh_particles, &b->mesh_constraints, &merr);
    return generated(c, key, st, &merr);
}

/* The code point of the UTF-8 sequence at q, its length in *len; *len = 0 where it is not
 * one (a stray continuation byte, a sequence cut short, an overlong form, a surrogate, past
 * U+10FFFF). */
static unsigned utf8_next(const unsigned char *q, int *len)
{
    unsigned cp = q[0];
    int n = cp < 0x80             ? 1
            : (cp & 0xe0) == 0xc0 ? 2
            : (cp & 0xf0) == 0xe0 ? 3
            : (cp & 0xf8) == 0xf0 ? 4
                                  : 0;
    static const unsigned lowest[5] = {0, 0, 0x80, 0x800, 0x10000};
    *len = 0;
    if (n == 0)
        return 0;
    cp &= n == 1 ? 0x7fu : n == 2 ? 0x1fu : n == 3 ? 0x0fu : 0x07u;
    for (int k = 1; k < n; ++k) {
        if ((q[k] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (q[k] & 0x3fu);
    }
    if (cp < lowest[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    *len = n;
    return cp;
}

static int read_body(ctx *c, const cJSON *obj, const char *key, body_read *b)
{
    char sub[KEY_MAX], list[128];
    int type = 0, r;
    if (!cJSON_IsObject(obj))
        return wrong_type(c, key, obj, "an object");
    r = opt_enum(c, obj, key, "type", body_types, &type);
    if (r <= 0) {
        list_names(list, sizeof list, body_types, NULL);
        return r < 0 ? -1
                     : fail(c, PBD_ERR_SCENE, join(sub, key, "type"),
                            "missing (required; one of: %s)", list);
    }
    if (check_keys(c, obj, key, common_keys, type_keys[type]) || check_exclusive(c, obj, key))
        return -1;
    if (!cJSON_GetObjectItemCaseSensitive(obj, required_keys[type]))
        return fail(c, PBD_ERR_SCENE, join(sub, key, required_keys[type]),
                    "missing (required for type \"%s\")", body_types[type]);

    b->type = type;
    b->cloth = pbd_cloth_desc_default();
    b->rope = pbd_rope_desc_default();
    b->tet = pbd_tet_box_desc_default();
    b->parts = pbd_particles_desc_default();
    b->mesh_desc = pbd_mesh_desc_default();
    b->opts = (body_opts){.momentum = 1,
                          .damping = -1,
                          .damping_k = -1.0f,
                          .friction = -1.0f,
                          .friction_kinetic = -1.0f,
                          .restitution = -1.0f,
                          .radius = -1.0f};
    pbd_gen_common *com = body_common(b);
    void *const desc[] = {&b->cloth, &b->rope, &b->tet, &b->parts, &b->mesh_desc};
    const num_spec index = INT_IN(INT_MIN, INT_MAX);
    r = 0;
    if (read_fields(c, obj, key, common_fields, COUNT(common_fields), com) ||
        read_fields(c, obj, key, body_opt_fields, COUNT(body_opt_fields), &b->opts) ||
        read_shape_matching(c, obj, key, &b->opts) ||
        opt_enum(c, obj, key, "damping", dampings, &b->opts.damping) < 0 ||
        opt_list(c, obj, key, "pinned", 0, index, 1, &b->l.pinned, &com->num_pinned) < 0 ||
        opt_string(c, obj, key, "name", &com->name) < 0 ||
        read_fields(c, obj, key, type_fields[type], type_field_counts[type], desc[type]) ||
        (type == CLOTH && read_cloth_enums(c, obj, key, &b->cloth)) ||
        (type == PARTICLES && read_particles(c, obj, key, &b->parts, &b->l)) ||
        (type == MESH && read_mesh(c, obj, key, b)))
        r = -1;
    if (r == 0 && b->opts.friction_kinetic >= 0.0f &&
        !(b->opts.friction_kinetic <= b->opts.friction))
        r = fail(c, PBD_ERR_SCENE, join(sub, key, "kinetic_friction"),
                 b->opts.friction < 0.0f ? "found without \"friction\", expected both"
                                         : "found %g, expected at most the static friction %g",
                 (double)b->opts.friction_kinetic, (double)b->opts.friction);
    if (r == 0 && type == TET_BOX && !(b->tet.young_modulus > 0.0) &&
        cJSON_GetObjectItemCaseSensitive(obj, "poisson_ratio"))
        r = fail(c, PBD_ERR_SCENE, join(sub, key, "poisson_ratio"),
                 "found without \"young_modulus\", expected both or neither");
    if (r == 0 && type == TET_BOX && b->tet.young_modulus > 0.0 && b->tet.volume)
        r = fail(c, PBD_ERR_SCENE, join(sub, key, "volume"),
                 "found with \"young_modulus\", expected one of them (a Neo-Hookean solid "
                 "keeps its volume through poisson_ratio)");
    const char *ck = either(obj, "compliance", "stiffness");
    if (r == 0 && ck &&
        ((type == TET_BOX && b->tet.young_modulus > 0.0) ||
         (type == MESH && b->mesh_desc.as == PBD_MESH_SOFT && b->mesh_desc.young_modulus > 0.0)))
        r = fail(c, PBD_ERR_SCENE, join(sub, key, ck),
                 "found with \"young_modulus\", expected one of them (a Neo-Hookean solid has no "
                 "distance constraints: young_modulus and poisson_ratio are its material)");
    const char *vk = either(obj, "volume_compliance", "volume_stiffness");
    if (r == 0 && type == TET_BOX && !b->tet.volume && vk)
        r = fail(c, PBD_ERR_SCENE, join(sub, key, vk),
                 "found without \"volume\": true, expected both or neither");
    const char *pk = either(obj, "pressure_compliance", "pressure_stiffness");
    if (r == 0 && !(b->opts.pressure > 0.0f) && pk)
        r = fail(c, PBD_ERR_SCENE, join(sub, key, pk),
                 "found without \"pressure\", expected both or neither");
    const char *tk = either(obj, "tether_compliance", "tether_stiffness");
    if (r == 0 && type == CLOTH && !b->cloth.tethers && tk)
        r = fail(c, PBD_ERR_SCENE, join(sub, key, tk),
                 "found without \"tethers\": true, expected both or neither");
    if (r == 0 && com->name && (strlen(com->name) < 1 || strlen(com->name) > 63))
        r = fail(c, PBD_ERR_SCENE, join(sub, key, "name"),
                 "found a string of %zu bytes, expected 1 to 63 (UTF-8)", strlen(com->name));
    /* The name goes into messages, statistics and exported files (an OBJ's object line), so
     * a control character (a line break) would forge lines there. */
    for (const unsigned char *q = (const unsigned char *)com->name; r == 0 && q && *q;) {
        int at = (int)((const char *)q - com->name), len = 0;
        unsigned cp = utf8_next(q, &len);
        if (!len)
            r = fail(c, PBD_ERR_SCENE, join(sub, key, "name"),
                     "found byte 0x%02x at byte %d, which is not UTF-8, expected UTF-8 text", *q,
                     at);
        else if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f))
            r = fail(c, PBD_ERR_SCENE, join(sub, key, "name"),
                     "found control character %s%02x at byte %d, expected printable text",
                     cp < 0x80 ? "0x" : "U+00", cp, at);
        q += len;
    }
    /* The library pins the union of "pin" and "pinned"; in a scene, a particle named in both
     * would be a key without effect. */
    for (int k = 0; r == 0 && type == CLOTH && b->cloth.pin != PBD_PIN_NONE && k < com->num_pinned;
         ++k) {
        int p = ((const int *)b->l.pinned)[k], nu = b->cloth.resolution[0];
        char pinned_key[KEY_MAX];
        if (p >= 0 && p < nu && (b->cloth.pin == PBD_PIN_EDGE || p == 0 || p == nu - 1))
            r = fail(c, PBD_ERR_SCENE, at_index(sub, join(pinned_key, key, "pinned"), k),
                     "found %d, which \"pin\": \"%s\" holds already, expected each particle "
                     "pinned once",
                     p, b->cloth.pin == PBD_PIN_EDGE ? "edge" : "corners");
    }
    com->pinned = b->l.pinned;
    return r;
}

/* The particles and constraints a body will have. */
static void body_counts(const body_read *b, int64_t *particles, int64_t *constraints)
{
    if (b->type == CLOTH)
        pbd_cloth_counts(&b->cloth, particles, constraints);
    else if (b->type == ROPE)
        pbd_rope_counts(&b->rope, particles, constraints);
    else if (b->type == TET_BOX)
        pbd_tet_box_counts(&b->tet, particles, constraints);
    else if (b->type == MESH) {
        *particles = b->mesh_particles;
        *constraints = b->mesh_constraints;
    } else {
        *particles = b->parts.count;
        *constraints = b->parts.num_constraints;
    }
}

/* The whole scene's particles and constraints against the scene limits, before any body is
 * generated: the error names the body whose size takes the total past a limit. */
static int check_totals(ctx *c, const body_read *b, int n)
{
    int64_t np = 0, nc = 0;
    char sub[KEY_MAX], key[KEY_MAX];
    for (int k = 0; k < n; ++k) {
        int64_t bp, bc;
        body_counts(&b[k], &bp, &bc);
        np += bp;
        nc += bc;
        at_index(key, "bodies", k);
        if (np > PBD_MAX_PARTICLES)
            return fail(c, PBD_ERR_SCENE, join(sub, key, required_keys[b[k].type]),
                        "found %lld particles (%lld in the scene up to this body), expected at "
                        "most %d in a scene",
                        (long long)bp, (long long)np, PBD_MAX_PARTICLES);
        if (nc > PBD_MAX_DISTANCE)
            return fail(
                c, PBD_ERR_SCENE,
                join(sub, key, b[k].type == PARTICLES ? "constraints" : required_keys[b[k].type]),
                "found %lld constraints (%lld in the scene up to this body), expected "
                "at most %d in a scene",
                (long long)bc, (long long)nc, PBD_MAX_DISTANCE);
    }
    return 0;
}

/* A body's default particle radius: half its shortest distance constraint, so that neighbours
 * on its lattice or mesh just touch; 0 where it has none. */
static float default_radius(const pbd_model *m, const pbd_body *bd)
{
    float shortest = 0.0f;
    for (int k = 0; k < m->num_distance; ++k) {
        const pbd_distance *d = &m->distance[k];
        if (d->a >= bd->first && d->a < bd->first + bd->count && d->rest > 0.0f &&
            (shortest == 0.0f || d->rest < shortest))
            shortest = d->rest;
    }
    return 0.5f * shortest;
}

static int build_body(ctx *c, pbd_model *m, body_read *b, const char *key)
{
    char sub[KEY_MAX];
    pbd_error gerr = {0};
    int type = b->type;
    pbd_status st = type == CLOTH     ? pbd_scene_add_cloth(m, &b->cloth, &gerr)
                    : type == ROPE    ? pbd_scene_add_rope(m, &b->rope, &gerr)
                    : type == TET_BOX ? pbd_scene_add_tet_box(m, &b->tet, &gerr)
                    : type == MESH    ? pbd_scene_add_mesh(m, &b->mesh_desc, &gerr)
                                      : pbd_scene_add_particles(m, &b->parts, &gerr);
    int r = generated(c, key, st, &gerr);
    if (r == 0) {
        pbd_body *bd = &m->bodies[m->num_bodies - 1];
        bd->momentum = b->opts.momentum;
        bd->damping = b->opts.damping;
        bd->damping_k = b->opts.damping_k;
        bd->friction = b->opts.friction;
        bd->friction_kinetic =
            b->opts.friction_kinetic >= 0.0f ? b->opts.friction_kinetic : b->opts.friction;
        bd->restitution = b->opts.restitution;
        bd->shape_stiffness = b->opts.shape_stiffness;
        bd->shape_compliance = b->opts.shape_compliance;
        bd->shape_cluster_spacing = b->opts.cluster_spacing;
        bd->shape_cluster_radius = b->opts.cluster_radius;
        bd->pressure = b->opts.pressure;
        bd->pressure_compliance = b->opts.pressure_compliance;
        bd->self_collision = b->opts.self_collision;
        bd->radius = b->opts.radius > 0.0f ? b->opts.radius : 0.0f;
        if (b->opts.self_collision && !(b->opts.radius > 0.0f)) {
            bd->radius = default_radius(m, bd);
            if (!(bd->radius > 0.0f))
                r = fail(c, PBD_ERR_SCENE, join(sub, key, "particle_radius"),
                         "missing (required with \"self_collision\" where the body has no "
                         "distance constraints to take a default from)");
        }
    }
    return r;
}

/* Every body is read and the scene's totals checked before the first is generated. */
static int parse_bodies(ctx *c, const cJSON *bodies, pbd_model *m)
{
    int n = cJSON_GetArraySize(bodies), k = 0, r = 0;
    body_read *b = calloc((size_t)n, sizeof *b);
    if (!b)
        return fail(c, PBD_ERR_MEMORY, "bodies", "out of memory reading %d bodies", n);
    const cJSON *e;
    cJSON_ArrayForEach(e, bodies)
    {
        char key[KEY_MAX];
        if (read_body(c, e, at_index(key, "bodies", k), &b[k])) {
            r = -1;
            ++k;
            break;
        }
        ++k;
    }
    if (r == 0)
        r = check_totals(c, b, n);
    for (int j = 0; r == 0 && j < n; ++j) {
        char key[KEY_MAX];
        r = build_body(c, m, &b[j], at_index(key, "bodies", j));
    }
    for (int j = 0; j < k; ++j) {
        lists_free(&b[j].l);
        pbd_mesh_free(&b[j].mesh);
    }
    free(b);
    return r;
}

/* ---- top level ---------------------------------------------------------------------------- */

static const char *const top_keys[] = {"description", "dt",      "substeps",   "iterations",
                                       "solver",      "omega",   "gravity",    "frames",
                                       "momentum",    "damping", "damping_k",  "velocity_update",
                                       "planes",      "spheres", "boxes",      "capsules",
                                       "attachments", "bodies",  "max_colors", "serial_color_size",
                                       NULL};

static const field config_fields[] = {
    {"dt", 'f', 0, {1e-9, 10.0, 1, 0, 0}, offsetof(pbd_config, dt)}, /* PBD_MIN_SUBSTEP */
    {"substeps", 'i', 0, INT_IN(1, PBD_MAX_SUBSTEPS), offsetof(pbd_config, substeps)},
    {"iterations", 'i', 0, INT_IN(1, 10000), offsetof(pbd_config, iterations)},
    {"omega", 'f', 0, {0.0, 2.0, 1, 1, 0}, offsetof(pbd_config, omega)},
    /* 1e6 m/s^2 (about 1e5 g): beyond it a fall leaves the 1e9 m/s the run allows within
     * a second's frames */
    {"gravity", 'f', 3, {-1e6, 1e6, 0, 0, 0}, offsetof(pbd_config, gravity)},
    {"frames", 'i', 0, INT_IN(1, 10000000), offsetof(pbd_config, frames)},
    {"momentum", 'b', 0, ANY_FLOAT, offsetof(pbd_config, momentum)},
    {"damping_k", 'f', 0, {0.0, 1.0, 0, 0, 0}, offsetof(pbd_config, damping_k)},
    {"max_colors", 'i', 0, INT_IN(0, 1000000), offsetof(pbd_config, max_colors)},
    {"serial_color_size", 'i', 0, INT_IN(0, 1000000), offsetof(pbd_config, serial_color_size)},
};

static const char *const plane_keys[] = {"normal",           "offset",      "friction",
                                         "kinetic_friction", "restitution", "velocity",
                                         "angular_velocity", NULL};

/* A collider's "friction" (static, mu_s in [0, 100]), "kinetic_friction" (mu_k in [0, mu_s],
 * default mu_s), "restitution" ([0, 1]), and for a kinematic collider "velocity" and
 * "angular_velocity" (about its centre). */
static int read_friction(ctx *c, const cJSON *obj, const char *key, pbd_collider *col)
{
    static const field friction_fields[] = {
        {"friction", 'f', 0, {0.0, 100.0, 0, 0, 0}, offsetof(pbd_collider, friction)},
        {"kinetic_friction",
         'f',
         0,
         {0.0, 100.0, 0, 0, 0},
         offsetof(pbd_collider, friction_kinetic)},
        {"restitution", 'f', 0, {0.0, 1.0, 0, 0, 0}, offsetof(pbd_collider, restitution)},
        {"velocity", 'f', 3, {-1e9, 1e9, 0, 0, 0}, offsetof(pbd_collider, velocity)},
        {"angular_velocity",
         'f',
         3,
         {-1e9, 1e9, 0, 0, 0},
         offsetof(pbd_collider, angular_velocity)},
    };
    char sub[KEY_MAX];
    col->friction_kinetic = -1.0f;
    if (read_fields(c, obj, key, friction_fields, 5, col))
        return -1;
    if (col->friction_kinetic < 0.0f)
        col->friction_kinetic = col->friction;
    if (col->friction_kinetic > col->friction)
        return fail(c, PBD_ERR_SCENE, join(sub, key, "kinetic_friction"),
                    "found %g, expected at most the static friction %g",
                    (double)col->friction_kinetic, (double)col->friction);
    return 0;
}

static int parse_planes(ctx *c, const cJSON *root, pbd_model *m)
{
    const cJSON *planes = cJSON_GetObjectItemCaseSensitive(root, "planes");
    if (!planes)
        return 0;
    if (!cJSON_IsArray(planes))
        return wrong_type(c, "planes", planes, "an array");
    int k = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, planes)
    {
        char key[KEY_MAX], sub[KEY_MAX];
        double n[3], offset = 0.0, scale = 0.0, len = 0.0;
        const num_spec any = ANY_FLOAT, within = WITHIN;
        at_index(key, "planes", k++);
        if (!cJSON_IsObject(p))
            return wrong_type(c, key, p, "an object");
        if (check_keys(c, p, key, plane_keys, NULL))
            return -1;
        const cJSON *normal = cJSON_GetObjectItemCaseSensitive(p, "normal");
        const cJSON *off = cJSON_GetObjectItemCaseSensitive(p, "offset");
        join(sub, key, "normal");
        if (!normal)
            return fail(c, PBD_ERR_SCENE, sub, "missing (required for a plane)");
        if (read_numbers(c, normal, sub, 3, any, (sink){NULL, NULL, n}) ||
            (off && read_numbers(c, off, join(sub, key, "offset"), 0, within,
                                 (sink){NULL, NULL, &offset})))
            return -1;
        /* Scaled first so that tiny or huge components neither underflow nor overflow. */
        for (int i = 0; i < 3; ++i)
            scale = fmax(scale, fabs(n[i]));
        for (int i = 0; i < 3 && scale > 0.0; ++i)
            len += (n[i] / scale) * (n[i] / scale);
        len = sqrt(len) * scale;
        if (!(len > 0.0))
            return fail(c, PBD_ERR_SCENE, join(sub, key, "normal"),
                        "found [0, 0, 0], expected a non-zero vector");
        pbd_collider col = {.kind = PBD_COLLIDER_PLANE,
                            .shape = {(float)(n[0] / len), (float)(n[1] / len), (float)(n[2] / len),
                                      (float)offset}};
        if (read_friction(c, p, key, &col))
            return -1;
        if (pbd_model_add_collider(m, &col))
            return fail(c, PBD_ERR_MEMORY, key, "out of memory");
    }
    return 0;
}

/* The array at `name` of root: 1 with *arr set, 0 absent, -1 failure. */
static int opt_objects(ctx *c, const cJSON *root, const char *name, const cJSON **arr)
{
    *arr = cJSON_GetObjectItemCaseSensitive(root, name);
    if (!*arr)
        return 0;
    if (!cJSON_IsArray(*arr))
        return wrong_type(c, name, *arr, "an array");
    return 1;
}

/* Entry k of array `name`, at key[]: an object of `keys` only, with the first `required` of
 * them present (a `what` requires them). 0, or -1 on failure. */
static int object_entry(ctx *c, const cJSON *e, const char *name, int k, const char *const *keys,
                        int required, const char *what, char *key)
{
    char sub[KEY_MAX];
    at_index(key, name, k);
    if (!cJSON_IsObject(e))
        return wrong_type(c, key, e, "an object");
    if (check_keys(c, e, key, keys, NULL) || check_exclusive(c, e, key))
        return -1;
    for (int q = 0; q < required; ++q)
        if (!cJSON_GetObjectItemCaseSensitive(e, keys[q]))
            return fail(c, PBD_ERR_SCENE, join(sub, key, keys[q]), "missing (required for %s)",
                        what);
    return 0;
}

static const char *const sphere_keys[] = {"center",           "radius",      "friction",
                                          "kinetic_friction", "restitution", "velocity",
                                          "angular_velocity", NULL};

/* "spheres": [{"center": [x, y, z], "radius": r}], static sphere colliders. */
static int parse_spheres(ctx *c, const cJSON *root, pbd_model *m)
{
    const cJSON *spheres, *s;
    int r = opt_objects(c, root, "spheres", &spheres), k = 0;
    if (r <= 0)
        return r;
    cJSON_ArrayForEach(s, spheres)
    {
        char key[KEY_MAX], sub[KEY_MAX];
        const num_spec any = WITHIN, positive = POSITIVE_WITHIN;
        pbd_collider col = {.kind = PBD_COLLIDER_SPHERE};
        float centre[3];
        if (object_entry(c, s, "spheres", k++, sphere_keys, 2, "a sphere", key))
            return -1;
        if (read_numbers(c, cJSON_GetObjectItemCaseSensitive(s, "center"), join(sub, key, "center"),
                         3, any, (sink){centre, NULL, NULL}) ||
            read_numbers(c, cJSON_GetObjectItemCaseSensitive(s, "radius"), join(sub, key, "radius"),
                         0, positive, (sink){&col.shape.w, NULL, NULL}) ||
            read_friction(c, s, key, &col))
            return -1;
        if (cJSON_GetObjectItemCaseSensitive(s, "angular_velocity"))
            return fail(c, PBD_ERR_SCENE, join(sub, key, "angular_velocity"),
                        "found [%g, %g, %g], expected none (a sphere turned about its centre is "
                        "the same sphere, and friction is against the world)",
                        (double)col.angular_velocity.x, (double)col.angular_velocity.y,
                        (double)col.angular_velocity.z);
        col.shape.x = centre[0];
        col.shape.y = centre[1];
        col.shape.z = centre[2];
        if (pbd_model_add_collider(m, &col))
            return fail(c, PBD_ERR_MEMORY, key, "out of memory");
    }
    return 0;
}

static const char *const box_keys[] = {
    "center",      "size",     "rotate",           "friction", "kinetic_friction",
    "restitution", "velocity", "angular_velocity", NULL};

/* "boxes": [{"center": [x, y, z], "size": [sx, sy, sz], "rotate": [rx, ry, rz]}]: oriented
 * box colliders, the rotation a rotation vector (axis times angle, rad) as a mesh's. */
static int parse_boxes(ctx *c, const cJSON *root, pbd_model *m)
{
    const cJSON *list, *b;
    int r = opt_objects(c, root, "boxes", &list), k = 0;
    if (r <= 0)
        return r;
    cJSON_ArrayForEach(b, list)
    {
        char key[KEY_MAX], sub[KEY_MAX];
        const num_spec any = WITHIN, positive = POSITIVE_WITHIN, turn = ANY_FLOAT;
        pbd_collider col = {.kind = PBD_COLLIDER_BOX, .shape3 = {0.0f, 0.0f, 0.0f, 1.0f}};
        float centre[3], size[3], rot[3] = {0.0f, 0.0f, 0.0f};
        const cJSON *rv;
        if (object_entry(c, b, "boxes", k++, box_keys, 2, "a box", key))
            return -1;
        if (read_numbers(c, cJSON_GetObjectItemCaseSensitive(b, "center"), join(sub, key, "center"),
                         3, any, (sink){centre, NULL, NULL}) ||
            read_numbers(c, cJSON_GetObjectItemCaseSensitive(b, "size"), join(sub, key, "size"), 3,
                         positive, (sink){size, NULL, NULL}) ||
            ((rv = cJSON_GetObjectItemCaseSensitive(b, "rotate")) &&
             read_numbers(c, rv, join(sub, key, "rotate"), 3, turn, (sink){rot, NULL, NULL})) ||
            read_friction(c, b, key, &col))
            return -1;
        double angle =
            sqrt((double)rot[0] * rot[0] + (double)rot[1] * rot[1] + (double)rot[2] * rot[2]);
        double s = angle > 0.0 ? sin(0.5 * angle) / angle : 0.0;
        col.shape = (pbd_float4){centre[0], centre[1], centre[2], 0.0f};
        col.shape2 = (pbd_float4){0.5f * size[0], 0.5f * size[1], 0.5f * size[2], 0.0f};
        col.shape3 = (pbd_float4){(float)(s * rot[0]), (float)(s * rot[1]), (float)(s * rot[2]),
                                  (float)cos(0.5 * angle)};
        if (pbd_model_add_collider(m, &col))
            return fail(c, PBD_ERR_MEMORY, key, "out of memory");
    }
    return 0;
}

static const char *const capsule_keys[] = {
    "start",       "end",      "radius",           "friction", "kinetic_friction",
    "restitution", "velocity", "angular_velocity", NULL};

/* "capsules": [{"start": [x, y, z], "end": [x, y, z], "radius": r}]: capsule colliders (a
 * segment grown by r; start may equal end: a sphere). */
static int parse_capsules(ctx *c, const cJSON *root, pbd_model *m)
{
    const cJSON *list, *e;
    int r = opt_objects(c, root, "capsules", &list), k = 0;
    if (r <= 0)
        return r;
    cJSON_ArrayForEach(e, list)
    {
        char key[KEY_MAX], sub[KEY_MAX];
        const num_spec any = WITHIN, positive = POSITIVE_WITHIN;
        pbd_collider col = {.kind = PBD_COLLIDER_CAPSULE};
        float a[3], b[3];
        if (object_entry(c, e, "capsules", k++, capsule_keys, 3, "a capsule", key))
            return -1;
        if (read_numbers(c, cJSON_GetObjectItemCaseSensitive(e, "start"), join(sub, key, "start"),
                         3, any, (sink){a, NULL, NULL}) ||
            read_numbers(c, cJSON_GetObjectItemCaseSensitive(e, "end"), join(sub, key, "end"), 3,
                         any, (sink){b, NULL, NULL}) ||
            read_numbers(c, cJSON_GetObjectItemCaseSensitive(e, "radius"), join(sub, key, "radius"),
                         0, positive, (sink){&col.shape.w, NULL, NULL}) ||
            read_friction(c, e, key, &col))
            return -1;
        col.shape.x = a[0], col.shape.y = a[1], col.shape.z = a[2];
        col.shape2 = (pbd_float4){b[0], b[1], b[2], 0.0f};
        if (pbd_model_add_collider(m, &col))
            return fail(c, PBD_ERR_MEMORY, key, "out of memory");
    }
    return 0;
}

static const char *const attachment_keys[] = {"body",       "particle",  "target",
                                              "compliance", "stiffness", NULL};

/* "attachments": [{"body": b, "particle": j, "target": [x, y, z], "compliance": a}]: particle
 * j of body b pulled toward the target (default: where the particle starts), with compliance
 * (default 0, hard) or a PBD stiffness. After the bodies, whose particles it names. */
static int parse_attachments(ctx *c, const cJSON *root, pbd_model *m)
{
    const cJSON *list, *a;
    int r = opt_objects(c, root, "attachments", &list), k = 0;
    if (r <= 0)
        return r;
    cJSON_ArrayForEach(a, list)
    {
        char key[KEY_MAX], sub[KEY_MAX];
        const num_spec index = INT_IN(INT_MIN, INT_MAX);
        const num_spec within = {-PBD_MAX_COORD, PBD_MAX_COORD, 0, 0, 0};
        const num_spec compliance = {0.0, PBD_MAX_COMPLIANCE, 0, 0, 0}, stiffness = STIFFNESS;
        int body = 0, particle = 0;
        float target[3], value = 0.0f;
        if (object_entry(c, a, "attachments", k++, attachment_keys, 2, "an attachment", key))
            return -1;
        if (read_numbers(c, cJSON_GetObjectItemCaseSensitive(a, "body"), join(sub, key, "body"), 0,
                         index, (sink){NULL, &body, NULL}))
            return -1;
        if (body < 0 || body >= m->num_bodies)
            return fail(c, PBD_ERR_SCENE, sub, "found %d, expected a body index in [0, %d)", body,
                        m->num_bodies);
        const pbd_body *b = &m->bodies[body];
        if (read_numbers(c, cJSON_GetObjectItemCaseSensitive(a, "particle"),
                         join(sub, key, "particle"), 0, index, (sink){NULL, &particle, NULL}))
            return -1;
        if (particle < 0 || particle >= b->count)
            return fail(c, PBD_ERR_SCENE, sub,
                        "found %d, expected a particle index in [0, %d) of bodies[%d]", particle,
                        b->count, body);
        pbd_float4 x = m->x[b->first + particle];
        if (x.w == 0.0f)
            return fail(c, PBD_ERR_SCENE, sub,
                        "found %d, pinned (it never moves, so an attachment would do nothing), "
                        "expected a free particle of bodies[%d]",
                        particle, body);
        target[0] = x.x;
        target[1] = x.y;
        target[2] = x.z;
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(a, "target");
        const cJSON *cm = cJSON_GetObjectItemCaseSensitive(a, "compliance");
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(a, "stiffness");
        if ((t &&
             read_numbers(c, t, join(sub, key, "target"), 3, within, (sink){target, NULL, NULL})) ||
            (cm && read_numbers(c, cm, join(sub, key, "compliance"), 0, compliance,
                                (sink){&value, NULL, NULL})) ||
            (st && read_numbers(c, st, join(sub, key, "stiffness"), 0, stiffness,
                                (sink){&value, NULL, NULL})))
            return -1;
        pbd_attachment rec = {b->first + particle,
                              st ? -value : value,
                              0,
                              0,
                              {target[0], target[1], target[2], 0.0f}};
        if (pbd_model_add_constraint(m, PBD_CONSTRAINT_ATTACHMENT, &rec))
            return fail(c, PBD_ERR_MEMORY, key, "out of memory");
    }
    return 0;
}

/* How far a particle may start inside a collider or another body's particle and count as
 * on its surface: PBD_CONTACT_SLOP, or 4 float roundings of the largest coordinate involved
 * (a particle placed on a sphere of 200 m is inside by 1.5e-5 m in float). */
static double start_slop(pbd_float4 p, pbd_float4 a, pbd_float4 b)
{
    double mag = 0.0;
    const pbd_float4 *q[3] = {&p, &a, &b};
    for (int k = 0; k < 3; ++k)
        mag = fmax(mag, fmax(fabs(q[k]->x), fmax(fabs(q[k]->y), fabs(q[k]->z))));
    return fmax((double)PBD_CONTACT_SLOP, 4.0 * FLT_EPSILON * fmax(mag, fabs(a.w)));
}

/* Refuses a free particle that starts inside a collider: the first substep would throw it
 * out by its whole depth, at depth / h (a cloth 5 m under the ground left it at 300 m/s).
 * On the surface, to start_slop, is fine. A sphere's centre or a capsule's axis counts as
 * inside, though the collision cannot push it (no direction). Pinned particles never move:
 * skipped. The colliders are the model's in the order parsed: planes, spheres, boxes,
 * capsules. */
static int check_starts_outside(ctx *c, const pbd_model *m)
{
    static const char *const names[] = {[PBD_COLLIDER_PLANE] = "planes",
                                        [PBD_COLLIDER_SPHERE] = "spheres",
                                        [PBD_COLLIDER_BOX] = "boxes",
                                        [PBD_COLLIDER_CAPSULE] = "capsules"};
    for (int k = 0; k < m->num_colliders; ++k) {
        const pbd_collider *col = &m->colliders[k];
        for (int i = 0; i < m->num_particles; ++i) {
            pbd_float4 p = m->x[i];
            if (!(p.w > 0.0f))
                continue;
            /* n stays unset only for no direction: a sphere's centre or a capsule's axis */
            float n[3] = {2.0f, 0.0f, 0.0f}, d = pbd_collider_distance(p, col, n);
            if (n[0] == 2.0f)
                d = -col->shape.w;
            if (d >= -start_slop(p, col->shape, col->shape2))
                continue;
            int same = 0, b = m->body[i];
            for (int j = 0; j < k; ++j)
                same += m->colliders[j].kind == col->kind;
            char key[KEY_MAX], where[KEY_MAX];
            at_index(key, "bodies", b);
            at_index(where, names[col->kind], same);
            return fail(
                c, PBD_ERR_SCENE, key,
                "particle %d at (%.9g, %.9g, %.9g) starts %g m inside %s, expected every free "
                "particle outside the colliders (one inside is thrown out in the first "
                "substep)",
                i - m->bodies[b].first, (double)p.x, (double)p.y, (double)p.z, (double)-d, where);
        }
    }
    return 0;
}

/* Refuses a particle whose initial speed passes PBD_MAX_COORD, the bound a checkpoint holds
 * a velocity to and the run holds a body's speed to: each component is read within it, but
 * [9e8, 9e8, 9e8] is not. (An angular velocity adds w x r to the body's velocity.) */
static int check_speeds(ctx *c, const pbd_model *m)
{
    for (int i = 0; i < m->num_particles; ++i) {
        pbd_float4 v = m->v[i];
        double speed = sqrt((double)v.x * v.x + (double)v.y * v.y + (double)v.z * v.z);
        if (speed <= (double)PBD_MAX_COORD)
            continue;
        char key[KEY_MAX];
        int b = m->body[i];
        return fail(c, PBD_ERR_SCENE, at_index(key, "bodies", b),
                    "particle %d: velocity (%g, %g, %g) m/s, speed %g, expected at most %g m/s",
                    i - m->bodies[b].first, (double)v.x, (double)v.y, (double)v.z, speed,
                    (double)PBD_MAX_COORD);
    }
    return 0;
}

/* A particle with a contact radius, its grid cell (side: the largest radii's sum) packed in
 * 63 bits, for check_bodies_apart's sort. */
typedef struct cell_entry {
    int64_t cell;
    int particle;
} cell_entry;

static int cell_cmp(const void *a, const void *b)
{
    const cell_entry *x = a, *y = b;
    if (x->cell != y->cell)
        return x->cell < y->cell ? -1 : 1;
    return (x->particle > y->particle) - (x->particle < y->particle);
}

/* 21 bits a coordinate: cell indices wrap where the scene is over 2^21 cells wide; a wrapped
 * cell is only a wasted comparison, never a missed one (each candidate's distance is
 * tested). */
static int64_t cell_key(int64_t i, int64_t j, int64_t k)
{
    const int64_t mask = (1 << 21) - 1;
    return ((i & mask) << 42) | ((j & mask) << 21) | (k & mask);
}

/* Refuses two bodies that start overlapping where particle contacts would push them apart:
 * the push comes whole in the first substep, at depth / h. A body's own pairs are not
 * contacts where they start within their radii's sum (pbd_body), so only pairs of two
 * bodies are checked; pairs of two pinned particles never move. Overlaps within start_slop
 * are touching. Grid of the largest radii's sum, sorted, 27 cells each, of which a particle
 * reads only later bodies' entries. */
static int check_bodies_apart(ctx *c, const pbd_model *m)
{
    float rmax = 0.0f;
    int n = 0, with_radius = 0;
    for (int b = 0; b < m->num_bodies; ++b)
        if (m->bodies[b].radius > 0.0f) {
            rmax = fmaxf(rmax, m->bodies[b].radius);
            n += m->bodies[b].count;
            ++with_radius;
        }
    if (with_radius < 2)
        return 0;
    cell_entry *e = malloc((size_t)n * sizeof *e);
    if (!e)
        return fail(c, PBD_ERR_MEMORY, "bodies", "out of memory for the contact check");
    /* The cells at least 2^-40 of the farthest coordinate across, so that every cell index
     * fits its 21 bits' wrap without overflow (a radius of 1e-30 m at 1 km). */
    double far = 0.0;
    for (int i = 0; i < m->num_particles; ++i)
        far = fmax(far, fmax(fabs(m->x[i].x), fmax(fabs(m->x[i].y), fabs(m->x[i].z))));
    double side = fmax(2.0 * (double)rmax, ldexp(far, -40));
    int k = 0;
    for (int i = 0; i < m->num_particles; ++i)
        if (m->bodies[m->body[i]].radius > 0.0f)
            e[k++] = (cell_entry){cell_key((int64_t)floor(m->x[i].x / side),
                                           (int64_t)floor(m->x[i].y / side),
                                           (int64_t)floor(m->x[i].z / side)),
                                  i};
    qsort(e, (size_t)n, sizeof *e, cell_cmp);
    int r = 0;
    for (int a = 0; a < n && r == 0; ++a) {
        int i = e[a].particle, bi = m->body[i];
        pbd_float4 pi = m->x[i];
        int64_t ci = (int64_t)floor(pi.x / side), cj = (int64_t)floor(pi.y / side),
                ck = (int64_t)floor(pi.z / side);
        /* bodies' particles are consecutive and in the bodies' order, so a cell's entries of
         * later bodies, the only ones checked, are those from the next body's first particle:
         * a fine body's own particles, many in cells sized by a coarse body, are not read */
        int later = m->bodies[bi].first + m->bodies[bi].count;
        for (int d = 0; d < 27 && r == 0; ++d) {
            cell_entry key = {cell_key(ci + d % 3 - 1, cj + d / 3 % 3 - 1, ck + d / 9 - 1), later};
            /* the first entry not below key */
            int lo = 0, hi = n;
            while (lo < hi) {
                int mid = lo + (hi - lo) / 2;
                if (cell_cmp(&e[mid], &key) < 0)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            for (int q = lo; q < n && e[q].cell == key.cell; ++q) {
                int j = e[q].particle, bj = m->body[j];
                pbd_float4 pj = m->x[j];
                if (bj <= bi || !(pi.w > 0.0f || pj.w > 0.0f))
                    continue;
                double dx = (double)pi.x - pj.x, dy = (double)pi.y - pj.y, dz = (double)pi.z - pj.z;
                double dist = sqrt(dx * dx + dy * dy + dz * dz);
                double sum = (double)m->bodies[bi].radius + m->bodies[bj].radius;
                if (!(dist < sum - start_slop(pi, pj, pj)))
                    continue;
                char key_i[KEY_MAX], key_j[KEY_MAX];
                at_index(key_i, "bodies", bi);
                at_index(key_j, "bodies", bj);
                r = fail(
                    c, PBD_ERR_SCENE, key_i,
                    "particle %d at (%.9g, %.9g, %.9g) starts %g m into %s's particle %d (radii's "
                    "sum %g m), expected the bodies apart (an overlap is pushed out in the "
                    "first substep)",
                    i - m->bodies[bi].first, (double)pi.x, (double)pi.y, (double)pi.z, sum - dist,
                    key_j, j - m->bodies[bj].first, sum);
                break;
            }
        }
    }
    free(e);
    return r;
}

/* Keys that the rest of the scene leaves without effect are refused, as an unused
 * "damping_k" is: a value that changes nothing would be silently ignored. Run after the
 * model is built, whose bodies are the array's in order. */
static int check_keys_used(ctx *c, const cJSON *root, const cJSON *bodies, const pbd_scene *s)
{
    const pbd_model *m = &s->model;
    char key[KEY_MAX], sub[KEY_MAX];
    int with_radius = 0, self = 0;
    for (int b = 0; b < m->num_bodies; ++b) {
        with_radius += m->bodies[b].radius > 0.0f;
        self |= m->bodies[b].self_collision;
    }
    const cJSON *e;
    int b = 0;
    cJSON_ArrayForEach(e, bodies)
    {
        if (b >= m->num_bodies)
            break;
        const pbd_body *bd = &m->bodies[b];
        const cJSON *it;
        at_index(key, "bodies", b++);
        if (cJSON_GetObjectItemCaseSensitive(e, "restitution") && m->num_colliders == 0)
            return fail(c, PBD_ERR_SCENE, join(sub, key, "restitution"),
                        "found %g with no colliders, expected a plane, sphere, box or capsule "
                        "to bounce on (restitution does not apply to particle contacts)",
                        (double)bd->restitution);
        if (cJSON_GetObjectItemCaseSensitive(e, "particle_radius") && !bd->self_collision &&
            with_radius < 2)
            return fail(c, PBD_ERR_SCENE, join(sub, key, "particle_radius"),
                        "found %g with no other body with a particle_radius and no "
                        "self_collision, expected it only for particle contacts (colliders "
                        "meet a particle's centre)",
                        (double)bd->radius);
        if (bd->pinned > 0 && (it = cJSON_GetObjectItemCaseSensitive(e, "momentum")) &&
            cJSON_IsFalse(it))
            return fail(c, PBD_ERR_SCENE, join(sub, key, "momentum"),
                        "found false on a body with %d pinned particle%s (held by the world, "
                        "it is never corrected), expected it only on a free body",
                        bd->pinned, bd->pinned == 1 ? "" : "s");
        const char *moving = either(e, "velocity", "angular_velocity");
        if (bd->pinned == bd->count && moving) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, moving);
            return fail(
                c, PBD_ERR_SCENE, join(sub, key, moving),
                "found [%g, %g, %g] on a body whose %d particle%s all pinned (never "
                "moving), expected it only on a body with a free particle",
                cJSON_GetArrayItem(v, 0)->valuedouble, cJSON_GetArrayItem(v, 1)->valuedouble,
                cJSON_GetArrayItem(v, 2)->valuedouble, bd->count, bd->count == 1 ? " is" : "s are");
        }
    }
    int contacts = with_radius >= 2 || self;
    int distance = m->num_distance > 0;
    const cJSON *solver = cJSON_GetObjectItemCaseSensitive(root, "solver");
    if (solver && s->config.solver == PBD_SOLVER_JACOBI && !distance)
        return fail(c, PBD_ERR_SCENE, "solver",
                    "found \"jacobi\" with no distance constraints, expected it only where a "
                    "body has them (every other type is coloured and solved as with \"gs\")");
    /* Under "gs" omega is the contacts' alone; the solver can come from the command line, so
     * that case is the application's to refuse. */
    if (cJSON_GetObjectItemCaseSensitive(root, "omega") && !contacts && !distance)
        return fail(c, PBD_ERR_SCENE, "omega",
                    "found %g with no distance constraints and no particle contacts, expected it "
                    "only where a Jacobi solve or contacts use it",
                    (double)s->config.omega);
    int own = 0;
    for (int k = 0; k < m->num_bodies; ++k)
        own += m->bodies[k].damping >= 0;
    const cJSON *damping = cJSON_GetObjectItemCaseSensitive(root, "damping");
    if (damping && m->num_bodies > 0 && own == m->num_bodies)
        return fail(c, PBD_ERR_SCENE, "damping",
                    "found \"%s\", used by no body (each gives its own \"damping\"), expected "
                    "it only where a body takes the scene's",
                    cJSON_IsString(damping) ? damping->valuestring : "?");
    return 0;
}

static int parse_root(ctx *c, const cJSON *root, pbd_scene *out)
{
    static const char *const solvers[] = {"gs", "jacobi", NULL};
    static const char *const updates[] = {"first_order", "bdf2", NULL};
    const char *description;
    int solver = 0, damping = 0, update = 0;
    if (!cJSON_IsObject(root))
        return wrong_type(c, "top level", root, "an object");
    if (check_keys(c, root, "", top_keys, NULL) ||
        opt_string(c, root, "", "description", &description) < 0 ||
        read_fields(c, root, "", config_fields, COUNT(config_fields), &out->config) ||
        opt_enum(c, root, "", "solver", solvers, &solver) < 0 ||
        opt_enum(c, root, "", "damping", dampings, &damping) < 0 ||
        opt_enum(c, root, "", "velocity_update", updates, &update) < 0 ||
        parse_planes(c, root, &out->model) || parse_spheres(c, root, &out->model) ||
        parse_boxes(c, root, &out->model) || parse_capsules(c, root, &out->model))
        return -1;
    out->config.solver = solver ? PBD_SOLVER_JACOBI : PBD_SOLVER_GS;
    out->config.damping = (pbd_damping_kind)damping;
    out->config.velocity_update = (pbd_velocity_update)update;
    const cJSON *bodies = cJSON_GetObjectItemCaseSensitive(root, "bodies");
    if (!bodies)
        return fail(c, PBD_ERR_SCENE, "bodies", "missing (required, at least one body)");
    if (!cJSON_IsArray(bodies))
        return wrong_type(c, "bodies", bodies, "an array");
    if (cJSON_GetArraySize(bodies) < 1)
        return fail(c, PBD_ERR_SCENE, "bodies",
                    "found an empty array, expected at least one "
                    "body");
    if (parse_bodies(c, bodies, &out->model) || parse_attachments(c, root, &out->model))
        return -1;
    /* A body's damping fraction with no damping model to use it would be ignored, and so
     * would a model with no fraction (0 by default) on the body or the scene. */
    int scene_k = cJSON_GetObjectItemCaseSensitive(root, "damping_k") != NULL, scene_k_used = 0;
    /* cJSON counts a list by walking it: once, not per body */
    int listed = cJSON_GetArraySize(bodies);
    for (int b = 0; b < out->model.num_bodies && b < listed; ++b) {
        const pbd_body *bd = &out->model.bodies[b];
        char key[KEY_MAX], sub[KEY_MAX];
        at_index(key, "bodies", b);
        pbd_damping_kind kind = pbd_body_damping(bd, &out->config, NULL);
        if (kind != PBD_DAMPING_NONE && bd->damping_k < 0.0f && !scene_k)
            return fail(c, PBD_ERR_SCENE, bd->damping >= 0 ? join(sub, key, "damping") : "damping",
                        "found \"%s\" with no \"damping_k\" on the body or the scene, expected "
                        "a fraction per substep for it",
                        dampings[kind]);
        if (bd->damping_k >= 0.0f && kind == PBD_DAMPING_NONE)
            return fail(c, PBD_ERR_SCENE, join(sub, key, "damping_k"),
                        "found %g with damping \"none\", expected \"damping\": \"point\" or "
                        "\"rigid\" on the body or the scene",
                        (double)bd->damping_k);
        scene_k_used |= kind != PBD_DAMPING_NONE && bd->damping_k < 0.0f;
    }
    if (scene_k && !scene_k_used)
        return fail(c, PBD_ERR_SCENE, "damping_k",
                    "found %g, used by no body (each damps with \"none\" or its own "
                    "\"damping_k\"), expected it only with a damping model that uses it",
                    (double)out->config.damping_k);
    if (check_keys_used(c, root, bodies, out))
        return -1;
    pbd_error verr = {0};
    pbd_status st = pbd_model_validate(&out->model, &verr);
    /* In a scene, an invalid model is an invalid scene. */
    if (st != PBD_OK)
        return fail(c, PBD_ERR_SCENE, NULL, "%s", verr.message);
    if (check_speeds(c, &out->model) || check_starts_outside(c, &out->model))
        return -1;
    return check_bodies_apart(c, &out->model);
}

/* The first "\u0000" escape inside a string of the JSON text, or NULL. */
static const char *escaped_nul(const char *s)
{
    int in_string = 0;
    for (; *s; ++s) {
        if (*s == '"')
            in_string = !in_string;
        else if (in_string && *s == '\\') {
            if (strncmp(s + 1, "u0000", 5) == 0)
                return s;
            if (s[1])
                ++s; /* the escaped character, a quote too */
        }
    }
    return NULL;
}

/* Line and column (from 1) of the byte at `at`. */
static void locate(const char *text, const char *at, int *line, int *column)
{
    *line = 1;
    *column = 1;
    for (const char *s = text; s < at && *s; ++s) {
        if (*s == '\n') {
            ++*line;
            *column = 1;
        } else {
            ++*column;
        }
    }
}

static pbd_status parse(const char *json, size_t length, const char *name, pbd_scene *out,
                        pbd_error *err)
{
    ctx c = {name ? name : "scene", "", 0, err, PBD_OK};
    const char *slash = strrchr(c.file, '/');
    if (slash && slash - c.file < INT_MAX) {
        c.dir = c.file;
        c.dir_len = (int)(slash - c.file) + 1;
    }
    int line, column;
    memset(out, 0, sizeof *out);
    out->config = pbd_config_default();
    if (strlen(json) != length) {
        locate(json, json + strlen(json), &line, &column);
        fail(&c, PBD_ERR_SCENE, NULL, "line %d, column %d: found a NUL byte, expected JSON text",
             line, column);
        return PBD_ERR_SCENE;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(json, &end, 1);
    if (!root) {
        locate(json, end ? end : cJSON_GetErrorPtr(), &line, &column);
        fail(&c, PBD_ERR_SCENE, NULL, "line %d, column %d: JSON syntax error", line, column);
        return PBD_ERR_SCENE;
    }
    /* cJSON keeps strings NUL-terminated: "\u0000" would cut a key, a name or a path short
     * without a word ("dt\u0000x" read as "dt"). */
    const char *nul = escaped_nul(json);
    if (nul) {
        cJSON_Delete(root);
        locate(json, nul, &line, &column);
        fail(&c, PBD_ERR_SCENE, NULL,
             "line %d, column %d: found \\u0000 (NUL) in a string, expected no NUL characters",
             line, column);
        return PBD_ERR_SCENE;
    }
    int r = parse_root(&c, root, out);
    cJSON_Delete(root);
    if (r == 0)
        return PBD_OK;
    pbd_scene_free(out);
    return c.status;
}

pbd_status pbd_scene_parse(const char *json, const char *name, pbd_scene *out, pbd_error *err)
{
    if (!json || !out)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "pbd_scene_parse: no text or no scene");
    return parse(json, strlen(json), name, out, err);
}

pbd_status pbd_scene_load(const char *path, pbd_scene *out, pbd_error *err)
{
    if (!path || !out)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "pbd_scene_load: no path or no scene");
    if (path[0] == '@')
        return pbd_scene_builtin(path, out, err);
    memset(out, 0, sizeof *out);
    char *text;
    size_t len;
    pbd_status st = pbd_text_file_read(path, "a scene", 0, PBD_ERR_SCENE, &text, &len, err);
    if (st != PBD_OK)
        return st;
    st = parse(text, len, path, out, err);
    free(text);
    return st;
}

void pbd_scene_free(pbd_scene *s)
{
    if (!s)
        return;
    pbd_model_free(&s->model);
    memset(s, 0, sizeof *s);
}
