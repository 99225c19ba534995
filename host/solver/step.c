/* The step, as one fixed sequence of named stages (Müller et al. 2007, Algorithm 1, then
 * Dahl & Bargteil 2019, Algorithm 2), the same for both backends:
 *   predict -> iterations x (project each constraint type, collide) -> update -> momentum.
 * Where a variant fuses stages into one launch, the stage says so beside its call. */
#include <math.h>

#include "solver/solver_impl.h"

const char *const pbd_stage_names[PBD_STAGE_COUNT] = {
    "predict",
#define PBD_X_PROJECT_NAME(id, name, type, arity, world) "project_" #name,
    PBD_CONSTRAINT_LIST(PBD_X_PROJECT_NAME)
#undef PBD_X_PROJECT_NAME
        "collide",
    "project_distance_jacobi",
    "gather_jacobi",
    "update_velocity",
    "body_reduce",
    "body_solve",
    "momentum_apply",
    "body_constraint_reduce",
    "body_constraint_solve",
    "body_constraint_apply",
    "contact_hash",
    "contact",
};

#define STAGE(call)                                                                                \
    do {                                                                                           \
        pbd_status st_ = (call);                                                                   \
        if (st_ != PBD_OK)                                                                         \
            return st_;                                                                            \
    } while (0)

/* One projection iteration: each constraint type in list order, then the collisions. */
static pbd_status iterate(const pbd_backend_ops *ops, void *impl, const pbd_plan *plan, int reset,
                          pbd_error *err)
{
    int jacobi = plan->cfg.solver == PBD_SOLVER_JACOBI;
    /* particle contacts first, so that the colliders, which end the iteration, have the last
     * word against them */
    if (plan->contacts)
        STAGE(ops->contacts(impl, err));
    for (int t = 0; t < PBD_CONSTRAINT_COUNT; ++t) {
        /* The body constraints (shape matching, pressure) after the per-element types and
         * before the distance constraints, whose last pass also collides in the Jacobi
         * gather and the CPU variant's blocks: reduce, solve, apply. */
        if (t == PBD_CONSTRAINT_DISTANCE && plan->body_active)
            STAGE(ops->body_constraints(impl, reset, err));
        if (t == PBD_CONSTRAINT_DISTANCE && jacobi) {
            /* Jacobi: every constraint's gain on the same iterate (on the CPU variant this
             * launches nothing: the gather projects as it sums), then the gather. */
            if (plan->type[t].count > 0)
                STAGE(ops->project_jacobi(impl, reset, err));
            /* collide: fused into the gather, which collides each particle as it writes it */
            STAGE(ops->gather_jacobi(impl, err));
        } else if (plan->type[t].count > 0) {
            /* Coloured Gauss-Seidel, a launch a colour (the CPU variant's distance
             * constraints: the boundary's groups and the blocks, a launch each; its types of
             * small colours: one launch, one work-item taking the colours in order) */
            STAGE(ops->project(impl, t, reset, err));
        }
    }
    /* collide: fused into the Jacobi gather, and into the CPU variant's block kernel
     * (collide_fused), which collides each block after its colours */
    if (!jacobi && !plan->collide_fused && plan->num_colliders > 0)
        STAGE(ops->collide(impl, err));
    return PBD_OK;
}

/* Collider c0 (as at time 0) at time t: moved by its velocity, and turned by its angular
 * velocity about its centre (a plane: about its point nearest the origin; a capsule: about
 * its axis's middle). */
static void pose_collider(const pbd_collider *c0, double t, pbd_collider *out)
{
    *out = *c0;
    double v[3] = {c0->velocity.x, c0->velocity.y, c0->velocity.z};
    double w[3] = {c0->angular_velocity.x, c0->angular_velocity.y, c0->angular_velocity.z};
    double wl = sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]), angle = wl * t;
    double k[3] = {0, 0, 0}, cs = cos(angle), sn = sin(angle);
    for (int i = 0; i < 3 && wl > 0.0; ++i)
        k[i] = w[i] / wl;
        /* Rodrigues: R u = u cos + (k x u) sin + k (k . u)(1 - cos) */
#define ROTATE(u, o)                                                                               \
    do {                                                                                           \
        double kd = k[0] * (u)[0] + k[1] * (u)[1] + k[2] * (u)[2];                                 \
        double kx[3] = {k[1] * (u)[2] - k[2] * (u)[1], k[2] * (u)[0] - k[0] * (u)[2],              \
                        k[0] * (u)[1] - k[1] * (u)[0]};                                            \
        for (int j_ = 0; j_ < 3; ++j_)                                                             \
            (o)[j_] = (u)[j_] * cs + kx[j_] * sn + k[j_] * kd * (1.0 - cs);                        \
    } while (0)
    const pbd_float4 s = c0->shape, s2 = c0->shape2;
    if (c0->kind == PBD_COLLIDER_PLANE) {
        double n[3] = {s.x, s.y, s.z}, rn[3], pivot[3];
        ROTATE(n, rn);
        for (int i = 0; i < 3; ++i)
            pivot[i] = n[i] * s.w + v[i] * t;
        out->shape = (pbd_float4){(float)rn[0], (float)rn[1], (float)rn[2],
                                  (float)(rn[0] * pivot[0] + rn[1] * pivot[1] + rn[2] * pivot[2])};
    } else if (c0->kind == PBD_COLLIDER_CAPSULE) {
        double a[3] = {s.x, s.y, s.z}, b[3] = {s2.x, s2.y, s2.z}, mid[3], ra[3], rb[3];
        for (int i = 0; i < 3; ++i) {
            mid[i] = 0.5 * (a[i] + b[i]);
            a[i] -= mid[i];
            b[i] -= mid[i];
        }
        ROTATE(a, ra);
        ROTATE(b, rb);
        out->shape =
            (pbd_float4){(float)(mid[0] + v[0] * t + ra[0]), (float)(mid[1] + v[1] * t + ra[1]),
                         (float)(mid[2] + v[2] * t + ra[2]), s.w};
        out->shape2 =
            (pbd_float4){(float)(mid[0] + v[0] * t + rb[0]), (float)(mid[1] + v[1] * t + rb[1]),
                         (float)(mid[2] + v[2] * t + rb[2]), 0.0f};
    } else { /* sphere, box: the centre moves; a box also turns: q = q(w t) q0 */
        out->shape = (pbd_float4){(float)(s.x + v[0] * t), (float)(s.y + v[1] * t),
                                  (float)(s.z + v[2] * t), s.w};
        if (c0->kind == PBD_COLLIDER_BOX) {
            pbd_float4 q = c0->shape3;
            double h = 0.5 * angle, r[4] = {k[0] * sin(h), k[1] * sin(h), k[2] * sin(h), cos(h)};
            double o[4] = {r[3] * q.x + r[0] * q.w + r[1] * q.z - r[2] * q.y,
                           r[3] * q.y - r[0] * q.z + r[1] * q.w + r[2] * q.x,
                           r[3] * q.z + r[0] * q.y - r[1] * q.x + r[2] * q.w,
                           r[3] * q.w - r[0] * q.x - r[1] * q.y - r[2] * q.z};
            double l = sqrt(o[0] * o[0] + o[1] * o[1] + o[2] * o[2] + o[3] * o[3]);
            out->shape3 = (pbd_float4){(float)(o[0] / l), (float)(o[1] / l), (float)(o[2] / l),
                                       (float)(o[3] / l)};
        }
    }
#undef ROTATE
}

void pbd_plan_collider_at(const pbd_plan *plan, int k, long substeps_done, pbd_collider *out)
{
    if (plan->moving && pbd_collider_moves(&plan->colliders0[k]))
        pose_collider(&plan->colliders0[k], (double)substeps_done * plan->h - plan->collider_t0[k],
                      out);
    else
        *out = plan->colliders[k];
}

pbd_status pbd_step_frame(const pbd_backend_ops *ops, void *impl, const pbd_plan *plan,
                          long *substeps_done, pbd_error *err)
{
    const pbd_config *cfg = &plan->cfg;
    int keep_prev = cfg->velocity_update == PBD_VELOCITY_BDF2;
    for (int s = 0; s < cfg->substeps; ++s) {
        int bdf2 = keep_prev && *substeps_done > 0;
        if (plan->moving) { /* kinematic colliders: their pose at this substep's start */
            for (int k = 0; k < plan->num_colliders; ++k) /* a still one stays as it is */
                pbd_plan_collider_at(plan, k, *substeps_done, &plan->colliders[k]);
            STAGE(ops->update_colliders(impl, err));
        }
        /* predict (also applies the previous substep's momentum correction: its broadcast) */
        STAGE(ops->predict(impl, bdf2, err));
        /* particle contacts: the hash of the predictions */
        if (plan->contacts)
            STAGE(ops->contacts_build(impl, err));
        /* project: XPBD multipliers start at zero each substep (Macklin 2016, Algorithm 1) */
        for (int it = 0; it < cfg->iterations; ++it)
            STAGE(iterate(ops, impl, plan, it == 0, err));
        /* the contacts' impulses' moments where they acted, for the tracked L */
        if (plan->contact_moments)
            STAGE(ops->contacts_moment(impl, err));
        /* update (on the CPU variant with fp64 sums, also the momentum stage's reduction and
         * per-body solve: the fused update) */
        STAGE(ops->update(impl, bdf2, keep_prev, err));
        /* momentum: reduce and solve; the broadcast rides on the next predict */
        if (plan->momentum_active)
            STAGE(ops->momentum(impl, err));
        ++*substeps_done;
    }
    return PBD_OK;
}

long pbd_step_launches(const pbd_plan *plan)
{
    const pbd_config *cfg = &plan->cfg;
    long per_iteration;
    if (cfg->solver == PBD_SOLVER_GS)
        per_iteration = plan->gs_launches;
    else
        per_iteration = plan->jacobi_launches;
    /* particle contacts: the hash's five launches and the candidate lists, then two an
     * iteration, and the moments */
    if (plan->contacts)
        per_iteration += 2;
    /* The momentum correction's own launches (momentum_apply runs alone only before the state
     * is read). */
    return (long)cfg->substeps *
           (2 + (long)cfg->iterations * (per_iteration + plan->body_launches) +
            plan->momentum_launches + (plan->contacts ? 6 : 0) + plan->contact_moments);
}
