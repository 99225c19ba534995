/* Body generators (private to the library and the tests): each appends one body, its
 * particles and its distance constraints, to a pbd_model. They depend on the model only; the
 * scene loader (scene.c) drives them from JSON, the built-in scenes (builtin.c) and the tests
 * fill a descriptor that starts from its *_default() value.
 *
 * A generator checks its descriptor first and appends nothing when it is wrong. Its error
 * messages start with the scene key of the faulty field ("resolution: found 1, expected ...",
 * "pinned[3]: ...") so that the loader can put the body's key in front. On an allocation
 * failure the model is rolled back to where it was. */
#ifndef PBD_GENERATORS_H
#define PBD_GENERATORS_H

#include <stdint.h>

#include "mesh/mesh.h"
#include "pbd.h"

/* Scene-wide limits, checked before anything is allocated (smaller in the fuzz build). */
#ifndef PBD_MAX_PARTICLES
#define PBD_MAX_PARTICLES (1 << 26)
#endif
#ifndef PBD_MAX_DISTANCE
#define PBD_MAX_DISTANCE (1 << 28)
#endif

/* Ranges of the generator parameters (the scene format's ranges). */
#define PBD_CLOTH_RES_MIN     2
#define PBD_CLOTH_RES_MAX     4096
#define PBD_ROPE_SEGMENTS_MAX 10000000
#define PBD_TET_CELLS_MAX     512

/* What every body has. */
typedef struct pbd_gen_common {
    const char *name; /* body name (at most 63 characters kept); NULL: the type name */
    /* Mass: `mass` is the body's total, kg, shared equally by its particles; `density` (kg/m^2
     * cloth, kg/m rope, kg/m^3 tet_box) gives the total from the body's measure instead. At
     * most one of them is > 0; both 0 means 1 kg. */
    double mass;
    double density;
    float compliance;          /* of every constraint: >= 0 XPBD alpha (m/N), -k PBD */
    float velocity[3];         /* m/s */
    float angular_velocity[3]; /* rad/s about the body's centre of mass */
    const int *pinned;         /* local indices: inverse mass 0, velocity 0; each once */
    int num_pinned;
} pbd_gen_common;

typedef enum pbd_cloth_orientation {
    PBD_CLOTH_XZ = 0, /* horizontal: u along x, v along z */
    PBD_CLOTH_XY = 1, /* vertical: u along x, v down y (row 0 highest) */
} pbd_cloth_orientation;

typedef enum pbd_cloth_pin {
    PBD_PIN_NONE = 0,
    PBD_PIN_CORNERS = 1, /* particles (0, 0) and (nu - 1, 0) */
    PBD_PIN_EDGE = 2,    /* the row j = 0 */
} pbd_cloth_pin;

/* A rectangular grid of nu x nv particles, index j * nu + i. */
/* A cloth's bending: none, springs to the particle two away along u and v, or one element
 * a pair of triangles sharing an edge (pbd_dihedral or pbd_isometric). */
typedef enum pbd_bending {
    PBD_BENDING_NONE = 0,
    PBD_BENDING_SPRINGS = 1,
    PBD_BENDING_DIHEDRAL = 2,
    PBD_BENDING_ISOMETRIC = 3
} pbd_bending;

/* The bending element (dihedral or isometric) of the triangles (a, b, c) and (a, b, d), which
 * share the edge a-b, at the model's current positions (its rest shape). 1 on allocation
 * failure, 0 otherwise (a degenerate pair is left out). */
int pbd_scene_add_bending_pair(pbd_model *m, pbd_bending kind, float compliance, int a, int b,
                               int c, int d);

/* The stable Neo-Hookean element (pbd_neo_hookean) of the tetrahedron of model particles
 * q[0..3] at its current shape, with Lame's mu and the model's lambda (Pa). PBD_OK, or
 * PBD_ERR_MEMORY, or PBD_ERR_ARGUMENT with a message from "found tetrahedron" on (the caller
 * prefixes the key and the element's index) where the tetrahedron is flat in float or too
 * small for its modulus (an inverse rest shape beyond 1e9 per metre or a compliance beyond
 * 1e20); nothing is appended then. */
pbd_status pbd_scene_add_neo_hookean(pbd_model *m, const int *q, double mu, double lambda,
                                     pbd_error *err);

typedef struct pbd_cloth_desc {
    pbd_gen_common common;
    int resolution[2]; /* nu, nv in [PBD_CLOTH_RES_MIN, PBD_CLOTH_RES_MAX] */
    float size[2];     /* m, > 0 */
    float center[3];
    pbd_cloth_orientation orientation;
    int shear;                /* 1: both diagonals of every quad */
    pbd_bending bending;      /* default springs */
    float bending_compliance; /* the bending constraints' (>= 0 XPBD, < 0 -k PBD); NaN: the
                                 body's compliance */
    pbd_cloth_pin pin;        /* added to common.pinned (union) */
    int tethers; /* 1: each free particle tethered to a pinned one (the nearest along the
                    grid), no farther than it starts (pbd_tether); needs a pin */
    float tether_compliance; /* the tethers' (>= 0 XPBD, < 0 -k PBD); 0 (default): hard */
} pbd_cloth_desc;

/* A chain of segments + 1 particles from start to end. */
typedef struct pbd_rope_desc {
    pbd_gen_common common;
    int segments; /* [1, PBD_ROPE_SEGMENTS_MAX] */
    float start[3];
    float end[3]; /* != start */
    int bending;  /* 1: springs i, i + 2 */
} pbd_rope_desc;

/* A box lattice of (cx+1)(cy+1)(cz+1) particles, index (k * (cy+1) + j) * (cx+1) + i, each
 * cell cut into six tetrahedra around its (0,0,0)-(1,1,1) diagonal; one distance constraint
 * per tetrahedron edge, and with `volume` one volume constraint per tetrahedron. */
typedef struct pbd_tet_box_desc {
    pbd_gen_common common;
    int cells[3];  /* [1, PBD_TET_CELLS_MAX] each */
    float size[3]; /* m, > 0 */
    float center[3];
    int volume;              /* 1: a volume constraint per tetrahedron (six a cell) */
    float volume_compliance; /* theirs: >= 0 XPBD compliance, < 0 -k (PBD stiffness) */
    double young_modulus;    /* > 0: a Neo-Hookean solid (an element a tetrahedron, no edge
                                constraints), Pa; 0: edges */
    double poisson_ratio;    /* [0, 0.49] */
} pbd_tet_box_desc;

/* Explicit particles and constraints. common.density must be 0. */
typedef struct pbd_particles_desc {
    pbd_gen_common common;
    int count; /* >= 1 */
    const float (*positions)[3];
    const float *masses;          /* kg each, > 0; NULL: equal shares of common.mass */
    const float (*velocities)[3]; /* NULL: common.velocity and angular_velocity; a pinned
                                     particle's must be 0 */
    int num_constraints;
    const int (*constraints)[2]; /* local indices, different */
    const float *rest;           /* NULL or per constraint; < 0: the initial distance */
} pbd_particles_desc;

typedef enum pbd_mesh_as {
    PBD_MESH_CLOTH = 0, /* the triangles: a distance constraint per edge */
    PBD_MESH_SOFT = 1,  /* the tetrahedra: a distance constraint per edge */
} pbd_mesh_as;

/* A body from a mesh (mesh.h). Its particles are the mesh's vertices that its elements use
 * (the triangles of a cloth, the tetrahedra of a soft body), in the mesh's order; each gets
 * scale, then rotate, then translate. The surface is the mesh's triangles. */
typedef struct pbd_mesh_desc {
    pbd_gen_common common; /* density: kg/m^2 of the surface (cloth), kg/m^3 (soft) */
    const pbd_mesh *mesh;  /* not owned */
    pbd_mesh_as as;
    pbd_bending bending;      /* cloth, springs: a spring between the far corners of every
                                 two triangles that share an edge (the body's compliance);
                                 dihedral, isometric: an element on such a pair */
    float bending_compliance; /* dihedral, isometric: theirs; NaN: the body's compliance */
    int volume;               /* soft, 1: a volume constraint per tetrahedron */
    float volume_compliance;  /* theirs: >= 0 XPBD compliance, < 0 -k (PBD stiffness) */
    double young_modulus;     /* soft, > 0: a Neo-Hookean element per tetrahedron instead of
                                 its edges, Pa */
    double poisson_ratio;     /* [0, 0.49] */
    float scale[3];           /* > 0, per axis */
    float rotate[3];          /* rotation vector: axis times angle, rad (right-handed) */
    float translate[3];       /* m */
} pbd_mesh_desc;

pbd_cloth_desc pbd_cloth_desc_default(void);
pbd_rope_desc pbd_rope_desc_default(void);
pbd_tet_box_desc pbd_tet_box_desc_default(void);
pbd_particles_desc pbd_particles_desc_default(void);
pbd_mesh_desc pbd_mesh_desc_default(void);

/* Particle and constraint counts of a generated body (int64: computed before the limits). */
void pbd_cloth_counts(const pbd_cloth_desc *d, int64_t *particles, int64_t *constraints);
void pbd_rope_counts(const pbd_rope_desc *d, int64_t *particles, int64_t *constraints);
void pbd_tet_box_counts(const pbd_tet_box_desc *d, int64_t *particles, int64_t *constraints);
/* A mesh body's counts need its edges: PBD_ERR_MEMORY, or PBD_ERR_ARGUMENT (the message as
 * pbd_scene_add_mesh's) when the mesh lacks the elements `as` needs. */
pbd_status pbd_mesh_counts(const pbd_mesh_desc *d, int64_t *particles, int64_t *constraints,
                           pbd_error *err);

/* Append one body. PBD_ERR_ARGUMENT for a bad descriptor, PBD_ERR_MEMORY. */
pbd_status pbd_scene_add_cloth(pbd_model *m, const pbd_cloth_desc *d, pbd_error *err);
pbd_status pbd_scene_add_rope(pbd_model *m, const pbd_rope_desc *d, pbd_error *err);
pbd_status pbd_scene_add_tet_box(pbd_model *m, const pbd_tet_box_desc *d, pbd_error *err);
pbd_status pbd_scene_add_particles(pbd_model *m, const pbd_particles_desc *d, pbd_error *err);
pbd_status pbd_scene_add_mesh(pbd_model *m, const pbd_mesh_desc *d, pbd_error *err);

#endif
