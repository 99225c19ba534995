/* The step, as one fixed sequence of named stages (Müller et al. 2007, Algorithm 1, then
 * Dahl & Bargteil 2019, Algorithm 2):
 *   predict -> iterations x (project constraints, collide) -> update velocity -> momentum.
 * Gauss-Seidel projects colour by colour (the plan's block order) and collides once per
 * iteration; Jacobi projects every constraint's gain, and the gather applies the corrections
 * and collides (on CPU devices one kernel does both, so the projection stage launches
 * nothing there: jacobi_launches). */
#include "solver/solver_impl.h"

const char *const pbd_stage_names[PBD_STAGE_COUNT] = {
#define PBD_X_NAME(id, name) name,
    PBD_STAGE_LIST(PBD_X_NAME)
#undef PBD_X_NAME
};

#define STAGE(call)                                                                                \
    do {                                                                                           \
        pbd_status st_ = (call);                                                                   \
        if (st_ != PBD_OK)                                                                         \
            return st_;                                                                            \
    } while (0)

pbd_status pbd_step_frame(const pbd_backend_ops *ops, void *impl, const pbd_plan *plan,
                          long *substeps_done, pbd_error *err)
{
    const pbd_config *cfg = &plan->cfg;
    int keep_prev = cfg->velocity_update == PBD_VELOCITY_BDF2;
    for (int s = 0; s < cfg->substeps; ++s) {
        int bdf2 = keep_prev && *substeps_done > 0;
        STAGE(ops->predict(impl, bdf2, err));
        for (int it = 0; it < cfg->iterations; ++it) {
            /* XPBD: multipliers start at zero each substep (Macklin 2016, Algorithm 1). */
            int reset = it == 0;
            if (cfg->solver == PBD_SOLVER_GS) {
                STAGE(ops->project_gs(impl, reset, err));
            } else {
                if (plan->num_distance > 0)
                    STAGE(ops->project_jacobi(impl, reset, err));
                STAGE(ops->gather_jacobi(impl, err));
            }
        }
        STAGE(ops->update(impl, bdf2, keep_prev, err));
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
