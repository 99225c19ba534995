/* Built-in scenes, generated from their names: the benchmark's size sweeps and the paper's
 * body-count comparison, without JSON files that would only repeat a pattern.
 *
 * This file uses the generators and the model only. scene.c calls it for '@' names
 * (pbd_scene_load), so it must not call back into scene.c: the dependency stays one-way,
 * scene.c -> builtin.c -> generators.c. */
#include <errno.h>
#include <math.h>
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

/* A sphere of radius r: an icosahedron whose triangles are cut into four `levels` times, the
 * new vertices pushed out to the sphere (10 4^levels + 2 vertices, each edge's midpoint
 * once), wound counter-clockwise seen from outside. */
static pbd_status icosphere(int levels, double r, pbd_mesh *out, pbd_error *err)
{
    const double t = (1.0 + sqrt(5.0)) / 2.0;
    const double v0[12][3] = {{-1, t, 0}, {1, t, 0}, {-1, -t, 0}, {1, -t, 0},
                              {0, -1, t}, {0, 1, t}, {0, -1, -t}, {0, 1, -t},
                              {t, 0, -1}, {t, 0, 1}, {-t, 0, -1}, {-t, 0, 1}};
    const int f0[20][3] = {{0, 11, 5}, {0, 5, 1},  {0, 1, 7},   {0, 7, 10}, {0, 10, 11},
                           {1, 5, 9},  {5, 11, 4}, {11, 10, 2}, {10, 7, 6}, {7, 1, 8},
                           {3, 9, 4},  {3, 4, 2},  {3, 2, 6},   {3, 6, 8},  {3, 8, 9},
                           {4, 9, 5},  {2, 4, 11}, {6, 2, 10},  {8, 6, 7},  {9, 8, 1}};
    long nv = 10L * (1L << (2 * levels)) + 2, nt = 20L << (2 * levels);
    memset(out, 0, sizeof *out);
    out->vertices = malloc((size_t)nv * 3 * sizeof *out->vertices);
    out->triangles = malloc((size_t)nt * 3 * sizeof *out->triangles);
    int *next = malloc((size_t)nt * 3 * sizeof *next);
    /* each edge's midpoint, by the edge's ends (open addressing, twice the edges' count) */
    size_t cap = (size_t)nt * 3;
    long long *key = malloc(cap * sizeof *key);
    int *mid = malloc(cap * sizeof *mid);
    pbd_status st = PBD_OK;
    if (!out->vertices || !out->triangles || !next || !key || !mid) {
        st = pbd_error_set(err, PBD_ERR_MEMORY, "out of memory");
        goto done;
    }
    for (int i = 0; i < 12; ++i) {
        double n = sqrt(v0[i][0] * v0[i][0] + v0[i][1] * v0[i][1] + v0[i][2] * v0[i][2]);
        for (int k = 0; k < 3; ++k)
            out->vertices[3 * i + k] = r * v0[i][k] / n;
    }
    memcpy(out->triangles, f0, sizeof f0);
    int vn = 12, tn = 20;
    for (int level = 0; level < levels; ++level) {
        for (size_t h = 0; h < cap; ++h)
            key[h] = -1;
        int tm = 0;
        for (int f = 0; f < tn; ++f) {
            const int *c = out->triangles + 3 * f;
            int m[3];
            for (int e = 0; e < 3; ++e) {
                int a = c[e], b = c[(e + 1) % 3], lo = a < b ? a : b, hi = a < b ? b : a;
                long long k = (long long)lo * nv + hi;
                size_t h = (size_t)((unsigned long long)k * 2654435761ULL % cap);
                while (key[h] != -1 && key[h] != k)
                    h = (h + 1) % cap;
                if (key[h] == -1) {
                    key[h] = k;
                    mid[h] = vn;
                    double p[3], n = 0.0;
                    for (int q = 0; q < 3; ++q) {
                        p[q] = out->vertices[3 * a + q] + out->vertices[3 * b + q];
                        n += p[q] * p[q];
                    }
                    for (int q = 0; q < 3; ++q)
                        out->vertices[3 * vn + q] = r * p[q] / sqrt(n);
                    ++vn;
                }
                m[e] = mid[h];
            }
            const int quad[4][3] = {
                {c[0], m[0], m[2]}, {c[1], m[1], m[0]}, {c[2], m[2], m[1]}, {m[0], m[1], m[2]}};
            memcpy(next + 3 * tm, quad, sizeof quad);
            tm += 4;
        }
        memcpy(out->triangles, next, (size_t)tm * 3 * sizeof *next);
        tn = tm;
    }
    out->num_vertices = vn;
    out->num_triangles = tn;
done:
    free(next);
    free(key);
    free(mid);
    if (st != PBD_OK)
        pbd_mesh_free(out);
    return st;
}

/* @type-NAME: one scene a constraint type, for `pbd bench --suite types`, which compares each
 * type's projection with the distance constraint's per particle touched. dt 1/60 s, 10
 * iterations, gravity. distance: a 128 x 128 cloth of 1 m pinned along an edge (structural
 * and shear springs, no bending, no floor); tether, dihedral, isometric: a 128 x 128 cloth of
 * 2 m pinned along an edge over a floor, hard, with tethers, or with dihedral or isometric
 * bending of compliance 0.01; volume, shape_matching: a tet box of 20^3 cells (9,261
 * particles, 48,000 tetrahedra) of 1 m, density 100, edges of compliance 1e-4, with volume
 * constraints of 1e-6 or shape matching of stiffness 0.5; neo_hookean: the box of Neo-Hookean
 * elements (density 500, 100 kPa, Poisson ratio 0.3) at 4 substeps; pressure: a closed sphere
 * of 10,242 particles (an icosahedron cut 5 times, radius 0.5 m) as a cloth without bending,
 * density 0.5, compliance 0.01, inflated to 1.5 times its volume. */
static pbd_status type_scene(const char *type, pbd_scene *out, pbd_error *err)
{
    pbd_model *m = &out->model;
    pbd_status st;
    int cloth = strcmp(type, "distance") == 0 || strcmp(type, "tether") == 0 ||
                strcmp(type, "dihedral") == 0 || strcmp(type, "isometric") == 0;
    int box = strcmp(type, "volume") == 0 || strcmp(type, "neo_hookean") == 0 ||
              strcmp(type, "shape_matching") == 0;
    if (cloth) {
        pbd_cloth_desc d = pbd_cloth_desc_default();
        int plain = strcmp(type, "distance") == 0;
        d.resolution[0] = d.resolution[1] = 128;
        d.size[0] = d.size[1] = plain ? 1.0f : 2.0f;
        d.center[1] = 1.0f;
        d.common.mass = 1.0;
        d.pin = PBD_PIN_EDGE;
        d.bending = strcmp(type, "dihedral") == 0    ? PBD_BENDING_DIHEDRAL
                    : strcmp(type, "isometric") == 0 ? PBD_BENDING_ISOMETRIC
                                                     : PBD_BENDING_NONE;
        d.bending_compliance = 0.01f;
        d.tethers = strcmp(type, "tether") == 0;
        d.common.compliance = 0.0f;
        d.common.name = "cloth";
        st = pbd_scene_add_cloth(m, &d, err);
        if (st == PBD_OK && !plain && pbd_model_add_plane(m, 0.0f, 1.0f, 0.0f, 0.0f))
            st = pbd_error_set(err, PBD_ERR_MEMORY, "out of memory");
    } else if (box) {
        pbd_tet_box_desc d = pbd_tet_box_desc_default();
        int nh = strcmp(type, "neo_hookean") == 0;
        for (int a = 0; a < 3; ++a) {
            d.cells[a] = 20;
            d.size[a] = 1.0f;
        }
        d.center[1] = nh ? 0.55f : 1.0f;
        d.common.density = nh ? 500.0 : 100.0;
        d.common.compliance = 1e-4f;
        d.volume = strcmp(type, "volume") == 0;
        d.volume_compliance = 1e-6f;
        d.young_modulus = nh ? 1e5 : 0.0;
        d.poisson_ratio = 0.3;
        d.common.name = "box";
        out->config.substeps = nh ? 4 : 1;
        st = pbd_scene_add_tet_box(m, &d, err);
        if (st == PBD_OK)
            m->bodies[m->num_bodies - 1].shape_stiffness =
                strcmp(type, "shape_matching") == 0 ? 0.5f : 0.0f;
        if (st == PBD_OK && pbd_model_add_plane(m, 0.0f, 1.0f, 0.0f, 0.0f))
            st = pbd_error_set(err, PBD_ERR_MEMORY, "out of memory");
    } else if (strcmp(type, "pressure") == 0) {
        pbd_mesh mesh;
        st = icosphere(5, 0.5, &mesh, err);
        if (st != PBD_OK)
            return st;
        pbd_mesh_desc d = pbd_mesh_desc_default();
        d.mesh = &mesh;
        d.as = PBD_MESH_CLOTH;
        d.bending = PBD_BENDING_NONE;
        d.common.density = 0.5;
        d.common.compliance = 1e-2f;
        d.common.name = "sphere";
        st = pbd_scene_add_mesh(m, &d, err);
        pbd_mesh_free(&mesh);
        if (st == PBD_OK)
            m->bodies[m->num_bodies - 1].pressure = 1.5f;
    } else
        st = pbd_error_set(err, PBD_ERR_SCENE,
                           "@type-%s: unknown constraint type (expected distance, tether, "
                           "volume, dihedral, isometric, neo_hookean, shape_matching or "
                           "pressure)",
                           type);
    return st;
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
    else if (strncmp(name, "@type-", 6) == 0)
        st = type_scene(name + 6, out, err);
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
                           "@pile-N with N in [1, 20000], @type-NAME with a constraint type's "
                           "name, or @boxes-BxP[-asG]: B boxes (1 to 100000) of P particles (8 "
                           "to 1e7), B x P <= 2^26, their momentum preserved as G bodies, G "
                           "dividing B)",
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
