/* Mesh files: OBJ, TetGen .node/.ele(/.face), Gmsh .msh 2.2 and 4.1 (ASCII or binary). Each
 * parser reads its text line by line through one reader that knows the file name and the
 * line (and, in binary data, the byte), so that every refusal is one line "FILE:LINE: found
 * X, expected Y". Counts that a header declares are checked against what follows; arrays
 * grow with what is read, never with what a header claims, so a lying header cannot make a
 * large allocation. */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mesh/mesh.h"
#include "scene/generators.h"
#include "scene/read_file.h"

/* ---- the reader --------------------------------------------------------------------------- */

typedef struct reader {
    const char *name;
    const char *p, *end;    /* the next line starts at p */
    const char *cur, *lend; /* what is left of the current line */
    int line;               /* the current line, from 1 (0 before the first) */
    int joined;             /* lines the current one took in after it (continuations) */
    char comment;           /* starts a comment that runs to the end of the line; 0: none */
    int joins;              /* a backslash at a line's end continues it on the next (OBJ) */
    long long byte;         /* >= 0: a refusal also names this byte (binary data) */
    pbd_error *err;
} reader;

static void reader_init(reader *r, const pbd_mesh_text *t, char comment, pbd_error *err)
{
    memset(r, 0, sizeof *r);
    r->name = t->name ? t->name : "mesh";
    r->p = t->text;
    r->end = t->text + t->length;
    /* A UTF-8 byte-order mark (Windows editors write one) is not part of the first line. */
    if (t->length >= 3 && memcmp(t->text, "\xEF\xBB\xBF", 3) == 0)
        r->p += 3;
    r->cur = r->lend = r->p;
    r->comment = comment;
    r->byte = -1;
    r->err = err;
}

/* Records "NAME:LINE: text" (control characters blanked, to keep one line) and returns -1. */
static int fail(reader *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static int fail(reader *r, const char *fmt, ...)
{
    char text[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (r->byte >= 0)
        pbd_error_set(r->err, PBD_ERR_SCENE, "%s:%d: byte %lld: %s", r->name,
                      r->line > 0 ? r->line : 1, r->byte, text);
    else
        pbd_error_set(r->err, PBD_ERR_SCENE, "%s:%d: %s", r->name, r->line > 0 ? r->line : 1, text);
    for (char *s = r->err ? r->err->message : NULL; s && *s; ++s)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = ' ';
    return -1;
}

static int oom(reader *r)
{
    pbd_error_set(r->err, PBD_ERR_MEMORY, "%s:%d: out of memory", r->name,
                  r->line > 0 ? r->line : 1);
    return -1;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* The length of a line continuation at p (a backslash, CR, LF), or 0. */
static size_t continuation(const reader *r, const char *p)
{
    if (!r->joins || p >= r->lend || *p != '\\')
        return 0;
    const char *q = p + 1;
    while (q < r->lend && *q == '\r') /* CR LF, CR CR LF */
        ++q;
    return q < r->lend && *q == '\n' ? (size_t)(q - p) + 1 : 0;
}

static void skip_space(reader *r)
{
    for (;;) {
        size_t k = continuation(r, r->cur);
        if (k)
            r->cur += k;
        else if (r->cur < r->lend && is_space(*r->cur))
            ++r->cur;
        else
            return;
    }
}

/* Whether the text s .. e (a line, without its LF) ends in a continuation. */
static int continues(const char *s, const char *e)
{
    while (e > s && e[-1] == '\r')
        --e;
    return e > s && e[-1] == '\\';
}

/* Moves to the next line that holds a token (blank lines and comments are passed over):
 * 1, 0 at the end of the text, -1 for a NUL byte (not text). */
static int next_line(reader *r)
{
    while (r->p < r->end) {
        r->line += r->joined;
        r->joined = 0;
        const char *s = r->p, *e = memchr(s, '\n', (size_t)(r->end - s)), *last = s;
        if (!e)
            e = r->end;
        /* OBJ: a line ending in a backslash goes on on the next (not a comment's backslash:
         * `# C:\dir\`); messages name its first line */
        while (r->joins && e < r->end && continues(last, e) &&
               !(r->comment && memchr(last, r->comment, (size_t)(e - last)))) {
            last = e + 1;
            const char *n = memchr(last, '\n', (size_t)(r->end - last));
            e = n ? n : r->end;
            r->joined++;
        }
        r->p = e < r->end ? e + 1 : r->end;
        r->line++;
        if (memchr(s, '\0', (size_t)(e - s)))
            return fail(r, "found a NUL byte, expected text");
        /* A carriage return inside a line, not before a line feed (CR LF, or CR CR LF as some
         * Windows writers give): lines ended by CR alone (classic Mac OS). */
        for (const char *cr = memchr(s, '\r', (size_t)(e - s)); cr;
             cr = memchr(cr + 1, '\r', (size_t)(e - cr - 1))) {
            const char *q = cr;
            while (q < e && *q == '\r')
                ++q;
            if (q < e && *q != '\n')
                return fail(r, "found a carriage return inside a line (lines ended by CR alone?), "
                               "expected lines ended by LF or CR LF");
            if (q >= e - 1)
                break;
        }
        const char *c = r->comment ? memchr(s, r->comment, (size_t)(e - s)) : NULL;
        r->cur = s;
        r->lend = c ? c : e;
        skip_space(r);
        if (r->cur < r->lend)
            return 1;
    }
    r->line += r->joined;
    r->joined = 0;
    r->cur = r->lend = r->end;
    return 0;
}

/* Whether the line holds another token. */
static int more(reader *r)
{
    skip_space(r);
    return r->cur < r->lend;
}

/* A line that must come: 0, or -1 at the end of the text (or a NUL byte). */
static int need_line(reader *r, const char *what)
{
    int got = next_line(r);
    if (got < 0)
        return -1;
    return got ? 0 : fail(r, "found the end of the file, expected %s", what);
}

/* The next token of the line: 1, or 0 at its end. */
static int token(reader *r, const char **t, size_t *n)
{
    skip_space(r);
    *t = r->cur;
    *n = 0;
    if (r->cur >= r->lend)
        return 0;
    while (r->cur < r->lend && !is_space(*r->cur) && !continuation(r, r->cur))
        ++r->cur;
    *n = (size_t)(r->cur - *t);
    return 1;
}

/* A token for a message: quoted, cut at 32 characters. */
static const char *quote(char *buf, size_t size, const char *t, size_t n)
{
    snprintf(buf, size, "'%.*s%s'", (int)(n > 32 ? 32 : n), t, n > 32 ? "..." : "");
    return buf;
}

static int token_is(const char *t, size_t n, const char *word)
{
    return n == strlen(word) && memcmp(t, word, n) == 0;
}

/* An integer token (optional sign, decimal digits) within +-2^62: 0, or -1. */
static int parse_int(const char *t, size_t n, long long *out)
{
    size_t k = 0;
    int neg = 0;
    long long v = 0;
    if (k < n && (t[k] == '+' || t[k] == '-'))
        neg = t[k++] == '-';
    if (k == n)
        return -1;
    for (; k < n; ++k) {
        if (t[k] < '0' || t[k] > '9' || v > ((long long)1 << 62) / 10)
            return -1;
        v = v * 10 + (t[k] - '0');
    }
    *out = neg ? -v : v;
    return 0;
}

/* A number token, as strtod reads it (so "nan" and "inf" are numbers here, refused by the
 * callers as not finite): 0, or -1. */
static int parse_double(const char *t, size_t n, double *out)
{
    char buf[128], *end;
    if (n >= sizeof buf)
        return -1;
    memcpy(buf, t, n);
    buf[n] = '\0';
    *out = strtod(buf, &end);
    return end == buf + n ? 0 : -1;
}

/* The next token as an integer in [lo, hi]; `what` names it in a message. */
static int read_int(reader *r, const char *what, long long lo, long long hi, long long *out)
{
    const char *t;
    size_t n;
    char q[48];
    if (!token(r, &t, &n))
        return fail(r, "found the end of the line, expected %s", what);
    if (parse_int(t, n, out))
        return fail(r, "found %s, expected %s (an integer)", quote(q, sizeof q, t, n), what);
    if (*out < lo || *out > hi)
        return lo == hi ? fail(r, "found %lld, expected %s %lld", *out, what, lo)
                        : fail(r, "found %lld, expected %s in [%lld, %lld]", *out, what, lo, hi);
    return 0;
}

/* The next token as a number (attributes, weights: any number). */
static int read_number(reader *r, const char *what, double *out)
{
    const char *t;
    size_t n;
    char q[48];
    if (!token(r, &t, &n))
        return fail(r, "found the end of the line, expected %s", what);
    if (parse_double(t, n, out))
        return fail(r, "found %s, expected %s (a number)", quote(q, sizeof q, t, n), what);
    return 0;
}

/* The next three tokens as a vertex: finite, of magnitude at most PBD_MAX_COORD. */
static int read_xyz(reader *r, double x[3])
{
    static const char axis[3] = {'x', 'y', 'z'};
    for (int k = 0; k < 3; ++k) {
        const char *t;
        size_t n;
        char q[48];
        if (!token(r, &t, &n))
            return fail(r, "found the end of the line, expected the %c coordinate", axis[k]);
        if (parse_double(t, n, &x[k]))
            return fail(r, "found %s, expected the %c coordinate (a number)",
                        quote(q, sizeof q, t, n), axis[k]);
        if (!isfinite(x[k]))
            return fail(r, "found %s, expected a finite %c coordinate", quote(q, sizeof q, t, n),
                        axis[k]);
        if (fabs(x[k]) > PBD_MAX_COORD)
            return fail(r, "found %s, expected a %c coordinate of magnitude at most %g",
                        quote(q, sizeof q, t, n), axis[k], (double)PBD_MAX_COORD);
    }
    return 0;
}

/* Nothing more on the line. */
static int end_of_line(reader *r, const char *after)
{
    const char *t;
    size_t n;
    char q[48];
    if (token(r, &t, &n))
        return fail(r, "found %s after %s, expected the end of the line", quote(q, sizeof q, t, n),
                    after);
    return 0;
}

/* ---- the mesh being read ------------------------------------------------------------------ */

typedef struct mesh_build {
    pbd_mesh m;
    int vcap, tcap, ecap;
    int *tri_line; /* the line of each triangle (in tri_name) */
    int *tet_line; /* the line of each tetrahedron (in tet_name) */
    const char *tri_name, *tet_name;
    long long *labels; /* the file's number of each vertex (Gmsh tags); NULL: index + base */
    int base;
} mesh_build;

static void build_free(mesh_build *b)
{
    pbd_mesh_free(&b->m);
    free(b->tri_line);
    free(b->tet_line);
    free(b->labels);
    memset(b, 0, sizeof *b);
}

static long long label(const mesh_build *b, int v)
{
    return b->labels ? b->labels[v] : (long long)v + b->base;
}

/* Makes room for one more of `size` bytes in *p (capacity *cap, count n): 0, or -1. */
static int grow(void **p, int *cap, int n, size_t size)
{
    if (n < *cap)
        return 0;
    int c = *cap ? (*cap > INT32_MAX / 2 ? INT32_MAX : *cap * 2) : 64;
    void *q = realloc(*p, (size_t)c * size);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

static int add_vertex(reader *r, mesh_build *b, const double x[3])
{
    if (b->m.num_vertices >= PBD_MAX_PARTICLES)
        return fail(r, "found more than %d vertices, expected at most %d", PBD_MAX_PARTICLES,
                    PBD_MAX_PARTICLES);
    if (grow((void **)&b->m.vertices, &b->vcap, b->m.num_vertices, 3 * sizeof(double)))
        return oom(r);
    memcpy(b->m.vertices + 3 * (size_t)b->m.num_vertices++, x, 3 * sizeof(double));
    return 0;
}

/* Appends an element (3 vertices: a triangle, 4: a tetrahedron) after checking that its
 * vertices differ; the labels name them in the message. */
static int add_element(reader *r, mesh_build *b, const int *v, int nv)
{
    const char *what = nv == 3 ? "triangle" : "tetrahedron";
    for (int i = 0; i < nv; ++i)
        for (int j = 0; j < i; ++j)
            if (v[i] == v[j])
                return fail(r,
                            "found a %s with vertex %lld twice, expected %d different vertices "
                            "(a degenerate element)",
                            what, label(b, v[i]), nv);
    if (nv == 4) {
        /* A flat tetrahedron has no volume to keep: its volume constraint would flatten it.
         * Flat as the body will hold it: float coordinates, the volume rounded to float (a
         * tetrahedron flat only after rounding is refused here too, with its line). */
        const double *p = b->m.vertices;
        double e[3][3];
        for (int i = 0; i < 3; ++i)
            for (int k = 0; k < 3; ++k)
                e[i][k] = (double)(float)p[3 * (size_t)v[i + 1] + k] -
                          (double)(float)p[3 * (size_t)v[0] + k];
        double det = e[0][0] * (e[1][1] * e[2][2] - e[1][2] * e[2][1]) +
                     e[0][1] * (e[1][2] * e[2][0] - e[1][0] * e[2][2]) +
                     e[0][2] * (e[1][0] * e[2][1] - e[1][1] * e[2][0]);
        if ((float)(det / 6.0) == 0.0f)
            return fail(r,
                        "found a flat tetrahedron (vertices %lld %lld %lld %lld in one plane), "
                        "expected a tetrahedron with a volume",
                        label(b, v[0]), label(b, v[1]), label(b, v[2]), label(b, v[3]));
    }
    int *count = nv == 3 ? &b->m.num_triangles : &b->m.num_tets;
    if (*count >= PBD_MAX_DISTANCE)
        return fail(r, "found more than %d %s elements, expected at most %d", PBD_MAX_DISTANCE,
                    what, PBD_MAX_DISTANCE);
    int *cap = nv == 3 ? &b->tcap : &b->ecap;
    int **list = nv == 3 ? &b->m.triangles : &b->m.tets;
    int **lines = nv == 3 ? &b->tri_line : &b->tet_line;
    int lcap = *cap;
    if (grow((void **)list, cap, *count, (size_t)nv * sizeof(int)) ||
        grow((void **)lines, &lcap, *count, sizeof(int)))
        return oom(r);
    memcpy(*list + (size_t)nv * *count, v, (size_t)nv * sizeof(int));
    (*lines)[*count] = r->line;
    ++*count;
    return 0;
}

/* ---- the surface of a tetrahedral mesh --------------------------------------------------- */

/* A tetrahedron's face: its vertices sorted (the key), the tetrahedron and the fourth vertex
 * (which says which side is outside). */
typedef struct tet_face {
    int v[3];
    int tet, opposite;
} tet_face;

static int face_cmp(const void *pa, const void *pb)
{
    const tet_face *a = pa, *b = pb;
    for (int k = 0; k < 3; ++k)
        if (a->v[k] != b->v[k])
            return a->v[k] < b->v[k] ? -1 : 1;
    return (a->tet > b->tet) - (a->tet < b->tet);
}

static void sort3(int *v)
{
    for (int i = 1; i < 3; ++i)
        for (int j = i; j > 0 && v[j - 1] > v[j]; --j) {
            int t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
}

/* Winds triangle t counter-clockwise seen from outside: away from the vertex `opposite`. */
static void orient(const pbd_mesh *m, int *t, int opposite)
{
    const double *a = m->vertices + 3 * (size_t)t[0], *b = m->vertices + 3 * (size_t)t[1],
                 *c = m->vertices + 3 * (size_t)t[2], *d = m->vertices + 3 * (size_t)opposite;
    double u[3], w[3], e[3];
    for (int k = 0; k < 3; ++k) {
        u[k] = b[k] - a[k];
        w[k] = c[k] - a[k];
        e[k] = d[k] - a[k];
    }
    double n[3] = {u[1] * w[2] - u[2] * w[1], u[2] * w[0] - u[0] * w[2], u[0] * w[1] - u[1] * w[0]};
    if (n[0] * e[0] + n[1] * e[1] + n[2] * e[2] > 0.0) {
        int s = t[1];
        t[1] = t[2];
        t[2] = s;
    }
}

/* Whether face i of the sorted faces f (nf of them) is one tetrahedron's alone. */
static int boundary_face(const tet_face *f, size_t nf, size_t i)
{
    return !(i > 0 && memcmp(f[i].v, f[i - 1].v, sizeof f[i].v) == 0) &&
           !(i + 1 < nf && memcmp(f[i].v, f[i + 1].v, sizeof f[i].v) == 0);
}

/* The surface of a mesh with tetrahedra: the faces that one tetrahedron alone has, wound
 * outward. Where the file's triangles are exactly those faces, each once, they are kept in
 * their order; other triangles (a physical group's part of the boundary, interior faces,
 * partition boundaries, a triangle given twice) say nothing about the surface, and the
 * faces are taken from the tetrahedra instead. A given triangle that is no face of a
 * tetrahedron, or a face of three or more tetrahedra, is an error. */
static int tet_surface(mesh_build *b, pbd_error *err)
{
    pbd_mesh *m = &b->m;
    size_t nf = 4 * (size_t)m->num_tets;
    tet_face *f = malloc(nf * sizeof *f);
    reader tr = {0};
    tr.name = b->tet_name;
    tr.byte = -1;
    tr.err = err;
    if (!f)
        return oom(&tr);
    for (int t = 0; t < m->num_tets; ++t)
        for (int k = 0; k < 4; ++k) {
            tet_face *e = &f[4 * (size_t)t + k];
            for (int j = 0, i = 0; j < 4; ++j)
                if (j != k)
                    e->v[i++] = m->tets[4 * (size_t)t + j];
            sort3(e->v);
            e->tet = t;
            e->opposite = m->tets[4 * (size_t)t + k];
        }
    qsort(f, nf, sizeof *f, face_cmp);
    int r = 0;
    size_t boundary = 0;
    for (size_t i = 0; i < nf && r == 0; ++i) {
        boundary += (size_t)boundary_face(f, nf, i);
        if (i + 2 < nf && memcmp(f[i].v, f[i + 2].v, sizeof f[i].v) == 0) {
            tr.line = b->tet_line[f[i + 2].tet];
            r = fail(&tr,
                     "found a tetrahedron with face %lld %lld %lld, which two other tetrahedra "
                     "have, expected a face of at most two (a manifold mesh)",
                     label(b, f[i].v[0]), label(b, f[i].v[1]), label(b, f[i].v[2]));
        }
    }
    /* The given triangles: each a face of some tetrahedron; kept if they are the boundary. */
    int keep = r == 0 && m->num_triangles > 0 && (size_t)m->num_triangles == boundary;
    unsigned char *given = r == 0 && m->num_triangles > 0 ? calloc(nf, 1) : NULL;
    if (r == 0 && m->num_triangles > 0 && !given)
        r = oom(&tr);
    for (int t = 0; r == 0 && t < m->num_triangles; ++t) {
        int *tri = m->triangles + 3 * (size_t)t;
        tet_face key = {{tri[0], tri[1], tri[2]}, -1, 0};
        sort3(key.v);
        /* The first face with this key: tet -1 sorts before every real one. */
        size_t lo = 0, hi = nf;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (face_cmp(&f[mid], &key) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == nf || memcmp(f[lo].v, key.v, sizeof key.v) != 0) {
            tr.name = b->tri_name;
            tr.line = b->tri_line[t];
            r = fail(&tr,
                     "found triangle %lld %lld %lld, which is no face of a tetrahedron, "
                     "expected a face of the mesh",
                     label(b, tri[0]), label(b, tri[1]), label(b, tri[2]));
        } else if (!boundary_face(f, nf, lo) || given[lo]++)
            keep = 0; /* inside the mesh, or given again */
        else if (keep)
            orient(m, tri, f[lo].opposite);
    }
    free(given);
    if (r == 0 && !keep) {
        m->num_triangles = 0;
        for (size_t i = 0; i < nf && r == 0; ++i) {
            if (!boundary_face(f, nf, i))
                continue;
            int t[3] = {f[i].v[0], f[i].v[1], f[i].v[2]};
            orient(m, t, f[i].opposite);
            tr.line = b->tet_line[f[i].tet];
            r = add_element(&tr, b, t, 3);
        }
        b->tri_name = b->tet_name;
    }
    free(f);
    return r;
}

/* Hands the mesh over, or frees it: the status of the parse. */
static pbd_status finish(mesh_build *b, int r, pbd_mesh *out, pbd_error *err)
{
    if (r != 0) {
        build_free(b);
        return err && err->status != PBD_OK ? err->status : PBD_ERR_SCENE;
    }
    *out = b->m;
    memset(&b->m, 0, sizeof b->m);
    build_free(b);
    return PBD_OK;
}

/* ---- OBJ ---------------------------------------------------------------------------------- */

/* Statements that carry nothing a body needs: texture and normal vertices, parameter-space
 * vertices, names, groups, smoothing, materials, lines and points, display attributes. */
static const char *const obj_ignored[] = {
    "vt",       "vn",         "vp",        "o",      "g",      "s",     "usemtl",
    "mtllib",   "l",          "p",         "mg",     "lod",    "bevel", "c_interp",
    "d_interp", "shadow_obj", "trace_obj", "maplib", "usemap", NULL};
/* Free-form geometry, which is refused. */
static const char *const obj_freeform[] = {"cstype", "deg",  "bmat",  "step",  "curv", "curv2",
                                           "surf",   "parm", "trim",  "hole",  "scrv", "sp",
                                           "end",    "con",  "ctech", "stech", NULL};

static int listed(const char *const *list, const char *t, size_t n)
{
    for (; *list; ++list)
        if (token_is(t, n, *list))
            return 1;
    return 0;
}

/* One face corner, v, v/vt, v//vn or v/vt/vn: the vertex, 0-based. Negative indices count
 * back from the last vertex read. */
/* Reads a face corner into *out (its vertex, 0-based); its texture and normal indices must
 * name a vt and a vn line above it (counts[0], counts[1] of them), and are not used. */
static int obj_corner(reader *r, const char *t, size_t n, int nv, const int *counts, int *out)
{
    static const char *const what[3] = {"face index", "texture index", "normal index"};
    static const char *const line_kind[3] = {"v", "vt", "vn"};
    char q[48];
    const char *part[3] = {t, NULL, NULL};
    size_t len[3] = {n, 0, 0};
    int parts = 1;
    for (size_t k = 0; k < n; ++k)
        if (t[k] == '/') {
            if (parts == 3)
                return fail(r, "found %s, expected a face corner v, v/vt, v//vn or v/vt/vn",
                            quote(q, sizeof q, t, n));
            len[parts - 1] = (size_t)(t + k - part[parts - 1]);
            part[parts] = t + k + 1;
            len[parts] = (size_t)(t + n - part[parts]);
            ++parts;
        }
    for (int p = 0; p < parts; ++p) {
        long long v;
        if (p == 1 && len[1] == 0 && parts == 3)
            continue; /* v//vn */
        if (parse_int(part[p], len[p], &v) || v == 0)
            return fail(r,
                        "found %s, expected a face corner v, v/vt, v//vn or v/vt/vn (indices "
                        "are non-zero integers)",
                        quote(q, sizeof q, t, n));
        int have = p == 0 ? nv : counts[p - 1];
        if (have == 0)
            return fail(r, "found %s %lld, expected a %s line before it", what[p], v, line_kind[p]);
        if (v > have || v < -(long long)have)
            return fail(r, "found %s %lld, expected 1 to %d or -%d to -1 (the %s lines so far)",
                        what[p], v, have, have, line_kind[p]);
        if (p == 0)
            *out = v > 0 ? (int)(v - 1) : (int)(nv + v);
    }
    return 0;
}

typedef struct weld_key {
    double x[3];
    int i;
} weld_key;

static int weld_cmp(const void *pa, const void *pb)
{
    const weld_key *a = pa, *b = pb;
    for (int k = 0; k < 3; ++k)
        if (a->x[k] != b->x[k])
            return a->x[k] < b->x[k] ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* Welds vertices of equal position onto the first of them and drops the others, keeping the
 * file's order: a face index names a position. A triangle whose corners weld together is an
 * error. */
static int obj_weld(reader *r, mesh_build *b)
{
    pbd_mesh *m = &b->m;
    int n = m->num_vertices;
    weld_key *k = malloc((size_t)n * sizeof *k);
    int *to = malloc((size_t)n * sizeof *to);
    if (!k || !to) {
        free(k);
        free(to);
        return oom(r);
    }
    for (int i = 0; i < n; ++i) {
        for (int c = 0; c < 3; ++c)
            k[i].x[c] = m->vertices[3 * (size_t)i + c] + 0.0; /* -0 as 0 */
        k[i].i = i;
    }
    qsort(k, (size_t)n, sizeof *k, weld_cmp);
    for (int i = 0, first = 0; i < n; ++i) {
        if (i > 0 && memcmp(k[i].x, k[i - 1].x, sizeof k[i].x) != 0)
            first = i;
        to[k[i].i] = k[first].i; /* the lowest index of the run */
    }
    free(k);
    /* Kept vertices, renumbered in order. */
    int kept = 0;
    for (int i = 0; i < n; ++i) {
        if (to[i] == i) {
            memmove(m->vertices + 3 * (size_t)kept, m->vertices + 3 * (size_t)i,
                    3 * sizeof(double));
            to[i] = kept++;
        } else {
            to[i] = to[to[i]];
        }
    }
    m->num_vertices = kept;
    int res = 0;
    for (int t = 0; t < m->num_triangles && res == 0; ++t) {
        int *v = m->triangles + 3 * (size_t)t;
        int orig[3] = {v[0], v[1], v[2]};
        for (int c = 0; c < 3; ++c)
            v[c] = to[v[c]];
        for (int c = 0; c < 3 && res == 0; ++c)
            if (v[c] == v[(c + 1) % 3]) {
                r->line = b->tri_line[t];
                res = fail(r,
                           "found a face with vertices %d and %d at the same position, expected "
                           "different positions (a degenerate face)",
                           orig[c] + 1, orig[(c + 1) % 3] + 1);
            }
    }
    free(to);
    /* Each triangle once: a face repeated, or given with both windings (a double-sided
     * surface), would count its area twice and leave its edges without bending. */
    tet_face *key = res == 0 ? malloc(((size_t)m->num_triangles + 1) * sizeof *key) : NULL;
    if (res == 0 && !key)
        return oom(r);
    for (int t = 0; res == 0 && t < m->num_triangles; ++t) {
        memcpy(key[t].v, m->triangles + 3 * (size_t)t, sizeof key[t].v);
        sort3(key[t].v);
        key[t].tet = t;
        key[t].opposite = 0;
    }
    if (res == 0)
        qsort(key, (size_t)m->num_triangles, sizeof *key, face_cmp);
    for (int t = 1; res == 0 && t < m->num_triangles; ++t)
        if (memcmp(key[t].v, key[t - 1].v, sizeof key[t].v) == 0) {
            int first = b->tri_line[key[t - 1].tet], second = b->tri_line[key[t].tet];
            r->line = first > second ? first : second;
            if (first == second)
                res = fail(r, "found a polygon whose fan covers one triangle twice (its "
                              "corners welded by position), expected each triangle once");
            else
                res = fail(r,
                           "found a face on the corners of the face on line %d, expected each "
                           "triangle once (a repeated or double-sided face)",
                           first < second ? first : second);
        }
    free(key);
    return res;
}

pbd_status pbd_mesh_parse_obj(const pbd_mesh_text *obj, pbd_mesh *out, pbd_error *err)
{
    if (!obj || !obj->text || !out)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "pbd_mesh_parse_obj: no text or no mesh");
    memset(out, 0, sizeof *out);
    mesh_build b;
    memset(&b, 0, sizeof b);
    b.base = 1;
    reader r;
    reader_init(&r, obj, '#', err);
    r.joins = 1;
    b.tri_name = r.name;
    int *poly = NULL, pcap = 0, res = 0, got, uv_normals[2] = {0, 0};
    while (res == 0 && (got = next_line(&r)) != 0) {
        const char *t;
        size_t n;
        char q[48];
        if (got < 0) {
            res = -1;
            break;
        }
        token(&r, &t, &n);
        if (token_is(t, n, "v")) {
            double x[3], extra;
            res = read_xyz(&r, x);
            /* A weight, or a colour (MeshLab writes r g b after x y z): read, not used. */
            for (int k = 0; k < 4 && res == 0 && more(&r); ++k)
                res = read_number(&r, "a weight or colour after x y z", &extra);
            if (res == 0)
                res = end_of_line(&r, "x y z and at most four more numbers");
            if (res == 0)
                res = add_vertex(&r, &b, x);
        } else if (token_is(t, n, "f")) {
            int corners = 0;
            while (res == 0 && token(&r, &t, &n)) {
                if (grow((void **)&poly, &pcap, corners, sizeof(int))) {
                    res = oom(&r);
                    break;
                }
                res = obj_corner(&r, t, n, b.m.num_vertices, uv_normals, &poly[corners]);
                for (int k = 0; res == 0 && k < corners; ++k)
                    if (poly[k] == poly[corners])
                        res = fail(&r,
                                   "found a face with vertex %d twice, expected different "
                                   "vertices (a degenerate face)",
                                   poly[k] + 1);
                ++corners;
            }
            if (res == 0 && corners < 3)
                res = fail(&r, "found a face of %d vertices, expected at least 3", corners);
            /* Polygons are fanned from their first corner. */
            for (int k = 1; res == 0 && k + 1 < corners; ++k) {
                int tri[3] = {poly[0], poly[k], poly[k + 1]};
                res = add_element(&r, &b, tri, 3);
            }
        } else if (listed(obj_ignored, t, n)) {
            /* counted, so that a corner's vt and vn indices can be checked */
            uv_normals[0] += token_is(t, n, "vt") && uv_normals[0] < INT32_MAX;
            uv_normals[1] += token_is(t, n, "vn") && uv_normals[1] < INT32_MAX;
            continue;
        } else if (listed(obj_freeform, t, n)) {
            res = fail(&r, "found free-form geometry (%s), expected polygonal faces (f)",
                       quote(q, sizeof q, t, n));
        } else {
            res = fail(&r,
                       "found %s, expected an OBJ statement (v, f, vt, vn, o, g, s, usemtl, "
                       "mtllib, l, ...)",
                       quote(q, sizeof q, t, n));
        }
    }
    free(poly);
    if (res == 0 && b.m.num_triangles == 0)
        res = fail(&r, "found the end of the file with no faces, expected at least one face (f)");
    if (res == 0)
        res = obj_weld(&r, &b);
    return finish(&b, res, out, err);
}

/* ---- TetGen ------------------------------------------------------------------------------- */

/* The next line of a list of `count` declared at line `declared`: an end of the file before
 * it is an error. */
static int list_line(reader *r, const char *what, long long k, long long count, int declared)
{
    int got = next_line(r);
    if (got < 0)
        return -1;
    if (got == 0)
        return fail(r,
                    "found the end of the file after %lld %s, expected %lld (declared on line "
                    "%d)",
                    k, what, count, declared);
    if (*r->cur == '$') {
        const char *t;
        size_t n;
        char q[48];
        token(r, &t, &n);
        return fail(r, "found %s after %lld %s, expected %lld (declared on line %d)",
                    quote(q, sizeof q, t, n), k, what, count, declared);
    }
    return 0;
}

/* Nothing after a list but comments and blank lines. */
static int end_of_file(reader *r, const char *what, long long count, int declared)
{
    int got = next_line(r);
    if (got < 0)
        return -1;
    if (got > 0)
        return fail(r,
                    "found more lines after the %lld %s declared on line %d, expected the end "
                    "of the file",
                    count, what, declared);
    return 0;
}

/* "<number> ..." of an entry: the first sets the numbering (0 or 1), the others follow it. */
static int entry_number(reader *r, const char *what, long long k, int *base)
{
    long long id;
    char expected[64];
    if (k == 0) {
        if (read_int(r, what, 0, 1, &id))
            return -1;
        *base = (int)id;
        return 0;
    }
    snprintf(expected, sizeof expected, "%s number", what);
    if (read_int(r, expected, -((long long)1 << 62), (long long)1 << 62, &id))
        return -1;
    if (id != *base + k)
        return fail(r, "found %s %lld, expected %s %lld (numbered from %d, one after another)",
                    what, id, what, *base + k, *base);
    return 0;
}

/* Vertex indices of an element: numbered as the .node file numbers its points. */
static int read_vertices(reader *r, const mesh_build *b, int n, int *v)
{
    for (int k = 0; k < n; ++k) {
        long long id;
        if (read_int(r, "a point number of the .node file", b->base,
                     (long long)b->base + b->m.num_vertices - 1, &id))
            return -1;
        v[k] = (int)(id - b->base);
    }
    return 0;
}

static int tetgen_node(reader *r, mesh_build *b)
{
    long long n, dim, nattr, nmark;
    int got = next_line(r);
    if (got <= 0)
        return got < 0 ? -1 : fail(r, "found an empty file, expected the .node header");
    int declared = r->line;
    /* As TetGen reads it: the fields after the count may be left out (3, 0 and 0). */
    dim = 3;
    nattr = nmark = 0;
    if (read_int(r, "the number of points", 4, PBD_MAX_PARTICLES, &n) ||
        (more(r) && read_int(r, "the dimension", 3, 3, &dim)) ||
        (more(r) && read_int(r, "the number of attributes", 0, 1000, &nattr)) ||
        (more(r) && read_int(r, "the number of boundary markers", 0, 1, &nmark)) ||
        end_of_line(r, "the .node header"))
        return -1;
    for (long long k = 0; k < n; ++k) {
        double x[3], a;
        long long mark;
        if (list_line(r, "points", k, n, declared) || entry_number(r, "point", k, &b->base) ||
            read_xyz(r, x))
            return -1;
        for (long long c = 0; c < nattr; ++c)
            if (read_number(r, "an attribute", &a))
                return -1;
        if ((nmark &&
             read_int(r, "a boundary marker", -((long long)1 << 62), (long long)1 << 62, &mark)) ||
            end_of_line(r, nmark   ? "the boundary marker"
                           : nattr ? "the attributes"
                                   : "x y z") ||
            add_vertex(r, b, x))
            return -1;
    }
    return end_of_file(r, "points", n, declared);
}

static int tetgen_ele(reader *r, mesh_build *b)
{
    long long n, per, region;
    int got = next_line(r), base = 0;
    if (got <= 0)
        return got < 0 ? -1 : fail(r, "found an empty file, expected the .ele header");
    int declared = r->line;
    if (read_int(r, "the number of tetrahedra", 1, PBD_MAX_DISTANCE, &n))
        return -1;
    per = 4; /* as TetGen reads it: 4 nodes and no attributes where left out */
    region = 0;
    if (more(r) && read_int(r, "the nodes per tetrahedron", 0, 1000, &per))
        return -1;
    if (per != 4)
        return fail(r,
                    "found %lld nodes per tetrahedron, expected 4 (second-order tetrahedra are "
                    "not supported; mesh without -o2)",
                    per);
    if ((more(r) && read_int(r, "the number of attributes", 0, 1000, &region)) ||
        end_of_line(r, "the .ele header"))
        return -1;
    b->tet_name = r->name;
    for (long long k = 0; k < n; ++k) {
        int v[4];
        double a;
        if (list_line(r, "tetrahedra", k, n, declared) ||
            entry_number(r, "tetrahedron", k, &base) || read_vertices(r, b, 4, v))
            return -1;
        for (long long c = 0; c < region; ++c)
            if (read_number(r, "an attribute (a region's)", &a))
                return -1;
        if (end_of_line(r, region ? "the attributes" : "the four nodes") || add_element(r, b, v, 4))
            return -1;
    }
    return end_of_file(r, "tetrahedra", n, declared);
}

static int tetgen_face(reader *r, mesh_build *b)
{
    long long n, nmark, mark;
    int got = next_line(r), base = 0;
    if (got <= 0)
        return got < 0 ? -1 : fail(r, "found an empty file, expected the .face header");
    int declared = r->line;
    if (read_int(r, "the number of faces", 1, PBD_MAX_DISTANCE, &n) ||
        read_int(r, "the number of boundary markers", 0, 1, &nmark) ||
        end_of_line(r, "the .face header"))
        return -1;
    b->tri_name = r->name;
    for (long long k = 0; k < n; ++k) {
        int v[3];
        long long adjacent;
        const long long big = (long long)1 << 62;
        if (list_line(r, "faces", k, n, declared) || entry_number(r, "face", k, &base) ||
            read_vertices(r, b, 3, v) ||
            (nmark && read_int(r, "a boundary marker", -big, big, &mark)))
            return -1;
        /* tetgen -nn: the face's two tetrahedra (-1: none), read and not used; one number
         * alone is a marker the header did not declare */
        if (more(r)) {
            if (read_int(r, "an adjacent tetrahedron (tetgen -nn)", -1, big, &adjacent))
                return -1;
            if (!more(r))
                return fail(r, nmark ? "found one number after the boundary marker, expected "
                                       "none or two adjacent tetrahedra (tetgen -nn)"
                                     : "found a fourth number after the three nodes, expected "
                                       "none (the header declares no boundary markers) or two "
                                       "adjacent tetrahedra (tetgen -nn)");
            if (read_int(r, "the second adjacent tetrahedron", -1, big, &adjacent))
                return -1;
        }
        if (end_of_line(r, nmark ? "the boundary marker (and two adjacent tetrahedra)"
                                 : "the three nodes (and two adjacent tetrahedra)") ||
            add_element(r, b, v, 3))
            return -1;
    }
    return end_of_file(r, "faces", n, declared);
}

pbd_status pbd_mesh_parse_tetgen(const pbd_mesh_text *node, const pbd_mesh_text *ele,
                                 const pbd_mesh_text *face, pbd_mesh *out, pbd_error *err)
{
    if (!node || !node->text || !ele || !ele->text || (face && !face->text) || !out)
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "pbd_mesh_parse_tetgen: no .node or .ele text, or no mesh");
    memset(out, 0, sizeof *out);
    mesh_build b;
    memset(&b, 0, sizeof b);
    reader r;
    reader_init(&r, node, '#', err);
    int res = tetgen_node(&r, &b);
    if (res == 0) {
        reader_init(&r, ele, '#', err);
        res = tetgen_ele(&r, &b);
    }
    if (res == 0 && face) {
        reader_init(&r, face, '#', err);
        res = tetgen_face(&r, &b);
    }
    if (res == 0)
        res = tet_surface(&b, err);
    return finish(&b, res, out, err);
}

/* ---- Gmsh --------------------------------------------------------------------------------- */

typedef struct node_tag {
    long long tag;
    int index, line;
    long long byte; /* binary: where the tag is; else -1 */
} node_tag;

/* By tag, then in the file's order. */
static int tag_cmp(const void *pa, const void *pb)
{
    const node_tag *a = pa, *b = pb;
    return a->tag != b->tag ? (a->tag > b->tag) - (a->tag < b->tag)
                            : (a->index > b->index) - (a->index < b->index);
}

typedef struct msh {
    reader r;
    mesh_build *b;
    int version; /* 2 or 4 */
    node_tag *tags;
    int tag_cap;
    /* A binary file (file type 1): its sections' data are read at r.p, bline the line that
     * holds r.p (line feeds in the data count as the file's lines), and the last value taken
     * began at byte `at` of line `vline`. big: the file's integers and doubles are big-endian
     * (the file says which in $MeshFormat). */
    int binary, big, bline, vline;
    const char *start;
    size_t at;
} msh;

/* A line that must be exactly `word` (a section's end). */
static int msh_word(msh *g, const char *word, const char *context)
{
    const char *t;
    size_t n;
    char q[48];
    int got = next_line(&g->r);
    if (got < 0)
        return -1;
    if (got == 0)
        return fail(&g->r, "found the end of the file, expected %s%s", word, context);
    token(&g->r, &t, &n);
    if (!token_is(t, n, word))
        return fail(&g->r, "found %s, expected %s%s", quote(q, sizeof q, t, n), word, context);
    return end_of_line(&g->r, word);
}

/* The nodes of an element type a body can use, or that is skipped (points, lines); 0 for
 * any other, which is refused (MSH_TYPE_REFUSED, with msh_type_name). */
static int msh_type_nodes(long long type)
{
    switch (type) {
    case 15: /* point */
        return 1;
    case 1: /* line */
        return 2;
    case 8: /* 3-node line */
    case 2: /* triangle */
        return 3;
    case 4: /* tetrahedron */
        return 4;
    default:
        return 0;
    }
}

static const char *msh_type_name(long long type)
{
    return type == 3    ? " (4-node quadrangle)"
           : type == 5  ? " (hexahedron)"
           : type == 6  ? " (prism)"
           : type == 7  ? " (pyramid)"
           : type == 9  ? " (6-node triangle)"
           : type == 11 ? " (10-node tetrahedron)"
                        : "";
}

#define MSH_TYPE_REFUSED                                                                           \
    "found element type %lld%s, expected 2 (triangle) or 4 (tetrahedron); points and lines are "   \
    "skipped (mesh with first-order triangles or tetrahedra)"

/* A text file's element type: its nodes, or a refusal. */
static int msh_type_known(msh *g, long long type, int *nodes)
{
    if (!(*nodes = msh_type_nodes(type)))
        return fail(&g->r, MSH_TYPE_REFUSED, type, msh_type_name(type));
    return 0;
}

static int msh_add_node(msh *g, long long tag, const double x[3])
{
    if (grow((void **)&g->tags, &g->tag_cap, g->b->m.num_vertices, sizeof *g->tags))
        return oom(&g->r);
    g->tags[g->b->m.num_vertices] =
        (node_tag){tag, g->b->m.num_vertices, g->binary ? g->vline : g->r.line,
                   g->binary ? (long long)g->at : -1};
    return add_vertex(&g->r, g->b, x);
}

/* The vertex of node `tag`, or -1 where $Nodes has no such tag. */
static int msh_vertex(const msh *g, long long tag)
{
    size_t lo = 0, hi = (size_t)g->b->m.num_vertices;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->tags[mid].tag < tag)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < (size_t)g->b->m.num_vertices && g->tags[lo].tag == tag ? g->tags[lo].index : -1;
}

/* ---- Gmsh binary data ---- */

static int msh_index_tags(msh *g);

/* Leaves the binary data for text: the next line read is the rest of the cursor's line. */
static void bin_to_text(msh *g)
{
    g->r.line = g->bline - 1;
}

/* "NAME:LINE: byte B: found ..." for the value taken last (bin_take), or where `here`, at the
 * cursor. */
static int bin_fail(msh *g, int here, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int bin_fail(msh *g, int here, const char *fmt, ...)
{
    char text[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    reader *r = &g->r;
    /* at the end of a file that ends its last line, that line */
    int past = here && r->p == r->end && r->p > g->start && r->p[-1] == '\n';
    r->line = here ? g->bline - past : g->vline;
    r->byte = here ? (long long)(r->p - g->start) : (long long)g->at;
    fail(r, "%s", text);
    r->byte = -1;
    return -1;
}

/* The next n bytes of binary data (what: the value, for a message), the line feeds among
 * them counted: NULL at the end of the file. */
static const unsigned char *bin_take(msh *g, size_t n, const char *what)
{
    reader *r = &g->r;
    if ((size_t)(r->end - r->p) < n) {
        bin_fail(g, 1, "found the end of the file, expected %s (%zu bytes)", what, n);
        return NULL;
    }
    const char *p = r->p;
    g->at = (size_t)(p - g->start);
    g->vline = g->bline;
    for (const char *q = p; (q = memchr(q, '\n', (size_t)(p + n - q))) != NULL; ++q)
        ++g->bline;
    r->p += n;
    return (const unsigned char *)p;
}

/* An unsigned integer of n bytes (4 or 8) in the file's byte order. */
static uint64_t bin_bits(const msh *g, const unsigned char *b, int n)
{
    uint64_t v = 0;
    for (int k = 0; k < n; ++k)
        v |= (uint64_t)b[g->big ? n - 1 - k : k] << (8 * k);
    return v;
}

/* A 4-byte signed integer (int) or, with size 8, an unsigned one (size_t), in [lo, hi]. */
static int bin_int(msh *g, int size, const char *what, long long lo, long long hi, long long *out)
{
    const unsigned char *b = bin_take(g, (size_t)size, what);
    if (!b)
        return -1;
    uint64_t v = bin_bits(g, b, size);
    if (size == 4) {
        *out = v >= 0x80000000u ? (long long)v - 0x100000000ll : (long long)v;
    } else if (v > (uint64_t)1 << 62) {
        return bin_fail(g, 0, "found %llu, expected %s in [%lld, %lld]", (unsigned long long)v,
                        what, lo, hi);
    } else {
        *out = (long long)v;
    }
    if (*out < lo || *out > hi)
        return bin_fail(g, 0, "found %lld, expected %s in [%lld, %lld]", *out, what, lo, hi);
    return 0;
}

/* A vertex of three doubles, finite and of magnitude at most PBD_MAX_COORD (as read_xyz). */
static int bin_xyz(msh *g, double x[3])
{
    static const char *const axis[3] = {"the x coordinate", "the y coordinate", "the z coordinate"};
    for (int k = 0; k < 3; ++k) {
        const unsigned char *b = bin_take(g, 8, axis[k]);
        if (!b)
            return -1;
        uint64_t v = bin_bits(g, b, 8);
        memcpy(&x[k], &v, sizeof v);
        if (!isfinite(x[k]))
            return bin_fail(g, 0, "found %g, expected a finite %c coordinate", x[k], "xyz"[k]);
        if (fabs(x[k]) > PBD_MAX_COORD)
            return bin_fail(g, 0, "found %.9g, expected a %c coordinate of magnitude at most %g",
                            x[k], "xyz"[k], (double)PBD_MAX_COORD);
    }
    return 0;
}

/* The integer 1 after the format line, which gives the file's byte order. */
static int bin_order(msh *g)
{
    g->bline = g->r.line + 1;
    const unsigned char *b = bin_take(g, 4, "the integer 1 in binary");
    if (!b)
        return -1;
    if (b[0] == 1 && b[1] == 0 && b[2] == 0 && b[3] == 0)
        g->big = 0;
    else if (b[0] == 0 && b[1] == 0 && b[2] == 0 && b[3] == 1)
        g->big = 1;
    else
        return bin_fail(g, 0,
                        "found bytes %02x %02x %02x %02x, expected the integer 1 in binary "
                        "(01 00 00 00 or 00 00 00 01)",
                        b[0], b[1], b[2], b[3]);
    bin_to_text(g);
    return 0;
}

/* A node's tag, then (version 2) its coordinates; version 4 takes a block's coordinates
 * after its tags. */
static int bin_node(msh *g, long long lo, long long hi)
{
    long long tag;
    double x[3] = {0.0, 0.0, 0.0};
    if (bin_int(g, g->version == 2 ? 4 : 8, "a node tag", lo, hi, &tag))
        return -1;
    int line = g->vline;
    size_t at = g->at;
    if (g->version == 2 && bin_xyz(g, x))
        return -1;
    g->vline = line, g->at = at; /* the tag's, for msh_index_tags */
    return msh_add_node(g, tag, x);
}

/* $Nodes of a binary file: version 2 declares its count in text, then each node is an int
 * tag and three doubles; version 4 has four size_t (blocks, nodes, the smallest and largest
 * tag), then per block its entity dimension, tag and parametric flag (ints) and its node
 * count (size_t), the nodes' tags (size_t) and their coordinates (x y z, then u (v (w))
 * where parametric). */
static int msh_nodes_binary(msh *g)
{
    reader *r = &g->r;
    long long count, blocks = 1, lo = 1, hi = (long long)1 << 62, read = 0;
    int declared = r->line + 1;
    if (g->version == 2) {
        if (need_line(r, "the number of nodes") ||
            read_int(r, "the number of nodes", 1, PBD_MAX_PARTICLES, &count) ||
            end_of_line(r, "the number of nodes"))
            return -1;
        declared = r->line;
        hi = INT32_MAX;
    }
    g->bline = r->line + 1;
    if (g->version == 4 &&
        (bin_int(g, 8, "the number of entity blocks", 0, PBD_MAX_PARTICLES, &blocks) ||
         bin_int(g, 8, "the number of nodes", 1, PBD_MAX_PARTICLES, &count) ||
         bin_int(g, 8, "the smallest node tag", 1, (long long)1 << 62, &lo) ||
         bin_int(g, 8, "the largest node tag", lo, (long long)1 << 62, &hi)))
        return -1;
    for (long long k = 0; k < blocks; ++k) {
        long long dim = 0, etag, param = 0, n = count;
        if (g->version == 4 &&
            (bin_int(g, 4, "an entity dimension", 0, 3, &dim) ||
             bin_int(g, 4, "an entity tag", INT32_MIN, INT32_MAX, &etag) ||
             bin_int(g, 4, "parametric (0 or 1)", 0, 1, &param) ||
             bin_int(g, 8, "the number of nodes in the block", 0, count - read, &n)))
            return -1;
        int first = g->b->m.num_vertices;
        for (long long j = 0; j < n; ++j)
            if (bin_node(g, lo, hi))
                return -1;
        for (long long j = 0; g->version == 4 && j < n; ++j) {
            double x[3];
            if (bin_xyz(g, x) ||
                (param && dim > 0 && !bin_take(g, 8 * (size_t)dim, "parametric coordinates")))
                return -1;
            memcpy(g->b->m.vertices + 3 * (size_t)(first + j), x, sizeof x);
        }
        read += n;
    }
    if (read != count)
        return bin_fail(g, 1, "found %lld nodes in the blocks, expected %lld (declared on line %d)",
                        read, count, declared);
    bin_to_text(g);
    if (msh_word(g, "$EndNodes", " after the nodes' binary data"))
        return -1;
    return msh_index_tags(g);
}

/* One element's tag (version 4: size_t; 2: int, then its type's header tags) and nodes;
 * a triangle or tetrahedron is kept, a point or line skipped. */
static int bin_element(msh *g, long long type, int nodes, long long ntags, long long lo,
                       long long hi)
{
    int size = g->version == 2 ? 4 : 8, v[4] = {0, 0, 0, 0};
    long long tag, t;
    if (bin_int(g, size, "an element tag", lo, hi, &tag))
        return -1;
    int line = g->vline;
    long long at = (long long)g->at;
    for (long long q = 0; q < ntags; ++q)
        if (bin_int(g, 4, "a tag", INT32_MIN, INT32_MAX, &t))
            return -1;
    for (int k = 0; k < nodes; ++k) {
        if (bin_int(g, size, "a node tag", 1, (long long)1 << 62, &t))
            return -1;
        if ((v[k] = msh_vertex(g, t)) < 0)
            return bin_fail(g, 0, "found node tag %lld, expected a tag of $Nodes", t);
    }
    if (type != 2 && type != 4)
        return 0;
    g->r.line = line;
    g->r.byte = at; /* a degenerate or flat element names its tag's byte */
    int res = add_element(&g->r, g->b, v, nodes);
    g->r.byte = -1;
    return res;
}

/* $Elements of a binary file: version 2 declares its count in text, then elements come in
 * runs of one type, each run's header three ints (type, count, tags per element) and each
 * element its number, tags and nodes (ints); version 4 has four size_t (blocks, elements,
 * the smallest and largest tag), then per block its entity dimension and tag and element
 * type (ints) and its count (size_t), each element its tag and nodes (size_t). */
static int msh_elements_binary(msh *g)
{
    reader *r = &g->r;
    long long count, blocks = (long long)1 << 62, lo = 1, hi = (long long)1 << 62, read = 0;
    int declared = r->line + 1;
    if (g->version == 2) {
        if (need_line(r, "the number of elements") ||
            read_int(r, "the number of elements", 1, (long long)1 << 62, &count) ||
            end_of_line(r, "the number of elements"))
            return -1;
        declared = r->line;
        hi = INT32_MAX;
    }
    g->bline = r->line + 1;
    if (g->version == 4 &&
        (bin_int(g, 8, "the number of entity blocks", 0, (long long)1 << 62, &blocks) ||
         bin_int(g, 8, "the number of elements", 1, (long long)1 << 62, &count) ||
         bin_int(g, 8, "the smallest element tag", 1, (long long)1 << 62, &lo) ||
         bin_int(g, 8, "the largest element tag", lo, (long long)1 << 62, &hi)))
        return -1;
    g->b->tri_name = g->b->tet_name = r->name;
    /* version 2 reads runs until the declared count is reached */
    for (long long k = 0; k < blocks && (g->version == 4 || read < count); ++k) {
        long long n, type, dim, etag, ntags = 0;
        int nodes = 0;
        if (g->version == 4) {
            if (bin_int(g, 4, "an entity dimension", 0, 3, &dim) ||
                bin_int(g, 4, "an entity tag", INT32_MIN, INT32_MAX, &etag) ||
                bin_int(g, 4, "an element type", 1, 1000, &type))
                return -1;
        } else if (bin_int(g, 4, "an element type", 1, 1000, &type)) {
            return -1;
        }
        if (!(nodes = msh_type_nodes(type)))
            return bin_fail(g, 0, MSH_TYPE_REFUSED, type, msh_type_name(type));
        if (g->version == 4
                ? bin_int(g, 8, "the number of elements in the block", 0, count - read, &n)
                : bin_int(g, 4, "the number of elements that follow", 1, count - read, &n) ||
                      bin_int(g, 4, "the number of tags", 0, 1000, &ntags))
            return -1;
        for (long long j = 0; j < n; ++j)
            if (bin_element(g, type, nodes, ntags, lo, hi))
                return -1;
        read += n;
    }
    if (read != count)
        return bin_fail(g, 1,
                        "found %lld elements in the blocks, expected %lld (declared on line %d)",
                        read, count, declared);
    bin_to_text(g);
    return msh_word(g, "$EndElements", " after the elements' binary data");
}

/* Passes over a section a binary file does not need ($Entities, $PhysicalNames, ...) to its
 * end line `end`: the first line that is exactly `end` (its data may be binary, so it is
 * not read as lines). */
static int msh_skip_binary(msh *g, const char *end, const char *section, int start)
{
    reader *r = &g->r;
    size_t n = strlen(end);
    char q[48];
    g->bline = r->line + 1;
    for (const char *p = r->p; p < r->end; ++p) {
        if ((p == r->p || p[-1] == '\n') && (size_t)(r->end - p) >= n && memcmp(p, end, n) == 0 &&
            (p + n == r->end || p[n] == '\n' || p[n] == '\r')) {
            for (const char *c = r->p; (c = memchr(c, '\n', (size_t)(p - c))) != NULL; ++c)
                ++g->bline;
            r->p = p;
            bin_to_text(g);
            return 0;
        }
    }
    for (const char *c = r->p; (c = memchr(c, '\n', (size_t)(r->end - c))) != NULL; ++c)
        ++g->bline;
    r->line = g->bline - (r->end > g->start && r->end[-1] == '\n'); /* the last line */
    return fail(r, "found the end of the file in section %s (line %d), expected %s",
                quote(q, sizeof q, section, strlen(section)), start, end);
}

static int msh_nodes(msh *g)
{
    if (g->binary)
        return msh_nodes_binary(g);
    reader *r = &g->r;
    long long count, blocks = 1, lo = 1, hi = (long long)1 << 62, read = 0;
    if (need_line(r, "the $Nodes header"))
        return -1;
    int declared = r->line;
    if (g->version == 4) {
        if (read_int(r, "the number of entity blocks", 0, PBD_MAX_PARTICLES, &blocks) ||
            read_int(r, "the number of nodes", 1, PBD_MAX_PARTICLES, &count) ||
            read_int(r, "the smallest node tag", 1, (long long)1 << 62, &lo) ||
            read_int(r, "the largest node tag", lo, (long long)1 << 62, &hi))
            return -1;
    } else if (read_int(r, "the number of nodes", 1, PBD_MAX_PARTICLES, &count)) {
        return -1;
    }
    if (end_of_line(r, "the $Nodes header"))
        return -1;
    for (long long k = 0; k < blocks; ++k) {
        long long dim = 0, etag, param = 0, n = count;
        if (g->version == 4) {
            if (list_line(r, "entity blocks", k, blocks, declared) ||
                read_int(r, "an entity dimension", 0, 3, &dim) ||
                read_int(r, "an entity tag", -((long long)1 << 62), (long long)1 << 62, &etag) ||
                read_int(r, "parametric (0 or 1)", 0, 1, &param) ||
                read_int(r, "the number of nodes in the block", 0, count - read, &n) ||
                end_of_line(r, "the entity block header"))
                return -1;
        }
        int first = g->b->m.num_vertices;
        for (long long j = 0; j < n; ++j) {
            long long tag;
            double x[3] = {0.0, 0.0, 0.0};
            if (list_line(r, "nodes", read + j, count, declared) ||
                read_int(r, "a node tag", lo, hi, &tag))
                return -1;
            if (g->version == 2 && read_xyz(&g->r, x))
                return -1;
            if (end_of_line(r, g->version == 2 ? "x y z" : "the node tag") ||
                msh_add_node(g, tag, x))
                return -1;
        }
        /* 4.1: the block's coordinates follow its tags, u (v (w)) after them when
         * parametric. */
        for (long long j = 0; g->version == 4 && j < n; ++j) {
            double x[3], u;
            if (list_line(r, "node coordinates", read + j, count, declared) || read_xyz(&g->r, x))
                return -1;
            for (long long p = 0; p < (param ? dim : 0); ++p)
                if (read_number(r, "a parametric coordinate", &u))
                    return -1;
            if (end_of_line(r, param ? "x y z and the parametric coordinates" : "x y z"))
                return -1;
            memcpy(g->b->m.vertices + 3 * (size_t)(first + j), x, sizeof x);
        }
        read += n;
    }
    if (read != count)
        return fail(r, "found %lld nodes in the blocks, expected %lld (declared on line %d)", read,
                    count, declared);
    if (msh_word(g, "$EndNodes", " after the nodes"))
        return -1;
    return msh_index_tags(g);
}

/* The nodes' tags, sorted for the elements to look up, each once; they name vertices in
 * messages. */
static int msh_index_tags(msh *g)
{
    reader *r = &g->r;
    qsort(g->tags, (size_t)g->b->m.num_vertices, sizeof *g->tags, tag_cmp);
    for (int k = 1; k < g->b->m.num_vertices; ++k)
        if (g->tags[k].tag == g->tags[k - 1].tag) { /* k is the later */
            const node_tag *t = &g->tags[k], *first = &g->tags[k - 1];
            r->line = t->line;
            r->byte = t->byte;
            if (first->byte >= 0)
                return fail(r,
                            "found node tag %lld again (line %d, byte %lld), expected each "
                            "tag once",
                            t->tag, first->line, first->byte);
            return fail(r, "found node tag %lld again (line %d), expected each tag once", t->tag,
                        first->line);
        }
    g->b->labels = malloc((size_t)g->b->m.num_vertices * sizeof *g->b->labels);
    if (!g->b->labels)
        return oom(r);
    for (int k = 0; k < g->b->m.num_vertices; ++k)
        g->b->labels[g->tags[k].index] = g->tags[k].tag;
    return 0;
}

static int msh_node_ref(msh *g, int *out)
{
    long long tag;
    if (read_int(&g->r, "a node tag", 1, (long long)1 << 62, &tag))
        return -1;
    if ((*out = msh_vertex(g, tag)) < 0)
        return fail(&g->r, "found node tag %lld, expected a tag of $Nodes", tag);
    return 0;
}

/* One element's nodes: a triangle or tetrahedron is kept, a point or line read and
 * skipped. */
static int msh_element(msh *g, long long type, int nodes)
{
    int v[4] = {0, 0, 0, 0};
    for (int k = 0; k < nodes; ++k)
        if (msh_node_ref(g, &v[k]))
            return -1;
    if (end_of_line(&g->r, "the element's nodes"))
        return -1;
    if (type == 2 || type == 4)
        return add_element(&g->r, g->b, v, nodes);
    return 0;
}

static int msh_elements(msh *g)
{
    if (g->binary)
        return msh_elements_binary(g);
    reader *r = &g->r;
    long long count, blocks = 1, lo = 1, hi = (long long)1 << 62, read = 0;
    if (need_line(r, "the $Elements header"))
        return -1;
    int declared = r->line;
    if (g->version == 4) {
        if (read_int(r, "the number of entity blocks", 0, (long long)1 << 62, &blocks) ||
            read_int(r, "the number of elements", 1, (long long)1 << 62, &count) ||
            read_int(r, "the smallest element tag", 1, (long long)1 << 62, &lo) ||
            read_int(r, "the largest element tag", lo, (long long)1 << 62, &hi))
            return -1;
    } else if (read_int(r, "the number of elements", 1, (long long)1 << 62, &count)) {
        return -1;
    }
    if (end_of_line(r, "the $Elements header"))
        return -1;
    g->b->tri_name = g->b->tet_name = r->name;
    for (long long k = 0; k < blocks; ++k) {
        long long n = count, type = 0, dim, etag, tag, ntags, t;
        int nodes = 0;
        if (g->version == 4) {
            if (list_line(r, "entity blocks", k, blocks, declared) ||
                read_int(r, "an entity dimension", 0, 3, &dim) ||
                read_int(r, "an entity tag", -((long long)1 << 62), (long long)1 << 62, &etag) ||
                read_int(r, "an element type", 1, 1000, &type) || msh_type_known(g, type, &nodes) ||
                read_int(r, "the number of elements in the block", 0, count - read, &n) ||
                end_of_line(r, "the entity block header"))
                return -1;
        }
        for (long long j = 0; j < n; ++j) {
            if (list_line(r, "elements", read + j, count, declared) ||
                read_int(r, "an element tag", lo, hi, &tag))
                return -1;
            if (g->version == 2) {
                if (read_int(r, "an element type", 1, 1000, &type) ||
                    msh_type_known(g, type, &nodes) ||
                    read_int(r, "the number of tags", 0, 1000, &ntags))
                    return -1;
                for (long long q = 0; q < ntags; ++q)
                    if (read_int(r, "a tag", -((long long)1 << 62), (long long)1 << 62, &t))
                        return -1;
            }
            if (msh_element(g, type, nodes))
                return -1;
        }
        read += n;
    }
    if (read != count)
        return fail(r, "found %lld elements in the blocks, expected %lld (declared on line %d)",
                    read, count, declared);
    return msh_word(g, "$EndElements", " after the elements");
}

pbd_status pbd_mesh_parse_msh(const pbd_mesh_text *text, pbd_mesh *out, pbd_error *err)
{
    if (!text || !text->text || !out)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "pbd_mesh_parse_msh: no text or no mesh");
    memset(out, 0, sizeof *out);
    mesh_build b;
    memset(&b, 0, sizeof b);
    msh g;
    memset(&g, 0, sizeof g);
    g.b = &b;
    g.start = text->text;
    reader *r = &g.r;
    reader_init(r, text, 0, err);
    int res = 0, got, nodes = 0, elements = 0;
    while (res == 0 && (got = next_line(r)) != 0) {
        const char *t;
        size_t n;
        char q[48];
        if (got < 0) {
            res = -1;
            break;
        }
        token(r, &t, &n);
        if (!g.version && !token_is(t, n, "$MeshFormat")) {
            res = fail(r, "found %s, expected $MeshFormat (a Gmsh .msh file starts with it)",
                       quote(q, sizeof q, t, n));
        } else if (token_is(t, n, "$MeshFormat")) {
            long long type, size;
            if (g.version) {
                res = fail(r, "found a second $MeshFormat, expected one");
                break;
            }
            if ((res = end_of_line(r, "$MeshFormat")) != 0 ||
                (res = need_line(r, "the format line (version, file type, data size)")) != 0)
                break;
            token(r, &t, &n);
            if (token_is(t, n, "2.2") || token_is(t, n, "2.1") || token_is(t, n, "2.0") ||
                token_is(t, n, "2"))
                g.version = 2;
            else if (token_is(t, n, "4.1"))
                g.version = 4;
            else {
                res = fail(r, "found version %s, expected 2.2 or 4.1", quote(q, sizeof q, t, n));
                break;
            }
            if ((res = read_int(r, "the file type (0: ASCII, 1: binary)", 0, 1, &type)) != 0)
                break;
            g.binary = type == 1;
            /* binary: doubles and (version 4) size_t of 8 bytes, the only size Gmsh writes */
            res = g.binary ? read_int(r, "the data size of a binary file", 8, 8, &size)
                           : read_int(r, "the data size", 1, 64, &size);
            if (res == 0)
                res = end_of_line(r, "the data size");
            if (res == 0 && g.binary)
                res = bin_order(&g);
            if (res == 0)
                res = msh_word(&g, "$EndMeshFormat", " after the format line");
        } else if (token_is(t, n, "$Nodes")) {
            if (nodes)
                res = fail(r, "found a second $Nodes, expected one");
            else if ((res = end_of_line(r, "$Nodes")) == 0)
                res = msh_nodes(&g);
            nodes = 1;
        } else if (token_is(t, n, "$Elements")) {
            if (!nodes)
                res = fail(r, "found $Elements before $Nodes, expected $Nodes first");
            else if (elements)
                res = fail(r, "found a second $Elements, expected one");
            else if ((res = end_of_line(r, "$Elements")) == 0)
                res = msh_elements(&g);
            elements = 1;
        } else if (n > 1 && t[0] == '$' && !(n > 4 && memcmp(t, "$End", 4) == 0)) {
            /* Any other section ($PhysicalNames, $Entities, $NodeData, ...) is skipped to its
             * $End line. */
            char end[72], section[72];
            int start = r->line;
            snprintf(end, sizeof end, "$End%.*s", (int)(n - 1 > 64 ? 64 : n - 1), t + 1);
            snprintf(section, sizeof section, "%.*s", (int)(n > 64 ? 64 : n), t);
            if (g.binary) {
                res = msh_skip_binary(&g, end, section, start);
                if (res == 0)
                    res = msh_word(&g, end, "");
                continue;
            }
            for (;;) {
                const char *e;
                size_t en;
                if ((got = next_line(r)) <= 0) {
                    res = got < 0 ? -1
                                  : fail(r,
                                         "found the end of the file in section %s (line %d), "
                                         "expected %s",
                                         quote(q, sizeof q, t, n), start, end);
                    break;
                }
                token(r, &e, &en);
                if (token_is(e, en, end))
                    break;
            }
        } else {
            res = fail(r, "found %s, expected a section ($Nodes, $Elements, ...)",
                       quote(q, sizeof q, t, n));
        }
    }
    if (res == 0 && (!g.version || !nodes || !elements))
        res = fail(r, "found the end of the file, expected %s",
                   !g.version ? "$MeshFormat"
                   : !nodes   ? "a $Nodes section"
                              : "a $Elements section");
    if (res == 0 && b.m.num_triangles == 0 && b.m.num_tets == 0)
        res = fail(r, "found no triangles or tetrahedra, expected at least one (elements of type "
                      "2 or 4)");
    if (res == 0 && b.m.num_tets > 0)
        res = tet_surface(&b, err);
    free(g.tags);
    return finish(&b, res, out, err);
}

/* ---- files -------------------------------------------------------------------------------- */

/* Whether s ends in suffix (lower case), in any case. */
static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    if (n < k)
        return 0;
    for (size_t i = 0; i < k; ++i) {
        char c = s[n - k + i];
        if ((c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c) != suffix[i])
            return 0;
    }
    return 1;
}

static pbd_status read_text(const char *path, char **text, pbd_mesh_text *t, pbd_error *err)
{
    size_t len;
    pbd_status st = pbd_text_file_read(path, "a mesh", 1, PBD_ERR_SCENE, text, &len, err);
    t->name = path;
    t->text = *text;
    t->length = len;
    return st;
}

pbd_status pbd_mesh_load(const char *path, pbd_mesh *out, pbd_error *err)
{
    if (!path || !out)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "pbd_mesh_load: no path or no mesh");
    memset(out, 0, sizeof *out);
    char *text[3] = {NULL, NULL, NULL};
    pbd_mesh_text t[3];
    pbd_status st;
    if (ends_with(path, ".obj") || ends_with(path, ".msh")) {
        st = read_text(path, &text[0], &t[0], err);
        if (st == PBD_OK)
            st = ends_with(path, ".obj") ? pbd_mesh_parse_obj(&t[0], out, err)
                                         : pbd_mesh_parse_msh(&t[0], out, err);
        free(text[0]);
        return st;
    }
    if (!ends_with(path, ".node") && !ends_with(path, ".ele"))
        return pbd_error_set(err, PBD_ERR_SCENE,
                             "%s: found no known extension, expected .obj, .node, .ele or .msh",
                             path);
    /* TetGen: BASE.node, BASE.ele and, when it exists, BASE.face. */
    size_t base = strlen(path) - (ends_with(path, ".ele") ? 4 : 5);
    char *names = malloc(3 * (base + 6));
    if (!names)
        return pbd_error_set(err, PBD_ERR_MEMORY, "%s: out of memory", path);
    /* The part given as named; the others in upper case beside one named all in upper case
     * (BOX.ELE beside BOX.NODE), else in lower case. */
    int upper = 1, given = ends_with(path, ".ele") ? 1 : 0;
    for (const char *q = path + base + 1; *q; ++q)
        upper &= *q >= 'A' && *q <= 'Z';
    static const char *const ext[2][3] = {{".node", ".ele", ".face"}, {".NODE", ".ELE", ".FACE"}};
    for (int k = 0; k < 3; ++k)
        snprintf(names + k * (base + 6), base + 6, "%.*s%s", (int)base, path,
                 k == given ? path + base : ext[upper][k]);
    st = PBD_OK;
    for (int k = 0; k < 3 && st == PBD_OK; ++k) {
        pbd_error e = {0};
        st = read_text(names + k * (base + 6), &text[k], &t[k], k == 2 ? &e : err);
        if (k == 2 && st == PBD_ERR_IO && access(names + 2 * (base + 6), F_OK) != 0) {
            st = PBD_OK; /* no .face: the boundary is derived */
            text[2] = NULL;
        } else if (k == 2 && st != PBD_OK) {
            if (err)
                *err = e;
        }
    }
    if (st == PBD_OK)
        st = pbd_mesh_parse_tetgen(&t[0], &t[1], text[2] ? &t[2] : NULL, out, err);
    for (int k = 0; k < 3; ++k)
        free(text[k]);
    free(names);
    return st;
}

void pbd_mesh_free(pbd_mesh *m)
{
    if (!m)
        return;
    free(m->vertices);
    free(m->triangles);
    free(m->tets);
    memset(m, 0, sizeof *m);
}
