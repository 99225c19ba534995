/* What the mesh fuzz targets check, beyond the sanitizers: a refusal is one non-empty line
 * with a mesh status; an accepted mesh holds what mesh.h promises (indices in range,
 * elements of different vertices, finite coordinates within PBD_MAX_COORD) and builds a
 * body whose model validates, as a cloth from its triangles and as a soft body from its
 * tetrahedra. */
#ifndef PBD_FUZZ_MESH_H
#define PBD_FUZZ_MESH_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mesh/mesh.h"
#include "scene/generators.h"

static void fuzz_mesh_finding(const char *target, const char *what, const char *message)
{
    fprintf(stderr, "%s: %s%s%s\n", target, what, message ? ": " : "", message ? message : "");
    abort();
}

static void fuzz_mesh_elements(const char *target, const int *el, int count, int arity, int nv)
{
    for (int e = 0; e < count; ++e)
        for (int i = 0; i < arity; ++i) {
            int v = el[(size_t)arity * e + i];
            if (v < 0 || v >= nv)
                fuzz_mesh_finding(target, "element index out of range", NULL);
            for (int j = 0; j < i; ++j)
                if (el[(size_t)arity * e + j] == v)
                    fuzz_mesh_finding(target, "degenerate element accepted", NULL);
        }
}

static void fuzz_mesh_body(const char *target, const pbd_mesh *mesh, pbd_mesh_as as)
{
    pbd_mesh_desc d = pbd_mesh_desc_default();
    pbd_model m;
    pbd_error err = {0};
    memset(&m, 0, sizeof m);
    d.mesh = mesh;
    d.as = as;
    d.volume = 1;
    pbd_status st = pbd_scene_add_mesh(&m, &d, &err);
    if (st == PBD_OK && pbd_model_validate(&m, &err) != PBD_OK)
        fuzz_mesh_finding(target, "body from an accepted mesh does not validate", err.message);
    if (st != PBD_OK && st != PBD_ERR_MEMORY &&
        !(st == PBD_ERR_ARGUMENT && strncmp(err.message, "file: ", 6) == 0))
        fuzz_mesh_finding(target, "body from an accepted mesh refused", err.message);
    pbd_model_free(&m);
}

static void fuzz_mesh_check(const char *target, pbd_status st, pbd_mesh *m, pbd_error *err)
{
    if (st != PBD_OK) {
        if (err->message[0] == '\0' || strchr(err->message, '\n') ||
            (st != PBD_ERR_SCENE && st != PBD_ERR_MEMORY))
            fuzz_mesh_finding(target, "refusal without a one-line message", err->message);
        if (m->vertices || m->triangles || m->tets)
            fuzz_mesh_finding(target, "refused mesh not left empty", err->message);
        return;
    }
    if (m->num_vertices < 1 || (m->num_triangles < 1 && m->num_tets < 1))
        fuzz_mesh_finding(target, "empty mesh accepted", NULL);
    for (size_t k = 0; k < 3 * (size_t)m->num_vertices; ++k)
        if (!(fabs(m->vertices[k]) <= PBD_MAX_COORD))
            fuzz_mesh_finding(target, "coordinate beyond PBD_MAX_COORD accepted", NULL);
    fuzz_mesh_elements(target, m->triangles, m->num_triangles, 3, m->num_vertices);
    fuzz_mesh_elements(target, m->tets, m->num_tets, 4, m->num_vertices);
    if (m->num_triangles > 0)
        fuzz_mesh_body(target, m, PBD_MESH_CLOTH);
    if (m->num_tets > 0)
        fuzz_mesh_body(target, m, PBD_MESH_SOFT);
    pbd_mesh_free(m);
}

#endif
