/* Mesh sequences of a run (app/export.h; formats in docs/exports.md). A frame is built in one
 * buffer and written with one fwrite (VTU: the header, the frame's points and velocities,
 * and the topology, which is the same every frame and built once). */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "app/export.h"
#include "app/output.h"

enum { VTK_VERTEX = 1, VTK_TRIANGLE = 5, VTK_TETRA = 10 };

/* series.pvd is rewritten after the first frame, then at most every PVD_INTERVAL seconds,
 * and always by pbd_export_finish. A rewrite per frame would grow with the square of the
 * frames, and on ext4 replacing a file by rename starts writing it to disk at once
 * (auto_da_alloc): per frame that cost more than writing the frame. */
#define PVD_INTERVAL 0.25

typedef struct buffer {
    char *p;
    size_t len, cap;
} buffer;

typedef struct export_slot {
    long frame;
    pbd_float4 *x, *v;         /* num_particles each */
    pbd_pending_read *pending; /* the read filling x and v, or NULL */
} export_slot;

struct pbd_export {
    pbd_export_format format;
    char *dir;
    const char *ext; /* of the frame files */
    int width;       /* digits of a frame number in a file name */
    long first, every, last;
    double dt;
    int n; /* particles */
    int num_bodies;
    pbd_body *bodies;
    int *body_of;                    /* each particle's body */
    int *tris;                       /* surface triangles, 3 each, grouped by body */
    int *tri_start;                  /* body b's are tris[3 tri_start[b] .. 3 tri_start[b + 1]) */
    float *normals;                  /* 3 per particle */
    int *vertex_start, *vertex_tris; /* the triangles at each vertex (list_vertex_triangles) */
    float *face_normals;             /* 3 per triangle */
    buffer buf;                      /* the frame being written */
    buffer scratch;                  /* VTU: a frame's raw array before it is blocked */
    buffer vtu_head, vtu_tail;       /* VTU: XML before the data; the topology blocks after it */
    buffer obj_elements;             /* OBJ: each body's faces or points (obj_prepare) */
    buffer ply_faces;                /* PLY: the faces, the same every frame */
    size_t *obj_start;
    long written; /* frames written */
    int failed;   /* a frame failed: nothing more is written */
    int finished; /* pbd_export_finish ran */
    int settled;  /* after a failure, series.pvd was made to list the frame files */
    char *path;   /* room for any file name in dir */
    size_t path_size;
    buffer pvd; /* series.pvd's DataSet lines, one per frame written */
    long pvd_listed;
    double pvd_time; /* when series.pvd was last rewritten, s */
    pbd_output pc2;
    long pc2_samples;
    long pc2_first; /* the cache's first frame: first, or an earlier run's it continues */
    /* Frames are written on a thread of their own, so that the solver steps on while a
     * frame goes to disk: the main thread copies a frame into a free slot (of two) and
     * queues it. Under mu: queued, head, stop, drop, failed, reported; werr is the
     * writer's until it has failed. */
    int threaded;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    export_slot slots[2];
    int head, queued; /* the queued frames are slots[head], slots[(head + 1) % 2] */
    int stop;         /* the writer ends once the queue is empty */
    int drop;         /* ... or at once */
    int reported;     /* the failure was returned to the caller */
    pbd_error werr;   /* the writer's failure */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int pbd_export_format_parse(const char *name)
{
    static const char *const names[] = {"obj", "ply", "vtk", "pc2"};
    for (int k = 0; k < 4; ++k)
        if (strcmp(name, names[k]) == 0)
            return k;
    return -1;
}

long pbd_export_frames(const pbd_export *e)
{
    return e ? e->written : 0;
}

/* ---- byte buffers ------------------------------------------------------------------------ */

static int reserve(buffer *b, size_t more)
{
    if (b->len + more <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p)
        return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

static int put_text(buffer *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int put_text(buffer *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || reserve(b, (size_t)n + 1) != 0)
        return -1;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

/* Little-endian stores, whatever the host's byte order. */
static char *put_u32(char *p, uint32_t v)
{
    p[0] = (char)(v & 0xff);
    p[1] = (char)(v >> 8 & 0xff);
    p[2] = (char)(v >> 16 & 0xff);
    p[3] = (char)(v >> 24 & 0xff);
    return p + 4;
}

static char *put_f32(char *p, float f)
{
    uint32_t v;
    memcpy(&v, &f, 4);
    return put_u32(p, v);
}

static char *put_u64(char *p, uint64_t v)
{
    p = put_u32(p, (uint32_t)(v & 0xffffffffu));
    return put_u32(p, (uint32_t)(v >> 32));
}

/* ---- text numbers for OBJ, faster than printf ------------------------------------------------ */

static char *put_uint(char *p, unsigned long v)
{
    char tmp[24];
    int k = 0;
    do {
        tmp[k++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (k)
        *p++ = tmp[--k];
    return p;
}

/* f as a decimal of `digits` significant digits (at most 9), trailing zeros dropped: with 9
 * it reads back as the same float. Any 9-digit decimal within one unit of its last digit of
 * f does (the spacing of 9-digit decimals, at most 1e-8 of the value, is under a float's
 * half ulp, 3e-8 of it), so the scaling in double needs no exact rounding. At most 16
 * characters. */
static char *put_float(char *p, float f, int digits)
{
    static const double pow10[] = {
        1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11, 1e12, 1e13,
        1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e23, 1e24, 1e25, 1e26, 1e27,
        1e28, 1e29, 1e30, 1e31, 1e32, 1e33, 1e34, 1e35, 1e36, 1e37, 1e38, 1e39, 1e40, 1e41,
        1e42, 1e43, 1e44, 1e45, 1e46, 1e47, 1e48, 1e49, 1e50, 1e51, 1e52, 1e53, 1e54, 1e55};
    double d = f;
    if (!isfinite(d))
        return p + sprintf(p, "%s", isnan(d) ? "nan" : d > 0 ? "inf" : "-inf");
    if (d == 0.0) {
        *p++ = '0';
        return p;
    }
    if (d < 0.0) {
        *p++ = '-';
        d = -d;
    }
    /* d = m 10^(e - digits + 1) with m of `digits` digits. Floats lie in [1.4e-45, 3.4e38]. */
    /* d is in [2^(be-1), 2^be): floor((be-1) log10 2) is log10(d) rounded down, or one
     * less (log10 itself costs more than the rest of the conversion). */
    int be = 0;
    frexp(d, &be);
    int e = (int)floor((be - 1) * 0.30102999566398120);
    uint64_t lo = (uint64_t)pow10[digits - 1], hi = (uint64_t)pow10[digits];
    uint64_t m = 0;
    for (int pass = 0; pass < 2; ++pass) {
        int s = digits - 1 - e;
        double scaled = s >= 0 ? d * pow10[s] : d / pow10[-s];
        m = (uint64_t)(scaled + 0.5);
        if (m >= hi)
            e++; /* the estimate was one low, or the rounding carried */
        else if (m < lo)
            e--;
        else
            break;
    }
    if (m >= hi)
        m = (m + 5) / 10;
    char dig[20];
    int nd = 0;
    for (uint64_t t = m; nd < digits; t /= 10)
        dig[digits - 1 - nd++] = (char)('0' + t % 10);
    while (nd > 1 && dig[nd - 1] == '0')
        nd--;
    if (e >= 0 && e < digits) { /* 123.456 */
        for (int k = 0; k <= e; ++k)
            *p++ = k < nd ? dig[k] : '0';
        if (nd > e + 1) {
            *p++ = '.';
            for (int k = e + 1; k < nd; ++k)
                *p++ = dig[k];
        }
    } else if (e < 0 && e >= -4) { /* 0.00123 */
        *p++ = '0';
        *p++ = '.';
        for (int k = -1; k > e; --k)
            *p++ = '0';
        for (int k = 0; k < nd; ++k)
            *p++ = dig[k];
    } else { /* 1.23e-07 */
        *p++ = dig[0];
        if (nd > 1) {
            *p++ = '.';
            for (int k = 1; k < nd; ++k)
                *p++ = dig[k];
        }
        *p++ = 'e';
        *p++ = e < 0 ? '-' : '+';
        int a = e < 0 ? -e : e;
        if (a < 10)
            *p++ = '0';
        p = put_uint(p, (unsigned long)a);
    }
    return p;
}

/* ---- the model's surfaces and tetrahedra ------------------------------------------------- */

/* Area-weighted vertex normals of the surface triangles; 0 where a particle has none. Each
 * triangle's normal (its cross product: twice its area long) is computed once, then each
 * vertex sums those of its triangles through a list built once (vertex_tris): adding into
 * the vertices triangle by triangle would chain every add through memory, since
 * neighbouring triangles share vertices. */
static void compute_normals(pbd_export *e, const pbd_float4 *x)
{
    int nt = e->tri_start[e->num_bodies];
    float *fn = e->face_normals;
    for (int t = 0; t < nt; ++t) {
        const int *q = e->tris + 3 * t;
        pbd_float4 a = x[q[0]], b = x[q[1]], c = x[q[2]];
        float ux = b.x - a.x, uy = b.y - a.y, uz = b.z - a.z;
        float vx = c.x - a.x, vy = c.y - a.y, vz = c.z - a.z;
        fn[3 * t] = uy * vz - uz * vy;
        fn[3 * t + 1] = uz * vx - ux * vz;
        fn[3 * t + 2] = ux * vy - uy * vx;
    }
    for (int i = 0; i < e->n; ++i) {
        float sx = 0.0f, sy = 0.0f, sz = 0.0f;
        for (int k = e->vertex_start[i]; k < e->vertex_start[i + 1]; ++k) {
            const float *f = fn + 3 * e->vertex_tris[k];
            sx += f[0];
            sy += f[1];
            sz += f[2];
        }
        float len = sqrtf(sx * sx + sy * sy + sz * sz);
        float s = len > 0.0f ? 1.0f / len : 0.0f;
        e->normals[3 * i] = sx * s;
        e->normals[3 * i + 1] = sy * s;
        e->normals[3 * i + 2] = sz * s;
    }
}

/* The triangles at each vertex, for compute_normals: vertex i's are
 * vertex_tris[vertex_start[i] .. vertex_start[i + 1]). */
static int list_vertex_triangles(pbd_export *e)
{
    int nt = e->tri_start[e->num_bodies];
    e->vertex_start = calloc((size_t)e->n + 1, sizeof *e->vertex_start);
    e->vertex_tris = malloc((size_t)(nt > 0 ? 3 * nt : 1) * sizeof *e->vertex_tris);
    e->face_normals = malloc((size_t)(nt > 0 ? 3 * nt : 1) * sizeof *e->face_normals);
    int *at = malloc(((size_t)e->n + 1) * sizeof *at);
    if (!e->vertex_start || !e->vertex_tris || !e->face_normals || !at) {
        free(at);
        return -1;
    }
    for (int k = 0; k < 3 * nt; ++k)
        e->vertex_start[e->tris[k] + 1]++;
    for (int i = 0; i < e->n; ++i)
        e->vertex_start[i + 1] += e->vertex_start[i];
    memcpy(at, e->vertex_start, ((size_t)e->n + 1) * sizeof *at);
    for (int k = 0; k < 3 * nt; ++k)
        e->vertex_tris[at[e->tris[k]]++] = k / 3;
    free(at);
    return 0;
}

/* Groups the model's surface triangles by body (a counting sort: each body's in the model's
 * order). */
static int group_triangles(pbd_export *e, const pbd_model *m)
{
    e->tri_start = calloc((size_t)e->num_bodies + 1, sizeof *e->tri_start);
    e->tris = malloc((size_t)(m->num_triangles > 0 ? m->num_triangles : 1) * 3 * sizeof *e->tris);
    if (!e->tri_start || !e->tris)
        return -1;
    for (int t = 0; t < m->num_triangles; ++t)
        e->tri_start[m->body[m->triangles[3 * t]] + 1]++;
    for (int b = 0; b < e->num_bodies; ++b)
        e->tri_start[b + 1] += e->tri_start[b];
    int *at = malloc((size_t)e->num_bodies * sizeof *at);
    if (!at)
        return -1;
    memcpy(at, e->tri_start, (size_t)e->num_bodies * sizeof *at);
    for (int t = 0; t < m->num_triangles; ++t) {
        int b = m->body[m->triangles[3 * t]];
        memcpy(e->tris + 3 * at[b]++, m->triangles + 3 * t, 3 * sizeof(int));
    }
    free(at);
    return 0;
}

static int cmp_tet(const void *pa, const void *pb)
{
    const int *a = pa, *b = pb;
    for (int k = 0; k < 4; ++k)
        if (a[k] != b[k])
            return a[k] < b[k] ? -1 : 1;
    return 0;
}

/* The tetrahedra of the volume and Neo-Hookean constraints, each once (a tet may carry
 * both), ordered as VTK wants: (a, b, c) turns counter-clockwise seen from d, by the
 * initial positions. Each entry is 8 ints: the sorted particles (the key), then the tet. */
static int collect_tets(const pbd_model *m, int **out, int *count)
{
    int nv = m->num_volume, nn = m->num_neo_hookean, n = 0;
    int *t = malloc((size_t)(nv + nn > 0 ? nv + nn : 1) * 8 * sizeof *t);
    if (!t)
        return -1;
    for (int k = 0; k < nv + nn; ++k) {
        int q[4];
        if (k < nv)
            memcpy(q, &m->volume[k].a, sizeof q);
        else
            memcpy(q, &m->neo_hookean[k - nv].a, sizeof q);
        const pbd_float4 *x = m->x;
        double u[3] = {x[q[1]].x - x[q[0]].x, x[q[1]].y - x[q[0]].y, x[q[1]].z - x[q[0]].z};
        double v[3] = {x[q[2]].x - x[q[0]].x, x[q[2]].y - x[q[0]].y, x[q[2]].z - x[q[0]].z};
        double w[3] = {x[q[3]].x - x[q[0]].x, x[q[3]].y - x[q[0]].y, x[q[3]].z - x[q[0]].z};
        double det = w[0] * (u[1] * v[2] - u[2] * v[1]) + w[1] * (u[2] * v[0] - u[0] * v[2]) +
                     w[2] * (u[0] * v[1] - u[1] * v[0]);
        if (det < 0.0) {
            int s = q[1];
            q[1] = q[2];
            q[2] = s;
        }
        int *r = t + 8 * n++;
        memcpy(r, q, sizeof q);
        memcpy(r + 4, q, sizeof q);
        for (int i = 1; i < 4; ++i) /* sort the key */
            for (int j = i; j > 0 && r[j - 1] > r[j]; --j) {
                int s = r[j];
                r[j] = r[j - 1];
                r[j - 1] = s;
            }
    }
    qsort(t, (size_t)n, 8 * sizeof *t, cmp_tet);
    int u = 0;
    for (int k = 0; k < n; ++k)
        if (u == 0 || cmp_tet(t + 8 * (u - 1), t + 8 * k) != 0)
            memmove(t + 8 * u++, t + 8 * k, 8 * sizeof *t);
    *out = t;
    *count = u;
    return 0;
}

/* ---- files --------------------------------------------------------------------------------- */

static const char *frame_path(pbd_export *e, long frame, const char *ext)
{
    snprintf(e->path, e->path_size, "%s/frame_%0*ld.%s", e->dir, e->width, frame, ext);
    return e->path;
}

/* Writes `n` parts to `path` through a temporary file renamed into place (not synced: see
 * pbd_export_finish). The message names the file and the frame. */
static pbd_status write_file(const char *path, long frame, const void *const *parts,
                             const size_t *sizes, int n, pbd_error *err)
{
    pbd_output o;
    pbd_status st = pbd_output_open(&o, path, err);
    for (int k = 0; st == PBD_OK && k < n; ++k)
        if (sizes[k] && fwrite(parts[k], 1, sizes[k], o.f) != sizes[k]) {
            int e = errno ? errno : EIO;
            pbd_output_abort(&o);
            st = pbd_error_set(err, PBD_ERR_IO, "%s: write failed: %s", path, strerror(e));
        }
    if (st == PBD_OK)
        st = pbd_output_commit_unsynced(&o, err);
    if (st != PBD_OK && err) {
        char msg[sizeof err->message];
        snprintf(msg, sizeof msg, "%s", err->message);
        pbd_error_set(err, st, "%s (frame %ld)", msg, frame);
    }
    return st;
}

/* The OBJ elements of each body (its faces, or a point element), the same every frame:
 * made once, copied into every frame. Body b's are obj_elements[obj_start[b] ..
 * obj_start[b + 1]). */
static int obj_prepare(pbd_export *e)
{
    buffer *b = &e->obj_elements;
    e->obj_start = malloc(((size_t)e->num_bodies + 1) * sizeof *e->obj_start);
    if (!e->obj_start)
        return -1;
    for (int bi = 0; bi < e->num_bodies; ++bi) {
        const pbd_body *body = &e->bodies[bi];
        e->obj_start[bi] = b->len;
        int t0 = e->tri_start[bi], t1 = e->tri_start[bi + 1];
        if (reserve(b, (size_t)(t1 - t0) * 72 + (size_t)body->count * 12 + 2) != 0)
            return -1;
        char *p = b->p + b->len;
        if (t1 == t0) {
            /* Points: no faces, so an element that names the vertices (MeshLab and
             * Blender import the vertices either way). */
            *p++ = 'p';
            for (int i = body->first; i < body->first + body->count; ++i) {
                *p++ = ' ';
                p = put_uint(p, (unsigned long)i + 1);
            }
            *p++ = '\n';
        }
        for (int t = t0; t < t1; ++t) {
            *p++ = 'f';
            for (int c = 0; c < 3; ++c) {
                unsigned long v = (unsigned long)e->tris[3 * t + c] + 1;
                *p++ = ' ';
                p = put_uint(p, v);
                *p++ = '/';
                *p++ = '/';
                p = put_uint(p, v);
            }
            *p++ = '\n';
        }
        b->len = (size_t)(p - b->p);
    }
    e->obj_start[e->num_bodies] = b->len;
    return 0;
}

static int obj_frame(pbd_export *e, long frame, const pbd_float4 *x, int one_object)
{
    buffer *b = &e->buf;
    b->len = 0;
    if (!e->obj_start && obj_prepare(e) != 0)
        return -1;
    compute_normals(e, x);
    if (put_text(b, "# pbd frame %ld, time %.9g s\n", frame, (double)frame * e->dt) != 0 ||
        (one_object && put_text(b, "o pbd\n") != 0))
        return -1;
    for (int bi = 0; bi < e->num_bodies; ++bi) {
        const pbd_body *body = &e->bodies[bi];
        size_t elements = e->obj_start[bi + 1] - e->obj_start[bi];
        /* A name ending in a backslash would continue the line in a reader of OBJ's line
         * continuations: it gets a '_' after it. */
        size_t nl = strlen(body->name);
        int escaped = nl > 0 && body->name[nl - 1] == '\\';
        if (put_text(b, "%s %s%s\n", one_object ? "g" : "o", body->name, escaped ? "_" : "") != 0 ||
            reserve(b, (size_t)body->count * 2 * 56 + elements) != 0)
            return -1;
        char *p = b->p + b->len;
        for (int i = body->first; i < body->first + body->count; ++i) {
            *p++ = 'v';
            for (int c = 0; c < 3; ++c) {
                *p++ = ' ';
                p = put_float(p, (&x[i].x)[c], 9);
            }
            *p++ = '\n';
        }
        for (int i = body->first; i < body->first + body->count; ++i) {
            *p++ = 'v';
            *p++ = 'n';
            for (int c = 0; c < 3; ++c) {
                *p++ = ' ';
                p = put_float(p, e->normals[3 * i + c], 6);
            }
            *p++ = '\n';
        }
        memcpy(p, e->obj_elements.p + e->obj_start[bi], elements);
        b->len = (size_t)(p - b->p) + elements;
    }
    return 0;
}

static int ply_frame(pbd_export *e, long frame, const pbd_float4 *x)
{
    buffer *b = &e->buf;
    b->len = 0;
    compute_normals(e, x);
    int nt = e->tri_start[e->num_bodies];
    /* The faces are the same every frame: made once, written after the vertices. Their
     * indices are 16-bit where the vertices allow (a quarter off a cloth's frame). */
    int narrow = e->n <= 65536;
    size_t face_bytes = narrow ? 7 : 13;
    if (e->ply_faces.len == 0 && nt > 0) {
        if (reserve(&e->ply_faces, (size_t)nt * face_bytes) != 0)
            return -1;
        char *q = e->ply_faces.p;
        for (int t = 0; t < nt; ++t) {
            *q++ = 3;
            for (int c = 0; c < 3; ++c) {
                uint32_t i = (uint32_t)e->tris[3 * t + c];
                if (narrow) {
                    *q++ = (char)(i & 0xff);
                    *q++ = (char)(i >> 8);
                } else {
                    q = put_u32(q, i);
                }
            }
        }
        e->ply_faces.len = (size_t)nt * face_bytes;
    }
    if (put_text(b,
                 "ply\nformat binary_little_endian 1.0\ncomment pbd frame %ld, time %.9g s\n"
                 "element vertex %d\nproperty float x\nproperty float y\nproperty float z\n"
                 "property float nx\nproperty float ny\nproperty float nz\nelement face %d\n"
                 "property list uchar %s vertex_indices\nend_header\n",
                 frame, (double)frame * e->dt, e->n, nt, narrow ? "uint16" : "int") != 0 ||
        reserve(b, (size_t)e->n * 24) != 0)
        return -1;
    char *p = b->p + b->len;
    for (int i = 0; i < e->n; ++i) {
        p = put_f32(p, x[i].x);
        p = put_f32(p, x[i].y);
        p = put_f32(p, x[i].z);
        p = put_f32(p, e->normals[3 * i]);
        p = put_f32(p, e->normals[3 * i + 1]);
        p = put_f32(p, e->normals[3 * i + 2]);
    }
    b->len = (size_t)(p - b->p);
    return 0;
}

/* Appended raw data: each block is its size (UInt64) and its bytes. The points and the
 * velocities come first, at offsets 0 and 8 + 12 n; the topology blocks follow. */
/* VTU arrays are zlib-compressed (vtkZLibDataCompressor, UInt64 headers): an array is
 * [blocks, block size, the last block's size (0: full), each block's compressed size], then
 * the blocks, each a zlib stream. What is the same every frame (the body ids and the cells,
 * more than half of a cloth's frame) is compressed once; the points and velocities are
 * written in stored (uncompressed) deflate blocks, which cost a copy and a checksum. */
#define VTU_STORED_BLOCK 65535u /* the most a stored deflate block holds */

static uint64_t vtu_stored_size(uint64_t n)
{
    uint64_t blocks = (n + VTU_STORED_BLOCK - 1) / VTU_STORED_BLOCK;
    return 8 * (3 + blocks) + n + 11 * blocks; /* zlib header 2, block header 5, adler32 4 */
}

/* Writes the n bytes at src as a stored array at p; returns its end. */
static char *vtu_put_stored(char *p, const unsigned char *src, uint64_t n)
{
    uint64_t blocks = (n + VTU_STORED_BLOCK - 1) / VTU_STORED_BLOCK;
    p = put_u64(p, blocks);
    p = put_u64(p, VTU_STORED_BLOCK);
    p = put_u64(p, n % VTU_STORED_BLOCK);
    for (uint64_t k = 0; k < blocks; ++k) {
        uint64_t len =
            k + 1 < blocks || n % VTU_STORED_BLOCK == 0 ? VTU_STORED_BLOCK : n % VTU_STORED_BLOCK;
        p = put_u64(p, len + 11);
    }
    for (uint64_t k = 0; k < blocks; ++k, src += VTU_STORED_BLOCK) {
        unsigned len = k + 1 < blocks || n % VTU_STORED_BLOCK == 0
                           ? VTU_STORED_BLOCK
                           : (unsigned)(n % VTU_STORED_BLOCK);
        unsigned char h[7] = {0x78,
                              0x01,
                              0x01,
                              (unsigned char)(len & 0xff),
                              (unsigned char)(len >> 8),
                              (unsigned char)(~len & 0xff),
                              (unsigned char)((~len >> 8) & 0xff)};
        memcpy(p, h, sizeof h);
        memcpy(p + sizeof h, src, len);
        p += sizeof h + len;
        uLong a = adler32(adler32(0L, Z_NULL, 0), src, len);
        unsigned char t[4] = {(unsigned char)(a >> 24), (unsigned char)(a >> 16),
                              (unsigned char)(a >> 8), (unsigned char)a};
        memcpy(p, t, 4);
        p += 4;
    }
    return p;
}

/* Appends the n bytes at src to b as one compressed block, with its header. */
static int vtu_put_compressed(buffer *b, const unsigned char *src, uint64_t n)
{
    uLongf bound = compressBound((uLong)n);
    if (reserve(b, 32 + bound) != 0)
        return -1;
    char *p = b->p + b->len;
    uLongf len = bound;
    if (n > 0 && compress2((Bytef *)p + 32, &len, src, (uLong)n, Z_DEFAULT_COMPRESSION) != Z_OK)
        return -1;
    p = put_u64(p, n > 0);
    p = put_u64(p, n);
    p = put_u64(p, 0);
    if (n > 0)
        p = put_u64(p, len);
    if (n == 0)
        len = 0;
    else
        memmove(p, b->p + b->len + 32, len);
    b->len = (size_t)(p - b->p) + len;
    return 0;
}

static int vtu_prepare(pbd_export *e, const pbd_model *m)
{
    int *tets = NULL, nt = 0;
    int *body_tets = calloc((size_t)e->num_bodies, sizeof *body_tets);
    if (!body_tets || collect_tets(m, &tets, &nt) != 0) {
        free(body_tets);
        return -1;
    }
    for (int k = 0; k < nt; ++k)
        body_tets[m->body[tets[8 * k + 4]]] = 1;
    long cells = nt, conn = 4L * nt;
    for (int b = 0; b < e->num_bodies; ++b) {
        int tris = e->tri_start[b + 1] - e->tri_start[b];
        if (body_tets[b])
            continue;
        cells += tris ? tris : e->bodies[b].count;
        conn += tris ? 3L * tris : e->bodies[b].count;
    }
    size_t n = (size_t)e->n;
    uint64_t sz_pts = 12 * n, sz_body = 4 * n, sz_conn = 4 * (uint64_t)conn,
             sz_off = 4 * (uint64_t)cells, sz_types = (uint64_t)cells;
    /* The arrays that stay the same, raw: body ids, connectivity, offsets, types. */
    char *raw = malloc(sz_body + sz_conn + sz_off + sz_types + 1);
    if (!raw) {
        free(tets);
        free(body_tets);
        return -1;
    }
    char *p = raw;
    for (int i = 0; i < e->n; ++i)
        p = put_u32(p, (uint32_t)m->body[i]);
    char *off = raw + sz_body + sz_conn, *types = off + sz_off;
    uint32_t end_at = 0;
#define CELL(count, type)                                                                          \
    do {                                                                                           \
        end_at += (count);                                                                         \
        off = put_u32(off, end_at);                                                                \
        *types++ = (char)(type);                                                                   \
    } while (0)
    for (int k = 0; k < nt; ++k) {
        for (int c = 0; c < 4; ++c)
            p = put_u32(p, (uint32_t)tets[8 * k + 4 + c]);
        CELL(4, VTK_TETRA);
    }
    for (int b = 0; b < e->num_bodies; ++b) {
        if (body_tets[b])
            continue;
        int t0 = e->tri_start[b], t1 = e->tri_start[b + 1];
        for (int t = t0; t < t1; ++t) {
            for (int c = 0; c < 3; ++c)
                p = put_u32(p, (uint32_t)e->tris[3 * t + c]);
            CELL(3, VTK_TRIANGLE);
        }
        if (t1 == t0)
            for (int i = e->bodies[b].first; i < e->bodies[b].first + e->bodies[b].count; ++i) {
                p = put_u32(p, (uint32_t)i);
                CELL(1, VTK_VERTEX);
            }
    }
#undef CELL
    free(tets);
    free(body_tets);
    /* The tail: the four arrays compressed, each after the one before, then the end. */
    const unsigned char *r = (const unsigned char *)raw;
    uint64_t at[5];
    buffer *t = &e->vtu_tail;
    static const char end[] = "\n  </AppendedData>\n</VTKFile>\n";
    int rc = 0;
    const uint64_t sizes[4] = {sz_body, sz_conn, sz_off, sz_types};
    for (int k = 0; k < 4 && rc == 0; ++k) {
        at[k] = t->len;
        rc = vtu_put_compressed(t, r, sizes[k]);
        r += sizes[k];
    }
    at[4] = t->len;
    free(raw);
    if (rc != 0 || reserve(t, sizeof end) != 0)
        return -1;
    memcpy(t->p + t->len, end, sizeof end - 1);
    t->len += sizeof end - 1;
    /* Offsets into the appended data: points, velocities, then the tail's arrays. */
    uint64_t o_vel = vtu_stored_size(sz_pts), o_tail = 2 * vtu_stored_size(sz_pts);
    return put_text(
        &e->vtu_head,
        "<?xml version=\"1.0\"?>\n"
        "<VTKFile type=\"UnstructuredGrid\" version=\"1.0\" byte_order=\"LittleEndian\" "
        "header_type=\"UInt64\" compressor=\"vtkZLibDataCompressor\">\n"
        "  <UnstructuredGrid>\n"
        "    <Piece NumberOfPoints=\"%d\" NumberOfCells=\"%ld\">\n"
        "      <PointData Vectors=\"velocity\" Scalars=\"body\">\n"
        "        <DataArray type=\"Float32\" Name=\"velocity\" NumberOfComponents=\"3\" "
        "format=\"appended\" offset=\"%llu\"/>\n"
        "        <DataArray type=\"Int32\" Name=\"body\" format=\"appended\" offset=\"%llu\"/>\n"
        "      </PointData>\n"
        "      <Points>\n"
        "        <DataArray type=\"Float32\" Name=\"Points\" NumberOfComponents=\"3\" "
        "format=\"appended\" offset=\"0\"/>\n"
        "      </Points>\n"
        "      <Cells>\n"
        "        <DataArray type=\"Int32\" Name=\"connectivity\" format=\"appended\" "
        "offset=\"%llu\"/>\n"
        "        <DataArray type=\"Int32\" Name=\"offsets\" format=\"appended\" offset=\"%llu\"/>\n"
        "        <DataArray type=\"UInt8\" Name=\"types\" format=\"appended\" offset=\"%llu\"/>\n"
        "      </Cells>\n"
        "    </Piece>\n"
        "  </UnstructuredGrid>\n"
        "  <AppendedData encoding=\"raw\">\n"
        "   _",
        e->n, cells, (unsigned long long)o_vel, (unsigned long long)(o_tail + at[0]),
        (unsigned long long)(o_tail + at[1]), (unsigned long long)(o_tail + at[2]),
        (unsigned long long)(o_tail + at[3]));
}

/* The frame's points and velocities as stored arrays (e->scratch holds the raw floats). */
static int vtu_frame(pbd_export *e, const pbd_float4 *x, const pbd_float4 *v)
{
    buffer *b = &e->buf, *s = &e->scratch;
    size_t n = (size_t)e->n;
    b->len = s->len = 0;
    if (reserve(b, 2 * vtu_stored_size(12 * (uint64_t)n)) != 0 || reserve(s, 12 * n) != 0)
        return -1;
    char *p = b->p;
    for (int q = 0; q < 2; ++q) {
        const pbd_float4 *a = q ? v : x;
        char *r = s->p;
        for (size_t i = 0; i < n; ++i) {
            r = put_f32(r, a[i].x);
            r = put_f32(r, a[i].y);
            r = put_f32(r, a[i].z);
        }
        p = vtu_put_stored(p, (const unsigned char *)s->p, 12 * (uint64_t)n);
    }
    b->len = (size_t)(p - b->p);
    return 0;
}

/* Rewrites series.pvd listing the frames written so far. */
static pbd_status pvd_write(pbd_export *e, int sync, pbd_error *err)
{
    static const char head[] = "<?xml version=\"1.0\"?>\n"
                               "<VTKFile type=\"Collection\" version=\"0.1\" "
                               "byte_order=\"LittleEndian\">\n"
                               "  <Collection>\n";
    static const char tail[] = "  </Collection>\n</VTKFile>\n";
    snprintf(e->path, e->path_size, "%s/series.pvd", e->dir);
    pbd_output o;
    pbd_status st = pbd_output_open(&o, e->path, err);
    if (st != PBD_OK)
        return st;
    fwrite(head, 1, sizeof head - 1, o.f);
    fwrite(e->pvd.p, 1, e->pvd.len, o.f);
    fwrite(tail, 1, sizeof tail - 1, o.f);
    st = sync ? pbd_output_commit(&o, err) : pbd_output_commit_unsynced(&o, err);
    if (st == PBD_OK) {
        e->pvd_listed = e->written;
        e->pvd_time = now_s();
    }
    return st;
}

static void pc2_header(char *h, int points, long first, long every, long samples)
{
    memcpy(h, "POINTCACHE2", 12); /* with its '\0' */
    char *p = put_u32(h + 12, 1);
    p = put_u32(p, (uint32_t)points);
    p = put_f32(p, (float)first);
    p = put_f32(p, (float)every);
    put_u32(p, (uint32_t)samples);
}

/* Writes one frame (on the writer thread). On failure the frame's temporary file is gone
 * and the message names the file and the frame. */
static pbd_status write_frame(pbd_export *e, long frame, const pbd_float4 *x, const pbd_float4 *v,
                              pbd_error *err)
{
    int bad = 0;
    pbd_status st = PBD_OK;
    switch (e->format) {
    case PBD_EXPORT_OBJ:
    case PBD_EXPORT_PLY:
        bad = e->format == PBD_EXPORT_OBJ ? obj_frame(e, frame, x, 0) : ply_frame(e, frame, x);
        if (!bad)
            st = write_file(frame_path(e, frame, e->ext), frame,
                            (const void *[]){e->buf.p, e->ply_faces.p},
                            (size_t[]){e->buf.len, e->ply_faces.len}, 2, err);
        break;
    case PBD_EXPORT_VTK:
        bad = vtu_frame(e, x, v);
        if (!bad)
            st = write_file(frame_path(e, frame, "vtu"), frame,
                            (const void *[]){e->vtu_head.p, e->buf.p, e->vtu_tail.p},
                            (size_t[]){e->vtu_head.len, e->buf.len, e->vtu_tail.len}, 3, err);
        break;
    case PBD_EXPORT_PC2:
        if (e->written == 0 && (bad = obj_frame(e, frame, x, 1)) == 0)
            st = write_file(frame_path(e, frame, "obj"), frame, (const void *[]){e->buf.p},
                            (size_t[]){e->buf.len}, 1, err);
        if (st == PBD_OK && !bad) {
            size_t n = 12 * (size_t)e->n;
            e->buf.len = 0;
            bad = reserve(&e->buf, n);
            if (!bad) {
                char *p = e->buf.p;
                for (int i = 0; i < e->n; ++i) {
                    p = put_f32(p, x[i].x);
                    p = put_f32(p, x[i].y);
                    p = put_f32(p, x[i].z);
                }
                errno = 0;
                if (fwrite(e->buf.p, 1, n, e->pc2.f) != n || fflush(e->pc2.f) != 0) {
                    int en = errno ? errno : EIO;
                    st = pbd_error_set(err, PBD_ERR_IO, "%s: write failed: %s (frame %ld)",
                                       e->pc2.path, strerror(en), frame);
                } else {
                    e->pc2_samples++;
                }
            }
        }
        break;
    }
    if (bad)
        st = pbd_error_set(err, PBD_ERR_MEMORY, "%s: out of memory (frame %ld)", e->dir, frame);
    if (st != PBD_OK) {
        pbd_output_abort(&e->pc2);
        return st;
    }
    e->written++;
    if (e->format == PBD_EXPORT_VTK) {
        if (put_text(&e->pvd,
                     "    <DataSet timestep=\"%.9g\" group=\"\" part=\"0\" "
                     "file=\"frame_%0*ld.vtu\"/>\n",
                     (double)frame * e->dt, e->width, frame) != 0)
            return pbd_error_set(err, PBD_ERR_MEMORY, "%s: out of memory (frame %ld)", e->dir,
                                 frame);
        if ((e->pvd_listed == 0 || now_s() - e->pvd_time >= PVD_INTERVAL) &&
            (st = pvd_write(e, 0, err)) != PBD_OK) {
            /* A frame counts once it is listed: series.pvd keeps naming exactly the frame
             * files in the folder. */
            e->written--;
            remove(frame_path(e, frame, "vtu"));
            char msg[sizeof err->message];
            snprintf(msg, sizeof msg, "%s", err->message);
            return pbd_error_set(err, st, "%s (frame %ld)", msg, frame);
        }
    }
    return PBD_OK;
}

/* The run's guard for a frame read back to be exported (the loop does not wait for the
 * device then): a position or velocity that is not finite, or beyond PBD_MAX_COORD, stops
 * the export before the frame is written, with the run's message. */
static pbd_status check_frame(pbd_export *e, long frame, const pbd_float4 *x, const pbd_float4 *v,
                              pbd_error *err)
{
    int i = pbd_state_first_bad(x, v, 0, e->n);
    if (i < 0)
        return PBD_OK;
    const pbd_body *b = &e->bodies[e->body_of[i]];
    return pbd_error_set(err, PBD_ERR_MODEL,
                         "frame %ld: body %d (%s), particle %d: position (%g, %g, %g) m, "
                         "velocity (%g, %g, %g) m/s: not finite or beyond %g; stopping, no "
                         "output files written but the frames exported before it",
                         frame, e->body_of[i], b->name, i - b->first, (double)x[i].x,
                         (double)x[i].y, (double)x[i].z, (double)v[i].x, (double)v[i].y,
                         (double)v[i].z, (double)PBD_MAX_COORD);
}

/* The writer thread: writes the queued frames in order until told to stop. After a
 * failure it writes nothing more. */
static void *writer(void *arg)
{
    pbd_export *e = arg;
    pthread_mutex_lock(&e->mu);
    for (;;) {
        while (e->queued == 0 && !e->stop)
            pthread_cond_wait(&e->cv, &e->mu);
        if (e->queued == 0 || e->drop)
            break;
        export_slot *s = &e->slots[e->head];
        int failed = e->failed;
        pthread_mutex_unlock(&e->mu);
        pbd_error rerr;
        pbd_status st = pbd_pending_read_wait(s->pending, failed ? &rerr : &e->werr);
        s->pending = NULL;
        if (!failed && st == PBD_OK)
            st = check_frame(e, s->frame, s->x, s->v, &e->werr);
        if (!failed && st == PBD_OK)
            st = write_frame(e, s->frame, s->x, s->v, &e->werr);
        pthread_mutex_lock(&e->mu);
        e->failed |= st != PBD_OK;
        e->head = (e->head + 1) % 2;
        e->queued--;
        pthread_cond_broadcast(&e->cv);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

/* A frame file found in the export folder: its frame and the digits of its name. */
typedef struct found_frame {
    long frame;
    int digits;
} found_frame;

static int cmp_found(const void *a, const void *b)
{
    long x = ((const found_frame *)a)->frame, y = ((const found_frame *)b)->frame;
    return (x > y) - (x < y);
}

static uint32_t get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A run resumed at frame `first` into a folder holding the point cache of the run before
 * it: that cache's samples up to the frame before `first` are copied into this run's
 * (open, after its header), which then continues it. A cache that does not end at
 * `first` on this run's grid, or with other particles, would be lost under the new one:
 * refused. No cache there: this run's starts at `first`. */
static pbd_status pc2_continue(pbd_export *e, pbd_error *err)
{
    FILE *f = fopen(e->path, "rb");
    if (!f)
        return errno == ENOENT ? PBD_OK
                               : pbd_error_set(err, PBD_ERR_IO, "%s: cannot read: %s", e->path,
                                               strerror(errno));
    unsigned char h[32];
    int ok = fread(h, 1, sizeof h, f) == sizeof h && memcmp(h, "POINTCACHE2", 12) == 0 &&
             get_u32(h + 12) == 1;
    uint32_t points = ok ? get_u32(h + 16) : 0, samples = ok ? get_u32(h + 28) : 0, u;
    float start = 0.0f, rate = 0.0f;
    if (ok) {
        u = get_u32(h + 20);
        memcpy(&start, &u, 4);
        u = get_u32(h + 24);
        memcpy(&rate, &u, 4);
    }
    ok = ok && fabsf(start) <= 1e15f; /* frames as a long, exactly (float, so whole) */
    /* its frames: start, start + rate, ..., the last; this run's first must be the next one
     * or its last (written again, the same state) */
    long s0 = (long)start, next = s0 + (long)samples * e->every;
    long keep = next == e->first ? (long)samples : next - e->every == e->first ? samples - 1L : -1L;
    if (!ok || points != (uint32_t)e->n || rate != (float)e->every || (float)s0 != start ||
        samples == 0 || keep < 0) {
        fclose(f);
        if (!ok)
            return pbd_error_set(err, PBD_ERR_IO,
                                 "%s: found a file that is not a point cache, expected the cache "
                                 "of the run this one continues (or none): export into another "
                                 "folder",
                                 e->path);
        return pbd_error_set(err, PBD_ERR_IO,
                             "%s: found a cache of %u points, frames %g every %g (%u samples), "
                             "expected one of %d points every %ld ending at frame %ld or %ld, "
                             "which this run continues from the checkpoint's: export into "
                             "another folder",
                             e->path, points, (double)start, (double)rate, samples, e->n, e->every,
                             e->first - e->every, e->first);
    }
    size_t bytes = (size_t)keep * (size_t)e->n * 12, done = 0;
    char chunk[65536];
    while (done < bytes) {
        size_t want = bytes - done < sizeof chunk ? bytes - done : sizeof chunk;
        size_t got = fread(chunk, 1, want, f);
        if (got != want || fwrite(chunk, 1, got, e->pc2.f) != got) {
            int en = ferror(f) ? errno : 0;
            fclose(f);
            return pbd_error_set(err, PBD_ERR_IO, "%s: %s", got != want ? e->path : e->pc2.path,
                                 got != want ? (en ? strerror(en) : "shorter than its header says")
                                             : strerror(errno));
        }
        done += got;
    }
    fclose(f);
    e->pc2_samples = keep;
    e->pc2_first = s0;
    return PBD_OK;
}

/* A run resumed at frame `first`: series.pvd lists the folder's frame files before it too
 * (frame_N.vtu, N < first), so that runs continued from checkpoints into one folder read as
 * one series. */
static int pvd_earlier(pbd_export *e)
{
    DIR *d = opendir(e->dir);
    if (!d)
        return 0;
    found_frame *frames = NULL;
    size_t n = 0, cap = 0;
    int bad = 0;
    for (struct dirent *de; !bad && (de = readdir(d)) != NULL;) {
        const char *name = de->d_name;
        size_t len = strlen(name);
        if (len < 16 || len > 30 || strncmp(name, "frame_", 6) != 0 ||
            strcmp(name + len - 4, ".vtu") != 0)
            continue;
        long frame = 0;
        size_t k = 6;
        for (; k < len - 4 && name[k] >= '0' && name[k] <= '9'; ++k)
            frame = frame * 10 + (name[k] - '0');
        if (k != len - 4 || k - 6 > 18 || frame >= e->first)
            continue;
        if (n == cap) {
            found_frame *grown = realloc(frames, (cap ? 2 * cap : 64) * sizeof *frames);
            bad = !grown;
            if (grown)
                frames = grown, cap = cap ? 2 * cap : 64;
        }
        if (!bad)
            frames[n++] = (found_frame){frame, (int)(k - 6)};
    }
    closedir(d);
    if (n > 1)
        qsort(frames, n, sizeof *frames, cmp_found);
    /* One line a frame: of files with names of two widths (runs of other lengths), the one
     * this run's would have, else the first. */
    for (size_t k = 0; k < n && !bad;) {
        size_t pick = k, j = k;
        for (; j < n && frames[j].frame == frames[k].frame; ++j)
            if (frames[j].digits == e->width)
                pick = j;
        bad = put_text(&e->pvd,
                       "    <DataSet timestep=\"%.9g\" group=\"\" part=\"0\" "
                       "file=\"frame_%0*ld.vtu\"/>\n",
                       (double)frames[pick].frame * e->dt, frames[pick].digits,
                       frames[pick].frame) != 0;
        k = j;
    }
    free(frames);
    return bad;
}

/* ---- the interface ------------------------------------------------------------------------- */

pbd_status pbd_export_open(pbd_export **out, const char *dir, pbd_export_format format,
                           const pbd_model *m, float dt, long first, long every, long last,
                           pbd_error *err)
{
    *out = NULL;
    struct stat st;
    if (stat(dir, &st) != 0) {
        if (errno != ENOENT || mkdir(dir, 0777) != 0)
            return pbd_error_set(err, PBD_ERR_IO, "%s: cannot create the export folder: %s", dir,
                                 strerror(errno));
    } else if (!S_ISDIR(st.st_mode)) {
        return pbd_error_set(err, PBD_ERR_IO, "%s: found a file, expected a folder to export to",
                             dir);
    }
    /* Whether files can be made there, before the run rather than at its first frame (a
     * permission check would pass for root on a read-only folder). */
    size_t path_size = strlen(dir) + 64;
    char *probe = malloc(path_size);
    if (!probe)
        return pbd_error_set(err, PBD_ERR_MEMORY, "%s: out of memory", dir);
    snprintf(probe, path_size, "%s/.pbd-export.XXXXXX", dir);
    int fd = mkstemp(probe);
    if (fd < 0) {
        int e = errno;
        free(probe);
        return pbd_error_set(err, PBD_ERR_IO, "%s: cannot write to the export folder: %s", dir,
                             strerror(e));
    }
    close(fd);
    remove(probe);
    free(probe);

    pbd_export *e = calloc(1, sizeof *e);
    if (!e)
        return pbd_error_set(err, PBD_ERR_MEMORY, "%s: out of memory", dir);
    e->format = format;
    e->ext = format == PBD_EXPORT_PLY ? "ply" : format == PBD_EXPORT_VTK ? "vtu" : "obj";
    e->first = first;
    e->every = every;
    e->last = last;
    e->dt = dt;
    e->n = m->num_particles;
    e->num_bodies = m->num_bodies;
    e->width = 6;
    for (long t = 1000000; t <= last && e->width < 19; t *= 10)
        e->width++;
    e->path_size = strlen(dir) + 64;
    e->dir = strdup(dir);
    e->path = malloc(e->path_size);
    e->bodies = malloc((size_t)m->num_bodies * sizeof *e->bodies);
    e->body_of = malloc((size_t)m->num_particles * sizeof *e->body_of);
    e->normals = malloc((size_t)m->num_particles * 3 * sizeof *e->normals);
    if (e->bodies)
        memcpy(e->bodies, m->bodies, (size_t)m->num_bodies * sizeof *e->bodies);
    if (e->body_of)
        memcpy(e->body_of, m->body, (size_t)m->num_particles * sizeof *e->body_of);
    if (!e->dir || !e->path || !e->bodies || !e->body_of || !e->normals ||
        group_triangles(e, m) != 0 || list_vertex_triangles(e) != 0 ||
        (format == PBD_EXPORT_VTK && vtu_prepare(e, m) != 0)) {
        pbd_export_free(e);
        return pbd_error_set(err, PBD_ERR_MEMORY, "%s: out of memory", dir);
    }
    if (format == PBD_EXPORT_VTK && first > 0 && pvd_earlier(e) != 0) {
        pbd_export_free(e);
        return pbd_error_set(err, PBD_ERR_MEMORY, "%s: out of memory", dir);
    }
    e->pc2_first = first;
    if (format == PBD_EXPORT_PC2) {
        snprintf(e->path, e->path_size, "%s/positions.pc2", dir);
        char h[32];
        pc2_header(h, e->n, first, every, 0);
        if (pbd_output_open(&e->pc2, e->path, err) != PBD_OK) {
            pbd_export_free(e);
            return err ? err->status : PBD_ERR_IO;
        }
        fwrite(h, 1, sizeof h, e->pc2.f);
        pbd_status cont = first > 0 ? pc2_continue(e, err) : PBD_OK;
        if (cont != PBD_OK) {
            pbd_export_free(e);
            return cont;
        }
    }
    for (int k = 0; k < 2; ++k) {
        e->slots[k].x = malloc((size_t)e->n * sizeof(pbd_float4));
        e->slots[k].v = malloc((size_t)e->n * sizeof(pbd_float4));
        if (!e->slots[k].x || !e->slots[k].v) {
            pbd_export_free(e);
            return pbd_error_set(err, PBD_ERR_MEMORY, "%s: out of memory", dir);
        }
    }
    /* The writer takes no signal: they are the main thread's, which stops the run. */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    int rc = pthread_mutex_init(&e->mu, NULL);
    if (rc == 0 && (rc = pthread_cond_init(&e->cv, NULL)) != 0)
        pthread_mutex_destroy(&e->mu);
    if (rc == 0 && (rc = pthread_create(&e->thread, NULL, writer, e)) != 0) {
        pthread_cond_destroy(&e->cv);
        pthread_mutex_destroy(&e->mu);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pbd_export_free(e);
        return pbd_error_set(err, PBD_ERR_MEMORY, "%s: cannot start the writer thread: %s", dir,
                             strerror(rc));
    }
    e->threaded = 1;
    *out = e;
    return PBD_OK;
}

/* Waits for a free slot; returns its index, or -1 with the writer's failure in err. */
static int free_slot(pbd_export *e, pbd_error *err)
{
    pthread_mutex_lock(&e->mu);
    while (e->queued == 2 && !e->failed)
        pthread_cond_wait(&e->cv, &e->mu);
    if (e->failed || e->stop) {
        pbd_status st = e->failed ? e->werr.status : PBD_ERR_ARGUMENT;
        if (e->failed)
            e->reported = 1;
        pthread_mutex_unlock(&e->mu);
        if (st == PBD_ERR_ARGUMENT)
            pbd_error_set(err, st, "%s: the export has finished", e->dir);
        else
            pbd_error_set(err, st, "%s", e->werr.message);
        return -1;
    }
    int k = (e->head + e->queued) % 2;
    pthread_mutex_unlock(&e->mu);
    return k;
}

pbd_status pbd_export_buffers(pbd_export *e, pbd_float4 **x, pbd_float4 **v, pbd_error *err)
{
    int k = free_slot(e, err);
    if (k < 0)
        return err ? err->status : PBD_ERR_IO;
    *x = e->slots[k].x;
    *v = e->slots[k].v;
    return PBD_OK;
}

pbd_status pbd_export_frame(pbd_export *e, long frame, const pbd_float4 *x, const pbd_float4 *v,
                            pbd_error *err)
{
    int k = free_slot(e, err);
    if (k < 0)
        return err ? err->status : PBD_ERR_IO;
    /* The slot is the main thread's until it is queued; the state may be in it already
     * (pbd_export_buffers). */
    if (x != e->slots[k].x)
        memcpy(e->slots[k].x, x, (size_t)e->n * sizeof *x);
    if (v != e->slots[k].v)
        memcpy(e->slots[k].v, v, (size_t)e->n * sizeof *v);
    e->slots[k].frame = frame;
    pthread_mutex_lock(&e->mu);
    e->queued++;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    return PBD_OK;
}

pbd_status pbd_export_queue(pbd_export *e, long frame, pbd_pending_read *r, pbd_error *err)
{
    int k = free_slot(e, err);
    if (k < 0) {
        pbd_pending_read_wait(r, NULL);
        return err ? err->status : PBD_ERR_IO;
    }
    e->slots[k].frame = frame;
    e->slots[k].pending = r;
    pthread_mutex_lock(&e->mu);
    e->queued++;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    return PBD_OK;
}

/* Ends the writer: after what is queued is written, or at once (`drop`). */
static void stop_writer(pbd_export *e, int drop)
{
    if (!e->threaded)
        return;
    pthread_mutex_lock(&e->mu);
    e->stop = 1;
    e->drop = drop;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    pthread_join(e->thread, NULL);
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
    e->threaded = 0;
    /* Dropped frames' reads still write into their slots until they complete. */
    for (int k = 0; k < 2; ++k) {
        pbd_pending_read_wait(e->slots[k].pending, NULL);
        e->slots[k].pending = NULL;
    }
}

/* After a failed frame: series.pvd is made to list exactly the frame files, rewritten with
 * the frames written since it last was. Where it cannot be (a full disk), the newest of
 * those frames go, one at a time, until it can (or all of them have). */
static void pvd_settle(pbd_export *e)
{
    if (e->format != PBD_EXPORT_VTK)
        return;
    pbd_error ignored = {0};
    while (e->pvd_listed < e->written && pvd_write(e, 1, &ignored) != PBD_OK) {
        e->written--;
        remove(frame_path(e, e->first + e->written * e->every, "vtu"));
        /* and its DataSet line, the buffer's last */
        size_t n = e->pvd.len;
        while (n > 0 && e->pvd.p[n - 1] == '\n')
            n--;
        while (n > 0 && e->pvd.p[n - 1] != '\n')
            n--;
        e->pvd.len = n;
    }
}

pbd_status pbd_export_finish(pbd_export *e, pbd_error *err)
{
    if (!e)
        return PBD_OK;
    stop_writer(e, 0);
    if (e->failed && !e->settled) {
        e->settled = 1;
        pvd_settle(e);
    }
    if (e->failed && !e->reported) {
        e->reported = 1;
        return pbd_error_set(err, e->werr.status, "%s", e->werr.message);
    }
    if (e->failed || e->finished)
        return PBD_OK;
    e->finished = 1;
    /* What spans frames is completed after the frames it names. The frame files themselves
     * are renamed into place whole but not synced (see export.h). */
    pbd_status st = PBD_OK;
    if (e->format == PBD_EXPORT_VTK && e->written > 0)
        st = pvd_write(e, 1, err);
    if (st == PBD_OK && e->format == PBD_EXPORT_PC2 && e->pc2.f) {
        char h[32];
        pc2_header(h, e->n, e->pc2_first, e->every, e->pc2_samples);
        errno = 0;
        if (fflush(e->pc2.f) != 0 || fseek(e->pc2.f, 0, SEEK_SET) != 0 ||
            fwrite(h, 1, sizeof h, e->pc2.f) != sizeof h)
            st = pbd_error_set(err, PBD_ERR_IO, "%s: write failed: %s", e->pc2.path,
                               strerror(errno ? errno : EIO));
        else
            st = pbd_output_commit(&e->pc2, err);
    }
    if (st != PBD_OK) {
        e->failed = e->reported = e->settled = 1;
        pbd_output_abort(&e->pc2);
        pvd_settle(e);
    }
    return st;
}

void pbd_export_free(pbd_export *e)
{
    if (!e)
        return;
    stop_writer(e, 1);
    pbd_output_abort(&e->pc2);
    for (int k = 0; k < 2; ++k) {
        free(e->slots[k].x);
        free(e->slots[k].v);
    }
    free(e->dir);
    free(e->path);
    free(e->bodies);
    free(e->body_of);
    free(e->tris);
    free(e->tri_start);
    free(e->normals);
    free(e->vertex_start);
    free(e->vertex_tris);
    free(e->face_normals);
    free(e->buf.p);
    free(e->scratch.p);
    free(e->vtu_head.p);
    free(e->vtu_tail.p);
    free(e->obj_elements.p);
    free(e->ply_faces.p);
    free(e->obj_start);
    free(e->pvd.p);
    free(e);
}
