/* `pbd view`: the scene in a window. Each frame steps the solver (unless paused), brings the
 * positions into the vertex buffer (shared with OpenCL where the device lists
 * cl_khr_gl_sharing and runs the window's GL context: copied there on the device; otherwise
 * read back and uploaded with glBufferSubData), then draws: flat-shaded surfaces (cloth triangles,
 * tet box boundaries; the normal comes from the screen-space derivatives of the position, so no
 * normal buffer), sprites for bodies without a surface, the colliders, a ground grid, an
 * optional constraint wireframe, and a status line (stb_easy_font). */
#include <glad/gl.h>

#include <GLFW/glfw3.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app/output.h"
#include "view/native.h"
#include "view/view.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include <stb/stb_easy_font.h>
#pragma GCC diagnostic pop
#include <stb/stb_image_write.h>

#define PI 3.14159265358979323846

/* ---- small matrix helpers (column-major, as GL reads them) ------------------------------ */

typedef struct mat4 {
    float m[16];
} mat4;

static mat4 mat_mul(mat4 a, mat4 b)
{
    mat4 r;
    for (int c = 0; c < 4; ++c)
        for (int row = 0; row < 4; ++row) {
            float s = 0.0f;
            for (int k = 0; k < 4; ++k)
                s += a.m[k * 4 + row] * b.m[c * 4 + k];
            r.m[c * 4 + row] = s;
        }
    return r;
}

static mat4 perspective(float fovy, float aspect, float znear, float zfar)
{
    mat4 r = {{0}};
    float f = 1.0f / tanf(fovy / 2.0f);
    r.m[0] = f / aspect;
    r.m[5] = f;
    r.m[10] = (zfar + znear) / (znear - zfar);
    r.m[11] = -1.0f;
    r.m[14] = 2.0f * zfar * znear / (znear - zfar);
    return r;
}

static void normalize3(float *v)
{
    float n = sqrtf(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    if (n > 0.0f)
        for (int k = 0; k < 3; ++k)
            v[k] /= n;
}

static void cross3(const float *a, const float *b, float *out)
{
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

static mat4 look_at(const float *eye, const float *at, const float *up)
{
    float f[3] = {at[0] - eye[0], at[1] - eye[1], at[2] - eye[2]}, s[3], u[3];
    normalize3(f);
    cross3(f, up, s);
    normalize3(s);
    cross3(s, f, u);
    mat4 r = {{0}};
    r.m[0] = s[0];
    r.m[4] = s[1];
    r.m[8] = s[2];
    r.m[1] = u[0];
    r.m[5] = u[1];
    r.m[9] = u[2];
    r.m[2] = -f[0];
    r.m[6] = -f[1];
    r.m[10] = -f[2];
    r.m[12] = -(s[0] * eye[0] + s[1] * eye[1] + s[2] * eye[2]);
    r.m[13] = -(u[0] * eye[0] + u[1] * eye[1] + u[2] * eye[2]);
    r.m[14] = f[0] * eye[0] + f[1] * eye[1] + f[2] * eye[2];
    r.m[15] = 1.0f;
    return r;
}

/* ---- shaders ----------------------------------------------------------------------------- */

static const char *const mesh_vs = "#version 330 core\n"
                                   "layout(location = 0) in vec4 pos;\n"
                                   "uniform mat4 mvp;\n"
                                   "uniform mat4 model;\n"
                                   "out vec3 wpos;\n"
                                   "void main() {\n"
                                   "    vec4 w = model * vec4(pos.xyz, 1.0);\n"
                                   "    wpos = w.xyz;\n"
                                   "    gl_Position = mvp * w;\n"
                                   "}\n";
/* Flat shading from the derivatives of the world position, lit from the camera's side on
 * both faces (cloth has two). */
static const char *const mesh_fs = "#version 330 core\n"
                                   "in vec3 wpos;\n"
                                   "uniform vec3 color;\n"
                                   "uniform vec3 light;\n"
                                   "out vec4 frag;\n"
                                   "void main() {\n"
                                   "    vec3 n = normalize(cross(dFdx(wpos), dFdy(wpos)));\n"
                                   "    float d = abs(dot(n, normalize(light)));\n"
                                   "    frag = vec4(color * (0.3 + 0.7 * d), 1.0);\n"
                                   "}\n";
static const char *const point_vs = "#version 330 core\n"
                                    "layout(location = 0) in vec4 pos;\n"
                                    "uniform mat4 mvp;\n"
                                    "uniform float size;\n"
                                    "void main() {\n"
                                    "    gl_Position = mvp * vec4(pos.xyz, 1.0);\n"
                                    "    gl_PointSize = size / max(gl_Position.w, 1e-3);\n"
                                    "}\n";
/* A round sprite shaded as a ball. */
static const char *const point_fs =
    "#version 330 core\n"
    "uniform vec3 color;\n"
    "out vec4 frag;\n"
    "void main() {\n"
    "    vec2 d = gl_PointCoord * 2.0 - 1.0;\n"
    "    float r2 = dot(d, d);\n"
    "    if (r2 > 1.0) discard;\n"
    "    frag = vec4(color * (0.35 + 0.65 * sqrt(1.0 - r2)), 1.0);\n"
    "}\n";
static const char *const line_vs = "#version 330 core\n"
                                   "layout(location = 0) in vec4 pos;\n"
                                   "uniform mat4 mvp;\n"
                                   "void main() { gl_Position = mvp * vec4(pos.xyz, 1.0); }\n";
static const char *const flat_fs = "#version 330 core\n"
                                   "uniform vec3 color;\n"
                                   "out vec4 frag;\n"
                                   "void main() { frag = vec4(color, 1.0); }\n";
/* Text: stb_easy_font's quads in pixels. */
static const char *const text_vs =
    "#version 330 core\n"
    "layout(location = 0) in vec2 pos;\n"
    "uniform vec2 screen;\n"
    "void main() {\n"
    "    gl_Position = vec4(pos.x / screen.x * 2.0 - 1.0, 1.0 - pos.y / screen.y * 2.0, 0, 1);\n"
    "}\n";

static GLuint compile(GLenum kind, const char *src, char *log, size_t n)
{
    GLuint s = glCreateShader(kind);
    glShaderSource(s, 1, &src, NULL);
    glCompileShader(s);
    GLint ok = 0;
    glGetShaderiv(s, GL_COMPILE_STATUS, &ok);
    if (!ok) {
        glGetShaderInfoLog(s, (GLsizei)n, NULL, log);
        glDeleteShader(s);
        return 0;
    }
    return s;
}

static GLuint program(const char *vs, const char *fs)
{
    char log[1024] = "";
    GLuint v = compile(GL_VERTEX_SHADER, vs, log, sizeof log);
    GLuint f = v ? compile(GL_FRAGMENT_SHADER, fs, log, sizeof log) : 0;
    if (!v || !f) {
        for (char *c = log; *c; ++c)
            if (*c == '\n')
                *c = ' ';
        fprintf(stderr, "pbd view: a shader did not compile: %s\n", log);
        return 0;
    }
    GLuint p = glCreateProgram();
    glAttachShader(p, v);
    glAttachShader(p, f);
    glLinkProgram(p);
    glDeleteShader(v);
    glDeleteShader(f);
    GLint ok = 0;
    glGetProgramiv(p, GL_LINK_STATUS, &ok);
    if (!ok) {
        glGetProgramInfoLog(p, sizeof log, NULL, log);
        fprintf(stderr, "pbd view: a shader program did not link: %s\n", log);
        return 0;
    }
    return p;
}

/* ---- the simulated scene ----------------------------------------------------------------- */

typedef struct sim {
    pbd_scene scene; /* as loaded, with the command line's overrides */
    pbd_config cfg;  /* the running configuration (solver and momentum can be switched) */
    pbd_solver_desc desc;
    pbd_solver *solver;
    pbd_float4 *x, *v; /* the state read back each frame */
    pbd_body_stats *stats;
    long frame;
    double step_ms;  /* the last step's time */
    int grab;        /* the mouse's attachment (its index in the model), or -1 before a grab */
    unsigned vbo;    /* the vertex buffer the positions go to (0 before the window) */
    int shared;      /* the solver copies positions into vbo on the device (CL/GL sharing) */
    const char *why; /* which way positions reach vbo, and why */
} sim;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* (Re)creates the solver from the scene's model, with the state `x`, `v` when given (a
 * solver or momentum switch keeps the motion), else the scene's initial state (reset). */
static int sim_start(sim *s, const pbd_float4 *x, const pbd_float4 *v)
{
    pbd_error err = {0};
    pbd_model *m = &s->scene.model;
    pbd_float4 *x0 = m->x, *v0 = m->v;
    if (x && v) {
        m->x = (pbd_float4 *)x;
        m->v = (pbd_float4 *)v;
    }
    pbd_solver *next = NULL;
    pbd_status st = pbd_solver_create(m, &s->cfg, &s->desc, &next, &err);
    m->x = x0;
    m->v = v0;
    if (st != PBD_OK) {
        fprintf(stderr, "pbd view: %s\n", err.message);
        return -1;
    }
    pbd_solver_destroy(s->solver);
    s->solver = next;
    if (!x)
        s->frame = 0;
    s->shared = pbd_solver_gl_shared(s->solver, &s->why);
    if (s->shared && s->vbo && pbd_solver_gl_attach(s->solver, s->vbo, &err) != PBD_OK) {
        fprintf(stderr, "pbd view: %s\n", err.message);
        return -1;
    }
    return 0;
}

static int sim_read(sim *s)
{
    pbd_error err = {0};
    if (pbd_solver_read(s->solver, s->x, s->v, &err) != PBD_OK) {
        fprintf(stderr, "pbd view: %s\n", err.message);
        return -1;
    }
    return 0;
}

/* The shared path: the solver copies the positions into the vertex buffer on the device. */
static int sim_positions(sim *s)
{
    pbd_error err = {0};
    if (pbd_solver_gl_positions(s->solver, &err) != PBD_OK) {
        fprintf(stderr, "pbd view: %s\n", err.message);
        return -1;
    }
    return 0;
}

static int sim_init(sim *s, const pbd_view_options *o)
{
    memset(s, 0, sizeof *s);
    pbd_error err = {0};
    if (pbd_scene_load(o->scene, &s->scene, &err) != PBD_OK) {
        fprintf(stderr, "pbd: %s\n", err.message);
        return -1;
    }
    if (o->tweak)
        o->tweak(o->ctx, &s->scene);
    s->cfg = s->scene.config;
    s->desc = o->desc;
    s->grab = -1;
    size_t n = (size_t)s->scene.model.num_particles;
    s->x = malloc(n * sizeof *s->x);
    s->v = malloc(n * sizeof *s->v);
    s->stats = calloc((size_t)s->scene.model.num_bodies, sizeof *s->stats);
    if (!s->x || !s->v || !s->stats) {
        fprintf(stderr, "pbd view: out of memory\n");
        return -1;
    }
    return sim_start(s, NULL, NULL) || sim_read(s) ? -1 : 0;
}

static void sim_free(sim *s)
{
    pbd_solver_destroy(s->solver);
    pbd_scene_free(&s->scene);
    free(s->x);
    free(s->v);
    free(s->stats);
}

static int sim_step(sim *s)
{
    pbd_error err = {0};
    double t0 = now_ms();
    if (pbd_solver_step(s->solver, 1, &err) != PBD_OK ||
        pbd_solver_finish(s->solver, &err) != PBD_OK) {
        fprintf(stderr, "pbd view: %s\n", err.message);
        return -1;
    }
    s->step_ms = now_ms() - t0;
    s->frame++;
    return 0;
}

/* ---- grabbing: an attachment the mouse moves ---------------------------------------------- */

/* How hard a grab pulls: PBD stiffness 0.5 an iteration (as much for any mass); a released
 * grab keeps its attachment with the largest compliance, which pulls by nothing measurable. */
#define GRAB_PULL    (-0.5f)
#define GRAB_RELEASE PBD_MAX_COMPLIANCE

/* Pulls particle i toward `target` (released: compliance GRAB_RELEASE). The first grab adds
 * the attachment to the model and starts the solver again from the current state (tracked
 * momenta from then on); later ones move it (pbd_solver_update_constraint). */
static int grab_set(sim *s, int i, const float *target, float compliance)
{
    pbd_error err = {0};
    pbd_attachment a = {i, compliance, 0, 0, {target[0], target[1], target[2], 0.0f}};
    if (s->grab < 0) {
        pbd_attachment rest = a;
        rest.compliance = GRAB_RELEASE;
        if (sim_read(s) ||
            pbd_model_add_constraint(&s->scene.model, PBD_CONSTRAINT_ATTACHMENT, &rest) != 0)
            return -1;
        int n = 0;
        pbd_model_constraints(&s->scene.model, PBD_CONSTRAINT_ATTACHMENT, &n);
        s->grab = n - 1;
        if (sim_start(s, s->x, s->v))
            return -1;
    }
    if (pbd_solver_update_constraint(s->solver, PBD_CONSTRAINT_ATTACHMENT, s->grab, &a, &err) !=
        PBD_OK) {
        fprintf(stderr, "pbd view: cannot grab particle %d: %s\n", i, err.message);
        return -1;
    }
    return 0;
}

/* ---- what is drawn ----------------------------------------------------------------------- */

typedef struct body_draw {
    int first_tri, num_tri; /* the body's surface triangles, or none: drawn as points */
} body_draw;

typedef struct scene_gl {
    GLuint vao, vbo, tri_ebo, line_ebo;
    int num_lines;
    body_draw *bodies;
    GLuint grid_vao, grid_vbo;
    int grid_vertices;
    GLuint sphere_vao, sphere_vbo, sphere_ebo;
    int sphere_indices;
    GLuint cube_vao, cube_vbo, cube_ebo; /* [-1, 1]^3, for boxes */
    GLuint tube_vao, tube_vbo, tube_ebo; /* a unit cylinder along z, 0 to 1: capsules */
    int tube_indices;
} scene_gl;

typedef struct viewer {
    const pbd_view_options *o;
    GLFWwindow *win;
    sim sims[2];
    int nsims;
    scene_gl gl[2];
    pbd_gl_context gl_context; /* the window's, for solvers that share its buffers */
    GLuint mesh_prog, point_prog, line_prog, text_prog, text_vao, text_vbo;
    float center[3], extent;
    float yaw, pitch, dist, target[3];
    int paused, step_once, wireframe, help, selected;
    double last_x, last_y;
    int dragging; /* 1: orbit, 2: pan, 3: a grabbed particle */
    int grab_pane, grab_particle;
    float grab_depth; /* the grabbed particle's distance along the view direction */
    char status[512];
    double fps, frame_ms_sum;
    int fps_frames;
    double t_fps;
} viewer;

static const float palette[8][3] = {
    {0.85f, 0.33f, 0.24f}, {0.22f, 0.52f, 0.80f}, {0.30f, 0.70f, 0.35f}, {0.90f, 0.65f, 0.15f},
    {0.60f, 0.40f, 0.75f}, {0.20f, 0.70f, 0.70f}, {0.80f, 0.45f, 0.60f}, {0.55f, 0.55f, 0.55f}};

/* A static mesh's vertex array: vertices (4 floats each) and triangle indices. */
static void shape_buffers(GLuint *vao, GLuint *vbo, GLuint *ebo, const float *v, size_t vbytes,
                          const int *idx, size_t ibytes)
{
    glGenVertexArrays(1, vao);
    glBindVertexArray(*vao);
    glGenBuffers(1, vbo);
    glBindBuffer(GL_ARRAY_BUFFER, *vbo);
    glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)vbytes, v, GL_STATIC_DRAW);
    glEnableVertexAttribArray(0);
    glVertexAttribPointer(0, 4, GL_FLOAT, GL_FALSE, 4 * sizeof(float), 0);
    glGenBuffers(1, ebo);
    glBindBuffer(GL_ELEMENT_ARRAY_BUFFER, *ebo);
    glBufferData(GL_ELEMENT_ARRAY_BUFFER, (GLsizeiptr)ibytes, idx, GL_STATIC_DRAW);
}

static void cross(const float *a, const float *b, float *out)
{
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

static void scene_gl_init(scene_gl *g, const pbd_model *m, float extent, const float *center)
{
    memset(g, 0, sizeof *g);
    glGenVertexArrays(1, &g->vao);
    glBindVertexArray(g->vao);
    glGenBuffers(1, &g->vbo);
    glBindBuffer(GL_ARRAY_BUFFER, g->vbo);
    glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)((size_t)m->num_particles * sizeof(pbd_float4)), m->x,
                 GL_DYNAMIC_DRAW);
    glEnableVertexAttribArray(0);
    glVertexAttribPointer(0, 4, GL_FLOAT, GL_FALSE, sizeof(pbd_float4), 0);
    glGenBuffers(1, &g->tri_ebo);
    glBindBuffer(GL_ELEMENT_ARRAY_BUFFER, g->tri_ebo);
    glBufferData(GL_ELEMENT_ARRAY_BUFFER, (GLsizeiptr)((size_t)m->num_triangles * 3 * sizeof(int)),
                 m->triangles, GL_STATIC_DRAW);
    /* The distance constraints as line pairs (the wireframe). */
    int nd = 0;
    const pbd_distance *d = pbd_model_constraints(m, PBD_CONSTRAINT_DISTANCE, &nd);
    int *pairs = malloc(((size_t)nd + 1) * 2 * sizeof *pairs);
    for (int k = 0; pairs && k < nd; ++k) {
        pairs[2 * k] = d[k].a;
        pairs[2 * k + 1] = d[k].b;
    }
    g->num_lines = pairs ? nd : 0;
    glGenBuffers(1, &g->line_ebo);
    glBindBuffer(GL_ELEMENT_ARRAY_BUFFER, g->line_ebo);
    glBufferData(GL_ELEMENT_ARRAY_BUFFER, (GLsizeiptr)((size_t)g->num_lines * 2 * sizeof(int)),
                 pairs, GL_STATIC_DRAW);
    free(pairs);
    /* Each body's triangles are one run (the generators append a body's surface at once). */
    g->bodies = calloc((size_t)m->num_bodies, sizeof *g->bodies);
    for (int t = 0; g->bodies && t < m->num_triangles; ++t) {
        body_draw *b = &g->bodies[m->body[m->triangles[3 * t]]];
        if (b->num_tri == 0)
            b->first_tri = t;
        b->num_tri++;
    }
    /* A grid on each plane: lines 1/20 of 4 extents apart, about the scene's centre. */
    float *lines = NULL;
    int nv = 0;
    for (int c = 0; c < m->num_colliders; ++c) {
        if (m->colliders[c].kind != PBD_COLLIDER_PLANE)
            continue;
        const pbd_float4 s = m->colliders[c].shape;
        float n[3] = {s.x, s.y, s.z}, a[3], b[3], o[3];
        float ref[3] = {fabsf(n[1]) < 0.9f ? 0.0f : 1.0f, fabsf(n[1]) < 0.9f ? 1.0f : 0.0f, 0.0f};
        cross3(n, ref, a);
        normalize3(a);
        cross3(n, a, b);
        /* A little behind the plane, so that what lies on it covers the grid. */
        float dn = center[0] * n[0] + center[1] * n[1] + center[2] * n[2] - s.w + 2e-3f * extent;
        for (int k = 0; k < 3; ++k)
            o[k] = center[k] - dn * n[k];
        float half = 2.0f * extent, step = half / 10.0f;
        float *more = realloc(lines, ((size_t)nv + 84) * 4 * sizeof *lines);
        if (!more)
            break;
        lines = more;
        for (int i = -10; i <= 10; ++i)
            for (int dir = 0; dir < 2; ++dir)
                for (int end = -1; end <= 1; end += 2) {
                    const float *u = dir ? a : b, *w = dir ? b : a;
                    float *p = lines + 4 * (size_t)nv++;
                    for (int k = 0; k < 3; ++k)
                        p[k] = o[k] + u[k] * (float)i * step + w[k] * (float)end * half;
                    p[3] = 1.0f;
                }
    }
    g->grid_vertices = nv;
    glGenVertexArrays(1, &g->grid_vao);
    glBindVertexArray(g->grid_vao);
    glGenBuffers(1, &g->grid_vbo);
    glBindBuffer(GL_ARRAY_BUFFER, g->grid_vbo);
    glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)((size_t)nv * 4 * sizeof(float)), lines,
                 GL_STATIC_DRAW);
    glEnableVertexAttribArray(0);
    glVertexAttribPointer(0, 4, GL_FLOAT, GL_FALSE, 4 * sizeof(float), 0);
    free(lines);
    /* A unit sphere (24 x 12), scaled and moved per sphere collider. */
    enum { SU = 24, SV = 12 };
    float sv[(SU + 1) * (SV + 1) * 4];
    int si[SU * SV * 6], ni = 0;
    for (int j = 0; j <= SV; ++j)
        for (int i = 0; i <= SU; ++i) {
            double th = PI * j / SV, ph = 2.0 * PI * i / SU;
            float *p = sv + 4 * (j * (SU + 1) + i);
            p[0] = (float)(sin(th) * cos(ph));
            p[1] = (float)cos(th);
            p[2] = (float)(sin(th) * sin(ph));
            p[3] = 1.0f;
        }
    for (int j = 0; j < SV; ++j)
        for (int i = 0; i < SU; ++i) {
            int q = j * (SU + 1) + i;
            int quad[6] = {q, q + SU + 1, q + 1, q + 1, q + SU + 1, q + SU + 2};
            memcpy(si + ni, quad, sizeof quad);
            ni += 6;
        }
    g->sphere_indices = ni;
    glGenVertexArrays(1, &g->sphere_vao);
    glBindVertexArray(g->sphere_vao);
    glGenBuffers(1, &g->sphere_vbo);
    glBindBuffer(GL_ARRAY_BUFFER, g->sphere_vbo);
    glBufferData(GL_ARRAY_BUFFER, sizeof sv, sv, GL_STATIC_DRAW);
    glEnableVertexAttribArray(0);
    glVertexAttribPointer(0, 4, GL_FLOAT, GL_FALSE, 4 * sizeof(float), 0);
    glGenBuffers(1, &g->sphere_ebo);
    glBindBuffer(GL_ELEMENT_ARRAY_BUFFER, g->sphere_ebo);
    glBufferData(GL_ELEMENT_ARRAY_BUFFER, (GLsizeiptr)((size_t)ni * sizeof(int)), si,
                 GL_STATIC_DRAW);
    /* A cube [-1, 1]^3 for boxes, and an open cylinder for capsules' sides. */
    float cv[8 * 4];
    for (int k = 0; k < 8; ++k) {
        cv[4 * k] = k & 1 ? 1.0f : -1.0f;
        cv[4 * k + 1] = k & 2 ? 1.0f : -1.0f;
        cv[4 * k + 2] = k & 4 ? 1.0f : -1.0f;
        cv[4 * k + 3] = 1.0f;
    }
    static const int ci[36] = {0, 2, 1, 1, 2, 3, 4, 5, 6, 5, 7, 6, 0, 1, 4, 1, 5, 4,
                               2, 6, 3, 3, 6, 7, 0, 4, 2, 2, 4, 6, 1, 3, 5, 3, 7, 5};
    shape_buffers(&g->cube_vao, &g->cube_vbo, &g->cube_ebo, cv, sizeof cv, ci, sizeof ci);
    float tv[(SU + 1) * 2 * 4];
    int ti[SU * 6];
    for (int i = 0; i <= SU; ++i)
        for (int e = 0; e < 2; ++e) {
            float *p = tv + 4 * (2 * i + e);
            p[0] = (float)cos(2.0 * PI * i / SU);
            p[1] = (float)sin(2.0 * PI * i / SU);
            p[2] = (float)e;
            p[3] = 1.0f;
        }
    for (int i = 0; i < SU; ++i) {
        int q = 2 * i, quad[6] = {q, q + 2, q + 1, q + 1, q + 2, q + 3};
        memcpy(ti + 6 * i, quad, sizeof quad);
    }
    g->tube_indices = SU * 6;
    shape_buffers(&g->tube_vao, &g->tube_vbo, &g->tube_ebo, tv, sizeof tv, ti, sizeof ti);
    glBindVertexArray(0);
}

static void scene_gl_free(scene_gl *g)
{
    GLuint bufs[10] = {g->vbo,        g->tri_ebo,  g->line_ebo, g->grid_vbo, g->sphere_vbo,
                       g->sphere_ebo, g->cube_vbo, g->cube_ebo, g->tube_vbo, g->tube_ebo};
    GLuint vaos[5] = {g->vao, g->grid_vao, g->sphere_vao, g->cube_vao, g->tube_vao};
    glDeleteBuffers(10, bufs);
    glDeleteVertexArrays(5, vaos);
    free(g->bodies);
}

/* The fallback path: the positions read back this frame, uploaded into the vertex buffer. */
static void upload(scene_gl *g, const sim *s)
{
    glBindBuffer(GL_ARRAY_BUFFER, g->vbo);
    glBufferSubData(GL_ARRAY_BUFFER, 0,
                    (GLsizeiptr)((size_t)s->scene.model.num_particles * sizeof(pbd_float4)), s->x);
}

/* --verify: the vertex buffer, read back from GL, holds the solver's positions. */
static int verify_upload(const scene_gl *g, const sim *s)
{
    size_t bytes = (size_t)s->scene.model.num_particles * sizeof(pbd_float4);
    pbd_float4 *back = malloc(bytes);
    if (!back) {
        fprintf(stderr, "pbd view: out of memory\n");
        return 1;
    }
    glBindBuffer(GL_ARRAY_BUFFER, g->vbo);
    glGetBufferSubData(GL_ARRAY_BUFFER, 0, (GLsizeiptr)bytes, back);
    int rc = memcmp(back, s->x, bytes) != 0;
    if (rc)
        fprintf(stderr,
                "pbd view: frame %ld: the vertex buffer differs from the solver's "
                "positions\n",
                s->frame);
    free(back);
    return rc;
}

#define FOVY 0.8f /* radians */

static void eye_of(const viewer *w, float *eye)
{
    float cp = cosf(w->pitch);
    eye[0] = w->target[0] + w->dist * cp * sinf(w->yaw);
    eye[1] = w->target[1] + w->dist * sinf(w->pitch);
    eye[2] = w->target[2] + w->dist * cp * cosf(w->yaw);
}

static mat4 camera(const viewer *w, float aspect)
{
    float eye[3];
    eye_of(w, eye);
    const float up[3] = {0.0f, 1.0f, 0.0f};
    return mat_mul(perspective(FOVY, aspect, 0.01f * w->dist, 100.0f * w->dist),
                   look_at(eye, w->target, up));
}

/* The point under the cursor (window pixels mx, my; in pane `pane`) at `depth` along the view
 * direction; or, with point given, that point's depth. */
static float cursor_point(const viewer *w, double mx, double my, float depth, const float *point,
                          float *out)
{
    int width, height, fw, fh;
    glfwGetFramebufferSize(w->win, &width, &height);
    glfwGetWindowSize(w->win, &fw, &fh);
    double sx = fw > 0 ? (double)width / fw : 1.0, sy = fh > 0 ? (double)height / fh : 1.0;
    int pane_w = width / w->nsims;
    double px = fmod(mx * sx, pane_w > 0 ? pane_w : 1), py = my * sy;
    float eye[3], f[3], r[3], u[3];
    const float up[3] = {0.0f, 1.0f, 0.0f};
    eye_of(w, eye);
    for (int k = 0; k < 3; ++k)
        f[k] = w->target[k] - eye[k];
    normalize3(f);
    cross3(f, up, r);
    normalize3(r);
    cross3(r, f, u);
    if (point) {
        float d = 0.0f;
        for (int k = 0; k < 3; ++k)
            d += (point[k] - eye[k]) * f[k];
        return d;
    }
    float t = tanf(FOVY / 2.0f), aspect = (float)pane_w / (float)(height > 0 ? height : 1);
    float nx = (float)(px / (pane_w > 0 ? pane_w : 1) * 2.0 - 1.0);
    float ny = (float)(1.0 - py / (height > 0 ? height : 1) * 2.0);
    for (int k = 0; k < 3; ++k)
        out[k] = eye[k] + depth * (f[k] + r[k] * nx * t * aspect + u[k] * ny * t);
    return depth;
}

static void set_color(GLuint prog, const float *c)
{
    glUniform3fv(glGetUniformLocation(prog, "color"), 1, c);
}

static const mat4 identity = {{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}};

/* The unit sphere at c, scaled by r. */
static void draw_ball(const scene_gl *g, GLint model_at, const float *c, float r)
{
    mat4 model = {{r, 0, 0, 0, 0, r, 0, 0, 0, 0, r, 0, c[0], c[1], c[2], 1}};
    glUniformMatrix4fv(model_at, 1, GL_FALSE, model.m);
    glBindVertexArray(g->sphere_vao);
    glDrawElements(GL_TRIANGLES, g->sphere_indices, GL_UNSIGNED_INT, 0);
}

static void draw_scene(viewer *w, int k, int x0, int width, int height)
{
    const sim *s = &w->sims[k];
    const scene_gl *g = &w->gl[k];
    const pbd_model *m = &s->scene.model;
    glViewport(x0, 0, width, height);
    mat4 mvp = camera(w, (float)width / (float)(height > 0 ? height : 1));
    /* Surfaces, and points for the bodies that have none. */
    glUseProgram(w->mesh_prog);
    glUniformMatrix4fv(glGetUniformLocation(w->mesh_prog, "mvp"), 1, GL_FALSE, mvp.m);
    glUniformMatrix4fv(glGetUniformLocation(w->mesh_prog, "model"), 1, GL_FALSE, identity.m);
    const float light[3] = {0.4f, 1.0f, 0.6f};
    glUniform3fv(glGetUniformLocation(w->mesh_prog, "light"), 1, light);
    glBindVertexArray(g->vao);
    glBindBuffer(GL_ELEMENT_ARRAY_BUFFER, g->tri_ebo);
    for (int b = 0; b < m->num_bodies; ++b) {
        if (!g->bodies || g->bodies[b].num_tri == 0)
            continue;
        set_color(w->mesh_prog, palette[b % 8]);
        glDrawElements(GL_TRIANGLES, 3 * g->bodies[b].num_tri, GL_UNSIGNED_INT,
                       (const void *)((size_t)g->bodies[b].first_tri * 3 * sizeof(int)));
    }
    glUseProgram(w->point_prog);
    glUniformMatrix4fv(glGetUniformLocation(w->point_prog, "mvp"), 1, GL_FALSE, mvp.m);
    /* Sprites about 1/60 of the scene across. */
    glUniform1f(glGetUniformLocation(w->point_prog, "size"),
                (float)height * 0.02f * w->extent / 0.8f);
    for (int b = 0; b < m->num_bodies; ++b) {
        if (g->bodies && g->bodies[b].num_tri > 0)
            continue;
        set_color(w->point_prog, palette[b % 8]);
        glDrawArrays(GL_POINTS, m->bodies[b].first, m->bodies[b].count);
    }
    glUseProgram(w->line_prog);
    glUniformMatrix4fv(glGetUniformLocation(w->line_prog, "mvp"), 1, GL_FALSE, mvp.m);
    if (w->wireframe && g->num_lines > 0) {
        const float c[3] = {0.1f, 0.1f, 0.1f};
        set_color(w->line_prog, c);
        glBindBuffer(GL_ELEMENT_ARRAY_BUFFER, g->line_ebo);
        glDrawElements(GL_LINES, 2 * g->num_lines, GL_UNSIGNED_INT, 0);
    }
    const float grid[3] = {0.55f, 0.57f, 0.60f};
    set_color(w->line_prog, grid);
    glBindVertexArray(g->grid_vao);
    glDrawArrays(GL_LINES, 0, g->grid_vertices);
    /* Sphere, box and capsule colliders, shaded grey. */
    glUseProgram(w->mesh_prog);
    const float grey[3] = {0.7f, 0.7f, 0.72f};
    set_color(w->mesh_prog, grey);
    GLint model_at = glGetUniformLocation(w->mesh_prog, "model");
    int ncol = 0; /* where the colliders are now: kinematic ones move */
    const pbd_collider *cols = pbd_solver_colliders(s->solver, &ncol);
    for (int c = 0; c < ncol; ++c) {
        const pbd_collider *col = &cols[c];
        pbd_float4 sh = col->shape;
        if (col->kind == PBD_COLLIDER_SPHERE) {
            draw_ball(g, model_at, &sh.x, sh.w);
        } else if (col->kind == PBD_COLLIDER_BOX) {
            /* model = T R S: the quaternion's rotation matrix, columns scaled by the half
             * extents */
            pbd_float4 q = col->shape3, e = col->shape2;
            float r[9] = {1 - 2 * (q.y * q.y + q.z * q.z), 2 * (q.x * q.y + q.z * q.w),
                          2 * (q.x * q.z - q.y * q.w),     2 * (q.x * q.y - q.z * q.w),
                          1 - 2 * (q.x * q.x + q.z * q.z), 2 * (q.y * q.z + q.x * q.w),
                          2 * (q.x * q.z + q.y * q.w),     2 * (q.y * q.z - q.x * q.w),
                          1 - 2 * (q.x * q.x + q.y * q.y)};
            mat4 model = {{r[0] * e.x, r[1] * e.x, r[2] * e.x, 0, r[3] * e.y, r[4] * e.y,
                           r[5] * e.y, 0, r[6] * e.z, r[7] * e.z, r[8] * e.z, 0, sh.x, sh.y, sh.z,
                           1}};
            glUniformMatrix4fv(model_at, 1, GL_FALSE, model.m);
            glBindVertexArray(g->cube_vao);
            glDrawElements(GL_TRIANGLES, 36, GL_UNSIGNED_INT, 0);
        } else if (col->kind == PBD_COLLIDER_CAPSULE) {
            const float *a = &sh.x, *b = &col->shape2.x;
            draw_ball(g, model_at, a, sh.w);
            draw_ball(g, model_at, b, sh.w);
            /* the side: z along b - a, x and y any unit pair across it, scaled by r */
            float z[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
            float len = sqrtf(z[0] * z[0] + z[1] * z[1] + z[2] * z[2]);
            if (!(len > 0.0f))
                continue;
            float u[3] = {z[0] / len, z[1] / len, z[2] / len}, x[3], y[3];
            float t[3] = {fabsf(u[0]) < 0.9f ? 1.0f : 0.0f, fabsf(u[0]) < 0.9f ? 0.0f : 1.0f, 0};
            cross(u, t, x);
            float xl = sqrtf(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
            for (int j = 0; j < 3; ++j)
                x[j] /= xl;
            cross(u, x, y);
            float r = sh.w;
            mat4 model = {{x[0] * r, x[1] * r, x[2] * r, 0, y[0] * r, y[1] * r, y[2] * r, 0, z[0],
                           z[1], z[2], 0, a[0], a[1], a[2], 1}};
            glUniformMatrix4fv(model_at, 1, GL_FALSE, model.m);
            glBindVertexArray(g->tube_vao);
            glDrawElements(GL_TRIANGLES, g->tube_indices, GL_UNSIGNED_INT, 0);
        }
    }
    glBindVertexArray(0);
}

static void draw_text(viewer *w, const char *text, float x, float y, int width, int height)
{
    static char buf[60000];
    int quads = stb_easy_font_print(x, y, (char *)text, NULL, buf, sizeof buf);
    /* Each vertex: x, y, z (float) and a colour (4 bytes): 16 bytes; two triangles a quad. */
    float *tri = malloc((size_t)quads * 6 * 2 * sizeof *tri);
    if (!tri)
        return;
    static const int order[6] = {0, 1, 2, 0, 2, 3};
    for (int q = 0; q < quads; ++q)
        for (int k = 0; k < 6; ++k) {
            const float *v = (const float *)(buf + (size_t)(q * 4 + order[k]) * 16);
            tri[(q * 6 + k) * 2] = v[0];
            tri[(q * 6 + k) * 2 + 1] = v[1];
        }
    glViewport(0, 0, width, height);
    glUseProgram(w->text_prog);
    glUniform2f(glGetUniformLocation(w->text_prog, "screen"), (float)width, (float)height);
    const float ink[3] = {0.05f, 0.05f, 0.08f};
    set_color(w->text_prog, ink);
    glBindVertexArray(w->text_vao);
    glBindBuffer(GL_ARRAY_BUFFER, w->text_vbo);
    glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)((size_t)quads * 12 * sizeof(float)), tri,
                 GL_STREAM_DRAW);
    glDrawArrays(GL_TRIANGLES, 0, quads * 6);
    glBindVertexArray(0);
    free(tri);
}

static const char help_text[] =
    "mouse: drag a particle to pull it (and select its body), left drag elsewhere orbit,\n"
    "right drag pan, wheel zoom\n"
    "space pause   n single step   r reset   g Gauss-Seidel / Jacobi   m momentum on / off\n"
    "w wireframe   h this help   q quit";

/* The status line: fps, ms per step, particles, and |P|, |L| of the selected body. */
static void update_status(viewer *w)
{
    char *p = w->status;
    size_t left = sizeof w->status;
    for (int k = 0; k < w->nsims; ++k) {
        sim *s = &w->sims[k];
        pbd_error err = {0};
        int b = w->selected < s->scene.model.num_bodies ? w->selected : 0;
        double P = 0.0, L = 0.0;
        if (pbd_solver_stats(s->solver, s->stats, &err) == PBD_OK) {
            const pbd_body_stats *st = &s->stats[b];
            P = sqrt(st->p[0] * st->p[0] + st->p[1] * st->p[1] + st->p[2] * st->p[2]);
            L = sqrt(st->l[0] * st->l[0] + st->l[1] * st->l[1] + st->l[2] * st->l[2]);
        }
        int n = snprintf(p, left,
                         "%s%s: %.0f fps, %.2f ms/step, %d particles, %s, momentum %s, "
                         "frame %ld, body %d (%s): |P| %.4g, |L| %.6g",
                         k ? "\n" : "", w->nsims > 1 ? (k ? "without" : "with") : "pbd view",
                         w->fps, s->step_ms, s->scene.model.num_particles,
                         s->cfg.solver == PBD_SOLVER_GS ? "gauss-seidel" : "jacobi",
                         s->cfg.momentum ? "on" : "off", s->frame, b, s->scene.model.bodies[b].name,
                         P, L);
        if (n < 0 || (size_t)n >= left)
            break;
        p += n;
        left -= (size_t)n;
    }
}

/* ---- input ------------------------------------------------------------------------------- */

/* The particle nearest the cursor's ray, within 2 % of the view's height, or -1. */
static int pick(viewer *w, double mx, double my, int *body, int *pane_out)
{
    int width, height;
    glfwGetFramebufferSize(w->win, &width, &height);
    int fw, fh;
    glfwGetWindowSize(w->win, &fw, &fh);
    double sx = fw > 0 ? (double)width / fw : 1.0, sy = fh > 0 ? (double)height / fh : 1.0;
    int panes = w->nsims, pane_w = width / panes;
    int pane = (int)(mx * sx) / (pane_w > 0 ? pane_w : 1);
    pane = pane < 0 ? 0 : pane >= panes ? panes - 1 : pane;
    mat4 mvp = camera(w, (float)pane_w / (float)(height > 0 ? height : 1));
    const sim *s = &w->sims[pane];
    double px = mx * sx - pane * pane_w, py = my * sy, best = 0.02 * height * 0.02 * height;
    int found = -1;
    for (int i = 0; i < s->scene.model.num_particles; ++i) {
        const float *q = &s->x[i].x;
        float c[4];
        for (int r = 0; r < 4; ++r)
            c[r] = mvp.m[r] * q[0] + mvp.m[4 + r] * q[1] + mvp.m[8 + r] * q[2] + mvp.m[12 + r];
        if (c[3] <= 0.0f)
            continue;
        double X = (c[0] / c[3] * 0.5 + 0.5) * pane_w, Y = (0.5 - c[1] / c[3] * 0.5) * height;
        double d2 = (X - px) * (X - px) + (Y - py) * (Y - py);
        if (d2 < best) {
            best = d2;
            found = i;
        }
    }
    if (found >= 0)
        *body = s->scene.model.body[found];
    *pane_out = pane;
    return found;
}

static void on_key(GLFWwindow *win, int key, int scancode, int action, int mods)
{
    (void)scancode;
    (void)mods;
    viewer *w = glfwGetWindowUserPointer(win);
    if (action != GLFW_PRESS)
        return;
    switch (key) {
    case GLFW_KEY_SPACE:
        w->paused = !w->paused;
        break;
    case GLFW_KEY_N:
        w->paused = 1;
        w->step_once = 1;
        break;
    case GLFW_KEY_W:
        w->wireframe = !w->wireframe;
        break;
    case GLFW_KEY_H:
        w->help = !w->help;
        break;
    case GLFW_KEY_Q:
    case GLFW_KEY_ESCAPE:
        glfwSetWindowShouldClose(win, 1);
        break;
    case GLFW_KEY_R:
        for (int k = 0; k < w->nsims; ++k)
            if (sim_start(&w->sims[k], NULL, NULL) == 0)
                sim_read(&w->sims[k]);
        break;
    case GLFW_KEY_G:
    case GLFW_KEY_M:
        for (int k = 0; k < w->nsims; ++k) {
            sim *s = &w->sims[k];
            if (key == GLFW_KEY_G)
                s->cfg.solver = s->cfg.solver == PBD_SOLVER_GS ? PBD_SOLVER_JACOBI : PBD_SOLVER_GS;
            else if (w->nsims == 1)
                s->cfg.momentum = !s->cfg.momentum;
            if (sim_read(s) == 0)
                sim_start(s, s->x, s->v);
        }
        break;
    default:
        break;
    }
}

static void on_button(GLFWwindow *win, int button, int action, int mods)
{
    (void)mods;
    viewer *w = glfwGetWindowUserPointer(win);
    glfwGetCursorPos(win, &w->last_x, &w->last_y);
    for (int k = 0; k < w->nsims; ++k) /* shared: the host copy is read only when needed */
        if (w->sims[k].shared && sim_read(&w->sims[k]))
            return;
    if (action == GLFW_RELEASE) {
        if (w->dragging == 3) { /* let go: the attachment stays, pulling by nothing */
            sim *s = &w->sims[w->grab_pane];
            grab_set(s, w->grab_particle, &s->x[w->grab_particle].x, GRAB_RELEASE);
        }
        w->dragging = 0;
        return;
    }
    if (button == GLFW_MOUSE_BUTTON_LEFT) {
        int body = 0, pane = 0;
        int i = pick(w, w->last_x, w->last_y, &body, &pane);
        w->dragging = 1;
        if (i >= 0) { /* grab it: pulled toward the cursor at its depth */
            sim *s = &w->sims[pane];
            w->selected = body;
            w->grab_pane = pane;
            w->grab_particle = i;
            w->grab_depth = cursor_point(w, 0, 0, 0.0f, &s->x[i].x, NULL);
            if (grab_set(s, i, &s->x[i].x, GRAB_PULL) == 0)
                w->dragging = 3;
        }
    } else if (button == GLFW_MOUSE_BUTTON_RIGHT) {
        w->dragging = 2;
    }
}

static void on_move(GLFWwindow *win, double x, double y)
{
    viewer *w = glfwGetWindowUserPointer(win);
    double dx = x - w->last_x, dy = y - w->last_y;
    w->last_x = x;
    w->last_y = y;
    if (w->dragging == 3) {
        float target[3];
        cursor_point(w, x, y, w->grab_depth, NULL, target);
        grab_set(&w->sims[w->grab_pane], w->grab_particle, target, GRAB_PULL);
    } else if (w->dragging == 1) {
        w->yaw -= (float)dx * 0.01f;
        w->pitch += (float)dy * 0.01f;
        w->pitch = w->pitch > 1.5f ? 1.5f : w->pitch < -1.5f ? -1.5f : w->pitch;
    } else if (w->dragging == 2) {
        float s = w->dist * 0.002f;
        w->target[0] -= (float)dx * s * cosf(w->yaw);
        w->target[2] += (float)dx * s * sinf(w->yaw);
        w->target[1] += (float)dy * s;
    }
}

static void on_scroll(GLFWwindow *win, double dx, double dy)
{
    (void)dx;
    viewer *w = glfwGetWindowUserPointer(win);
    w->dist *= powf(0.9f, (float)dy);
}

/* ---- the frame loop ---------------------------------------------------------------------- */

static void render(viewer *w, int width, int height)
{
    glClearColor(0.93f, 0.94f, 0.96f, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT | GL_DEPTH_BUFFER_BIT);
    glEnable(GL_DEPTH_TEST);
    int pane = width / w->nsims;
    for (int k = 0; k < w->nsims; ++k)
        draw_scene(w, k, k * pane, pane, height);
    glDisable(GL_DEPTH_TEST);
    draw_text(w, w->status, 8.0f, 8.0f, width, height);
    if (w->help)
        draw_text(w, help_text, 8.0f, 40.0f, width, height);
}

/* Writes the framebuffer bound for reading as a PNG, through the CLI's atomic outputs. */
static void png_write(void *ctx, void *data, int size)
{
    fwrite(data, 1, (size_t)size, (FILE *)ctx);
}

static int screenshot(const char *path, int width, int height)
{
    unsigned char *px = malloc((size_t)width * height * 3);
    if (!px) {
        fprintf(stderr, "pbd view: out of memory for the screenshot\n");
        return 1;
    }
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadPixels(0, 0, width, height, GL_RGB, GL_UNSIGNED_BYTE, px);
    /* GL's rows start at the bottom, PNG's at the top. */
    for (int r = 0; r < height / 2; ++r)
        for (int c = 0; c < width * 3; ++c) {
            unsigned char *a = px + (size_t)r * width * 3 + c,
                          *b = px + (size_t)(height - 1 - r) * width * 3 + c, t = *a;
            *a = *b;
            *b = t;
        }
    pbd_output out = {0};
    pbd_error err = {0};
    int rc = 0;
    if (pbd_output_open(&out, path, &err) != PBD_OK ||
        !stbi_write_png_to_func(png_write, out.f, width, height, 3, px, width * 3) ||
        pbd_output_commit(&out, &err) != PBD_OK) {
        fprintf(stderr, "pbd view: %s\n", err.message[0] ? err.message : "PNG encoding failed");
        rc = 1;
    }
    pbd_output_abort(&out);
    free(px);
    return rc;
}

/* Whether the solver's device lists cl_khr_gl_sharing (the solver is made again, sharing,
 * only then). */
static int device_lists_sharing(const sim *s)
{
    pbd_device_info *list = NULL;
    int n = 0, sharing = 0;
    if (pbd_devices_list(&list, &n, NULL) == PBD_OK)
        for (int k = 0; k < n; ++k)
            if (strcmp(list[k].name, pbd_solver_device_name(s->solver)) == 0)
                sharing |= list[k].gl_sharing;
    free(list);
    return sharing;
}

/* Points the solver at its vertex buffer: shared with OpenCL where the device lists
 * cl_khr_gl_sharing and runs the window's context (the solver is made again, with the state
 * it has, on a context that shares), else read back (s->why says why). */
static int sim_share(sim *s, GLFWwindow *win, pbd_gl_context *gl, unsigned vbo, int read_back)
{
    s->vbo = vbo;
    if (read_back) {
        s->why = "--read-back";
        return 0;
    }
    if (s->desc.backend == PBD_BACKEND_CPU)
        return 0; /* s->why: the CPU reference shares nothing */
    if (!device_lists_sharing(s)) {
        s->why = "the device lists no cl_khr_gl_sharing";
        return 0;
    }
    const char *why = pbd_view_gl_context(win, gl);
    if (why) {
        s->why = why;
        return 0;
    }
    s->desc.gl = gl;
    return sim_read(s) || sim_start(s, s->x, s->v) ? -1 : 0;
}

static void on_glfw_error(int code, const char *text)
{
    fprintf(stderr, "pbd view: GLFW error %d: %s\n", code, text);
}

int pbd_cli_view(const pbd_view_options *o)
{
    static viewer w; /* reached from GLFW's callbacks */
    memset(&w, 0, sizeof w);
    w.o = o;
    w.nsims = o->compare_momentum ? 2 : 1;
    int headless = o->screenshot != NULL;
    int width = o->width > 0 ? o->width : 1280, height = o->height > 0 ? o->height : 720;
    int rc = 1;
    GLuint fbo = 0, rbo[2] = {0, 0};
    for (int k = 0; k < w.nsims; ++k) {
        if (sim_init(&w.sims[k], o))
            goto done;
        if (o->compare_momentum) { /* left with the correction, right without */
            w.sims[k].cfg.momentum = k == 0;
            if (sim_start(&w.sims[k], NULL, NULL))
                goto done;
        }
    }
    glfwSetErrorCallback(on_glfw_error);
    if (!glfwInit()) {
        fprintf(stderr, "pbd view: cannot open a display (is DISPLAY set? headless, run it "
                        "under xvfb-run)\n");
        goto done;
    }
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
    if (headless)
        glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);
    w.win = glfwCreateWindow(width, height, "pbd view", NULL, NULL);
    if (!w.win) {
        fprintf(stderr, "pbd view: cannot create an OpenGL 3.3 core window\n");
        goto done_glfw;
    }
    glfwMakeContextCurrent(w.win);
    glfwSwapInterval(headless || o->bench ? 0 : 1);
    if (!gladLoadGL(glfwGetProcAddress)) {
        fprintf(stderr, "pbd view: cannot load the OpenGL 3.3 functions\n");
        goto done_glfw;
    }
    glfwSetWindowUserPointer(w.win, &w);
    glfwSetKeyCallback(w.win, on_key);
    glfwSetMouseButtonCallback(w.win, on_button);
    glfwSetCursorPosCallback(w.win, on_move);
    glfwSetScrollCallback(w.win, on_scroll);
    w.mesh_prog = program(mesh_vs, mesh_fs);
    w.point_prog = program(point_vs, point_fs);
    w.line_prog = program(line_vs, flat_fs);
    w.text_prog = program(text_vs, flat_fs);
    if (!w.mesh_prog || !w.point_prog || !w.line_prog || !w.text_prog)
        goto done_glfw;
    glEnable(GL_PROGRAM_POINT_SIZE);
    glGenVertexArrays(1, &w.text_vao);
    glBindVertexArray(w.text_vao);
    glGenBuffers(1, &w.text_vbo);
    glBindBuffer(GL_ARRAY_BUFFER, w.text_vbo);
    glEnableVertexAttribArray(0);
    glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 2 * sizeof(float), 0);
    glBindVertexArray(0);
    /* The camera looks at the centre of the particles and the colliders but planes (a
     * sphere, box or capsule as the cube around it) from twice their size away. */
    const pbd_model *m0 = &w.sims[0].scene.model;
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int i = 0; i < m0->num_particles; ++i)
        for (int k = 0; k < 3; ++k) {
            lo[k] = fmin(lo[k], (&m0->x[i].x)[k]);
            hi[k] = fmax(hi[k], (&m0->x[i].x)[k]);
        }
    for (int c = 0; c < m0->num_colliders; ++c) {
        const pbd_collider *col = &m0->colliders[c];
        const pbd_float4 *a = &col->shape, *b = &col->shape2;
        float r = col->kind == PBD_COLLIDER_BOX ? sqrtf(b->x * b->x + b->y * b->y + b->z * b->z)
                                                : col->shape.w;
        for (int e = 0; col->kind != PBD_COLLIDER_PLANE && e < 2; ++e) {
            const pbd_float4 *q = e == 1 && col->kind == PBD_COLLIDER_CAPSULE ? b : a;
            for (int k = 0; k < 3; ++k) {
                lo[k] = fmin(lo[k], (double)(&q->x)[k] - r);
                hi[k] = fmax(hi[k], (double)(&q->x)[k] + r);
            }
        }
    }
    double diag = 0.0;
    for (int k = 0; k < 3; ++k) {
        w.center[k] = w.target[k] = (float)(0.5 * (lo[k] + hi[k]));
        diag += (hi[k] - lo[k]) * (hi[k] - lo[k]);
    }
    w.extent = diag > 0.0 ? (float)sqrt(diag) : 1.0f;
    w.dist = 2.0f * w.extent;
    w.yaw = 0.6f;
    w.pitch = 0.45f;
    for (int k = 0; k < w.nsims; ++k) {
        scene_gl_init(&w.gl[k], &w.sims[k].scene.model, w.extent, w.center);
        if (sim_share(&w.sims[k], w.win, &w.gl_context, w.gl[k].vbo, o->read_back))
            goto done_glfw;
    }
    if (headless) { /* an offscreen framebuffer of the asked size */
        glGenFramebuffers(1, &fbo);
        glBindFramebuffer(GL_FRAMEBUFFER, fbo);
        glGenRenderbuffers(2, rbo);
        glBindRenderbuffer(GL_RENDERBUFFER, rbo[0]);
        glRenderbufferStorage(GL_RENDERBUFFER, GL_RGBA8, width, height);
        glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, rbo[0]);
        glBindRenderbuffer(GL_RENDERBUFFER, rbo[1]);
        glRenderbufferStorage(GL_RENDERBUFFER, GL_DEPTH_COMPONENT24, width, height);
        glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_DEPTH_ATTACHMENT, GL_RENDERBUFFER, rbo[1]);
        if (glCheckFramebufferStatus(GL_FRAMEBUFFER) != GL_FRAMEBUFFER_COMPLETE) {
            fprintf(stderr, "pbd view: cannot make an offscreen framebuffer of %d x %d\n", width,
                    height);
            goto done_glfw;
        }
    }
    char title[384];
    const sim *s0 = &w.sims[0];
    snprintf(title, sizeof title, "pbd view%s: %s (positions %s: %s)",
             w.nsims > 1 ? " with and without momentum preservation" : "",
             pbd_solver_device_name(s0->solver),
             s0->shared ? "shared with OpenGL" : "read back, glBufferSubData", s0->why);
    glfwSetWindowTitle(w.win, title);
    /* --drag: particle o->drag_particle pulled toward o->drag_target from the start. */
    double drag_start = 0.0;
    if (o->drag_particle >= 0) {
        sim *s = &w.sims[0];
        if (o->drag_particle >= s->scene.model.num_particles) {
            fprintf(stderr, "pbd view: --drag: found particle %d, expected one of [0, %d)\n",
                    o->drag_particle, s->scene.model.num_particles);
            rc = 2;
            goto done_glfw;
        }
        const float *p = &s->x[o->drag_particle].x, *t = o->drag_target;
        drag_start = sqrt((p[0] - t[0]) * (p[0] - t[0]) + (p[1] - t[1]) * (p[1] - t[1]) +
                          (p[2] - t[2]) * (p[2] - t[2]));
        if (grab_set(s, o->drag_particle, o->drag_target, GRAB_PULL))
            goto done_glfw;
        w.selected = s->scene.model.body[o->drag_particle];
    }
    double t_sim = 0.0, t_transfer = 0.0, t_draw = 0.0, t_start = now_ms();
    long frames = 0;
    w.t_fps = now_ms();
    rc = 0;
    while (!glfwWindowShouldClose(w.win)) {
        double t0 = now_ms();
        if (!w.paused || w.step_once) {
            for (int k = 0; k < w.nsims; ++k)
                if (sim_step(&w.sims[k])) {
                    rc = 1;
                    goto done_glfw;
                }
            w.step_once = 0;
        }
        double t1 = now_ms();
        if (w.sims[0].shared)
            glFinish(); /* GL is done with the vertex buffers before OpenCL takes them */
        for (int k = 0; k < w.nsims; ++k) {
            sim *s = &w.sims[k];
            if (s->shared && sim_positions(s)) {
                rc = 1;
                goto done_glfw;
            }
            if ((!s->shared || o->verify) && sim_read(s)) {
                rc = 1;
                goto done_glfw;
            }
            if (!s->shared)
                upload(&w.gl[k], s);
            if (o->verify && verify_upload(&w.gl[k], s)) {
                rc = 1;
                goto done_glfw;
            }
        }
        double t2 = now_ms();
        int fw = width, fh = height;
        if (!headless)
            glfwGetFramebufferSize(w.win, &fw, &fh);
        if (now_ms() - w.t_fps > 500.0 || frames == 0) {
            w.fps = w.fps_frames > 0 ? 1e3 * w.fps_frames / (now_ms() - w.t_fps) : 0.0;
            w.fps_frames = 0;
            w.t_fps = now_ms();
            update_status(&w);
        }
        render(&w, fw, fh);
        if (o->bench)
            glFinish();
        double t3 = now_ms();
        t_sim += t1 - t0;
        t_transfer += t2 - t1;
        t_draw += t3 - t2;
        frames++;
        w.fps_frames++;
        if (!headless)
            glfwSwapBuffers(w.win);
        glfwPollEvents();
        if (o->frames > 0 && w.sims[0].frame >= o->frames)
            break;
    }
    if (o->screenshot) {
        w.fps = 1e3 * (double)frames / (now_ms() - t_start);
        update_status(&w);
        render(&w, width, height);
        glFinish();
        rc = screenshot(o->screenshot, width, height);
    }
    if (o->drag_particle >= 0 && rc == 0) {
        sim *s = &w.sims[0];
        if (s->shared && sim_read(s)) {
            rc = 1;
            goto done_glfw;
        }
        int b = s->scene.model.body[o->drag_particle];
        const float *p = &s->x[o->drag_particle].x, *t = o->drag_target;
        double d = sqrt((p[0] - t[0]) * (p[0] - t[0]) + (p[1] - t[1]) * (p[1] - t[1]) +
                        (p[2] - t[2]) * (p[2] - t[2]));
        pbd_body_momentum *mo = calloc((size_t)s->scene.model.num_bodies, sizeof *mo);
        pbd_error err = {0};
        if (!mo || pbd_solver_stats(s->solver, s->stats, &err) != PBD_OK ||
            pbd_solver_momentum(s->solver, mo, &err) != PBD_OK) {
            fprintf(stderr, "pbd view: %s\n", err.message[0] ? err.message : "out of memory");
            free(mo);
            rc = 1;
            goto done_glfw;
        }
        double dp = 0.0, dl = 0.0, pr = 0.0, lr = 0.0;
        for (int k = 0; k < 3; ++k) {
            dp += (s->stats[b].p[k] - mo[b].p_r[k]) * (s->stats[b].p[k] - mo[b].p_r[k]);
            dl += (s->stats[b].l[k] - mo[b].l_r[k]) * (s->stats[b].l[k] - mo[b].l_r[k]);
            pr += mo[b].p_r[k] * mo[b].p_r[k];
            lr += mo[b].l_r[k] * mo[b].l_r[k];
        }
        printf("dragged      particle %d from %.6g m to %.6g m of the target in %ld frames\n",
               o->drag_particle, drag_start, d, w.sims[0].frame);
        printf("body %d       |P - P_r| %.3g of |P_r| %.6g, |L - L_r| %.3g of |L_r| %.6g "
               "(momentum %s)\n",
               b, sqrt(dp), sqrt(pr), sqrt(dl), sqrt(lr),
               mo[b].enabled ? "preserved"
                             : "not "
                               "preserved");
        free(mo);
    }
    if (o->verify)
        printf("verified     %ld frames: the vertex buffer held the solver's positions "
               "(%d particles) after every frame (positions %s: %s)\n",
               frames, w.sims[0].scene.model.num_particles,
               w.sims[0].shared ? "shared with OpenGL" : "read back, glBufferSubData",
               w.sims[0].why);
    if (o->bench && frames > 0) {
        double total = now_ms() - t_start;
        printf("frames       %ld in %.2f s: %.1f fps\n", frames, total * 1e-3,
               1e3 * (double)frames / total);
        printf("per frame    simulation %.3f ms, transfer %.3f ms (%s), drawing %.3f ms\n",
               t_sim / (double)frames, t_transfer / (double)frames,
               w.sims[0].shared ? "shared: acquire, copy, release" : "read back, glBufferSubData",
               t_draw / (double)frames);
    }
done_glfw:
    if (fbo) {
        glDeleteFramebuffers(1, &fbo);
        glDeleteRenderbuffers(2, rbo);
    }
    for (int k = 0; k < w.nsims && w.win; ++k)
        scene_gl_free(&w.gl[k]);
    if (w.win)
        glfwDestroyWindow(w.win);
    glfwTerminate();
done:
    for (int k = 0; k < w.nsims; ++k)
        sim_free(&w.sims[k]);
    return rc;
}
