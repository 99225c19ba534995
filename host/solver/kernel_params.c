#include <string.h>

#include "pbd.h"
#include "solver/kernel_params.h"

#define PARAMS(name, ...) static const char *const name##_params[] = {__VA_ARGS__};
#define ENTRY(name)                                                                                \
    {                                                                                              \
#name, name##_params, (int)(sizeof name##_params / sizeof name##_params[0])                \
    }

PARAMS(predict, "particle_x", "particle_p", "particle_v", "particle_xp", "particle_vp",
       "particle_dx", "particle_body", "body_apply", "rigid_k", "body_damping", "damping_per_body",
       "apply", "keep_v", "gx", "gy", "gz", "h", "bdf2", "track", "num_particles")
PARAMS(predict_runs, "particle_x", "particle_p", "particle_v", "particle_xp", "particle_vp",
       "particle_dx", "particle_body", "body_apply", "rigid_k", "body_damping", "damping_per_body",
       "apply", "keep_v", "gx", "gy", "gz", "h", "bdf2", "track", "num_particles")
/* project_<type> (project.cl): one list for every constraint type */
static const char *const project_type_params[] = {
    "particle_p", "particle_dx", "records",      "lambda", "offset",
    "count",      "inv_h2",      "reset_lambda", "track",  "serial"};
/* A kernel with project_<type>'s parameters (project_<type>16 too) */
#define TYPE_ENTRY(kname)                                                                          \
    {                                                                                              \
        kname, project_type_params,                                                                \
            (int)(sizeof project_type_params / sizeof project_type_params[0])                      \
    }
/* project_<type>_blocks (project4.cl): one list for the four-particle types */
static const char *const project_blocks_params[] = {
    "particle_p", "records",      "lambda",        "block_offsets", "num_colors",    "num_blocks",
    "inv_h2",     "reset_lambda", "block_first",   "colliders",     "num_colliders", "particle_dx",
    "particle_x", "track",        "particle_body", "body_material", "materials"};
#define BLOCKS_ENTRY(kname)                                                                        \
    {                                                                                              \
        kname, project_blocks_params,                                                              \
            (int)(sizeof project_blocks_params / sizeof project_blocks_params[0])                  \
    }
PARAMS(project_distance_jacobi, "particle_p", "distance_records", "distance_lambda",
       "distance_gain", "count", "inv_h2", "reset_lambda")
PARAMS(project_distance_gs16, "particle_p", "distance_records", "distance_lambda", "offset",
       "count", "inv_h2", "reset_lambda", "pairs", "rest", "serial")
PARAMS(project_gs_blocks, "particle_p", "distance_records", "distance_lambda", "block_offsets",
       "block_runs", "num_colors", "block_first", "num_blocks", "inv_h2", "reset_lambda",
       "colliders", "num_colliders", "particle_dx", "particle_x", "track", "particle_body",
       "body_material", "materials")
PARAMS(project_distance_group, "particle_p", "particle_dx", "distance_records", "distance_lambda",
       "color_offsets", "num_colors", "serial", "inv_h2", "reset_lambda", "track", "particle_x",
       "particle_body", "body_material", "materials", "colliders", "num_colliders", "num_particles")
PARAMS(collide, "particle_p", "particle_dx", "particle_x", "particle_body", "body_material",
       "materials", "colliders", "num_colliders", "track", "num_particles")
PARAMS(gather_jacobi, "particle_p", "particle_out", "distance_gain", "csr_offsets", "csr_slots",
       "csr_other", "omega", "particle_dx", "particle_x", "colliders", "num_colliders", "track",
       "particle_body", "body_material", "materials", "num_particles")
PARAMS(jacobi_fused16, "particle_p", "particle_out", "ell_start", "ell_other", "ell_code",
       "ell_rest", "ell_compliance", "ell_lambda", "omega", "inv_h2", "reset_lambda", "particle_dx",
       "particle_x", "colliders", "num_colliders", "track", "particle_body", "body_material",
       "materials", "num_particles")
PARAMS(update_velocity, "particle_x", "particle_p", "particle_v", "particle_xp", "particle_vp",
       "inv_h", "damping", "particle_body", "body_damping", "damping_per_body", "bdf2", "keep_prev",
       "num_particles")
PARAMS(update_bounce, "particle_x", "particle_p", "particle_v", "particle_xp", "particle_vp",
       "particle_dx", "inv_h", "damping", "bdf2", "keep_prev", "colliders", "num_colliders", "gx",
       "gy", "gz", "h", "track", "particle_body", "body_material", "materials", "body_damping",
       "damping_per_body", "num_particles")
PARAMS(update_runs, "particle_x", "particle_p", "particle_v", "particle_xp", "particle_vp", "inv_h",
       "damping", "particle_body", "body_damping", "damping_per_body", "bdf2", "keep_prev",
       "num_particles")
PARAMS(update_reduce_serial, "segments", "particle_x", "particle_p", "particle_v", "particle_xp",
       "particle_vp", "particle_dx", "body_ref", "inv_h", "damping", "bdf2", "keep_prev", "with_dx",
       "segment_sums", "num_segments", "body_track", "body_flags", "gh", "body_out", "body_apply",
       "body_segments", "body_done")
PARAMS(body_reduce, "segments", "particle_x", "particle_v", "particle_dx", "body_ref",
       "csr_offsets", "csr_slots", "distance_records", "inv_h", "with_dx", "stats", "segment_sums",
       "num_segments")
PARAMS(body_reduce_serial, "segments", "particle_x", "particle_v", "particle_dx", "body_ref",
       "csr_offsets", "csr_slots", "distance_records", "inv_h", "with_dx", "stats", "segment_sums",
       "num_segments")
PARAMS(body_solve, "body_segments", "segment_sums", "body_ref", "body_track", "body_flags", "mode",
       "gh", "body_out", "body_apply", "num_bodies")
PARAMS(body_solve_serial, "body_segments", "segment_sums", "body_ref", "body_track", "body_flags",
       "mode", "gh", "body_out", "body_apply", "num_bodies")
PARAMS(hash_clear, "cell_count", "cell_fill", "table_size")
PARAMS(hash_count, "particle_p", "particle_radius", "contact_cell", "cell_count", "grid_inv",
       "grid_r", "grid_bits", "contact_p0", "contact_cdx", "contact_a", "num_particles")
PARAMS(hash_scan, "cell_count", "cell_start", "table_size")
PARAMS(hash_scatter, "contact_cell", "cell_start", "cell_fill", "cell_sorted", "num_particles")
PARAMS(hash_sort, "cell_start", "cell_sorted", "table_size")
PARAMS(contact_list, "contact_p0", "contact_rest", "particle_radius", "particle_body", "body_self",
       "contact_cell", "cell_start", "cell_sorted", "grid_bits", "grid_inv", "grid_r",
       "contact_cand", "contact_other", "contact_num", "contact_slide", "contact_state",
       "num_particles")
PARAMS(contact_solve, "particle_p", "particle_x", "contact_p0", "contact_rest", "particle_radius",
       "particle_body", "body_self", "body_material", "contact_cell", "cell_start", "cell_sorted",
       "grid_bits", "grid_inv", "grid_r", "contact_cand", "contact_other", "contact_num",
       "contact_state", "contact_slide", "omega", "contact_dp", "particle_dx", "contact_cdx",
       "contact_a", "track", "num_particles")
PARAMS(contact_apply, "particle_p", "contact_dp", "num_particles")
PARAMS(contact_moment, "body_first", "body_flags", "particle_p", "particle_v", "particle_x",
       "contact_cdx", "contact_a", "inv_h", "body_track", "num_bodies")
PARAMS(momentum_apply, "particle_x", "particle_v", "particle_body", "body_apply", "rigid_k",
       "body_damping", "damping_per_body", "num_particles")
PARAMS(body_constraint_apply, "particle_p", "particle_body", "member_rest", "particle_grad",
       "particle_set", "set_offsets", "set_constraints", "body_constraints", "body_goal",
       "num_particles")
PARAMS(body_constraint_reduce64, "body_constraint_segments", "particle_p", "member_particle",
       "member_rest", "particle_grad", "pressure_offsets", "pressure_pairs", "body_constraints",
       "body_constraint_sums", "num_body_constraint_segments")
PARAMS(body_constraint_solve64, "body_constraint_ranges", "body_constraint_sums", "particle_p",
       "body_constraints", "body_goal", "inv_h2", "reset_lambda", "num_body_constraints")
PARAMS(body_constraint_solve8, "body_constraint_ranges", "body_constraint_sums", "particle_p",
       "body_constraints", "body_goal", "inv_h2", "reset_lambda", "num_body_constraints")
PARAMS(body_constraint_reduce16, "body_constraint_segments", "particle_p", "member_particle",
       "member_rest", "particle_grad", "pressure_offsets", "pressure_pairs", "pressure_table",
       "pressure_steps", "num_particles", "body_constraints", "body_constraint_mq",
       "body_constraint_sums", "num_body_constraint_segments")
PARAMS(body_constraint_apply_sets, "particle_p", "particle_body", "set_rest", "particle_grad",
       "set_offsets", "set_constraints", "set_particle_offsets", "set_particles",
       "body_constraints", "body_goal", "num_sets")
PARAMS(body_constraint_apply_runs, "particle_p", "particle_body", "member_rest", "particle_grad",
       "particle_set", "set_offsets", "set_constraints", "body_constraints", "body_goal",
       "num_particles")

const pbd_kernel_params pbd_kernel_param_table[] = {
    ENTRY(predict),
    ENTRY(predict_runs),
#define PBD_X_PROJECT_ENTRY(id, name, type, arity, world) TYPE_ENTRY("project_" #name),
    PBD_CONSTRAINT_LIST(PBD_X_PROJECT_ENTRY)
#undef PBD_X_PROJECT_ENTRY
        TYPE_ENTRY("project_tether16"),
    TYPE_ENTRY("project_volume16"),
    TYPE_ENTRY("project_dihedral16"),
    TYPE_ENTRY("project_isometric16"),
    TYPE_ENTRY("project_neo_hookean16"),
    BLOCKS_ENTRY("project_volume_blocks"),
    BLOCKS_ENTRY("project_dihedral_blocks"),
    BLOCKS_ENTRY("project_isometric_blocks"),
    BLOCKS_ENTRY("project_neo_hookean_blocks"),
    ENTRY(project_distance_jacobi),
    ENTRY(project_distance_gs16),
    ENTRY(project_gs_blocks),
    ENTRY(project_distance_group),
    ENTRY(collide),
    ENTRY(gather_jacobi),
    ENTRY(jacobi_fused16),
    ENTRY(update_velocity),
    ENTRY(update_bounce),
    ENTRY(update_runs),
    ENTRY(update_reduce_serial),
    ENTRY(body_reduce),
    ENTRY(body_reduce_serial),
    ENTRY(body_solve),
    ENTRY(body_solve_serial),
    ENTRY(momentum_apply),
    ENTRY(body_constraint_apply),
    ENTRY(body_constraint_reduce64),
    ENTRY(body_constraint_solve64),
    ENTRY(body_constraint_solve8),
    ENTRY(body_constraint_reduce16),
    ENTRY(body_constraint_apply_sets),
    ENTRY(body_constraint_apply_runs),
    ENTRY(hash_clear),
    ENTRY(hash_count),
    ENTRY(hash_scan),
    ENTRY(hash_scatter),
    ENTRY(hash_sort),
    ENTRY(contact_list),
    ENTRY(contact_solve),
    ENTRY(contact_apply),
    ENTRY(contact_moment),
};
const int pbd_kernel_param_table_count =
    (int)(sizeof pbd_kernel_param_table / sizeof pbd_kernel_param_table[0]);

const pbd_kernel_params *pbd_kernel_params_find(const char *kernel)
{
    for (int k = 0; k < pbd_kernel_param_table_count; ++k)
        if (strcmp(pbd_kernel_param_table[k].kernel, kernel) == 0)
            return &pbd_kernel_param_table[k];
    return NULL;
}

int pbd_kernel_param_index(const pbd_kernel_params *k, const char *param)
{
    for (int j = 0; j < k->count; ++j)
        if (strcmp(k->params[j], param) == 0)
            return j;
    return -1;
}
