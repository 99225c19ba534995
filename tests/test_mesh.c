/* Meshes: every malformed file of tests/bad_meshes/ is refused in one line naming the file
 * and the line; a valid file of each format gives exactly the built-in body it describes;
 * OBJ welding keeps a cloth in one piece; "mesh" bodies take their transform and find their
 * files next to the scene. */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

#include "mesh/mesh.h"
#include "scene/generators.h"

#define BAD_DIR  PBD_TESTS_DIR "/bad_meshes"
#define MESH_DIR PBD_TESTS_DIR "/meshes"

/* ---- malformed files ------------------------------------------------------------------ */

typedef struct bad_mesh {
    const char *load;    /* the file given to pbd_mesh_load */
    const char *blamed;  /* the file the message must name */
    int line;            /* and its line */
    const char *message; /* what follows "FILE:LINE: " (a prefix) */
} bad_mesh;

static const bad_mesh bad[] = {
    /* OBJ */
    {"obj_index_range.obj", "obj_index_range.obj", 5, "found face index 4, expected 1 to 3"},
    {"obj_double_sided.obj", "obj_double_sided.obj", 8,
     "found a face on the corners of the face on line 6, expected each triangle once"},
    {"obj_texture_range.obj", "obj_texture_range.obj", 5,
     "found texture index 5, expected a vt line before it"},
    {"obj_zero_index.obj", "obj_zero_index.obj", 4, "found '0', expected a face corner"},
    {"obj_nan.obj", "obj_nan.obj", 2, "found 'nan', expected a finite x coordinate"},
    {"obj_huge.obj", "obj_huge.obj", 3,
     "found '1e12', expected a y coordinate of magnitude at most 1e+09"},
    {"obj_degenerate.obj", "obj_degenerate.obj", 5, "found a face with vertex 1 twice"},
    {"obj_welded.obj", "obj_welded.obj", 6,
     "found a face with vertices 2 and 4 at the same position"},
    {"obj_two_corners.obj", "obj_two_corners.obj", 4,
     "found a face of 2 vertices, expected at least 3"},
    {"obj_no_faces.obj", "obj_no_faces.obj", 4, "found the end of the file with no faces"},
    {"obj_bad_corner.obj", "obj_bad_corner.obj", 4, "found '1/1/1/1', expected a face corner"},
    {"obj_unknown.obj", "obj_unknown.obj", 4, "found 'vertex', expected an OBJ statement"},
    {"obj_freeform.obj", "obj_freeform.obj", 4, "found free-form geometry ('cstype')"},
    {"obj_missing_z.obj", "obj_missing_z.obj", 2,
     "found the end of the line, expected the z coordinate"},
    {"obj_bad_number.obj", "obj_bad_number.obj", 2,
     "found '0x', expected the y coordinate (a number)"},
    /* TetGen */
    {"tg_truncated.node", "tg_truncated.node", 5,
     "found the end of the file after 4 points, expected 5 (declared on line 1)"},
    {"tg_dimension.node", "tg_dimension.node", 1, "found 2, expected the dimension 3"},
    {"tg_numbering.node", "tg_numbering.node", 4, "found point 4, expected point 3"},
    {"tg_inf.node", "tg_inf.node", 5, "found 'inf', expected a finite y coordinate"},
    {"tg_missing_marker.ele", "tg_missing_marker.node", 3,
     "found the end of the line, expected a boundary marker"},
    {"tg_index_range.node", "tg_index_range.ele", 3,
     "found 6, expected a point number of the .node file in [1, 5]"},
    {"tg_degenerate.node", "tg_degenerate.ele", 3, "found a tetrahedron with vertex 3 twice"},
    {"tg_second_order.node", "tg_second_order.ele", 1,
     "found 10 nodes per tetrahedron, expected 4"},
    {"tg_extra.node", "tg_extra.ele", 3,
     "found more lines after the 1 tetrahedra declared on "
     "line 1"},
    {"tg_count.node", "tg_count.ele", 3,
     "found the end of the file after 2 tetrahedra, expected 3"},
    {"tg_not_a_face.node", "tg_not_a_face.face", 3,
     "found triangle 1 2 5, which is no face of a tetrahedron, expected a face of the mesh"},
    {"tg_nonmanifold.node", "tg_nonmanifold.ele", 4,
     "found a tetrahedron with face 1 2 3, which two other tetrahedra have"},
    {"tg_flat.node", "tg_flat.ele", 3,
     "found a flat tetrahedron (vertices 1 2 3 5 in one plane), expected a tetrahedron with a "
     "volume"},
    /* Gmsh 2.2 */
    {"msh22_no_format.msh", "msh22_no_format.msh", 1, "found '$Nodes', expected $MeshFormat"},
    {"msh22_version.msh", "msh22_version.msh", 2, "found version '3.0', expected 2.2 or 4.1"},
    {"msh22_binary.msh", "msh22_binary.msh", 3,
     "byte 20: found bytes 24 45 6e 64, expected the integer 1 in binary (01 00 00 00 or 00 00 "
     "00 01)"},
    {"msh22_node_count.msh", "msh22_node_count.msh", 10,
     "found '$EndNodes' after 4 nodes, expected 5 (declared on line 5)"},
    {"msh22_unknown_node.msh", "msh22_unknown_node.msh", 13,
     "found node tag 9, expected a tag of $Nodes"},
    {"msh22_tet10.msh", "msh22_tet10.msh", 13,
     "found element type 11 (10-node tetrahedron), expected 2 (triangle) or 4"},
    {"msh22_degenerate.msh", "msh22_degenerate.msh", 14, "found a triangle with vertex 2 twice"},
    {"msh22_elements_first.msh", "msh22_elements_first.msh", 4, "found $Elements before $Nodes"},
    {"msh22_open_section.msh", "msh22_open_section.msh", 6,
     "found the end of the file in section '$PhysicalNames' (line 4), expected "
     "$EndPhysicalNames"},
    {"msh22_no_elements.msh", "msh22_no_elements.msh", 14, "found no triangles or tetrahedra"},
    {"msh22_huge.msh", "msh22_huge.msh", 8,
     "found '-1e300', expected a y coordinate of magnitude at most 1e+09"},
    /* Gmsh 4.1 */
    {"msh41_binary.msh", "msh41_binary.msh", 2,
     "byte 20: found the end of the file, expected the integer 1 in binary (4 bytes)"},
    {"msh41_block_count.msh", "msh41_block_count.msh", 12,
     "found 3 nodes in the blocks, expected 4 (declared on line 5)"},
    {"msh41_tag_range.msh", "msh41_tag_range.msh", 10, "found 7, expected a node tag in [1, 4]"},
    {"msh41_parametric.msh", "msh41_parametric.msh", 10,
     "found the end of the line, expected a parametric coordinate"},
    {"msh41_hexahedron.msh", "msh41_hexahedron.msh", 18, "found element type 5 (hexahedron)"},
    {"msh41_duplicate_tag.msh", "msh41_duplicate_tag.msh", 10,
     "found node tag 2 again (line 8), expected each tag once"},
    {"msh41_truncated.msh", "msh41_truncated.msh", 19,
     "found the end of the file, expected $EndElements"},
    {"msh41_element_count.msh", "msh41_element_count.msh", 19,
     "found 1 elements in the blocks, expected 2 (declared on line 17)"},
};

static int is_tetgen_part(const char *name)
{
    size_t n = strlen(name);
    return (n > 4 && strcmp(name + n - 4, ".ele") == 0) ||
           (n > 5 && strcmp(name + n - 5, ".face") == 0) ||
           (n > 5 && strcmp(name + n - 5, ".node") == 0);
}

/* The table names every file of the folder (a TetGen set by any of its parts). */
static void check_table_covers_folder(void)
{
    DIR *d = opendir(BAD_DIR);
    expect(d != NULL, "cannot open %s", BAD_DIR);
    int count = (int)(sizeof bad / sizeof bad[0]), files = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        ++files;
        size_t stem = strcspn(e->d_name, ".");
        int found = 0;
        for (int i = 0; i < count && !found; ++i)
            found = strcmp(bad[i].load, e->d_name) == 0 ||
                    (is_tetgen_part(e->d_name) && strncmp(bad[i].load, e->d_name, stem) == 0 &&
                     bad[i].load[stem] == '.');
        expect(found, "%s/%s: not in the table of test_mesh.c", BAD_DIR, e->d_name);
    }
    closedir(d);
    expect(files >= count, "found %d files in %s, the table has %d", files, BAD_DIR, count);
}

static void bad_meshes(void **state)
{
    (void)state;
    check_table_covers_folder();
    int formats[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        char path[512], prefix[600];
        pbd_mesh m;
        pbd_error err = {0};
        snprintf(path, sizeof path, "%s/%s", BAD_DIR, bad[i].load);
        snprintf(prefix, sizeof prefix, "%s/%s:%d: %s", BAD_DIR, bad[i].blamed, bad[i].line,
                 bad[i].message);
        pbd_status st = pbd_mesh_load(path, &m, &err);
        expect(st == PBD_ERR_SCENE, "%s: status %d (expected %d): %s", bad[i].load, (int)st,
               (int)PBD_ERR_SCENE, err.message);
        expect(strncmp(err.message, prefix, strlen(prefix)) == 0,
               "%s:\n  message  %s\n  expected %s...", bad[i].load, err.message, prefix);
        expect(strchr(err.message, '\n') == NULL, "%s: message of more than one line", bad[i].load);
        expect(m.num_vertices == 0 && m.vertices == NULL && m.triangles == NULL && m.tets == NULL,
               "%s: mesh not left empty (%d vertices)", bad[i].load, m.num_vertices);
        formats[bad[i].load[0] == 'o'   ? 0
                : bad[i].load[0] == 't' ? 1
                : bad[i].load[4] == '2' ? 2
                                        : 3]++;
    }
    for (int f = 0; f < 4; ++f)
        expect(formats[f] >= 5, "format %d: %d malformed files, expected at least 5", f,
               formats[f]);
}

/* What the files alone cannot hold: NUL bytes, a missing file, an unknown extension, an
 * empty text, a FIFO (refused before it is opened, which would block). */
static void bad_inputs(void **state)
{
    (void)state;
    pbd_mesh m;
    pbd_error err = {0};
    pbd_mesh_text t = {"nul.obj", "v 0 0 0\nv 1 0 0\0\nv 0 1 0\nf 1 2 3\n", 32};
    pbd_status st = pbd_mesh_parse_obj(&t, &m, &err);
    expect(st == PBD_ERR_SCENE &&
               strcmp(err.message, "nul.obj:2: found a NUL byte, expected text") == 0,
           "status %d: %s", (int)st, err.message);
    pbd_mesh_text empty = {"empty.msh", "", 0};
    st = pbd_mesh_parse_msh(&empty, &m, &err);
    expect(st == PBD_ERR_SCENE &&
               strcmp(err.message,
                      "empty.msh:1: found the end of the file, expected $MeshFormat") == 0,
           "status %d: %s", (int)st, err.message);
    st = pbd_mesh_load(BAD_DIR "/no_such_mesh.obj", &m, &err);
    expect(st == PBD_ERR_IO && strstr(err.message, "no_such_mesh.obj: cannot read: No such file"),
           "status %d: %s", (int)st, err.message);
    st = pbd_mesh_load(BAD_DIR "/obj_nan.ply", &m, &err);
    expect(st == PBD_ERR_SCENE && strstr(err.message, "obj_nan.ply: found no known extension, "
                                                      "expected .obj, .node, .ele or .msh"),
           "status %d: %s", (int)st, err.message);
    /* a TetGen set that is not there */
    st = pbd_mesh_load(PBD_TESTS_DIR "/meshes/cloth_2x2.node", &m, &err);
    expect(st == PBD_ERR_IO && strstr(err.message, "cloth_2x2.node: cannot read"), "status %d: %s",
           (int)st, err.message);
    char dir[] = "/tmp/pbd_mesh_fifo_XXXXXX", fifo[64];
    expect(mkdtemp(dir) != NULL, "mkdtemp %s", dir);
    snprintf(fifo, sizeof fifo, "%s/pipe.obj", dir);
    expect(mkfifo(fifo, 0600) == 0, "mkfifo %s", fifo);
    st = pbd_mesh_load(fifo, &m, &err);
    expect(st == PBD_ERR_IO && strstr(err.message, "found a special file, expected a regular file"),
           "status %d: %s", (int)st, err.message);
    unlink(fifo);
    rmdir(dir);
}

/* The surface of a tetrahedral mesh is its boundary whatever triangles the file gives: two
 * tetrahedra sharing the face 2 3 4 have six boundary faces. A .face of the whole boundary
 * (in an order of its own, wound either way) is kept in its order and wound outward; one of
 * part of it (a physical group), with the inner face (tetgen -f), or with a face twice
 * (two groups) gives the faces the tetrahedra alone give. */
static void tet_surface_is_the_boundary(void **state)
{
    (void)state;
    const char *node = "5 3 0 0\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1\n5 1 1 1\n";
    const char *ele = "2 4 0\n1 1 2 3 4\n2 2 3 4 5\n";
    const char *faces[4] = {
        "2 0\n1 1 2 3\n2 2 3 4\n", /* a boundary face and the inner one */
        "1 0\n1 1 3 2\n",          /* part of the boundary */
        "6 0\n1 1 2 3\n2 1 2 3\n3 1 2 4\n4 1 3 4\n5 2 3 5\n6 2 4 5\n", /* one twice */
        NULL, /* the boundary, written below from `order` */
    };
    const int order[6][3] = {{3, 5, 4}, {4, 5, 2}, {3, 5, 2}, {1, 4, 3}, {4, 2, 1}, {3, 2, 1}};
    char whole[256];
    int at = snprintf(whole, sizeof whole, "6 0\n");
    for (int t = 0; t < 6; ++t)
        at += snprintf(whole + at, sizeof whole - (size_t)at, "%d %d %d %d\n", t + 1, order[t][0],
                       order[t][1], order[t][2]);
    faces[3] = whole;
    pbd_mesh_text tn = {"two.node", node, strlen(node)}, te = {"two.ele", ele, strlen(ele)};
    pbd_mesh derived, m;
    pbd_error err = {0};
    expect(pbd_mesh_parse_tetgen(&tn, &te, NULL, &derived, &err) == PBD_OK, "%s", err.message);
    expect(derived.num_triangles == 6, "%d boundary faces, expected 6", derived.num_triangles);
    for (int k = 0; k < 4; ++k) {
        pbd_mesh_text tf = {"two.face", faces[k], strlen(faces[k])};
        expect(pbd_mesh_parse_tetgen(&tn, &te, &tf, &m, &err) == PBD_OK, "face %d: %s", k,
               err.message);
        expect(m.num_triangles == 6, "face %d: %d triangles, expected 6", k, m.num_triangles);
        if (k < 3)
            expect(memcmp(m.triangles, derived.triangles, 18 * sizeof(int)) == 0,
                   "face %d: not the tetrahedra's own boundary", k);
        for (int t = 0; t < 6 && k == 3; ++t) {
            /* the file's order: the vertex set of its face t */
            int file[3], got[3];
            for (int j = 0; j < 3; ++j) {
                file[j] = order[t][j] - 1;
                got[j] = m.triangles[3 * t + j];
            }
            int same = 0, outward = 0;
            for (int d = 0; d < 6; ++d) /* outward: a rotation of a derived face */
                for (int r = 0; r < 3; ++r)
                    outward |= got[0] == derived.triangles[3 * d + r] &&
                               got[1] == derived.triangles[3 * d + (r + 1) % 3] &&
                               got[2] == derived.triangles[3 * d + (r + 2) % 3];
            for (int j = 0; j < 3; ++j)
                same += got[j] == file[0] || got[j] == file[1] || got[j] == file[2];
            expect(same == 3 && outward, "face %d: triangle %d is %d %d %d", k, t, got[0], got[1],
                   got[2]);
        }
        pbd_mesh_free(&m);
    }
    pbd_mesh_free(&derived);
}

/* ---- equal to the built-in bodies ------------------------------------------------------ */

/* A scene of one body, with relative files found in tests/meshes/. */
static void load_body(const char *body, pbd_scene *s)
{
    char json[2048];
    pbd_error err = {0};
    snprintf(json, sizeof json, "{\"gravity\": [0, 0, 0], \"bodies\": [%s]}", body);
    pbd_status st = pbd_scene_parse(json, MESH_DIR "/scene.json", s, &err);
    expect(st == PBD_OK, "%s: status %d: %s", body, (int)st, err.message);
}

static void same_positions(const pbd_model *a, const pbd_model *b, const char *what)
{
    expect(a->num_particles == b->num_particles, "%s: %d particles, built-in %d", what,
           a->num_particles, b->num_particles);
    for (int i = 0; i < a->num_particles; ++i)
        expect(a->x[i].x == b->x[i].x && a->x[i].y == b->x[i].y && a->x[i].z == b->x[i].z &&
                   a->x[i].w == b->x[i].w && a->v[i].w == b->v[i].w,
               "%s: particle %d at (%g, %g, %g) w %g, built-in (%g, %g, %g) w %g", what, i,
               (double)a->x[i].x, (double)a->x[i].y, (double)a->x[i].z, (double)a->x[i].w,
               (double)b->x[i].x, (double)b->x[i].y, (double)b->x[i].z, (double)b->x[i].w);
}

static int pair_cmp(const void *pa, const void *pb)
{
    const int *a = pa, *b = pb;
    return a[0] != b[0] ? (a[0] > b[0]) - (a[0] < b[0]) : (a[1] > b[1]) - (a[1] < b[1]);
}

/* The distance constraints as sorted (min, max) pairs (malloc'd), their rest lengths
 * checked against the distances. */
static int *distance_pairs(const pbd_model *m)
{
    int *p = malloc((size_t)(m->num_distance + 1) * 2 * sizeof *p);
    expect(p != NULL, "out of memory for %d pairs", m->num_distance);
    for (int c = 0; c < m->num_distance; ++c) {
        int a = m->distance[c].a, b = m->distance[c].b;
        p[2 * c] = a < b ? a : b;
        p[2 * c + 1] = a < b ? b : a;
        double dx = (double)m->x[a].x - m->x[b].x, dy = (double)m->x[a].y - m->x[b].y,
               dz = (double)m->x[a].z - m->x[b].z;
        assert_near(m->distance[c].rest, sqrt(dx * dx + dy * dy + dz * dz), 1e-6, "rest length");
    }
    qsort(p, (size_t)m->num_distance, 2 * sizeof *p, pair_cmp);
    return p;
}

/* The unique edges of the model's surface triangles, as sorted pairs; *n their number. */
static int *triangle_edges(const pbd_model *m, int *n)
{
    int *p = malloc((size_t)(m->num_triangles + 1) * 6 * sizeof *p), u = 0;
    expect(p != NULL, "out of memory for %d triangles", m->num_triangles);
    for (int t = 0; t < m->num_triangles; ++t)
        for (int k = 0; k < 3; ++k) {
            int a = m->triangles[3 * t + k], b = m->triangles[3 * t + (k + 1) % 3];
            p[6 * t + 2 * k] = a < b ? a : b;
            p[6 * t + 2 * k + 1] = a < b ? b : a;
        }
    qsort(p, 3 * (size_t)m->num_triangles, 2 * sizeof *p, pair_cmp);
    for (int k = 0; k < 3 * m->num_triangles; ++k)
        if (u == 0 || pair_cmp(p + 2 * k, p + 2 * (u - 1)) != 0) {
            p[2 * u] = p[2 * k];
            p[2 * u + 1] = p[2 * k + 1];
            ++u;
        }
    *n = u;
    return p;
}

static void same_pairs(const int *a, int na, const int *b, int nb, const char *what)
{
    expect(na == nb, "%s: %d constraints, expected %d", what, na, nb);
    for (int k = 0; k < na; ++k)
        expect(a[2 * k] == b[2 * k] && a[2 * k + 1] == b[2 * k + 1],
               "%s: constraint %d joins %d-%d, expected %d-%d", what, k, a[2 * k], a[2 * k + 1],
               b[2 * k], b[2 * k + 1]);
}

/* A triangle with its smallest index first, its winding kept. */
static void rotate_min_first(const int *t, int *out)
{
    int k = t[0] < t[1] ? (t[0] < t[2] ? 0 : 2) : (t[1] < t[2] ? 1 : 2);
    for (int i = 0; i < 3; ++i)
        out[i] = t[(k + i) % 3];
}

static int tri_cmp(const void *pa, const void *pb)
{
    const int *a = pa, *b = pb;
    for (int k = 0; k < 3; ++k)
        if (a[k] != b[k])
            return (a[k] > b[k]) - (a[k] < b[k]);
    return 0;
}

/* Surfaces equal as sets of wound triangles (ordered: in the same order too). */
static void same_triangles(const pbd_model *a, const pbd_model *b, int ordered, const char *what)
{
    expect(a->num_triangles == b->num_triangles, "%s: %d triangles, built-in %d", what,
           a->num_triangles, b->num_triangles);
    int n = a->num_triangles, *ta = malloc((size_t)n * 3 * sizeof *ta),
        *tb = malloc((size_t)n * 3 * sizeof *tb);
    expect(ta && tb, "out of memory for %d triangles", n);
    for (int t = 0; t < n; ++t) {
        rotate_min_first(a->triangles + 3 * t, ta + 3 * t);
        rotate_min_first(b->triangles + 3 * t, tb + 3 * t);
    }
    if (!ordered) {
        qsort(ta, (size_t)n, 3 * sizeof *ta, tri_cmp);
        qsort(tb, (size_t)n, 3 * sizeof *tb, tri_cmp);
    }
    for (int t = 0; t < n; ++t)
        expect(tri_cmp(ta + 3 * t, tb + 3 * t) == 0,
               "%s: triangle %d is %d %d %d, built-in %d %d %d", what, t, ta[3 * t], ta[3 * t + 1],
               ta[3 * t + 2], tb[3 * t], tb[3 * t + 1], tb[3 * t + 2]);
    free(ta);
    free(tb);
}

/* A 2 x 2-cell cloth as an OBJ (every corner form, a fanned quad, negative indices) gives the
 * built-in cloth's particles in its order, its triangles in its order, and a distance
 * constraint on each of their edges; with bending, the springs across the diagonals are the
 * built-in's other shear diagonals. */
static void obj_equals_cloth(void **state)
{
    (void)state;
    pbd_scene mesh, grid, sheared;
    load_body("{\"type\": \"mesh\", \"file\": \"cloth_2x2.obj\", \"as\": \"cloth\", \"bending\": "
              "false, \"mass\": 2}",
              &mesh);
    load_body("{\"type\": \"cloth\", \"resolution\": [3, 3], \"shear\": false, \"bending\": "
              "false, \"mass\": 2}",
              &grid);
    same_positions(&mesh.model, &grid.model, "cloth_2x2.obj");
    same_triangles(&mesh.model, &grid.model, 1, "cloth_2x2.obj");
    int ne, *edges = triangle_edges(&grid.model, &ne), *pairs = distance_pairs(&mesh.model);
    same_pairs(pairs, mesh.model.num_distance, edges, ne, "cloth_2x2.obj edges");
    expect(ne == 16, "%d edges, expected 12 structural and 4 diagonals", ne);
    free(edges);
    free(pairs);
    pbd_scene_free(&mesh);

    /* Bending: one spring per interior edge (8), and every built-in shear diagonal among
     * the springs. */
    load_body("{\"type\": \"mesh\", \"file\": \"cloth_2x2.obj\", \"as\": \"cloth\", \"mass\": 2}",
              &mesh);
    load_body("{\"type\": \"cloth\", \"resolution\": [3, 3], \"bending\": false, \"mass\": 2}",
              &sheared);
    expect(mesh.model.num_distance == 16 + 8, "%d constraints with bending, expected 24",
           mesh.model.num_distance);
    pairs = distance_pairs(&mesh.model);
    int *shear = distance_pairs(&sheared.model);
    for (int k = 0; k < sheared.model.num_distance; ++k)
        expect(bsearch(shear + 2 * k, pairs, (size_t)mesh.model.num_distance, 2 * sizeof *pairs,
                       pair_cmp) != NULL,
               "built-in constraint %d-%d missing from the mesh cloth with bending", shear[2 * k],
               shear[2 * k + 1]);
    free(pairs);
    free(shear);
    pbd_scene_free(&mesh);
    pbd_scene_free(&grid);
    pbd_scene_free(&sheared);
}

/* The one-cell tet box as TetGen files (numbered from 1, attributes, markers, no .face;
 * numbered from 0 with a .face wound either way) and as Gmsh 2.2 and 4.1 (tags from 101, a
 * point and a line to skip, boundary triangles wound either way, parametric nodes): the
 * built-in box's particles in its order, its distance constraints, its volume constraints
 * in its order, and its surface wound outward. */
static void tets_equal_tet_box(void **state)
{
    (void)state;
    static const char *const files[] = {"box.node", "box0.ele", "box22.msh", "box41.msh"};
    pbd_scene box;
    load_body("{\"type\": \"tet_box\", \"cells\": [1, 1, 1], \"volume\": true, "
              "\"volume_compliance\": 0.5, \"density\": 3}",
              &box);
    int *want = distance_pairs(&box.model);
    for (int f = 0; f < 4; ++f) {
        char body[256];
        pbd_scene s;
        snprintf(body, sizeof body,
                 "{\"type\": \"mesh\", \"file\": \"%s\", \"as\": \"soft\", \"volume\": true, "
                 "\"volume_compliance\": 0.5, \"density\": 3}",
                 files[f]);
        load_body(body, &s);
        same_positions(&s.model, &box.model, files[f]);
        int *pairs = distance_pairs(&s.model);
        same_pairs(pairs, s.model.num_distance, want, box.model.num_distance, files[f]);
        free(pairs);
        expect(s.model.num_volume == 6, "%s: %d volume constraints", files[f], s.model.num_volume);
        for (int v = 0; v < 6; ++v) {
            const pbd_volume *a = &s.model.volume[v], *b = &box.model.volume[v];
            expect(a->a == b->a && a->b == b->b && a->c == b->c && a->d == b->d &&
                       a->rest == b->rest && a->compliance == b->compliance,
                   "%s: volume %d (%d %d %d %d, %g), built-in (%d %d %d %d, %g)", files[f], v, a->a,
                   a->b, a->c, a->d, (double)a->rest, b->a, b->b, b->c, b->d, (double)b->rest);
        }
        same_triangles(&s.model, &box.model, 0, files[f]);
        pbd_scene_free(&s);
    }
    free(want);
    pbd_scene_free(&box);
}

/* ---- welding ----------------------------------------------------------------------------- */

static int find(int *parent, int i)
{
    while (parent[i] != i)
        i = parent[i] = parent[parent[i]];
    return i;
}

/* The number of pieces the distance constraints join the particles into. */
static int pieces(const pbd_model *m)
{
    int *parent = malloc((size_t)m->num_particles * sizeof *parent), n = m->num_particles;
    expect(parent != NULL, "out of memory for %d particles", n);
    for (int i = 0; i < n; ++i)
        parent[i] = i;
    for (int c = 0; c < m->num_distance; ++c) {
        int a = find(parent, m->distance[c].a), b = find(parent, m->distance[c].b);
        if (a != b) {
            parent[a] = b;
            --n;
        }
    }
    free(parent);
    return n;
}

/* A cloth whose middle column is written twice (split vertices, as exporters write a UV
 * seam) and a round cloth whose vt are cut along a seam: one piece each, every particle a
 * position. */
static void obj_welding(void **state)
{
    (void)state;
    pbd_scene s;
    load_body("{\"type\": \"mesh\", \"file\": \"seam.obj\", \"as\": \"cloth\", \"bending\": false}",
              &s);
    expect(s.model.num_particles == 9, "seam.obj: %d particles, expected 9 (12 v, 3 repeated)",
           s.model.num_particles);
    expect(pieces(&s.model) == 1, "seam.obj: %d pieces, expected 1", pieces(&s.model));
    expect(s.model.num_distance == 16, "seam.obj: %d constraints, expected 16",
           s.model.num_distance);
    pbd_scene_free(&s);

    pbd_mesh raw;
    pbd_error err = {0};
    pbd_status st = pbd_mesh_load(PBD_SCENES_DIR "/meshes/tablecloth.obj", &raw, &err);
    expect(st == PBD_OK, "tablecloth.obj: %s", err.message);
    expect(raw.num_vertices == 331 && raw.num_triangles == 600,
           "tablecloth.obj: %d vertices, %d triangles", raw.num_vertices, raw.num_triangles);
    pbd_mesh_desc d = pbd_mesh_desc_default();
    d.mesh = &raw;
    pbd_model m = {0};
    st = pbd_scene_add_mesh(&m, &d, &err);
    expect(st == PBD_OK, "tablecloth.obj: %s", err.message);
    expect(pieces(&m) == 1, "tablecloth.obj: %d pieces, expected 1", pieces(&m));
    pbd_model_free(&m);
    pbd_mesh_free(&raw);
}

/* ---- transform and files ------------------------------------------------------------------ */

/* Scale, then rotate (a rotation vector), then translate. */
static void transform(void **state)
{
    (void)state;
    pbd_scene s;
    /* Vertex 3 (1-based) is (0.5, 0, -0.5): scaled (1, 0, -1.5), turned a quarter about +y
     * (x, y, z) -> (z, y, -x): (-1.5, 0, -1), moved by (1, 2, 3): (-0.5, 2, 2). */
    load_body("{\"type\": \"mesh\", \"file\": \"cloth_2x2.obj\", \"as\": \"cloth\", \"scale\": [2, "
              "1, 3], \"rotate\": [0, 1.5707963267948966, 0], \"translate\": [1, 2, 3]}",
              &s);
    pbd_float4 x = s.model.x[2];
    assert_near(x.x, -0.5, 1e-6, "x");
    assert_near(x.y, 2.0, 1e-6, "y");
    assert_near(x.z, 2.0, 1e-6, "z");
    pbd_scene_free(&s);
    /* A uniform scale, a turn about x by pi: (0.5, 0, -0.5) -> (1.5, 0, -1.5) -> (1.5, 0,
     * 1.5). */
    load_body("{\"type\": \"mesh\", \"file\": \"cloth_2x2.obj\", \"as\": \"cloth\", \"scale\": 3, "
              "\"rotate\": [3.141592653589793, 0, 0]}",
              &s);
    x = s.model.x[2];
    assert_near(x.x, 1.5, 1e-6, "x");
    assert_near(x.y, 0.0, 1e-6, "y");
    assert_near(x.z, 1.5, 1e-6, "z");
    pbd_scene_free(&s);
}

/* Scene keys of mesh bodies: each error names the scene, the key and, for a file, the mesh
 * file and its line. */
static void mesh_keys(void **state)
{
    (void)state;
    static const struct {
        const char *body, *message;
        pbd_status status;
    } cases[] = {
        {"{\"type\": \"mesh\", \"file\": \"cloth_2x2.obj\"}",
         "bodies[0].as: missing (required for type \"mesh\"; one of: cloth, soft)", PBD_ERR_SCENE},
        {"{\"type\": \"mesh\", \"as\": \"soft\"}",
         "bodies[0].file: missing (required for type \"mesh\")", PBD_ERR_SCENE},
        {"{\"type\": \"mesh\", \"file\": \"cloth_2x2.obj\", \"as\": \"soft\"}",
         "bodies[0].as: found a mesh with no tetrahedra, expected tetrahedra", PBD_ERR_SCENE},
        {"{\"type\": \"mesh\", \"file\": \"cloth_2x2.obj\", \"as\": \"cloth\", \"volume\": true}",
         "bodies[0].volume: found with \"as\": \"cloth\"", PBD_ERR_SCENE},
        {"{\"type\": \"mesh\", \"file\": \"box.node\", \"as\": \"soft\", \"bending\": true}",
         "bodies[0].bending: found with \"as\": \"soft\"", PBD_ERR_SCENE},
        {"{\"type\": \"mesh\", \"file\": \"box.node\", \"as\": \"soft\", \"scale\": 0}",
         "bodies[0].scale: found 0, expected a number > 0", PBD_ERR_SCENE},
        {"{\"type\": \"mesh\", \"file\": \"box.node\", \"as\": \"soft\", \"scale\": \"big\"}",
         "bodies[0].scale: found a string, expected a number or an array of 3 numbers",
         PBD_ERR_SCENE},
        {"{\"type\": \"mesh\", \"file\": \"box.node\", \"as\": \"soft\", \"translate\": [2e9, 0, "
         "0]}",
         "bodies[0].translate[0]: found 2000000000, expected a number in [-1000000000, "
         "1000000000]",
         PBD_ERR_SCENE},
        {"{\"type\": \"mesh\", \"file\": \"box.node\", \"as\": \"soft\", \"scale\": 3e9, "
         "\"translate\": [5e8, 0, 0]}",
         "bodies[0].scale: found mesh vertex 0 (from 0) at (-1e+09, -1.5e+09, -1.5e+09) m",
         PBD_ERR_SCENE},
        /* within the bounds as scaled and turned: the translation put it out */
        {"{\"type\": \"mesh\", \"file\": \"box.node\", \"as\": \"soft\", \"translate\": "
         "[999999999.9, 0, 0]}",
         "bodies[0].translate: found mesh vertex 1 (from 0) at (1e+09, ", PBD_ERR_SCENE},
        {"{\"type\": \"mesh\", \"file\": \"box.node\", \"as\": \"soft\", \"colour\": 1}",
         "bodies[0].colour: unknown key", PBD_ERR_SCENE},
        {"{\"type\": \"mesh\", \"file\": \"../bad_meshes/obj_nan.obj\", \"as\": \"cloth\"}",
         "bodies[0].file: " PBD_TESTS_DIR "/meshes/../bad_meshes/obj_nan.obj:2: found 'nan'",
         PBD_ERR_SCENE},
        {"{\"type\": \"mesh\", \"file\": \"nothing.obj\", \"as\": \"cloth\"}",
         "bodies[0].file: " PBD_TESTS_DIR "/meshes/nothing.obj: cannot read", PBD_ERR_IO},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        char json[1024], want[1024];
        pbd_scene s;
        pbd_error err = {0};
        snprintf(json, sizeof json, "{\"bodies\": [%s]}", cases[i].body);
        snprintf(want, sizeof want, "%s/scene.json: %s", MESH_DIR, cases[i].message);
        pbd_status st = pbd_scene_parse(json, MESH_DIR "/scene.json", &s, &err);
        expect(st == cases[i].status && strncmp(err.message, want, strlen(want)) == 0,
               "%s:\n  status %d (expected %d)\n  message  %s\n  expected %s...", cases[i].body,
               (int)st, (int)cases[i].status, err.message, want);
        expect(s.model.num_particles == 0, "%s: scene not left empty", cases[i].body);
    }
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    expect(f != NULL, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

/* Two meshes are the same: vertices, triangles and tetrahedra. */
static void same_mesh(const pbd_mesh *a, const pbd_mesh *b, const char *what)
{
    expect(a->num_vertices == b->num_vertices && a->num_triangles == b->num_triangles &&
               a->num_tets == b->num_tets,
           "%s: %d/%d/%d against %d/%d/%d vertices/triangles/tetrahedra", what, a->num_vertices,
           a->num_triangles, a->num_tets, b->num_vertices, b->num_triangles, b->num_tets);
    expect(memcmp(a->vertices, b->vertices, 3 * (size_t)a->num_vertices * sizeof(double)) == 0 &&
               memcmp(a->triangles, b->triangles, 3 * (size_t)a->num_triangles * sizeof(int)) ==
                   0 &&
               (a->num_tets == 0 ||
                memcmp(a->tets, b->tets, 4 * (size_t)a->num_tets * sizeof(int)) == 0),
           "%s: not the same mesh", what);
}

/* The OBJ text `text` named `name` is refused with a message holding `message`. */
static void obj_refused(const char *name, const char *text, const char *message)
{
    pbd_mesh m;
    pbd_error err = {0};
    pbd_mesh_text t = {name, text, strlen(text)};
    expect(pbd_mesh_parse_obj(&t, &m, &err) == PBD_ERR_SCENE && strstr(err.message, message),
           "%s: %s", name, err.message);
}

/* The OBJ text `text` reads, into *m, with `triangles` triangles. */
static void obj_reads(const char *name, const char *text, int triangles, pbd_mesh *m)
{
    pbd_error err = {0};
    pbd_mesh_text t = {name, text, strlen(text)};
    expect(pbd_mesh_parse_obj(&t, m, &err) == PBD_OK, "%s: %s", name, err.message);
    expect(m->num_triangles == triangles, "%s: %d triangles, expected %d", name, m->num_triangles,
           triangles);
}

/* What real tools write and the strict forms leave out: a UTF-8 byte-order mark; TetGen
 * headers that stop after the count (its own reader fills in 3, 0, 0 and 4, 0), several
 * attributes a tetrahedron, and tetgen -nn's two adjacent tetrahedra after a face; OBJ's
 * line continuations; names in upper case. Lines ended by CR alone are refused, naming the cause.
 */
static void what_tools_write(void **state)
{
    (void)state;
    const char *node = "5 3 0 0\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1\n5 1 1 1\n";
    const char *ele = "2 4 0\n1 1 2 3 4\n2 2 3 4 5\n";
    const char *obj = "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n";
    const char *msh = "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n3\n1 0 0 0\n2 1 0 0\n"
                      "3 0 1 0\n$EndNodes\n$Elements\n1\n1 2 0 1 2 3\n$EndElements\n";
    pbd_mesh plain, m;
    pbd_error err = {0};
    char bom[512];
    /* the byte-order mark, in each format */
    const char *texts[3] = {obj, msh, node};
    for (int f = 0; f < 3; ++f) {
        snprintf(bom, sizeof bom, "\xEF\xBB\xBF%s", texts[f]);
        pbd_mesh_text a = {"plain", texts[f], strlen(texts[f])}, b = {"bom", bom, strlen(bom)};
        pbd_mesh_text e = {"two.ele", ele, strlen(ele)};
        pbd_status s0 = f == 0   ? pbd_mesh_parse_obj(&a, &plain, &err)
                        : f == 1 ? pbd_mesh_parse_msh(&a, &plain, &err)
                                 : pbd_mesh_parse_tetgen(&a, &e, NULL, &plain, &err);
        expect(s0 == PBD_OK, "format %d: %s", f, err.message);
        pbd_status s1 = f == 0   ? pbd_mesh_parse_obj(&b, &m, &err)
                        : f == 1 ? pbd_mesh_parse_msh(&b, &m, &err)
                                 : pbd_mesh_parse_tetgen(&b, &e, NULL, &m, &err);
        expect(s1 == PBD_OK, "format %d with a byte-order mark: %s", f, err.message);
        same_mesh(&plain, &m, "a byte-order mark");
        pbd_mesh_free(&m);
        pbd_mesh_free(&plain);
    }
    /* short TetGen headers, attributes, tetgen -nn */
    pbd_mesh_text tn = {"two.node", node, strlen(node)}, te = {"two.ele", ele, strlen(ele)};
    expect(pbd_mesh_parse_tetgen(&tn, &te, NULL, &plain, &err) == PBD_OK, "%s", err.message);
    const char *nodes[2] = {"5 3\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1\n5 1 1 1\n",
                            "5\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1\n5 1 1 1\n"};
    const char *eles[2] = {"2\n1 1 2 3 4\n2 2 3 4 5\n", "2 4 2\n1 1 2 3 4 7 0.5\n2 2 3 4 5 7 1\n"};
    const char *nn = "6 1\n1 1 2 4 1 1 -1\n2 1 3 4 1 1 -1\n3 1 2 3 1 1 -1\n4 2 3 5 1 2 -1\n"
                     "5 2 4 5 1 2 -1\n6 3 4 5 1 2 -1\n";
    for (int k = 0; k < 2; ++k) {
        pbd_mesh_text a = {"short.node", nodes[k], strlen(nodes[k])};
        pbd_mesh_text b = {"short.ele", eles[k], strlen(eles[k])};
        expect(pbd_mesh_parse_tetgen(&a, &b, NULL, &m, &err) == PBD_OK, "header %d: %s", k,
               err.message);
        same_mesh(&plain, &m, "short headers");
        pbd_mesh_free(&m);
    }
    pbd_mesh_text tf = {"nn.face", nn, strlen(nn)};
    expect(pbd_mesh_parse_tetgen(&tn, &te, &tf, &m, &err) == PBD_OK, "%s", err.message);
    /* the file's first face, 1 2 4, wound outward (-y) */
    expect(m.num_triangles == 6 && m.triangles[0] == 0 && m.triangles[1] == 1 &&
               m.triangles[2] == 3,
           "tetgen -nn: %d triangles, the first %d %d %d", m.num_triangles, m.triangles[0],
           m.triangles[1], m.triangles[2]);
    pbd_mesh_free(&m);
    const char *nn_one = "1 1\n1 1 2 4 1 1\n";
    pbd_mesh_text t1 = {"nn1.face", nn_one, strlen(nn_one)};
    expect(pbd_mesh_parse_tetgen(&tn, &te, &t1, &m, &err) == PBD_ERR_SCENE &&
               strstr(err.message, "nn1.face:2: found one number after the boundary marker"),
           "%s", err.message);
    pbd_mesh_free(&plain);
    /* OBJ's line continuation: a backslash at a line's end (LF or CR LF); lines counted on */
    const char *joined = "v 0 \\\n 0 0\r\nv 1 0 \\\r\n 0\nv 0 1 0\nf 1 \\\n2 3\nf 1 2 4\n";
    pbd_mesh_text to = {"plain.obj", obj, strlen(obj)}, tj = {"joined.obj", joined, strlen(joined)};
    expect(pbd_mesh_parse_obj(&to, &plain, &err) == PBD_OK, "%s", err.message);
    expect(pbd_mesh_parse_obj(&tj, &m, &err) == PBD_ERR_SCENE &&
               strstr(err.message, "joined.obj:8: found face index 4"),
           "%s", err.message);
    tj.length = strlen(joined) - strlen("f 1 2 4\n");
    expect(pbd_mesh_parse_obj(&tj, &m, &err) == PBD_OK, "%s", err.message);
    same_mesh(&plain, &m, "continued lines");
    pbd_mesh_free(&m);
    pbd_mesh_free(&plain);
    /* a comment's backslash continues nothing; a continued blank line counts its lines */
    obj_reads("comment.obj", "# C:\\dir\\\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n", 1, &m);
    expect(m.num_vertices == 3, "comment.obj: %d vertices, expected 3", m.num_vertices);
    pbd_mesh_free(&m);
    obj_refused("blank.obj", "v 0 0 0\n \\\n\nv 0 0 x\n", "blank.obj:4: found 'x'");
    /* a polygon whose corners weld so that its fan repeats a triangle names itself so */
    obj_refused("fan.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 0 0\nf 1 2 3 4\n",
                "fan.obj:5: found a polygon whose fan covers one triangle twice");
    /* CR CR LF, as some Windows writers end lines */
    obj_reads("crcr.obj", "v 0 0 0\r\r\nv 1 0 0\r\r\nv 0 1 0\r\r\nf 1 2 3\r\r\n", 1, &m);
    pbd_mesh_free(&m);
    /* lines ended by CR alone */
    obj_refused("mac.obj", "v 0 0 0\rv 1 0 0\rv 0 1 0\rf 1 2 3\r",
                "mac.obj:1: found a carriage return inside a line");
    /* names in upper case, a TetGen set's parts found in the same case */
    char dir[] = "/tmp/pbd_mesh_case_XXXXXX", path[96];
    expect(mkdtemp(dir) != NULL, "mkdtemp %s", dir);
    /* the part named as given, the others in upper case beside an all-upper name, else in
     * lower case */
    const char *files[5][2] = {{"UP.OBJ", obj},
                               {"BOX.NODE", node},
                               {"BOX.ELE", ele},
                               {"MIX.Node", node},
                               {"MIX.ele", ele}};
    for (int k = 0; k < 5; ++k) {
        snprintf(path, sizeof path, "%s/%s", dir, files[k][0]);
        write_file(path, files[k][1]);
    }
    for (int k = 0; k < 5; ++k) {
        if (k == 1 || k == 4)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, files[k][0]);
        expect(pbd_mesh_load(path, &m, &err) == PBD_OK, "%s: %s", files[k][0], err.message);
        expect(m.num_vertices == (k ? 5 : 3), "%s: %d vertices", files[k][0], m.num_vertices);
        pbd_mesh_free(&m);
    }
    for (int k = 0; k < 5; ++k) {
        snprintf(path, sizeof path, "%s/%s", dir, files[k][0]);
        unlink(path);
    }
    rmdir(dir);
}

/* A scene and its mesh in a folder of their own load from any working directory. */
static void relative_path(void **state)
{
    (void)state;
    char dir[] = "/tmp/pbd_mesh_scene_XXXXXX", scene[128], mesh[128], cwd[PATH_MAX];
    expect(mkdtemp(dir) != NULL, "mkdtemp %s", dir);
    expect(getcwd(cwd, sizeof cwd) != NULL, "getcwd %s", cwd);
    snprintf(scene, sizeof scene, "%s/scene.json", dir);
    snprintf(mesh, sizeof mesh, "%s/triangle.obj", dir);
    write_file(scene, "{\"bodies\": [{\"type\": \"mesh\", \"file\": \"triangle.obj\", \"as\": "
                      "\"cloth\"}]}");
    write_file(mesh, "v 0 0 0\nv 1 0 0\nv 0 0 1\nf 1 2 3\n");
    static const char *const from[] = {"/", "..", NULL};
    for (int k = 0; k < 3; ++k) {
        pbd_scene s;
        pbd_error err = {0};
        const char *path = scene;
        if (from[k] && from[k][0] == '/')
            expect(chdir("/") == 0, "chdir %s", "/");
        if (from[k] && from[k][0] == '.') {
            expect(chdir("/tmp") == 0, "chdir %s", "/tmp");
            path = scene + 5; /* "pbd_mesh_scene_XXXXXX/scene.json" */
        }
        if (!from[k]) {
            expect(chdir(dir) == 0, "chdir %s", dir);
            path = "scene.json";
        }
        pbd_status st = pbd_scene_load(path, &s, &err);
        expect(chdir(cwd) == 0, "chdir %s", cwd);
        expect(st == PBD_OK && s.model.num_particles == 3 && s.model.num_distance == 3,
               "%s from %s: status %d, %d particles: %s", path, from[k] ? from[k] : dir, (int)st,
               s.model.num_particles, err.message);
        pbd_scene_free(&s);
    }
    unlink(scene);
    unlink(mesh);
    rmdir(dir);
}

/* Bending elements and Neo-Hookean elements come from the mesh as from the built-in bodies:
 * the OBJ cloth with dihedral or isometric bending has the grid cloth's records, in its
 * order (the same triangles); the one-cell box as TetGen and Gmsh files with a Young's
 * modulus has the tet box's Neo-Hookean records and no edges. */
static void bending_and_elastic_meshes(void **state)
{
    (void)state;
    static const char *const kinds[] = {"dihedral", "isometric"};
    for (int k = 0; k < 2; ++k) {
        char body[256];
        pbd_scene mesh, grid;
        snprintf(body, sizeof body,
                 "{\"type\": \"mesh\", \"file\": \"cloth_2x2.obj\", \"as\": \"cloth\", "
                 "\"bending\": \"%s\", \"bending_compliance\": 0.25, \"mass\": 2}",
                 kinds[k]);
        load_body(body, &mesh);
        snprintf(body, sizeof body,
                 "{\"type\": \"cloth\", \"resolution\": [3, 3], \"shear\": false, \"bending\": "
                 "\"%s\", \"bending_compliance\": 0.25, \"mass\": 2}",
                 kinds[k]);
        load_body(body, &grid);
        const pbd_model *a = &mesh.model, *b = &grid.model;
        int n = k ? a->num_isometric : a->num_dihedral, nb = k ? b->num_isometric : b->num_dihedral;
        expect(n == 8 && nb == 8, "%s: %d elements, built-in %d, expected one an inner edge (8)",
               kinds[k], n, nb);
        const void *ra = k ? (const void *)a->isometric : (const void *)a->dihedral;
        const void *rb = k ? (const void *)b->isometric : (const void *)b->dihedral;
        size_t size = k ? sizeof *a->isometric : sizeof *a->dihedral;
        expect(memcmp(ra, rb, (size_t)n * size) == 0, "%s: the records differ from the grid's",
               kinds[k]);
        expect(a->num_distance == 16, "%s: %d distance constraints, expected the 16 edges",
               kinds[k], a->num_distance);
        pbd_scene_free(&mesh);
        pbd_scene_free(&grid);
    }
    /* Isometric bending takes a flat rest shape: a hinge folded 10 degrees is refused (it
     * would be pulled flat), one folded 0.5 degrees is taken, and dihedral bending takes
     * either. */
    static const char *const hinges[2] = {"hinge_10.obj", "hinge_0.5.obj"};
    for (int h = 0; h < 2; ++h)
        for (int k = 0; k < 2; ++k) {
            char json[512];
            pbd_scene s;
            pbd_error err = {0};
            snprintf(json, sizeof json,
                     "{\"bodies\": [{\"type\": \"mesh\", \"file\": \"%s\", \"as\": "
                     "\"cloth\", \"bending\": \"%s\"}]}",
                     hinges[h], kinds[k]);
            pbd_status st = pbd_scene_parse(json, MESH_DIR "/scene.json", &s, &err);
            if (h == 0 && k == 1)
                expect(st == PBD_ERR_SCENE &&
                           strstr(err.message, "bodies[0].bending: found \"isometric\" on a "
                                               "surface folded 10 degrees at rest at the edge of "
                                               "particles 0 and 1 (from 0), expected one flat"),
                       "%s, isometric: %s", hinges[h], err.message);
            else {
                expect(st == PBD_OK, "%s, %s: %s", hinges[h], kinds[k], err.message);
                if (st == PBD_OK) {
                    int n = k ? s.model.num_isometric : s.model.num_dihedral;
                    expect(n == 1, "%s, %s: %d elements, expected 1", hinges[h], kinds[k], n);
                    pbd_scene_free(&s);
                }
            }
        }
    static const char *const files[] = {"box.node", "box22.msh", "box41.msh"};
    pbd_scene box;
    load_body("{\"type\": \"tet_box\", \"cells\": [1, 1, 1], \"young_modulus\": 5000, "
              "\"poisson_ratio\": 0.3, \"density\": 3}",
              &box);
    for (int f = 0; f < 3; ++f) {
        char body[256];
        pbd_scene s;
        snprintf(body, sizeof body,
                 "{\"type\": \"mesh\", \"file\": \"%s\", \"as\": \"soft\", \"young_modulus\": "
                 "5000, \"poisson_ratio\": 0.3, \"density\": 3}",
                 files[f]);
        load_body(body, &s);
        expect(s.model.num_neo_hookean == 6 && box.model.num_neo_hookean == 6,
               "%s: %d Neo-Hookean elements, built-in %d, expected 6", files[f],
               s.model.num_neo_hookean, box.model.num_neo_hookean);
        expect(s.model.num_distance == 0, "%s: %d distance constraints, expected none", files[f],
               s.model.num_distance);
        expect(memcmp(s.model.neo_hookean, box.model.neo_hookean,
                      6 * sizeof *s.model.neo_hookean) == 0,
               "%s: the Neo-Hookean records differ from the tet box's", files[f]);
        pbd_scene_free(&s);
    }
    pbd_scene_free(&box);
}

/* ---- binary Gmsh files -------------------------------------------------------------------- */

/* A binary .msh text being written, in either byte order. */
typedef struct bin_text {
    char *p;
    size_t n, cap;
    int big;
} bin_text;

static void put(bin_text *b, const void *s, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = 2 * (b->n + n);
        b->p = realloc(b->p, b->cap);
        expect(b->p != NULL, "out of memory for %zu bytes", b->cap);
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

static void put_text(bin_text *b, const char *s)
{
    put(b, s, strlen(s));
}

/* The low `size` bytes of v in the text's byte order. */
static void put_int(bin_text *b, unsigned long long v, int size)
{
    unsigned char c[8];
    for (int k = 0; k < size; ++k)
        c[b->big ? size - 1 - k : k] = (unsigned char)(v >> (8 * k));
    put(b, c, (size_t)size);
}

static void put_double(bin_text *b, double x)
{
    unsigned long long v;
    memcpy(&v, &x, sizeof v);
    put_int(b, v, 8);
}

/* What a binary box file gets wrong, and where its writer put that (bin_box). */
enum {
    BOX_VALID,
    BOX_NAN,          /* node 105's y */
    BOX_UNKNOWN_NODE, /* tetrahedron 17's last node 109 */
    BOX_HEXAHEDRON,   /* the tetrahedra's type 5 */
    BOX_EMPTY_RUN,    /* version 2: the tetrahedra's run of 0 elements */
    BOX_PARAMETRIC,   /* version 4: parametric flag 2 */
    BOX_TAG_RANGE,    /* version 4: node 104's tag 110, past the declared largest */
    BOX_BLOCK_COUNT,  /* version 4: the second node block's 8 nodes */
    BOX_DUPLICATE,    /* node 107 tagged 103 */
    BOX_EXTRA,        /* 8 more bytes after the nodes' data */
    BOX_NEGATIVE,     /* version 2: the tetrahedra's -1 tags an element */
    BOX_DEGENERATE,   /* tetrahedron 17's node 108 given as 101 */
    BOX_HUGE,         /* version 4: 2^63 nodes */
    BOX_SHORT,        /* version 4: 21 elements declared, 20 in the blocks (at: their end) */
    BOX_OPEN,         /* version 4: $Entities never ended ($EndEntitie) */
};

/* Box node k's tag, at its size: 101 + k but for the tag faults. */
static void bin_box_tag(bin_text *b, int k, int size, int fault, size_t *at)
{
    int tag = 101 + k;
    if ((fault == BOX_TAG_RANGE && k == 3) || (fault == BOX_DUPLICATE && k == 6))
        *at = b->n, tag = fault == BOX_TAG_RANGE ? 110 : 103;
    put_int(b, (unsigned)tag, size);
}

/* Box node k's coordinates (bit c of k: the high side on axis c), (u, v, w) after them
 * where parametric, but for the NaN fault. */
static void bin_box_xyz(bin_text *b, int k, int parametric, int fault, size_t *at)
{
    for (int c = 0; c < 3; ++c) {
        int nan_here = fault == BOX_NAN && k == 4 && c == 1;
        if (nan_here)
            *at = b->n;
        put_double(b, nan_here ? (double)NAN : ((k >> c) & 1) - 0.5);
    }
    for (int c = 0; parametric && c < 3; ++c)
        put_double(b, 0.25 * c);
}

/* The one-cell box of box22.msh and box41.msh (tags from 101, a point and a line to skip,
 * the boundary triangles, six tetrahedra) as a binary file of `version` 2 or 4, with fault
 * `fault`, whose value starts at byte *at. Version 4 holds binary $Entities and,
 * `parametric`, the second block's nodes have (u, v, w). */
static bin_text bin_box(int version, int big, int parametric, int fault, size_t *at)
{
    static const int tri[12][3] = {{101, 104, 102}, {102, 104, 108}, {101, 106, 102},
                                   {102, 106, 108}, {101, 104, 103}, {103, 104, 108},
                                   {101, 107, 103}, {103, 107, 108}, {101, 106, 105},
                                   {105, 106, 108}, {101, 107, 105}, {105, 107, 108}};
    static const int tet[6][4] = {{101, 102, 104, 108}, {101, 102, 106, 108}, {101, 103, 104, 108},
                                  {101, 103, 107, 108}, {101, 105, 106, 108}, {101, 105, 107, 108}};
    bin_text b = {NULL, 0, 0, big};
    int size = version == 2 ? 4 : 8;
    *at = 0;
    put_text(&b, version == 2 ? "$MeshFormat\n2.2 1 8\n" : "$MeshFormat\n4.1 1 8\n");
    put_int(&b, 1, 4);
    put_text(&b, "\n$EndMeshFormat\n");
    if (version == 4) { /* a point and a volume, no physical groups or bounding surfaces */
        put_text(&b, "$Entities\n");
        put_int(&b, 1, 8), put_int(&b, 0, 8), put_int(&b, 0, 8), put_int(&b, 1, 8);
        put_int(&b, 1, 4), put_double(&b, -0.5), put_double(&b, -0.5), put_double(&b, -0.5);
        put_int(&b, 0, 8);
        put_int(&b, 1, 4);
        for (int k = 0; k < 6; ++k)
            put_double(&b, k < 3 ? -0.5 : 0.5);
        put_int(&b, 0, 8), put_int(&b, 0, 8);
        put_text(&b, fault == BOX_OPEN ? "\n$EndEntitie\n" : "\n$EndEntities\n");
    }
    put_text(&b, version == 2 ? "$Nodes\n8\n" : "$Nodes\n");
    if (version == 2) {
        for (int k = 0; k < 8; ++k) {
            bin_box_tag(&b, k, 4, fault, at);
            bin_box_xyz(&b, k, 0, fault, at);
        }
    } else { /* 101 alone on a point, then the others in the volume */
        put_int(&b, 2, 8);
        if (fault == BOX_HUGE)
            *at = b.n;
        put_int(&b, fault == BOX_HUGE ? 1ull << 63 : 8, 8);
        put_int(&b, 101, 8), put_int(&b, 108, 8);
        put_int(&b, 0, 4), put_int(&b, 1, 4), put_int(&b, 0, 4), put_int(&b, 1, 8);
        bin_box_tag(&b, 0, 8, fault, at);
        bin_box_xyz(&b, 0, 0, fault, at);
        put_int(&b, 3, 4), put_int(&b, 1, 4);
        if (fault == BOX_PARAMETRIC)
            *at = b.n;
        put_int(&b, fault == BOX_PARAMETRIC ? 2 : (unsigned)parametric, 4);
        if (fault == BOX_BLOCK_COUNT)
            *at = b.n;
        put_int(&b, fault == BOX_BLOCK_COUNT ? 8 : 7, 8);
        for (int k = 1; k < 8; ++k)
            bin_box_tag(&b, k, 8, fault, at);
        for (int k = 1; k < 8; ++k)
            bin_box_xyz(&b, k, parametric, fault, at);
    }
    if (fault == BOX_EXTRA)
        *at = b.n, put_double(&b, 1.0);
    put_text(&b, "\n$EndNodes\n$Elements\n");
    if (version == 2) {
        put_text(&b, "20\n");
        put_int(&b, 15, 4), put_int(&b, 1, 4), put_int(&b, 2, 4);
        put_int(&b, 1, 4), put_int(&b, 0, 4), put_int(&b, 1, 4), put_int(&b, 101, 4);
        put_int(&b, 1, 4), put_int(&b, 1, 4), put_int(&b, 2, 4);
        put_int(&b, 2, 4), put_int(&b, 0, 4), put_int(&b, 1, 4);
        put_int(&b, 101, 4), put_int(&b, 102, 4);
    } else {
        put_int(&b, 4, 8), put_int(&b, fault == BOX_SHORT ? 21 : 20, 8);
        put_int(&b, 1, 8), put_int(&b, 20, 8);
        put_int(&b, 0, 4), put_int(&b, 1, 4), put_int(&b, 15, 4), put_int(&b, 1, 8);
        put_int(&b, 1, 8), put_int(&b, 101, 8);
        put_int(&b, 1, 4), put_int(&b, 1, 4), put_int(&b, 1, 4), put_int(&b, 1, 8);
        put_int(&b, 2, 8), put_int(&b, 101, 8), put_int(&b, 102, 8);
    }
    /* the triangles, then the tetrahedra: each a run (2) or a block (4) of its own */
    for (int kind = 0; kind < 2; ++kind) {
        int n = kind ? 6 : 12, nodes = kind ? 4 : 3;
        if (version == 4)
            put_int(&b, (unsigned)(2 + kind), 4), put_int(&b, 1, 4);
        if (kind && fault == BOX_HEXAHEDRON)
            *at = b.n;
        put_int(&b, kind ? (fault == BOX_HEXAHEDRON ? 5 : 4) : 2, 4);
        if (version == 2) {
            if (kind && fault == BOX_EMPTY_RUN)
                *at = b.n;
            put_int(&b, kind && fault == BOX_EMPTY_RUN ? 0 : (unsigned)n, 4);
            if (kind && fault == BOX_NEGATIVE)
                *at = b.n;
            put_int(&b, kind && fault == BOX_NEGATIVE ? 0xffffffffu : 2, 4);
        } else {
            put_int(&b, (unsigned)n, 8);
        }
        for (int e = 0; e < n; ++e) {
            if (kind && e == 2 && fault == BOX_DEGENERATE)
                *at = b.n;
            put_int(&b, (unsigned)(3 + e + 12 * kind), size);
            if (version == 2)
                put_int(&b, 0, 4), put_int(&b, 1, 4);
            for (int v = 0; v < nodes; ++v) {
                int tag = kind ? tet[e][v] : tri[e][v];
                if (kind && e == 2 && v == 3 && fault == BOX_UNKNOWN_NODE)
                    *at = b.n, tag = 109;
                if (kind && e == 2 && v == 3 && fault == BOX_DEGENERATE)
                    tag = 101;
                put_int(&b, (unsigned)tag, size);
            }
        }
    }
    if (fault == BOX_SHORT)
        *at = b.n;
    put_text(&b, "\n$EndElements\n");
    if (fault == BOX_OPEN)
        *at = b.n - 1; /* the last line's line feed */
    return b;
}

/* The line of byte `at` of a text. */
static int line_of(const char *p, size_t at)
{
    int line = 1;
    for (size_t k = 0; k < at; ++k)
        line += p[k] == '\n';
    return line;
}

/* Binary .msh files: Gmsh's own (a cube as 2.2 and 4.1 binary) read as its ASCII file; the
 * box of box22.msh written in binary, both versions, both byte orders, with and without
 * parametric nodes, read as the ASCII box; faults refused in one line naming the line and
 * the byte; every truncation refused. */
static void binary_msh(void **state)
{
    (void)state;
    pbd_mesh want, m;
    pbd_error err = {0};
    expect(pbd_mesh_load(MESH_DIR "/cube41.msh", &want, &err) == PBD_OK, "%s", err.message);
    expect(want.num_vertices == 14 && want.num_tets > 0, "cube41.msh: %d vertices, %d tets",
           want.num_vertices, want.num_tets);
    static const char *const gmsh[2] = {MESH_DIR "/cube22b.msh", MESH_DIR "/cube41b.msh"};
    for (int f = 0; f < 2; ++f) {
        expect(pbd_mesh_load(gmsh[f], &m, &err) == PBD_OK, "%s: %s", gmsh[f], err.message);
        same_mesh(&want, &m, gmsh[f]);
        pbd_mesh_free(&m);
    }
    pbd_mesh_free(&want);
    expect(pbd_mesh_load(MESH_DIR "/box22.msh", &want, &err) == PBD_OK, "%s", err.message);
    size_t at;
    for (int version = 2; version <= 4; version += 2)
        for (int big = 0; big < 2; ++big)
            for (int param = 0; param < (version == 4 ? 2 : 1); ++param) {
                char what[64];
                snprintf(what, sizeof what, "binary %d, %s-endian, parametric %d", version,
                         big ? "big" : "little", param);
                bin_text b = bin_box(version, big, param, BOX_VALID, &at);
                pbd_mesh_text t = {"box.msh", b.p, b.n};
                expect(pbd_mesh_parse_msh(&t, &m, &err) == PBD_OK, "%s: %s", what, err.message);
                same_mesh(&want, &m, what);
                pbd_mesh_free(&m);
                free(b.p);
            }
    pbd_mesh_free(&want);
    static const struct {
        int version, fault, byte; /* byte: the message names the value's byte */
        const char *message;
    } faults[] = {
        {2, BOX_NAN, 1, "found nan, expected a finite y coordinate"},
        {2, BOX_UNKNOWN_NODE, 1, "found node tag 109, expected a tag of $Nodes"},
        {2, BOX_HEXAHEDRON, 1,
         "found element type 5 (hexahedron), expected 2 (triangle) or 4 (tetrahedron)"},
        {2, BOX_EMPTY_RUN, 1, "found 0, expected the number of elements that follow in [1, 6]"},
        {2, BOX_EXTRA, 0, "found a NUL byte, expected text"},
        {2, BOX_NEGATIVE, 1, "found -1, expected the number of tags in [0, 1000]"},
        {2, BOX_DUPLICATE, 1, "found node tag 103 again (line "},
        {2, BOX_DEGENERATE, 1, "found a tetrahedron with vertex 101 twice"},
        {4, BOX_NAN, 1, "found nan, expected a finite y coordinate"},
        {4, BOX_UNKNOWN_NODE, 1, "found node tag 109, expected a tag of $Nodes"},
        {4, BOX_HEXAHEDRON, 1, "found element type 5 (hexahedron)"},
        {4, BOX_PARAMETRIC, 1, "found 2, expected parametric (0 or 1) in [0, 1]"},
        {4, BOX_TAG_RANGE, 1, "found 110, expected a node tag in [101, 108]"},
        {4, BOX_BLOCK_COUNT, 1, "found 8, expected the number of nodes in the block in [0, 7]"},
        {4, BOX_DUPLICATE, 1, "found node tag 103 again (line "},
        {4, BOX_EXTRA, 0, "found a NUL byte, expected text"},
        {4, BOX_DEGENERATE, 1, "found a tetrahedron with vertex 101 twice"},
        {4, BOX_HUGE, 1, "found 9223372036854775808, expected the number of nodes in [1, "},
        {4, BOX_SHORT, 1, "found 20 elements in the blocks, expected 21 (declared on line "},
        {4, BOX_OPEN, 0,
         "found the end of the file in section '$Entities' (line 5), expected $EndEntities"},
    };
    for (size_t k = 0; k < sizeof faults / sizeof faults[0]; ++k)
        for (int big = 0; big < 2; ++big) {
            bin_text b = bin_box(faults[k].version, big, 0, faults[k].fault, &at);
            pbd_mesh_text t = {"box.msh", b.p, b.n};
            char prefix[300];
            int line = line_of(b.p, at);
            if (faults[k].byte)
                snprintf(prefix, sizeof prefix, "box.msh:%d: byte %zu: %s", line, at,
                         faults[k].message);
            else
                snprintf(prefix, sizeof prefix, "box.msh:%d: %s", line, faults[k].message);
            expect(at > 0, "fault %zu: not written", k);
            expect(pbd_mesh_parse_msh(&t, &m, &err) == PBD_ERR_SCENE &&
                       strncmp(err.message, prefix, strlen(prefix)) == 0,
                   "fault %zu, %s-endian:\n  message  %s\n  expected %s...", k,
                   big ? "big" : "little", err.message, prefix);
            expect(m.num_vertices == 0 && m.vertices == NULL, "fault %zu: mesh not left empty", k);
            if (faults[k].fault == BOX_DUPLICATE) { /* the first 103, four tags before */
                size_t first = at - (faults[k].version == 2 ? 4 * 28 : 4 * 8);
                snprintf(prefix, sizeof prefix, "again (line %d, byte %zu), expected each tag once",
                         line_of(b.p, first), first);
                expect(strstr(err.message, prefix) != NULL, "duplicate: %s", err.message);
            }
            free(b.p);
        }
    /* a data size other than 8; every truncation of either version */
    for (int version = 2; version <= 4; version += 2) {
        bin_text b = bin_box(version, 0, 1, BOX_VALID, &at);
        b.p[18] = '4';
        pbd_mesh_text t = {"box.msh", b.p, b.n};
        expect(pbd_mesh_parse_msh(&t, &m, &err) == PBD_ERR_SCENE &&
                   strcmp(err.message, "box.msh:2: found 4, expected the data size of a binary "
                                       "file 8") == 0,
               "data size 4: %s", err.message);
        b.p[18] = '8';
        /* the file ending inside node 105's y coordinate (the NaN file: the same bytes before
         * it), the message at the value's first byte */
        bin_text nan = bin_box(version, 0, 1, BOX_NAN, &at);
        pbd_mesh_text cut = {"box.msh", nan.p, at + 3};
        char prefix[200];
        snprintf(prefix, sizeof prefix,
                 "box.msh:%d: byte %zu: found the end of the file, expected the y coordinate "
                 "(8 bytes)",
                 line_of(nan.p, at), at);
        expect(pbd_mesh_parse_msh(&cut, &m, &err) == PBD_ERR_SCENE &&
                   strcmp(err.message, prefix) == 0,
               "truncated:\n  message  %s\n  expected %s", err.message, prefix);
        free(nan.p);
        /* every prefix but the one short of the last line feed is refused */
        for (size_t n = 0; n + 1 < b.n; ++n) {
            t.length = n;
            expect(pbd_mesh_parse_msh(&t, &m, &err) == PBD_ERR_SCENE &&
                       strncmp(err.message, "box.msh:", 8) == 0,
                   "binary %d cut at byte %zu: %s", version, n, err.message);
            expect(m.num_vertices == 0 && m.vertices == NULL, "cut at %zu: mesh not left empty", n);
        }
        free(b.p);
    }
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(bad_meshes),
    cmocka_unit_test(bad_inputs),
    cmocka_unit_test(tet_surface_is_the_boundary),
    cmocka_unit_test(obj_equals_cloth),
    cmocka_unit_test(tets_equal_tet_box),
    cmocka_unit_test(obj_welding),
    cmocka_unit_test(transform),
    cmocka_unit_test(mesh_keys),
    cmocka_unit_test(relative_path),
    cmocka_unit_test(what_tools_write),
    cmocka_unit_test(binary_msh),
    cmocka_unit_test(bending_and_elastic_meshes),
};

PBD_TEST_MAIN("mesh", tests)
