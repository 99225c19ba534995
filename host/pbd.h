/* pbd: position-based dynamics on OpenCL devices, with a CPU reference solver.
 *
 * The one public header. Library functions return a pbd_status and, on failure, fill a
 * pbd_error with a one-line message naming the file, field or call; none of them prints or
 * exits. "Zero means default" in the descriptor structs. */
#ifndef PBD_H
#define PBD_H

#include <stddef.h>
#include <stdint.h>

#include "pbd_layout.h"

/* ---- status: one X-macro list gives the enum and its messages ------------------------- */

#define PBD_STATUS_LIST(X)                                                                         \
    X(PBD_OK, "ok")                                                                                \
    X(PBD_ERR_ARGUMENT, "invalid argument")                                                        \
    X(PBD_ERR_MEMORY, "out of memory")                                                             \
    X(PBD_ERR_IO, "file error")                                                                    \
    X(PBD_ERR_SCENE, "invalid scene")                                                              \
    X(PBD_ERR_NO_PLATFORM, "no OpenCL platform")                                                   \
    X(PBD_ERR_NO_DEVICE, "no matching OpenCL device")                                              \
    X(PBD_ERR_CL, "OpenCL call failed")                                                            \
    X(PBD_ERR_BUILD, "OpenCL program build failed")                                                \
    X(PBD_ERR_LIMIT, "device limit exceeded")                                                      \
    X(PBD_ERR_MODEL, "invalid model")                                                              \
    X(PBD_ERR_CHECKPOINT, "invalid checkpoint")

typedef enum pbd_status {
#define PBD_X_ENUM(name, msg) name,
    PBD_STATUS_LIST(PBD_X_ENUM)
#undef PBD_X_ENUM
        PBD_STATUS_COUNT
} pbd_status;

const char *pbd_status_string(pbd_status status);

/* The details of a failure. `message` is one line; `log` holds a program build log (owned,
 * freed by pbd_error_clear or the next failure recorded) when status is PBD_ERR_BUILD.
 * Zero one before its first use (pbd_error err = {0}): the library frees the log it holds. */
typedef struct pbd_error {
    pbd_status status;
    char message[1024];
    char *log;
} pbd_error;

/* Records a failure in err (which may be NULL) and returns status. printf-style. */
pbd_status pbd_error_set(pbd_error *err, pbd_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
void pbd_error_clear(pbd_error *err);

/* ---- model: particles, bodies, constraints, colliders ---------------------------------- */

/* A body: the particles [first, first + count), generated together. */
typedef struct pbd_body {
    int first;    /* first particle index */
    int count;    /* number of particles, >= 1 */
    int pinned;   /* number of particles with inverse mass 0 (held by the world) */
    int momentum; /* 1 (default): preserve the body's momentum when the run does; 0: opt out.
                     A body with pinned particles is held by the world and never corrected. */
    /* The body's own damping (pbd_config's damping and damping_k): a pbd_damping_kind, or -1
     * (default): the run's; a fraction per substep in [0, 1], or -1 (default): the run's. */
    int damping;
    float damping_k;
    /* The body's surface against colliders, mixed with each collider's as Box2D does:
     * friction sqrt(body's x collider's), restitution the larger. < 0 (default): the
     * collider's alone. */
    float friction, friction_kinetic, restitution;
    /* Shape matching (Müller et al. 2005) of the whole body toward its initial shape, turned
     * and moved as the body is: PBD stiffness in (0, 1], 0 (default): none; or, with
     * shape_stiffness 0, its XPBD form: compliance > 0 in s^2 (the energy is
     * sum m |x - goal|^2 / (2 compliance): a particle swings about its goal at the angular
     * frequency 1 / sqrt(compliance)), 0 (default): none. Not both. */
    float shape_stiffness;
    float shape_compliance;
    /* Shape matching on overlapping clusters instead of the whole body (Müller et al. 2005,
     * section 4.4), each a shape-matching constraint of the same stiffness or compliance:
     * cluster centres on a grid of at most this spacing (m) over the body's initial bounding
     * box, a cluster the particles within shape_cluster_radius (m; 0: the spacing) of its
     * centre, at most PBD_MAX_CLUSTER_REACH spacings. Clusters of fewer than 4 particles are
     * dropped, every particle must be in one, and a particle is in at most 32 on average. A
     * particle moves by the mean of its clusters' pulls. 0 (default): the whole body. */
    float shape_cluster_spacing;
    float shape_cluster_radius;
    /* Pressure on a closed surface (the body's triangles, each edge shared by exactly two of
     * them, counter-clockwise from outside): the volume inside is kept at `pressure` times
     * the initial one, > 0; 0 (default): none. */
    float pressure;
    float pressure_compliance; /* its XPBD compliance, m^3/Pa, >= 0 (0: hard), or a PBD
                                  stiffness k in (0, 1] as -k */
    /* Particle contacts: each particle of the body is a sphere of this radius (m, >= 0;
     * 0, the default: the body takes no part in particle contacts). Particles of two bodies
     * that both have a radius push each other apart; within one body only with
     * self_collision (1), and then only pairs farther apart than their radii's sum in the
     * initial (rest) shape. */
    float radius;
    int self_collision;
    char name[64];
} pbd_body;

/* Structure of arrays, host side. x.w is the inverse mass (0 pins the particle); v.w is the
 * particle's mass in kg, also for pinned particles (statistics use it). */
typedef struct pbd_model {
    int num_particles;
    pbd_float4 *x; /* positions, m; w = inverse mass, 1/kg */
    pbd_float4 *v; /* velocities, m/s; w = mass, kg */
    int *body;     /* owning body of each particle */
    int num_bodies;
    pbd_body *bodies;
    /* One array per constraint type (PBD_CONSTRAINT_LIST): num_distance and distance,
     * num_attachment and attachment, ... Compliance here is the user's: >= 0 XPBD alpha,
     * < 0 -k (PBD stiffness). */
#define PBD_X_MODEL_ARRAY(id, name, type, arity, world)                                            \
    int num_##name;                                                                                \
    type *name;
    PBD_CONSTRAINT_LIST(PBD_X_MODEL_ARRAY)
#undef PBD_X_MODEL_ARRAY
    int num_colliders;
    pbd_collider *colliders; /* static colliders, in the order particles meet them */
    /* The bodies' surfaces, for drawing and export (no physics): triangles of three particle
     * indices of one body, counter-clockwise seen from outside a closed surface. A cloth's
     * grid triangles, a tet box's boundary; none for ropes and explicit particles. */
    int num_triangles;
    int *triangles; /* 3 x num_triangles */
} pbd_model;

/* What the solver and the model's users need to know of a constraint type. */
typedef struct pbd_constraint_info {
    const char *name; /* "distance", "attachment", ... (the list's name) */
    int arity;        /* particles per constraint: the first `arity` ints of a record */
    int world;        /* 1: the world takes part; what it moves is an external impulse */
    size_t size;      /* bytes per record */
} pbd_constraint_info;

extern const pbd_constraint_info pbd_constraint_types[PBD_CONSTRAINT_COUNT];

void pbd_model_free(pbd_model *m);
/* The pbd_model_add_* functions grow the model's arrays in powers of two, from their counts:
 * an array they grow must have been made by them (or be NULL with a count of 0). A model
 * whose arrays the caller allocates is filled by the caller throughout. */
/* Appends a body of `count` particles (uninitialised) and returns its first index, or -1 on
 * allocation failure or a count that would pass INT_MAX particles. */
int pbd_model_add_particles(pbd_model *m, int count, const char *body_name);
/* Appends a constraint of `type` (PBD_CONSTRAINT_*), a record of that type's struct; returns
 * 0, or -1 on allocation failure or an unknown type. */
int pbd_model_add_constraint(pbd_model *m, int type, const void *record);
/* The records of constraint `type` (NULL when there are none) and their number. */
const void *pbd_model_constraints(const pbd_model *m, int type, int *count);
/* The constraints of every type (the body constraints, one a body, not counted). */
long long pbd_model_num_constraints(const pbd_model *m);
/* Appends a distance constraint; returns 0, or -1 on allocation failure. */
int pbd_model_add_distance(pbd_model *m, int a, int b, float rest, float compliance);
/* Appends a collider (kind, shape; friction and restitution), or -1 on allocation failure. */
int pbd_model_add_collider(pbd_model *m, const pbd_collider *c);
/* Appends a surface triangle (particle indices a, b, c), or -1 on allocation failure. */
int pbd_model_add_triangle(pbd_model *m, int a, int b, int c);
/* A plane (unit normal, offset: particles keep n.x >= offset). */
int pbd_model_add_plane(pbd_model *m, float nx, float ny, float nz, float offset);
/* Bounds that keep every quantity of a step finite in float: coordinates and speeds up to
 * PBD_MAX_COORD (squared lengths stay far below FLT_MAX), compliance up to
 * PBD_MAX_COMPLIANCE and substeps of at least PBD_MIN_SUBSTEP (compliance / h^2 stays
 * finite). Inputs beyond them are rejected: they give NaN, not a simulation. */
#define PBD_MAX_COORD      1e9f  /* m, m/s */
#define PBD_MAX_COMPLIANCE 1e20f /* m/N */
/* A shape-matching cluster's radius: at most this many times the clusters' spacing. */
#define PBD_MAX_CLUSTER_REACH 4.0f
#define PBD_MIN_SUBSTEP       1e-9f /* s */
#define PBD_MAX_SUBSTEPS      1000  /* a frame's */

/* Checks one record of constraint `type` (its particles among num_particles, its values);
 * `index` names it in the message. */
/* Checks collider record `c` (numbered k in messages): kind, shape, coefficients, motion. */
pbd_status pbd_collider_validate(const pbd_collider *c, int k, pbd_error *err);
pbd_status pbd_constraint_validate(int type, const void *record, int index, int num_particles,
                                   pbd_error *err);
/* Checks counts, arrays, indices, masses (x.w the inverse of v.w, or 0) and values: every
 * field of the model is what the solver expects. */
pbd_status pbd_model_validate(const pbd_model *m, pbd_error *err);
/* Size of the scene: the diagonal of the particles' bounding box, m (1 if it is 0). */
float pbd_model_extent(const pbd_model *m);
/* The particle indices of constraint `type` as one array of arity x count ints (malloc'd,
 * at least one int), the form colouring and the particle slots take; NULL when out of
 * memory. */
int *pbd_model_constraint_ends(const pbd_model *m, int type);

/* Graph colouring of one type's constraints: `order` lists constraint indices colour by
 * colour; colour c is order[offsets[c] .. offsets[c+1]). No two constraints of one colour
 * share a particle (but for shared ones, below), except in the overflow set: with
 * `overflow`, the last colour holds the constraints that found no colour under the bound,
 * and they are projected one after another. */
typedef struct pbd_coloring {
    int num_colors;
    int *offsets; /* num_colors + 1 entries */
    int *order;   /* num_constraints entries */
    int overflow; /* 1: the last colour is the overflow set */
} pbd_coloring;

/* How to colour. */
typedef struct pbd_color_options {
    /* num_particles flags, or NULL: any number of a colour's constraints may share a flagged
     * particle. For pinned particles (inverse mass 0), which no projection writes. */
    const unsigned char *shared;
    /* > 0: at most this many colours; the constraints that find none go to the overflow set
     * (then max_colors + 1 colours in all). 0: no bound. */
    int max_colors;
    /* A particle of more constraints than this (not shared freely) keeps the colours taken
     * there as a bitset instead of walking its constraints for each of them, which costs the
     * square of its degree; smallest-last order then orders its constraints as if it were
     * not there. 0: 64. The colouring is the same either way where no constraint goes to
     * the overflow set. */
    int hub_degree;
} pbd_color_options;

/* Colours `count` constraints of `arity` particles each, constraint c's particles being
 * ends[arity c .. arity c + arity - 1], all < num_particles. With `subset` (model indices,
 * each once, `subset_count` of them) only those are coloured and the order holds them;
 * NULL colours all. `opt` may be NULL (no shared particles, no bound). */
pbd_status pbd_color_constraints(int num_particles, const int *ends, int arity, int count,
                                 const int *subset, int subset_count, const pbd_color_options *opt,
                                 pbd_coloring *out, pbd_error *err);
/* Checks that `c` is a partition of the `count` constraints into independent colours (but
 * its overflow set; `shared` as in pbd_color_options, may be NULL). */
pbd_status pbd_coloring_validate(int num_particles, const int *ends, int arity, int count,
                                 const pbd_coloring *c, const unsigned char *shared,
                                 pbd_error *err);
void pbd_coloring_free(pbd_coloring *c);

/* ---- configuration and scenes ----------------------------------------------------------- */

typedef enum pbd_solver_kind {
    PBD_SOLVER_GS = 0,     /* coloured (block) Gauss-Seidel */
    PBD_SOLVER_JACOBI = 1, /* per-constraint gains + deterministic gather */
} pbd_solver_kind;

typedef enum pbd_backend_kind {
    PBD_BACKEND_CL = 0,  /* OpenCL device */
    PBD_BACKEND_CPU = 1, /* single-threaded C reference */
} pbd_backend_kind;

typedef enum pbd_damping_kind {
    PBD_DAMPING_NONE = 0,
    PBD_DAMPING_POINT = 1, /* v *= 1 - k every substep (Bullet's model; damps rigid motion too) */
    PBD_DAMPING_RIGID = 2, /* Müller et al. 2007 sec. 3.5: damp only the deviation from the
                              body's rigid motion, by the fraction k every substep */
} pbd_damping_kind;

typedef enum pbd_velocity_update {
    PBD_VELOCITY_FIRST_ORDER = 0, /* v = (p - x) / h (Algorithm 1 line 10) */
    PBD_VELOCITY_BDF2 = 1,        /* second order (Bender et al. survey); first order on the
                                     first substep */
} pbd_velocity_update;

/* How to step. Values are in SI units. */
typedef struct pbd_config {
    float dt;       /* frame time step, s, in (0, 10] */
    int substeps;   /* substeps per frame, [1, 1000] (each of dt / substeps) */
    int iterations; /* projection iterations per substep, [1, 10000] */
    pbd_solver_kind solver;
    float omega;      /* Jacobi relaxation, (0, 2) */
    float gravity[3]; /* m/s^2, each in [-1e6, 1e6] */
    int frames;       /* default number of frames for `pbd run` */
    int momentum;     /* 1: preserve each free body's linear and angular momentum (Dahl &
                         Bargteil 2019); bodies with pinned particles are never corrected */
    pbd_damping_kind damping;
    float damping_k; /* damping fraction per substep, [0, 1] */
    pbd_velocity_update velocity_update;
    int max_colors; /* colours per constraint type before the rest go to a serial overflow
                       set (pbd_color_options), but the CPU variant's distance constraints in
                       blocks (all their colours one launch); 0: no bound */
    /* The CPU kernel variant (CPU devices' default): a constraint type (but distance) of two
     * colours or more whose colours hold this many constraints or fewer on average is
     * projected in one launch, one work-item taking its colours in order (the same results);
     * 0: a launch a colour. Where a colour is this small, its launch costs more than its
     * work. Under Gauss-Seidel a four-particle type on a mesh under 4,096 particles is one
     * block instead, whatever its colours' size (pbd_solver_type_blocks), but where this is
     * 0. */
    int serial_color_size;
} pbd_config;

/* Defaults: dt 1/60, 1 substep, 10 iterations, Gauss-Seidel, omega 1, gravity (0,-9.81,0),
 * 300 frames, momentum preservation on, no damping, first-order velocity update, 32 colours
 * a type, types of colours of 64 constraints or fewer in one launch on the CPU variant. */
pbd_config pbd_config_default(void);

/* Whether a run of `c` preserves body b's momentum: the run's and the body's momentum on,
 * and no pinned particle (the world, holding it, exchanges momentum with it). */
int pbd_body_preserved(const pbd_body *b, const pbd_config *c);

/* Body b's damping in a run of `c`: its own model and fraction per substep (in *k, when k is
 * not NULL), each where it has one, else the run's. */
pbd_damping_kind pbd_body_damping(const pbd_body *b, const pbd_config *c, float *k);

typedef struct pbd_scene {
    pbd_model model;
    pbd_config config;
} pbd_scene;

/* Loads a JSON scene, or a built-in one when `path` starts with '@' (pbd_scene_builtin).
 * Errors name the file and the key (e.g. "bodies[0].resolution"). */
pbd_status pbd_scene_load(const char *path, pbd_scene *out, pbd_error *err);
/* The same from a string; `name` is used in messages in place of a file name, and mesh files
 * are found relative to its folder (the working directory when it names none). */
pbd_status pbd_scene_parse(const char *json, const char *name, pbd_scene *out, pbd_error *err);
void pbd_scene_free(pbd_scene *s);
/* Built-in scenes: "@cloth-N" (an N x N cloth held at two corners over a floor, structural
 * and shear springs), "@boxes-BxP" (B free spinning soft boxes of P particles each, no
 * gravity) and "@pile-N" (N soft cubes of 512 particles with particle contacts, in four
 * layers over a rough floor). */
pbd_status pbd_scene_builtin(const char *name, pbd_scene *out, pbd_error *err);

/* ---- devices ----------------------------------------------------------------------------- */

typedef struct pbd_device_info {
    int platform_index;
    int device_index;
    char platform_name[128];
    char platform_version[128];
    char name[128];
    char version[128];   /* CL_DEVICE_VERSION */
    char c_version[128]; /* CL_DEVICE_OPENCL_C_VERSION */
    char type[16];       /* "gpu", "cpu", "accelerator", "other" */
    unsigned compute_units;
    uint64_t global_mem; /* bytes */
    uint64_t max_alloc;  /* bytes */
    size_t max_work_group;
    uint64_t local_mem; /* bytes, CL_DEVICE_LOCAL_MEM_SIZE */
    int fp64;
    int gl_sharing;
} pbd_device_info;

/* Lists every device of every platform. *out is malloc'd; PBD_ERR_NO_PLATFORM when there is
 * no OpenCL platform at all. */
pbd_status pbd_devices_list(pbd_device_info **out, int *count, pbd_error *err);
/* Picks a device by SPEC: "P:D" (platform and device index), "cpu", "gpu", or a substring of
 * the device or platform name (case-insensitive). NULL or "" picks the first GPU, else the
 * first device. */
pbd_status pbd_device_select(const pbd_device_info *list, int count, const char *spec, int *index,
                             pbd_error *err);

/* ---- solver ------------------------------------------------------------------------------ */

/* The order in which the per-body fp64 sums of the momentum correction are added. Every
 * device adds in a fixed order, so a run repeats itself bit for bit; the CPU reference
 * can take either device's order and then matches it bit for bit too. */
typedef enum pbd_sum_layout {
    PBD_SUMS_TREE = 0, /* GPUs: 64 work-item lanes a segment, then a tree over them */
    PBD_SUMS_LANES = 1 /* CPU OpenCL devices: PBD_SUM_LANES lanes a segment, then a tree */
} pbd_sum_layout;

/* Which kernels a device runs, chosen once when the solver is created. */
typedef enum pbd_variant {
    PBD_VARIANT_AUTO = 0, /* by device type: GPU kernels on GPUs, CPU kernels on CPU devices */
    PBD_VARIANT_GPU = 1,  /* a launch a colour, work-group tree reductions (kernels/gpu/) */
    PBD_VARIANT_CPU = 2,  /* blocks, float16 lanes, serial reductions, fused stages
                             (kernels/cpu/) */
} pbd_variant;

/* An OpenGL context the CL backend may share vertex buffers with: the native handles of the
 * context current on the calling thread (one of glx_display, egl_display or wgl_hdc). */
typedef struct pbd_gl_context {
    void *context;     /* GLXContext, EGLContext or HGLRC */
    void *glx_display; /* Display * of a GLX context */
    void *egl_display; /* EGLDisplay of an EGL context */
    void *wgl_hdc;     /* HDC of a WGL context */
} pbd_gl_context;

typedef struct pbd_solver_desc {
    pbd_backend_kind backend;
    const char *device;     /* device SPEC for the CL backend (see pbd_device_select) */
    const char *kernel_dir; /* read kernels/ sources from here instead of the embedded copy */
    int profile;            /* 1: record per-kernel times (CL_QUEUE_PROFILING_ENABLE) */
    int float_sums;         /* 1: compensated float per-body sums even where the device has
                               fp64 (the path of devices without it; for tests) */
    pbd_sum_layout sums;    /* CPU backend: the order of the per-body sums, and with it of
                               the variant whose colouring it follows (lanes: the CPU
                               variant's blocks of four-particle types), to match a device's
                               bit for bit (the CL backend uses its variant's) */
    pbd_variant variant;    /* CL backend: the kernels to run, on any device (default: auto) */
    /* CL backend: share buffers with this OpenGL context (see pbd_solver_gl_attach), only
     * where the device lists cl_khr_gl_sharing and is the context's current device (asked
     * of clGetGLContextInfoKHR); otherwise the solver shares nothing and
     * pbd_solver_gl_shared says why. The decision never tries a shared context first. */
    const pbd_gl_context *gl;
} pbd_solver_desc;

typedef struct pbd_body_stats {
    double mass;                 /* kg */
    double com[3];               /* m */
    double p[3];                 /* linear momentum, kg m/s */
    double l[3];                 /* angular momentum about the centre of mass, kg m^2/s */
    double kinetic_energy;       /* J */
    double max_constraint_error; /* max |C| of the body's distance constraints, m */
} pbd_body_stats;

/* A body's tracked rigid momenta and the last correction applied to it. */
typedef struct pbd_body_momentum {
    int enabled;     /* 1 when the body's momentum is preserved */
    double p_r[3];   /* tracked linear momentum P_r, kg m/s */
    double l_r[3];   /* tracked angular momentum L_r about the com, kg m^2/s */
    double v_cor[3]; /* last v_cor, m/s */
    double w_cor[3]; /* last w_cor, rad/s */
    double com[3];   /* centre of mass at the last correction, m */
} pbd_body_momentum;

typedef struct pbd_kernel_time {
    const char *name;
    double ms; /* summed device time */
    long launches;
} pbd_kernel_time;

typedef struct pbd_solver pbd_solver;

pbd_status pbd_solver_create(const pbd_model *m, const pbd_config *cfg, const pbd_solver_desc *desc,
                             pbd_solver **out, pbd_error *err);
void pbd_solver_destroy(pbd_solver *s);
/* Advances `frames` (>= 0) frames (each cfg->substeps substeps). Work is queued, not waited
 * for. Where a step, or pbd_solver_finish waiting for one, fails (the device out of
 * resources), the state is partly advanced: the solver refuses to step on (reads still
 * work); make a new one, from the model or with a checkpoint loaded. */
pbd_status pbd_solver_step(pbd_solver *s, int frames, pbd_error *err);
/* Replaces constraint `index` (the model's numbering) of `type` with `record` between steps:
 * its values (an attachment's target, a rest length, a compliance) and its particles, where
 * no other constraint of its colour touches the new ones (an attachment moved to another
 * particle: a mouse drag) and, for a type run in blocks (distance constraints; the
 * four-particle types on the CPU variant, pbd_solver_type_blocks), the new ones lie in the
 * constraint's block, and a constraint between blocks keeps its particles. (On the CPU
 * variant a distance constraint's new particles end the fast runs of consecutive particles
 * of its block's part of its colour at its group of sixteen: the rest is gathered.)
 * PBD_ERR_ARGUMENT when the new particles break those rules or an index is out of range,
 * PBD_ERR_MODEL for invalid values, and for a Neo-Hookean element too stiff for the
 * substeps (as pbd_solver_create refuses one). Where the device fails to take the change
 * (out of memory), the solver refuses to step on: make it again. */
pbd_status pbd_solver_update_constraint(pbd_solver *s, int type, int index, const void *record,
                                        pbd_error *err);
/* Replaces collider `index` between steps: a kinematic collider moved through the API (its
 * shape, coefficients and velocities; with velocities the solver goes on moving it from
 * there). PBD_ERR_ARGUMENT for an index out of range, a kind other than the collider's, or
 * restitution or friction the solver was made without; PBD_ERR_MODEL for invalid values.
 * Particles it now overlaps are pushed out by the next collisions, an external impulse.
 * Where the device fails to take it (out of resources), the solver refuses to step on. */
pbd_status pbd_solver_update_collider(pbd_solver *s, int index, const pbd_collider *c,
                                      pbd_error *err);
/* The colliders as they are now (kinematic ones where they have moved to); *count of them.
 * Valid until the next step or update. */
const pbd_collider *pbd_solver_colliders(const pbd_solver *s, int *count);
/* A 64-bit hash (FNV-1a) of every particle's position and velocity bits, read back from
 * where the state lives: two runs that agree bit for bit have equal hashes. */
pbd_status pbd_solver_state_hash(pbd_solver *s, uint64_t *hash, pbd_error *err);
/* Waits for queued work. */
pbd_status pbd_solver_finish(pbd_solver *s, pbd_error *err);
/* Copies positions and velocities (arrays of num_particles) back to the host. */
pbd_status pbd_solver_read(pbd_solver *s, pbd_float4 *x, pbd_float4 *v, pbd_error *err);
/* A read queued behind the steps (pbd_solver_read_begin). */
typedef struct pbd_pending_read pbd_pending_read;
/* Queues a copy of positions and velocities (either may be NULL) behind the steps queued
 * so far and returns without waiting: the device keeps working while the copy is made, and
 * steps may be queued after it. x and v must not be read, written or freed until
 * pbd_pending_read_wait on *out has returned. On failure nothing writes x or v. */
pbd_status pbd_solver_read_begin(pbd_solver *s, pbd_float4 *x, pbd_float4 *v,
                                 pbd_pending_read **out, pbd_error *err);
/* Waits until a queued read is complete and frees it (whatever it returns). The one call
 * that may be made on another thread than the solver's, while it steps. */
pbd_status pbd_pending_read_wait(pbd_pending_read *r, pbd_error *err);
/* Per-body statistics of the current state, computed where the state lives (on the device
 * for the CL backend). `out` has num_bodies entries. */
pbd_status pbd_solver_stats(pbd_solver *s, pbd_body_stats *out, pbd_error *err);
/* Tracked momenta and the last correction per body (num_bodies entries). Before the first
 * step, P_r and L_r are the initial state's and the corrections are 0. */
pbd_status pbd_solver_momentum(pbd_solver *s, pbd_body_momentum *out, pbd_error *err);
/* Launches per frame spent on momentum preservation: 2 per substep (body_reduce, body_solve;
 * the broadcast is folded into the next substep's predict), or 0. */
long pbd_solver_momentum_launches_per_frame(const pbd_solver *s);
/* The order of the per-body sums the solver uses (its device's, or desc->sums for the CPU
 * backend). */
pbd_sum_layout pbd_solver_sum_layout(const pbd_solver *s);
/* Bytes the solver holds where it steps (device buffers for the CL backend). */
size_t pbd_solver_memory_bytes(const pbd_solver *s);
/* Error of the distance constraints in the current state: the mean of |C| / rest over the
 * constraints with rest > 0, and the largest |C| (m). Reads the positions back. */
pbd_status pbd_solver_constraint_error(pbd_solver *s, double *mean_relative, double *max_abs,
                                       pbd_error *err);
/* Constraints of every type projected per frame (constraints x iterations x substeps; the
 * body constraints, shape matching and pressure, not counted). */
double pbd_solver_projections_per_frame(const pbd_solver *s);
/* The kernel variant the solver runs: PBD_VARIANT_GPU or PBD_VARIANT_CPU (for the CPU
 * backend, the variant whose summation order it follows). */
pbd_variant pbd_solver_variant(const pbd_solver *s);
/* "cpu (reference)" or the OpenCL device name. */
const char *pbd_solver_device_name(const pbd_solver *s);

/* 1 where the solver shares buffers with desc->gl, else 0; *why (when not NULL) says which
 * path positions take and why ("no OpenGL context was given", "the device lists no
 * cl_khr_gl_sharing", ...). */
int pbd_solver_gl_shared(const pbd_solver *s, const char **why);
/* Shares the OpenGL buffer object `buffer` (num_particles pbd_float4 or more) with a sharing
 * solver; PBD_ERR_ARGUMENT where the solver shares nothing or the buffer is too small. A
 * later attach replaces the earlier one. */
pbd_status pbd_solver_gl_attach(pbd_solver *s, unsigned buffer, pbd_error *err);
/* Copies the positions into the attached buffer on the device (acquire, copy, release) and
 * waits for it. The caller has finished its OpenGL commands on the buffer (glFinish). */
pbd_status pbd_solver_gl_positions(pbd_solver *s, pbd_error *err);
/* Colours of every constraint type together, and of `type` alone. */
int pbd_solver_num_colors(const pbd_solver *s);
int pbd_solver_type_colors(const pbd_solver *s, int type);
/* Constraints of `type` in its overflow set (its last colour, projected one after another
 * because they found no colour under pbd_config.max_colors), or 0. */
int pbd_solver_type_serial(const pbd_solver *s, int type);
/* 1: the device projects `type`'s colours in one launch, one work-item taking them one by
 * one in order (the CPU kernel variant, where they average pbd_config.serial_color_size
 * constraints or fewer and the type is not run in blocks, pbd_solver_type_blocks). */
int pbd_solver_type_one_launch(const pbd_solver *s, int type);
/* The blocks a four-particle type (volume, dihedral, isometric, Neo-Hookean) is coloured and
 * run in under Gauss-Seidel on the CPU kernel variant, or 0: on meshes of 4,096 particles or
 * more, its constraints across blocks in one launch, then a work-item a block; a smaller
 * mesh is 1 block, one work-item taking every colour in one launch (not where
 * pbd_config.serial_color_size is 0). */
int pbd_solver_type_blocks(const pbd_solver *s, int type);
/* Shape-matching clusters (pbd_body.shape_cluster_spacing) of every body together. */
int pbd_solver_shape_clusters(const pbd_solver *s);
/* Launches (or, on the CPU, stage passes) per frame. */
long pbd_solver_launches_per_frame(const pbd_solver *s);
/* Per-kernel device times since creation or the last reset (profile = 1 only). *out points
 * into the solver; valid until the next call. */
pbd_status pbd_solver_kernel_times(pbd_solver *s, const pbd_kernel_time **out, int *count,
                                   pbd_error *err);
void pbd_solver_reset_kernel_times(pbd_solver *s);

/* ---- checkpoints ------------------------------------------------------------------------ */

/* A checkpoint holds what a run continues from: every particle's position and velocity (and
 * BDF2's previous ones), each body's reference point and tracked momenta, the substeps run
 * so far, the configuration and a fingerprint of the model (format: docs/checkpoints.md).
 * Loaded into a solver made from the same model and configuration, it continues the run bit
 * for bit as if it had never stopped, on the same device and variant (on another, within
 * that device's rounding). Constraint records changed with pbd_solver_update_constraint are
 * the caller's to restore.
 *
 * Save: *data (malloc'd, the caller frees it) and *size. The library writes no file. A
 * solver that refuses to step because a step or load failed (its state partly written)
 * refuses to save too. */
pbd_status pbd_solver_save_state(pbd_solver *s, void **data, size_t *size, pbd_error *err);
/* Load: PBD_ERR_CHECKPOINT, with a message that starts with `name`, for a file that is not a
 * checkpoint, of another version, truncated, corrupt (its checksum), of another model, of
 * another configuration (naming the field) or holding values that are not finite. The
 * solver is unchanged then. Where the device fails to take a valid one (out of resources),
 * its state is partly written: the solver refuses to step on. */
pbd_status pbd_solver_load_state(pbd_solver *s, const void *data, size_t size, const char *name,
                                 pbd_error *err);
/* The size of a checkpoint of this solver, bytes (a file of any other size is refused). */
size_t pbd_solver_state_size(const pbd_solver *s);
/* Substeps run since the scene's start, counting those a loaded checkpoint had run. */
long pbd_solver_substeps(const pbd_solver *s);
/* A 64-bit hash of the model: particles, bodies, constraints and colliders. */
uint64_t pbd_model_fingerprint(const pbd_model *m);

#endif
