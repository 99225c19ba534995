/* Built-in scenes, generated from their names: the benchmark's size sweeps and the paper's
 * body-count comparison, without JSON files that would only repeat a pattern. */
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

/* @cloth-N: the benchmark cloth of issue 4's comparison. N x N particles over 2 m, held at
 * two corners above the floor, structural springs and both shear diagonals (no bending),
 * hard constraints, 10 Gauss-Seidel iterations, dt 1/60. */
static pbd_status cloth(long n, pbd_scene *out, pbd_error *err)
{
    pbd_cloth_desc d = pbd_cloth_desc_default();
    d.resolution[0] = d.resolution[1] = (int)n;
    d.size[0] = d.size[1] = 2.0f;
    d.center[1] = 1.5f;
    d.bending = 0;
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
 * size split into more or fewer bodies, for the momentum correction's cost per body. */
static pbd_status boxes(long nb, long np, const char *name, pbd_scene *out, pbd_error *err)
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
    return PBD_OK;
}

pbd_status pbd_scene_builtin(const char *name, pbd_scene *out, pbd_error *err)
{
    memset(out, 0, sizeof *out);
    out->config = pbd_config_default();
    long a, b;
    const char *x;
    pbd_status st;
    if (strncmp(name, "@cloth-", 7) == 0 && parse_int(name + 7, NULL, 2, 4096, &a) == 0)
        st = cloth(a, out, err);
    else if (strncmp(name, "@boxes-", 7) == 0 && (x = strchr(name + 7, 'x')) &&
             parse_int(name + 7, x, 1, 100000, &a) == 0 &&
             parse_int(x + 1, NULL, 8, 10000000, &b) == 0 && a * b <= (1L << 26))
        st = boxes(a, b, name, out, err);
    else
        st = pbd_error_set(err, PBD_ERR_SCENE,
                           "%s: unknown built-in scene (expected @cloth-N with N in [2, 4096], or "
                           "@boxes-BxP: B boxes of P particles, B x P <= 2^26)",
                           name);
    if (st == PBD_OK)
        st = pbd_model_validate(&out->model, err);
    if (st != PBD_OK)
        pbd_scene_free(out);
    return st;
}
