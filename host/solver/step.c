/* The step, as one fixed sequence of named stages (Müller et al. 2007, Algorithm 1, then
 * Dahl & Bargteil 2019, Algorithm 2), the same for both backends:
 *   predict -> iterations x (project each constraint type, collide) -> update -> momentum.
 * Where a variant fuses stages into one launch, the stage says so beside its call. */
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
    for (int t = 0; t < PBD_CONSTRAINT_COUNT; ++t) {
        if (t == PBD_CONSTRAINT_DISTANCE && jacobi) {
            /* Jacobi: every constraint's gain on the same iterate (on the CPU variant this
             * launches nothing: the gather projects as it sums), then the gather. */
            if (plan->type[t].count > 0)
                STAGE(ops->project_jacobi(impl, reset, err));
            /* collide: fused into the gather, which collides each particle as it writes it */
            STAGE(ops->gather_jacobi(impl, err));
        } else if (plan->type[t].count > 0) {
            /* Coloured Gauss-Seidel, a launch a colour (the CPU variant's distance
             * constraints: the boundary's groups and the blocks, a launch each) */
            STAGE(ops->project(impl, t, reset, err));
        }
    }
    /* collide: fused into the Jacobi gather, and into the CPU variant's block kernel
     * (collide_fused), which collides each block after its colours */
    if (!jacobi && !plan->collide_fused && plan->num_colliders > 0)
        STAGE(ops->collide(impl, err));
    return PBD_OK;
}

pbd_status pbd_step_frame(const pbd_backend_ops *ops, void *impl, const pbd_plan *plan,
                          long *substeps_done, pbd_error *err)
{
    const pbd_config *cfg = &plan->cfg;
    int keep_prev = cfg->velocity_update == PBD_VELOCITY_BDF2;
    for (int s = 0; s < cfg->substeps; ++s) {
        int bdf2 = keep_prev && *substeps_done > 0;
        /* predict (also applies the previous substep's momentum correction: its broadcast) */
        STAGE(ops->predict(impl, bdf2, err));
        /* project: XPBD multipliers start at zero each substep (Macklin 2016, Algorithm 1) */
        for (int it = 0; it < cfg->iterations; ++it)
            STAGE(iterate(ops, impl, plan, it == 0, err));
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
    /* The momentum correction's own launches (momentum_apply runs alone only before the state
     * is read). */
    return (long)cfg->substeps *
           (2 + (long)cfg->iterations * per_iteration + plan->momentum_launches);
}
