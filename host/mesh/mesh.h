/* Mesh files (private to the library, the tests and the fuzz targets): Wavefront OBJ, TetGen
 * .node/.ele(/.face) and Gmsh .msh (2.2 and 4.1, ASCII or binary), read into one plain
 * in-memory mesh of vertices, surface triangles and tetrahedra. The scene loader builds
 * "mesh" bodies from it (generators.h, pbd_scene_add_mesh).
 *
 * Every malformed file is refused with one line, "FILE:LINE: found X, expected Y"
 * (PBD_ERR_SCENE; PBD_ERR_IO when a file cannot be read), and the mesh is left empty. The
 * limits are the scene's: at most PBD_MAX_PARTICLES vertices and PBD_MAX_DISTANCE triangles
 * or tetrahedra, coordinates of magnitude at most PBD_MAX_COORD, files of at most
 * PBD_MAX_FILE_BYTES. Format details are in docs/meshes.md. */
#ifndef PBD_MESH_H
#define PBD_MESH_H

#include <stddef.h>

#include "pbd.h"

typedef struct pbd_mesh {
    int num_vertices;
    double *vertices; /* 3 x num_vertices: x y z, in the file's units (m for a scene) */
    int num_triangles;
    int *triangles; /* 3 x num_triangles, 0-based vertex indices: the surface. OBJ: its faces
                       (fanned), as the file winds them. A tetrahedral mesh: the boundary (the
                       file's .face or triangles, else the tet faces used once), wound
                       counter-clockwise seen from outside */
    int num_tets;
    int *tets; /* 4 x num_tets, 0-based vertex indices, as the file orders them */
} pbd_mesh;

/* One file held in memory: `name` is put in front of every message. `text` need not end in
 * a NUL byte; a NUL byte inside it is an error. */
typedef struct pbd_mesh_text {
    const char *name;
    const char *text;
    size_t length;
} pbd_mesh_text;

/* Reads a mesh file, its format by its extension: .obj; .node or .ele (TetGen: the .node
 * and .ele of the same base name, and its .face when that exists); .msh (Gmsh, ASCII or
 * binary). */
pbd_status pbd_mesh_load(const char *path, pbd_mesh *out, pbd_error *err);

/* The parsers, from memory. OBJ: vertices are welded where two `v` lines give the same
 * position, so a face index names a position, never a (position, uv) pair. */
pbd_status pbd_mesh_parse_obj(const pbd_mesh_text *obj, pbd_mesh *out, pbd_error *err);
/* TetGen: `face` may be NULL. */
pbd_status pbd_mesh_parse_tetgen(const pbd_mesh_text *node, const pbd_mesh_text *ele,
                                 const pbd_mesh_text *face, pbd_mesh *out, pbd_error *err);
pbd_status pbd_mesh_parse_msh(const pbd_mesh_text *msh, pbd_mesh *out, pbd_error *err);

void pbd_mesh_free(pbd_mesh *m);

#endif
