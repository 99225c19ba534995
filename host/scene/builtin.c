/* Built-in scenes, generated from their names: the benchmark's size sweeps and the paper's
 * body-count comparison, without JSON files that would only repeat a pattern.
 *
 * This file uses the generators and the model only. scene.c calls it for '@' names
 * (pbd_scene_load), so it must not call back into scene.c: the dependency stays one-way,
 * scene.c -> builtin.c -> generators.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "scene/generators.h"

/* Parses a whole decimal integer in [lo, hi] from s up to `end` (or the string's end). */
static int parse_int(const char *s, const char *end, long lo, long hi, long *out)
{
    char *e;
    errno = 0;
    long v = strtol(s, &e, 10);
    if (errno || e == s || (end ? e != end : *e != '\0') || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* @cloth-N: the benchmark cloth of the comparison with a plain C Gauss-Seidel. N x N particles over
 * 2 m, held at two corners above the floor, structural springs and both shear diagonals (no
 * bending), hard constraints, 10 Gauss-Seidel iterations, dt 1/60. */
static pbd_status cloth(long n, pbd_scene *out, pbd_error *err)
{
    pbd_cloth_desc d = pbd_cloth_desc_default();
    d.resolution[0] = d.resolution[1] = (int)n;
    d.size[0] = d.size[1] = 2.0f;
    d.center[1] = 1.5f;
    d.bending = PBD_BENDING_NONE;
    d.pin = PBD_PIN_CORNERS;
    d.common.name = "cloth";
    pbd_status st = pbd_scene_add_cloth(&out->model, &d, err);
    if (st == PBD_OK && pbd_model_add_plane(&out->model, 0.0f, 1.0f, 0.0f, 0.0f))
        st = pbd_error_set(err, PBD_ERR_MEMORY, "out of memory");
    return st;
}

/* The most cubic a <= b <= c with a b c = p and a >= 2, or 0. */
static int factor3(long p, int dims[3])
{
    int found = 0;
    for (long a = 2; a * a * a <= p; ++a)
        for (long b = a; a * b * b <= p; ++b)
            if (p % (a * b) == 0) {
                dims[0] = (int)a;
                dims[1] = (int)b;
                dims[2] = (int)(p / (a * b));
                found = 1;
            }
    return found;
}

/* @boxes-BxP: B free soft boxes of P lattice particles each (P = a b c, as cubic as it
 * factors), 5 cm between particles, spinning and drifting without gravity: the same total
 * size split into more or fewer bodies, for the momentum correction's cost per body.
 * @boxes-BxP-asG: the same boxes, their momentum preserved as G bodies of B/G boxes each
 * (the step's work unchanged; only the correction sees fewer, larger bodies). */
static pbd_status boxes(long nb, long np, long groups, const char *name, pbd_scene *out,
                        pbd_error *err)
{
    int dims[3];
    if (!factor3(np, dims))
        return pbd_error_set(err, PBD_ERR_SCENE,
                             "%s: %ld particles per box do not factor into a lattice a x b x c "
                             "with each side >= 2 (try 100, 1000, 10000)",
                             name, np);
    const float spacing = 0.05f;
    int side = 1;
    while ((long)side * side * side < nb)
        ++side;
    float extent = spacing * (float)(dims[2] - 1) * 1.5f + 0.1f;
    out->config.gravity[1] = 0.0f;
    for (long k = 0; k < nb; ++k) {
        pbd_tet_box_desc d = pbd_tet_box_desc_default();
        for (int a = 0; a < 3; ++a) {
            d.cells[a] = dims[a] - 1;
            d.size[a] = spacing * (float)(dims[a] - 1);
        }
        d.center[0] = extent * (float)(k % side);
        d.center[1] = extent * (float)((k / side) % side);
        d.center[2] = extent * (float)(k / ((long)side * side));
        d.common.compliance = 1e-4f;
        d.common.angular_velocity[0] = 1.0f;
        d.common.angular_velocity[1] = 2.0f;
        d.common.angular_velocity[2] = 0.5f;
        d.common.velocity[0] = 0.1f;
        d.common.name = "box";
        pbd_status st = pbd_scene_add_tet_box(&out->model, &d, err);
        if (st != PBD_OK)
            return st;
    }
    /* Boxes are added one after another, so a group's particles are one contiguous range. */
    pbd_model *m = &out->model;
    long per = nb / groups;
    for (long g = 0; g < groups; ++g) {
        pbd_body b = m->bodies[g * per];
        for (long k = g * per + 1; k < (g + 1) * per; ++k) {
            b.count += m->bodies[k].count;
            b.pinned += m->bodies[k].pinned;
        }
        m->bodies[g] = b;
        for (int i = b.first; i < b.first + b.count; ++i)
            m->body[i] = (int)g;
    }
    m->num_bodies = (int)groups;
    return PBD_OK;
}

/* @pile-N: N soft cubes as soft_pile.json's (Neo-Hookean, 7^3 cells of 5 cm, 512
 * particles, particle radius 2.5 cm, friction 0.6 / 0.4) in four layers of a square grid
 * 0.5 m apart, the lowest on a rough floor, each turning a little: particle contacts at
 * any size, for their cost against the particle count. 8 substeps of 4 iterations. */
static pbd_status pile(long n, pbd_scene *out, pbd_error *err)
{
    long per_layer = (n + 3) / 4;
    int side = 1;
    while ((long)side * side < per_layer)
        ++side;
    out->config.substeps = 8;
    out->config.iterations = 4;
    out->config.frames = 180;
    pbd_model *m = &out->model;
    for (long k = 0; k < n; ++k) {
        long layer = k / per_layer, cell = k % per_layer;
        pbd_tet_box_desc d = pbd_tet_box_desc_default();
        for (int a = 0; a < 3; ++a) {
            d.cells[a] = 7;
            d.size[a] = 0.35f;
        }
        /* a fixed, irregular offset a cube, so that the layers do not stack exactly */
        unsigned h = (unsigned)k * 2654435761u;
        float jx = (float)(h >> 24) / 255.0f - 0.5f, jz = (float)((h >> 16) & 255u) / 255.0f - 0.5f;
        d.center[0] = 0.5f * ((float)(cell % side) - 0.5f * (float)(side - 1)) + 0.05f * jx;
        d.center[1] = 0.18f + 0.4f * (float)layer;
        d.center[2] = 0.5f * ((float)(cell / side) - 0.5f * (float)(side - 1)) + 0.05f * jz;
        d.common.density = 400.0;
        d.young_modulus = 60000.0;
        d.poisson_ratio = 0.4;
        d.common.angular_velocity[0] = 0.5f * jz;
        d.common.angular_velocity[2] = 0.5f * jx;
        d.common.name = "cube";
        pbd_status st = pbd_scene_add_tet_box(m, &d, err);
        if (st != PBD_OK)
            return st;
        pbd_body *b = &m->bodies[m->num_bodies - 1];
        b->radius = 0.025f;
        b->friction = 0.6f;
        b->friction_kinetic = 0.4f;
    }
    pbd_collider floor = {.kind = PBD_COLLIDER_PLANE,
                          .friction = 0.6f,
                          .friction_kinetic = 0.4f,
                          .shape = {0.0f, 1.0f, 0.0f, 0.0f}};
    if (pbd_model_add_collider(m, &floor))
        return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory");
    return PBD_OK;
}

/* "@boxes-BxP" or "@boxes-BxP-asG" into B, P and G (G = B without "-as"), each in range. */
static int parse_boxes(const char *name, long *nb, long *np, long *groups)
{
    const char *x = strncmp(name, "@boxes-", 7) == 0 ? strchr(name + 7, 'x') : NULL;
    if (!x || parse_int(name + 7, x, 1, 100000, nb))
        return -1;
    const char *as = strstr(x + 1, "-as");
    if (parse_int(x + 1, as, 8, 10000000, np) || *nb * *np > (1L << 26))
        return -1;
    *groups = *nb;
    return as ? parse_int(as + 3, NULL, 1, *nb, groups) : 0;
}

pbd_status pbd_scene_builtin(const char *name, pbd_scene *out, pbd_error *err)
{
    memset(out, 0, sizeof *out);
    out->config = pbd_config_default();
    long a, b, g;
    pbd_status st;
    if (strncmp(name, "@cloth-", 7) == 0 && parse_int(name + 7, NULL, 2, 4096, &a) == 0)
        st = cloth(a, out, err);
    else if (strncmp(name, "@pile-", 6) == 0 && parse_int(name + 6, NULL, 1, 20000, &a) == 0)
        st = pile(a, out, err);
    else if (parse_boxes(name, &a, &b, &g) == 0) {
        if (a % g)
            st = pbd_error_set(err, PBD_ERR_SCENE,
                               "%s: %ld boxes do not split into %ld bodies of equal size "
                               "(expected a divisor of %ld)",
                               name, a, g, a);
        else
            st = boxes(a, b, g, name, out, err);
    } else
        st = pbd_error_set(err, PBD_ERR_SCENE,
                           "%s: unknown built-in scene (expected @cloth-N with N in [2, 4096], "
                           "@pile-N with N in [1, 20000], or @boxes-BxP[-asG]: B boxes (1 to "
                           "100000) of P particles (8 to 1e7), B x P <= 2^26, their momentum "
                           "preserved as G bodies, G dividing B)",
                           name);
    if (st == PBD_OK)
        st = pbd_model_validate(&out->model, err);
    if (st != PBD_OK) {
        /* What pbd_scene_free does, without calling into scene.c. */
        pbd_model_free(&out->model);
        memset(out, 0, sizeof *out);
    }
    return st;
}
