/* The solver's insides: the plan both backends run, and the stage interface they implement.
 * The step itself (step.c) is one fixed list of stages, so the CPU reference and the OpenCL
 * solver cannot drift apart in what they do or in what order. */
#ifndef PBD_SOLVER_IMPL_H
#define PBD_SOLVER_IMPL_H

#include "pbd.h"
#include "pbd_shared.h"

/* The stages, named as their device kernels: one list for both backends, so timings line up
 * in `pbd bench` (the CPU reference times its loops under the same names). Projection is a
 * stage per constraint type, PBD_STAGE_PROJECT + type, named project_<type>. */
typedef enum pbd_stage {
    PBD_STAGE_PREDICT,
    PBD_STAGE_PROJECT,
    PBD_STAGE_COLLIDE = PBD_STAGE_PROJECT + PBD_CONSTRAINT_COUNT,
    PBD_STAGE_PROJECT_JACOBI, /* the distance constraints' Jacobi gains */
    PBD_STAGE_GATHER,         /* the Jacobi gather (and the collisions) */
    PBD_STAGE_UPDATE,
    PBD_STAGE_REDUCE,
    PBD_STAGE_SOLVE,
    PBD_STAGE_APPLY,
    PBD_STAGE_BODY_REDUCE, /* the body constraints' per-segment sums (and volume gradients) */
    PBD_STAGE_BODY_SOLVE,  /* their per-body solve */
    PBD_STAGE_BODY_APPLY,  /* their per-particle correction */
    PBD_STAGE_HASH,        /* particle contacts: the hash and each particle's candidates */
    PBD_STAGE_CONTACT,     /* particle contacts: projected, once an iteration */
    PBD_STAGE_COUNT
} pbd_stage;

extern const char *const pbd_stage_names[PBD_STAGE_COUNT];

/* On CPU devices, a mesh of one block (too small for two, or numbered without locality) with
 * up to this many distance constraints runs them in one work-item, one launch an iteration,
 * rather than a launch a colour and one for the collisions: on PoCL a launch costs about as
 * much as 1,000 projections on one core, and a 60 x 60 cloth (14,042 constraints, 13
 * colours) steps in 0.87 instead of 1.55 ms. */
#define PBD_ONE_BLOCK 32768

/* Block Gauss-Seidel (a fixed order of the same colours): the particles are cut into
 * num_blocks ranges of indices. The first boundary_colors colours of a type hold the
 * constraints whose particles, pinned ones included, lie in different blocks; the others hold
 * those within one block, sorted by block inside each colour, so a block's constraints can all
 * be projected by one worker, colour after colour, while the other blocks run alongside it
 * (they share no particle, not even a pinned one, which the CPU kernels store unchanged). The
 * boundary's colours are bucketed likewise by groups of cuts that share no particle.
 * num_blocks 0: the type is coloured plainly. */
typedef struct pbd_blocks {
    int num_blocks;
    int *block_first;    /* num_blocks + 1: block b is particles [bf[b], bf[b+1]) */
    int boundary_colors; /* the first colours: the constraints that cross blocks */
    int *block_offsets;  /* block_colors x (num_blocks + 1): block b's part of interior colour
                            k is records[bo[k (nb + 1) + b] .. + b + 1]) */
    int block_colors;    /* the interior colours as the blocks' work-items take them:
                            num_colors - boundary_colors, but for a four-particle type's one
                            block ending in an overflow set, whose set is cut into runs of up
                            to sixteen that share no unpinned particle (in its order: the
                            serial result), a part each */
    int *block_runs;     /* distance only: block_colors x num_blocks x 2: where block b's part
                            of interior colour k stops being runs of consecutive particles and
                            then interleaved pairs (PBD_RUN_*), or PBD_RUN_SERIAL twice for a
                            part of the overflow set, which goes one by one; each
                            a multiple of sixteen constraints from the part's start */
    int num_cuts;        /* groups of the boundary constraints that share no particle: the
                            cuts between blocks (a cut is named by its lower block), those that
                            share a particle merged */
    int *cut_offsets;    /* boundary_colors x (num_cuts + 1): group g's part of boundary colour
                            k is records[co[k (ng + 1) + g] .. + g + 1]) */
    int *cut_runs;       /* distance only: boundary_colors x num_cuts x 2, as block_runs */
} pbd_blocks;

/* One constraint type's part of the plan: its records sorted by colour. */
typedef struct pbd_plan_type {
    int count;          /* constraints of this type */
    int num_colors;     /* colours (for distance: the block order's, boundary colours first) */
    int *color_offsets; /* num_colors + 1: colour k is records[off[k] .. off[k+1]) */
    int overflow;       /* 1: the last colour is the overflow set, projected serially */
    int one_launch;     /* 1: every colour in one launch, one work-item taking them in order
                           (the CPU variant: pbd_config.serial_color_size) */
    int *position;      /* count: where the model's constraint j sits in records */
    pbd_blocks blocks;  /* distance always; the four-particle types on the CPU variant */
    union {             /* sorted by colour; PBD stiffness k stored as -(1-(1-k)^(1/n)) */
        void *records;
#define PBD_X_PLAN_RECORDS(id, name, type, arity, world) type *name;
        PBD_CONSTRAINT_LIST(PBD_X_PLAN_RECORDS)
#undef PBD_X_PLAN_RECORDS
    };
} pbd_plan_type;

/* Everything prepared on the host once, before stepping. */
typedef struct pbd_plan {
    pbd_config cfg;
    int num_particles;
    float *inv_mass; /* per particle where there are Neo-Hookean elements (their updates'
                      * stability check), else NULL */
    int num_bodies;
    int num_colliders;
    pbd_plan_type type[PBD_CONSTRAINT_COUNT];
    int collide_fused; /* set by the backend: Gauss-Seidel's distance projection also
                          collides (the CPU variant's block kernel) */
    int track;         /* 1: collisions and attachments record their displacements in dx
                          (momentum_active, and something external acts on the particles) */
    int friction;      /* 1: a collider has friction, whose state (dx.w) outlives a substep */
    int external;      /* 1: something external (a collider, an attachment) may move particles:
                          the reductions read dx */
    int bounce;        /* 1: a collider has restitution: the update is pbd_update_bounce */
    int materials;     /* 1: a body has its own friction or restitution (body_material) */
    pbd_float4 *body_material; /* per body: mu_s, mu_k, e (< 0: the collider's), 0 */
    int gs_launches;           /* launches per Gauss-Seidel iteration (a backend may lower it) */
    int jacobi_launches;       /* launches per Jacobi iteration (a backend may lower it) */
    int momentum_launches;     /* launches per substep of the momentum correction (likewise) */
    int *csr_offsets;          /* num_particles + 1, of the distance constraints */
    int *csr_slots;            /* 2 x distance count: slot 2c + end, ascending per particle */
    int *csr_other;            /* Jacobi: the slot's other particle (else NULL) */
    int num_segments;
    pbd_segment *segments;    /* reduction pieces, ordered by body */
    int *body_segments;       /* num_bodies + 1: body b owns segments [bs[b], bs[b+1]) */
    pbd_float4 *body_ref;     /* per body initial reference point of the sums (its first
                                 particle); each correction then moves it to the com */
    int *body_flags;          /* PBD_BODY_MOMENTUM for the bodies whose momentum is preserved */
    int momentum_active;      /* 1: the momentum stages run each substep (a body is preserved,
                                 or rigid damping is on) */
    pbd_variant variant;      /* the kernels the backend runs (the CPU reference: the variant
                                 whose order it follows), chosen before the plan.
                                 Reductions: PBD_VARIANT_CPU, a work-item per segment in
                                 PBD_SUM_LANES lanes; PBD_VARIANT_GPU, a work-group and a tree */
    int solve_serial;         /* 1: one work-item per body sums its segments in order (CPU
                                 layout, or every body has at most PBD_SERIAL_SEGMENTS
                                 segments); 0: a work-group and a tree per body */
    pbd_collider *colliders;  /* num_colliders (at least one slot allocated), as now */
    pbd_collider *colliders0; /* kinematic colliders: each as it was at time collider_t0 */
    double *collider_t0;      /* s */
    int moving;               /* 1: a collider has a velocity: moved every frame */
    float h;                  /* substep, s */
    float inv_h;
    float inv_h2;
    /* Body constraints (shape matching, its clusters, pressure): three stages an iteration,
     * before the distance constraints, while a body has one (body_active). */
    int body_active;
    int body_launches;        /* launches per iteration: 3 when active, else 0 (the CPU
                                 variant's apply: one for the particles in no cluster, where
                                 there are any, one for the clustered ones, where any) */
    int body_unclustered;     /* a particle in no cluster has a body constraint */
    int num_body_constraints; /* the bodies' (one a body, flags 0: none), then the clusters' */
    int num_clusters;         /* shape-matching clusters: constraints num_bodies .. on */
    pbd_body_constraint *body_constraints; /* num_body_constraints */
    int num_body_constraint_segments;
    pbd_segment *body_constraint_segments; /* each constraint's members in pieces of
                                              PBD_BODY_SEGMENT (segment.body: the constraint) */
    int *body_constraint_ranges;           /* num_body_constraints + 1: constraint k's pieces
                                              are [r[k], r[k + 1]) (none with flags 0) */
    pbd_float4 *body_constraint_mq;        /* per piece of shape matching: its members'
                                              sum m q (xyz; w 0), a constant summed once in
                                              the reduction's order (pbd_shape_mq); else 0 */
    int num_members;                       /* num_particles + the clusters' members */
    int *member_particle;                  /* per member: its particle (i for i < num_particles) */
    pbd_float4 *member_rest;               /* per member: shape matching's rest offset q from
                                              its constraint's initial centre of mass (xyz, m)
                                              and its mass there (w, kg: a cluster's member
                                              m / n, n its particle's clusters); 0 unused. A
                                              clustered body's particle i: q from the body's
                                              centre (xyz), w 0 */
    pbd_float4 *shape_centre;              /* per constraint: its members' centre of mass of
                                              their particles' rest offsets from the body's
                                              centre (xyz, m; pbd_shape_goal's q0) */
    int *cluster_offsets;                  /* num_particles + 1: particle i's clusters are
                                              cluster_constraints[off[i] .. off[i + 1]) */
    int *cluster_constraints;              /* per (particle, cluster): the constraint */
    int num_sets;                          /* the particles' distinct lists of clusters */
    int *particle_set;                     /* num_particles: its list of clusters, or -1 */
    int *set_offsets;                      /* num_sets + 1: set s's clusters are
                                              set_constraints[off[s] .. off[s + 1]) */
    int *set_constraints;                  /* per (set, cluster): the constraint, ascending */
    int *set_particle_offsets;             /* num_sets + 1: set s's particles are
                                              set_particles[off[s] .. off[s + 1]) */
    int *set_particles;                    /* per particle in a set: the particle, by set,
                                              ascending within one */
    pbd_float4 *set_rest;                  /* per entry of set_particles: its particle's
                                              member_rest, side by side for the CPU variant */
    int pressure_active;                   /* a body has pressure */
    int *pressure_offsets;                 /* num_particles + 1: particle i's triangles are
                                              pressure_pairs[2 off[i] .. 2 off[i + 1]) */
    int *pressure_pairs;                   /* per (particle, triangle): the triangle's other
                                              two particles, counter-clockwise after i */
    /* Damping: where every body damps alike (damping_per_body 0), the fractions for the
     * velocity update (point damping) and for momentum_apply (rigid damping), else 0; where
     * bodies differ (pbd_body's own damping), both 0 and body_damping holds each body's pair
     * (point, rigid), which the kernels read through the particle's body. */
    float point_damping;
    float rigid_damping;
    int damping_per_body;
    float *body_damping; /* 2 num_bodies */
    /* Particle contacts (pbd_contacts): on when a body has a particle radius. */
    int contacts;
    int table_size;      /* hash table entries: each radius class's part, a power of two >=
                            its particles */
    int grid_bits;       /* byte k: log2 of class k's part of the table (pbd_grid_part) */
    pbd_float4 grid_r;   /* each radius class's largest radius (pbd_contact_class), 0: unused, m */
    pbd_float4 grid_inv; /* 1 / each class's cell size (PBD_CONTACT_REACH x twice that), 1/m */
    float *particle_radius;   /* per particle, its body's radius (0: no contacts), m */
    int *body_self;           /* per body, 1: self-collision */
    pbd_float4 *contact_rest; /* the initial positions: self-contacts' rest distances */
    int *body_first;          /* num_bodies + 1: body b is particles [bf[b], bf[b + 1]) */
    int contact_moments;      /* 1: contacts between bodies are tracked (contact_moment runs) */
    int contact_friction;     /* 1: a body with a radius has friction: whether each particle's
                                 contacts slid outlives a substep (contact_slide) */
} pbd_plan;

/* The plan for a backend running `variant`'s kernels (the CPU reference: the variant whose
 * order it follows), which chooses the four-particle types' colouring (blocked_type). */
pbd_status pbd_plan_build(const pbd_model *m, const pbd_config *cfg, pbd_variant variant,
                          pbd_plan *plan, pbd_error *err);
/* Colours of every constraint type together. */
int pbd_plan_num_colors(const pbd_plan *plan);
/* Whether predict stores the velocity with the previous substep's momentum correction
 * applied: where a stage after it reads the v the substep began with (BDF2 keeps it; the
 * bounce measures the approach speed with it). Elsewhere the update recomputes v from the
 * positions, so the correction need not be stored, and reading the state between frames
 * (which applies it) changes nothing. */
int pbd_keeps_v(const pbd_plan *plan);
/* Pressure's rings of neighbours for the CPU devices' reduction (cpu/body_constraint.cl's
 * body_pressure_reduce16), malloc'd: with *steps the most triangles around a particle, rows
 * s = 0 .. *steps - 1 of num_particles ints, row s holding each particle's neighbour n_s of
 * its ring (the plan's pairs (n_s, n_s+1), in ring order), after its last the first again (a
 * particle without triangles: itself; for finite positions the cross products these add are
 * exact zeros), so that sixteen consecutive particles' neighbour s is a run of sixteen. Row
 * *steps would be row 0 for every particle (each ring closes on n_0), so the last pair ends
 * on row 0. A particle of more than PBD_PRESSURE_STEPS triangles or of more than one ring
 * has -1 in row 0 (and itself in the others): the kernel takes the sixteen particles it is
 * among one by one, the shared reduction's way. No table (NULL, *steps 0: the shared
 * reduction everywhere) where no particle with triangles fits it or the rows would pass
 * INT_MAX ints; NULL with *steps > 0: out of memory. */
int *pbd_plan_pressure_table(const pbd_plan *plan, int *steps);
void pbd_plan_free(pbd_plan *plan);

/* What a run continues from (a checkpoint), in host arrays: positions and velocities, BDF2's
 * previous ones (NULL without BDF2), and per body the reference point, the tracked
 * momenta P_r, L_r (6 doubles) and, where a body has body constraints, per body constraint
 * (num_body_constraints) shape matching's last rotation (a unit quaternion, the next polar
 * decomposition's start; NULL without). A
 * pending momentum correction is applied before reading. */
typedef struct pbd_state_arrays {
    pbd_float4 *x, *v, *xp, *vp, *body_ref;
    pbd_float4 *dx; /* with plan.track: the collision records, whose w keeps friction's state */
    int32_t *contact_slide; /* with plan.contact_friction: whether each particle's contacts slid */
    double *body_track;
    pbd_float4 *body_rotation;
} pbd_state_arrays;

/* The stages of a substep, implemented by each backend. `impl` is the backend's state. */
typedef struct pbd_backend_ops {
    /* bdf2: use the previous substep (none on the first substep of a BDF2 run). */
    pbd_status (*predict)(void *impl, int bdf2, pbd_error *err);
    /* Gauss-Seidel: every colour of constraint `type` in order. Where the plan says
     * collide_fused, projecting the distance constraints also collides. */
    pbd_status (*project)(void *impl, int type, int reset_lambda, pbd_error *err);
    /* Jacobi on the distance constraints: their gains, then the gather, which collides. */
    pbd_status (*project_jacobi)(void *impl, int reset_lambda, pbd_error *err);
    pbd_status (*gather_jacobi)(void *impl, pbd_error *err);
    pbd_status (*collide)(void *impl, pbd_error *err);
    /* The body constraints on the current iterate: reduce, solve (XPBD multipliers reset
     * with reset_lambda), apply. */
    pbd_status (*body_constraints)(void *impl, int reset_lambda, pbd_error *err);
    /* Particle contacts: the hash and the candidate lists from the predictions (once a
     * substep), and their projection (once an iteration). */
    pbd_status (*contacts_build)(void *impl, pbd_error *err);
    pbd_status (*contacts)(void *impl, pbd_error *err);
    /* After the iterations, where momentum is tracked: the contacts' moments (pbd_contact_moment).
     */
    pbd_status (*contacts_moment)(void *impl, pbd_error *err);
    /* keep_prev: store x and v for the next BDF2 prediction. */
    pbd_status (*update)(void *impl, int bdf2, int keep_prev, pbd_error *err);
    /* Momentum preservation for one substep: reduce, solve (PBD_SOLVE_STEP), apply. */
    pbd_status (*momentum)(void *impl, pbd_error *err);
    /* Reduce and solve in `mode` (PBD_SOLVE_STATS or PBD_SOLVE_INIT) and copy the PBD_OUT_*
     * records (num_bodies x PBD_OUT_COUNT) to out, or NULL. With mode -1, copy the records of
     * the last PBD_SOLVE_STEP instead (zeros before the first). */
    pbd_status (*body_solve)(void *impl, int mode, double *out, pbd_error *err);
    pbd_status (*finish)(void *impl, pbd_error *err);
    pbd_status (*read)(void *impl, pbd_float4 *x, pbd_float4 *v, pbd_error *err);
    /* The read queued behind the steps: *token is what read_wait waits on (NULL: the copy
     * is complete). read_wait may run on another thread and releases the token. */
    pbd_status (*read_begin)(void *impl, pbd_float4 *x, pbd_float4 *v, void **token,
                             pbd_error *err);
    pbd_status (*read_wait)(void *token, pbd_error *err);
    pbd_status (*kernel_times)(void *impl, const pbd_kernel_time **out, int *count, pbd_error *err);
    void (*reset_times)(void *impl);
    const char *(*device_name)(const void *impl);
    /* Bytes of the state and plan the backend holds (device buffers for OpenCL). */
    size_t (*memory_bytes)(const void *impl);
    /* OpenGL sharing (NULL where the backend has none): whether it shares and why, a buffer
     * to copy positions into, and the copy. */
    int (*gl_shared)(const void *impl, const char **why);
    pbd_status (*gl_attach)(void *impl, unsigned buffer, pbd_error *err);
    pbd_status (*gl_positions)(void *impl, pbd_error *err);
    /* Copies record `position` of constraint `type` from the plan to where the solver
     * steps (the plan's copy has changed); `moved`: its particles changed, and with a
     * distance constraint the plan's particle lists (csr_*) are new. */
    pbd_status (*update_constraint)(void *impl, int type, int position, int moved, pbd_error *err);
    /* Copies the plan's colliders to where the solver steps (they moved). */
    pbd_status (*update_colliders)(void *impl, pbd_error *err);
    /* Checkpoints: copy the state out of, or into, where the solver steps. write_state
     * fails with PBD_ERR_MEMORY (host memory) only before it has written anything. */
    pbd_status (*read_state)(void *impl, const pbd_state_arrays *a, pbd_error *err);
    pbd_status (*write_state)(void *impl, const pbd_state_arrays *a, pbd_error *err);
    void (*destroy)(void *impl);
} pbd_backend_ops;

extern const pbd_backend_ops pbd_cpu_ops;
extern const pbd_backend_ops pbd_cl_ops;

/* The backends set solve_serial by the plan's variant. */
pbd_status pbd_cpu_create(const pbd_model *m, pbd_plan *plan, const pbd_solver_desc *desc,
                          void **impl, pbd_error *err);
/* The OpenCL backend in two steps: open the device, check that the model fits its memory and
 * choose the kernel variant (before the plan is built, which follows it), then create the
 * kernels and buffers from the plan. */
pbd_status pbd_cl_solver_open(const pbd_model *m, const pbd_config *cfg,
                              const pbd_solver_desc *desc, void **impl, pbd_variant *variant,
                              pbd_error *err);
pbd_status pbd_cl_solver_create(void *impl, const pbd_model *m, pbd_plan *plan,
                                const pbd_solver_desc *desc, pbd_error *err);
void pbd_cl_solver_close(void *impl);

/* A lower bound on the device memory a model needs (the particle, constraint and body arrays
 * every variant creates), and its largest single array, checked against the device's
 * CL_DEVICE_GLOBAL_MEM_SIZE and CL_DEVICE_MAX_MEM_ALLOC_SIZE. PBD_ERR_LIMIT names the limit,
 * the device and the sizes. */
double pbd_device_memory_estimate(const pbd_model *m, const pbd_config *cfg, double *largest,
                                  const char **largest_name);
pbd_status pbd_check_device_memory(const pbd_model *m, const pbd_config *cfg,
                                   const pbd_device_info *info, pbd_error *err);

/* The particle hash of positions p as the device's hash kernels leave it (contacts.cl): each
 * particle's cell (4 ints: coordinates, table entry), the table's starts (table_size + 1)
 * and each entry's particles in ascending order (num_particles); fill (table_size) is
 * scratch. Visiting the particles in order sorts each entry, as hash_sort does. */
void pbd_contact_hash_build(const pbd_plan *plan, const pbd_float4 *p, int *cell, int *fill,
                            int *start, int *sorted);

/* Whether a collider has a velocity (the solver moves it every substep). */
int pbd_collider_moves(const pbd_collider *c);

/* Collider k as it stands after substeps_done substeps: a kinematic one posed at that
 * time (the pose each substep starts with), a still one as it is. */
void pbd_plan_collider_at(const pbd_plan *plan, int k, long substeps_done, pbd_collider *out);

/* One frame: cfg.substeps substeps of predict, cfg.iterations x (project, collide), update,
 * momentum. *substeps_done counts the substeps run so far (for BDF2's first step). */
pbd_status pbd_step_frame(const pbd_backend_ops *ops, void *impl, const pbd_plan *plan,
                          long *substeps_done, pbd_error *err);
/* Stage calls (kernel launches on a device) per frame. */
long pbd_step_launches(const pbd_plan *plan);

#endif
