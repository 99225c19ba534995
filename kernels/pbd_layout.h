/* The record layouts the public API and the device share: pbd_float4, the constraint types'
 * records and their list, the colliders' record and its list. Compiled as C11 (host/pbd.h
 * includes it) and as OpenCL C 1.2 (the first file of every device program).
 *
 * Every struct here holds 4-byte scalars only, padding written out; sizes are checked with
 * _Static_assert on the host and by a probe kernel (tests/test_cl.c, layout_probe). */
#ifndef PBD_LAYOUT_H
#define PBD_LAYOUT_H

#ifdef __OPENCL_C_VERSION__
#pragma OPENCL FP_CONTRACT OFF
#define PBD_GLOBAL         __global
#define PBD_LOCAL          __local
#define PBD_F4(a, b, c, d) ((float4)((a), (b), (c), (d)))
typedef float4 pbd_float4;
#else
#define PBD_GLOBAL
#define PBD_LOCAL
#define PBD_F4(a, b, c, d) ((pbd_float4){(a), (b), (c), (d)})
/* Same size (16) and alignment (16) as cl_float4 and OpenCL's float4. */
typedef struct pbd_float4 {
    _Alignas(16) float x;
    float y;
    float z;
    float w;
} pbd_float4;
#endif

/* A distance constraint between particles a and b (Müller 2007 section 3.3; XPBD: Macklin
 * 2016 eq. 18). 16 bytes. */
typedef struct pbd_distance {
    int a;            /* first particle index, 0 <= a < particle count */
    int b;            /* second particle index, != a */
    float rest;       /* rest length, m, >= 0 */
    float compliance; /* >= 0: XPBD compliance alpha, m/N (0 = hard constraint);
                         < 0: PBD constraint with per-iteration stiffness -compliance in (0, 1]
                         (the solver stores 1 - (1 - k)^(1/iterations) there, section 3.3) */
} pbd_distance;

/* An attachment: particle `particle` pulled toward the point `target`, a distance constraint
 * of rest length 0 to a point that is not a particle (XPBD compliance or PBD stiffness, as
 * pbd_distance). The target can be moved between steps (pbd_solver_update_constraint): the
 * viewer's mouse drag. The world pulls the particle, so its displacement is an external
 * impulse for the momentum tracker, as a collision's is. 32 bytes. */
typedef struct pbd_attachment {
    int particle;      /* 0 <= particle < particle count */
    float compliance;  /* as pbd_distance's */
    int pad0;          /* 0 */
    int pad1;          /* 0 */
    pbd_float4 target; /* the point, m (w: 0) */
} pbd_attachment;

/* A tetrahedron's volume (XPBD: Macklin et al. 2016; the volume constraint of Müller et al.
 * 2007 sec. 3.3 and Bender's survey): C = V(a, b, c, d) - rest, with the signed volume
 * V = (b - a) . ((c - a) x (d - a)) / 6, so a tet turned inside out is pushed back. 32 bytes. */
typedef struct pbd_volume {
    int a, b, c, d;   /* four different particles */
    float rest;       /* signed rest volume, m^3 (its sign is the tet's orientation) */
    float compliance; /* as pbd_distance's: >= 0 XPBD (m^3/N... per unit volume), < 0 PBD */
    int pad0;         /* 0 */
    int pad1;         /* 0 */
} pbd_volume;

/* A tether, a long-range attachment (Kim, Chentanez and Müller 2012): particle a stays within
 * `rest` of particle b (usually a pinned one), C = |a - b| - rest, projected only when
 * C > 0, so a cloth hanging from its pins cannot stretch however few the iterations.
 * 16 bytes. */
typedef struct pbd_tether {
    int a, b;         /* two different particles */
    float rest;       /* the longest allowed distance, m, >= 0 */
    float compliance; /* as pbd_distance's */
} pbd_tether;

/* Dihedral bending (Müller et al. 2007, appendix A; the angle's gradients as in Bridson et
 * al. 2003): triangles (a, b, c) and (a, b, d) share the edge a-b, and C = theta - rest,
 * theta the signed angle between their normals (0 where they lie flat, whatever the
 * triangles' winding), wrapped into (-pi, pi]. 32 bytes. */
typedef struct pbd_dihedral {
    int a, b;         /* the shared edge */
    int c, d;         /* the opposite particles of the two triangles */
    float rest;       /* rest angle, radians, in [-pi, pi] */
    float compliance; /* as pbd_distance's: >= 0 XPBD (rad/(N m)), < 0 PBD */
    int pad0;         /* 0 */
    int pad1;         /* 0 */
} pbd_dihedral;

/* Isometric bending (Bergou et al. 2006, as in Bender et al.'s survey): for the two
 * triangles of pbd_dihedral, the discrete mean curvature vector v = sum k_i x_i, with the
 * cotangent weights k fixed at rest (k_i = sqrt(3 / (A0 + A1)) K_i, K from the four angles at
 * a and b), and C = |v|^2 / 2, Bergou's energy x^T Q x / 2 with Q = k k^T. Zero for a flat
 * pair; the sum of k is 0, so a correction moves no centre of mass. 48 bytes. */
typedef struct pbd_isometric {
    int a, b;         /* the shared edge */
    int c, d;         /* the opposite particles */
    float k[4];       /* weights of a, b, c, d, 1/m */
    float compliance; /* as pbd_distance's: >= 0 XPBD, < 0 PBD */
    int pad0;         /* 0 */
    int pad1;         /* 0 */
    int pad2;         /* 0 */
} pbd_isometric;

/* Stable Neo-Hookean elasticity of a tetrahedron in XPBD form (Macklin and Müller 2021): two
 * constraints on its deformation gradient F = [b-a, c-a, d-a] Dm^-1, hydrostatic
 * C_H = det F - gamma and deviatoric C_D = |F| (Frobenius), with compliances 1/(lambda V) and
 * 1/(mu V) (V the rest volume) and gamma = 1 + mu / lambda, so that together they rest at
 * F = I. Solved together (a 2 x 2 system, as the paper does: apart, the deviatoric part alone
 * pulls a tet at rest toward a point), with two multipliers a record. XPBD only. 64 bytes. */
typedef struct pbd_neo_hookean {
    int a, b, c, d;
    float dm_inv[9];    /* the rest edge matrix's inverse, row-major, 1/m */
    float compliance;   /* deviatoric: 1/(mu V), 1/(Pa m^3), >= 0 */
    float compliance_h; /* hydrostatic: 1/(lambda V), >= 0 */
    float gamma;        /* 1 + mu / lambda: the det F the hydrostatic part pulls toward */
} pbd_neo_hookean;

/* The constraint types, in the order the step projects them:
 *   X(ID, name, record type, arity, world)
 * world: 1 when the world takes part (a fixed point, a kinematic target), so that what the
 * constraint moves is an external impulse for the momentum tracker; 0 when it acts between
 * particles only.
 * Every record begins with its `arity` particle indices (ints) and has a float `compliance`
 * (>= 0: XPBD compliance; < 0: PBD stiffness, as pbd_distance's). Each type has
 * pbd_<name>_project (pbd_shared.h: one constraint, Gauss-Seidel, in place) and a kernel
 * project_<name> (kernels/, one constraint a work-item, a launch a colour, or every colour
 * in order on one work-item) of the same arguments; distance has the variants' faster
 * kernels besides. Distance comes last: the Jacobi gather, which also collides, ends an
 * iteration. */
#define PBD_CONSTRAINT_LIST(X)                                                                     \
    X(ATTACHMENT, attachment, pbd_attachment, 1, 1)                                                \
    X(VOLUME, volume, pbd_volume, 4, 0)                                                            \
    X(TETHER, tether, pbd_tether, 2, 0)                                                            \
    X(DIHEDRAL, dihedral, pbd_dihedral, 4, 0)                                                      \
    X(ISOMETRIC, isometric, pbd_isometric, 4, 0)                                                   \
    X(NEO_HOOKEAN, neo_hookean, pbd_neo_hookean, 4, 0)                                             \
    X(DISTANCE, distance, pbd_distance, 2, 0)

enum {
#define PBD_X_CONSTRAINT_ENUM(id, name, type, arity, world) PBD_CONSTRAINT_##id,
    PBD_CONSTRAINT_LIST(PBD_X_CONSTRAINT_ENUM)
#undef PBD_X_CONSTRAINT_ENUM
        PBD_CONSTRAINT_COUNT
};

/* XPBD multipliers a record keeps (lambda[m c .. m c + m - 1] of its type's array): two for
 * the Neo-Hookean element (hydrostatic, deviatoric), one for every other type. */
#define PBD_MULTIPLIERS(type) ((type) == PBD_CONSTRAINT_NEO_HOOKEAN ? 2 : 1)

/* The largest arity in the list. */
#define PBD_MAX_ARITY 4

/* The collider kinds, one collision function each (pbd_collide_<name>, pbd_shared.h),
 * dispatched by pbd_collide: X(ID, name). A new kind is an entry here, its function, and its scene
 * key. */
#define PBD_COLLIDER_LIST(X)                                                                       \
    X(PLANE, plane)                                                                                \
    X(SPHERE, sphere)                                                                              \
    X(BOX, box)                                                                                    \
    X(CAPSULE, capsule)

enum {
#define PBD_X_COLLIDER_ENUM(id, name) PBD_COLLIDER_##id,
    PBD_COLLIDER_LIST(PBD_X_COLLIDER_ENUM)
#undef PBD_X_COLLIDER_ENUM
        PBD_COLLIDER_COUNT
};

/* A collider, static or moving. 96 bytes. */
typedef struct pbd_collider {
    int kind;                    /* PBD_COLLIDER_* */
    float friction;              /* static Coulomb coefficient mu_s, >= 0 (0: frictionless) */
    float restitution;           /* coefficient of restitution, [0, 1] */
    float friction_kinetic;      /* kinetic Coulomb coefficient mu_k, [0, mu_s] */
    pbd_float4 shape;            /* plane: unit normal n (xyz) and offset (w), particles keep
                                    n.x >= offset; sphere: centre (xyz, m) and radius (w, m, > 0);
                                    box: centre (xyz, m; w 0); capsule: one end of its axis (xyz,
                                    m) and its radius (w, m, > 0) */
    pbd_float4 shape2;           /* box: half extents (xyz, m, > 0; w 0); capsule: the axis's other
                                    end (xyz, m; w 0); else 0 */
    pbd_float4 shape3;           /* box: orientation, a unit quaternion (x, y, z, w); else 0 */
    pbd_float4 velocity;         /* a kinematic collider's linear velocity (xyz, m/s; w 0): the
                                    solver moves it frame by frame (the kernels never read it) */
    pbd_float4 angular_velocity; /* and its angular velocity about its centre (xyz, rad/s) */
} pbd_collider;

#endif
