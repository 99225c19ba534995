/* Scenes: the shipped scenes load with the counts their formulas give, every malformed scene
 * fails with a message naming its file and key, and the generators build what they say. */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <math.h>

#include "test_util.h"

#include "scene/generators.h"

static int64_t cloth_constraints(int64_t nu, int64_t nv)
{
    return (nu - 1) * nv + nu * (nv - 1)    /* structural */
           + 2 * (nu - 1) * (nv - 1)        /* shear */
           + (nu - 2) * nv + nu * (nv - 2); /* bending */
}

static int64_t tet_constraints(int64_t x, int64_t y, int64_t z)
{
    return x * (y + 1) * (z + 1) + (x + 1) * y * (z + 1) + (x + 1) * (y + 1) * z /* edges */
           + x * y * (z + 1) + x * (y + 1) * z + (x + 1) * y * z /* face diagonals */
           + x * y * z;                                          /* body diagonals */
}

/* Lists the *.json files of a directory; returns how many (at most max). */
static int list_json(const char *dir, char names[][128], int max)
{
    DIR *d = opendir(dir);
    int n = 0;
    expect(d != NULL, "cannot open %s", dir);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        if (len > 5 && len < 128 && strcmp(e->d_name + len - 5, ".json") == 0 && n < max)
            memcpy(names[n++], e->d_name, len + 1);
    }
    closedir(d);
    return n;
}

/* dir/file into path[512]; a path that does not fit fails the test. */
static void join_path(char *path, const char *dir, const char *file)
{
    int n = snprintf(path, 512, "%s/%s", dir, file);
    expect(n > 0 && n < 512, "path %s/%s too long", dir, file);
}

static int find_name(const char *name, const char *const *table, size_t stride, int count)
{
    for (int i = 0; i < count; ++i)
        if (strcmp(*(const char *const *)((const char *)table + (size_t)i * stride), name) == 0)
            return i;
    return -1;
}

/* ---- shipped scenes --------------------------------------------------------------------- */

typedef struct good_scene {
    const char *file;
    int64_t particles, distance;
    int bodies, pinned, planes;
} good_scene;

static const good_scene good[] = {
    {"two_particles.json", 2, 1, 1, 0, 0},
    {"cloth.json", 128 * 128, 0, 1, 2, 1},
    {"cloth_large.json", 256 * 256, 0, 1, 2, 1},
    {"spinning_box.json", 7 * 7 * 7, 0, 1, 0, 0},
    {"rope.json", 65, 64, 1, 1, 1},
    {"cloth_sphere.json", 64 * 64, 0, 1, 0, 2},
    {"spinning_soft_cube.json", 7 * 7 * 7, 0, 1, 0, 0},
    {"tethered_curtain.json", 64 * 64, 0, 1, 64, 1},
    {"draped_sheet.json", 48 * 48, 47 * 48 * 2 + 47 * 47 * 2, 1, 2, 2},
    {"soft_cubes.json", 4 * 125, 0, 4, 0, 1},
    {"soft_cubes_zero_gravity.json", 4 * 125, 0, 4, 0, 0},
    {"soft_pile.json", 100 * 512, 0, 100, 0, 1},
    {"cloth_self_fold.json", 8 * 80, 7 * 80 + 8 * 79 + 2 * 7 * 79, 1, 0, 1},
    {"bowling.json", 206 + 10 * 121, 0, 11, 0, 1},
    {"cloth_shapes.json", 48 * 48, 47 * 48 * 2 + 47 * 47 * 2, 1, 0, 3},
    /* Mesh bodies: the counts of the files in scenes/meshes/ (TetGen, OBJ, Gmsh 4.1). */
    {"soft_torus.json", 472, 2437, 1, 0, 1},
    {"tablecloth.json", 331, 1800, 1, 1, 2},
    {"soft_log.json", 167, 0, 1, 0, 1},
    {"soft_bunny.json", 1057, 0, 1, 0, 1},
    {"soft_car_ramp.json", 1894, 10485, 1, 0, 2},
    /* Body constraints: a tet box of springs with shape matching; a closed OBJ surface (162
     * vertices, 480 edges and as many bending springs) with pressure. */
    {"jelly.json", 6 * 6 * 6, 0, 1, 0, 1},
    {"jelly_bar.json", 13 * 3 * 3, 0, 1, 0, 2},
    {"balloon.json", 162, 960, 1, 0, 1},
};

static int64_t expected_distance(const good_scene *g)
{
    if (strcmp(g->file, "cloth.json") == 0)
        return cloth_constraints(128, 128);
    if (strcmp(g->file, "cloth_sphere.json") == 0 || strcmp(g->file, "tethered_curtain.json") == 0)
        return cloth_constraints(64, 64);
    if (strcmp(g->file, "cloth_large.json") == 0)
        return cloth_constraints(256, 256);
    if (strcmp(g->file, "spinning_box.json") == 0 ||
        strcmp(g->file, "spinning_soft_cube.json") == 0)
        return tet_constraints(6, 6, 6);
    if (strcmp(g->file, "jelly.json") == 0)
        return tet_constraints(5, 5, 5);
    if (strcmp(g->file, "jelly_bar.json") == 0)
        return tet_constraints(12, 2, 2);
    return g->distance;
}

static void good_scenes(void **state)
{
    (void)state;
    char names[64][128];
    int n = list_json(PBD_SCENES_DIR, names, 64);
    int count = (int)(sizeof good / sizeof good[0]);
    expect(n >= count, "found %d scenes in %s, expected at least %d", n, PBD_SCENES_DIR, count);
    for (int i = 0; i < n; ++i) {
        char path[512];
        pbd_scene s;
        pbd_error err = {0};
        join_path(path, PBD_SCENES_DIR, names[i]);
        pbd_status st = pbd_scene_load(path, &s, &err);
        expect(st == PBD_OK, "%s: status %d: %s", names[i], (int)st, err.message);
        int g = find_name(names[i], &good[0].file, sizeof good[0], count);
        expect(g >= 0, "%s: shipped scene missing from the table in test_scene.c", names[i]);
        const good_scene *e = &good[g];
        const pbd_model *m = &s.model;
        expect(m->num_particles == e->particles, "%s: %d particles, expected %lld", e->file,
               m->num_particles, (long long)e->particles);
        expect(m->num_distance == expected_distance(e), "%s: %d constraints, expected %lld",
               e->file, m->num_distance, (long long)expected_distance(e));
        expect(m->num_bodies == e->bodies, "%s: %d bodies", e->file, m->num_bodies);
        expect(m->bodies[0].pinned == e->pinned, "%s: %d pinned, expected %d", e->file,
               m->bodies[0].pinned, e->pinned);
        expect(m->num_colliders == e->planes, "%s: %d colliders", e->file, m->num_colliders);
        assert_int_equal(pbd_model_validate(m, &err), PBD_OK);
        pbd_scene_free(&s);
    }
}

/* The section 3.2 example, value by value. */
static void two_particles(void **state)
{
    (void)state;
    pbd_scene s;
    pbd_error err = {0};
    pbd_status st = pbd_scene_load(PBD_SCENES_DIR "/two_particles.json", &s, &err);
    expect(st == PBD_OK, "status %d: %s", (int)st, err.message);
    const pbd_model *m = &s.model;
    expect(s.config.dt == 1.0f && s.config.substeps == 1 && s.config.iterations == 1 &&
               s.config.frames == 1,
           "dt %g substeps %d iterations %d frames %d", (double)s.config.dt, s.config.substeps,
           s.config.iterations, s.config.frames);
    expect(s.config.gravity[0] == 0.0f && s.config.gravity[1] == 0.0f &&
               s.config.gravity[2] == 0.0f,
           "gravity (%g, %g, %g)", (double)s.config.gravity[0], (double)s.config.gravity[1],
           (double)s.config.gravity[2]);
    expect(m->x[0].x == 1.0f && m->x[1].x == -1.0f && m->x[0].w == 1.0f && m->v[1].w == 1.0f,
           "x0 %g x1 %g w0 %g m1 %g", (double)m->x[0].x, (double)m->x[1].x, (double)m->x[0].w,
           (double)m->v[1].w);
    expect(m->v[0].y == 1.0f && m->v[1].y == -1.0f, "v0.y %g v1.y %g", (double)m->v[0].y,
           (double)m->v[1].y);
    expect(m->distance[0].rest == 2.0f && m->distance[0].compliance == 0.0f,
           "rest %g compliance %g", (double)m->distance[0].rest, (double)m->distance[0].compliance);
    pbd_scene_free(&s);
}

/* The body constraints' keys reach the model: the jelly's shape matching, the balloon's
 * pressure, and nothing else on either. */
static void body_constraint_keys(void **state)
{
    (void)state;
    pbd_scene s;
    pbd_error err = {0};
    pbd_status st = pbd_scene_load(PBD_SCENES_DIR "/jelly.json", &s, &err);
    expect(st == PBD_OK, "jelly.json: %s", err.message);
    const pbd_body *b = &s.model.bodies[0];
    expect(b->shape_stiffness == 0.1f && b->pressure == 0.0f && b->pressure_compliance == 0.0f,
           "jelly: shape_stiffness %g pressure %g compliance %g", (double)b->shape_stiffness,
           (double)b->pressure, (double)b->pressure_compliance);
    pbd_scene_free(&s);
    st = pbd_scene_parse("{\"bodies\": [{\"type\": \"tet_box\", \"cells\": [1, 1, 1], "
                         "\"pressure\": 2, \"pressure_compliance\": 0.25}]}",
                         "inline", &s, &err);
    expect(st == PBD_OK, "inline: %s", err.message);
    b = &s.model.bodies[0];
    expect(b->shape_stiffness == 0.0f && b->pressure == 2.0f && b->pressure_compliance == 0.25f,
           "box: shape_stiffness %g pressure %g compliance %g", (double)b->shape_stiffness,
           (double)b->pressure, (double)b->pressure_compliance);
    pbd_scene_free(&s);
    st = pbd_scene_load(PBD_SCENES_DIR "/jelly_bar.json", &s, &err);
    expect(st == PBD_OK, "jelly_bar.json: %s", err.message);
    b = &s.model.bodies[0];
    expect(b->shape_stiffness == 0.2f && b->shape_cluster_spacing == 0.2f &&
               b->shape_cluster_radius == 0.2f,
           "jelly_bar: shape_stiffness %g, clusters %g m, radius %g m", (double)b->shape_stiffness,
           (double)b->shape_cluster_spacing, (double)b->shape_cluster_radius);
    pbd_scene_free(&s);
    st = pbd_scene_parse("{\"bodies\": [{\"type\": \"tet_box\", \"cells\": [1, 1, 1], "
                         "\"shape_matching\": "
                         "{\"compliance\": 0.01, \"clusters\": {\"spacing\": 0.3}}}]}",
                         "inline", &s, &err);
    expect(st == PBD_OK, "inline: %s", err.message);
    b = &s.model.bodies[0];
    expect(b->shape_compliance == 0.01f && b->shape_cluster_spacing == 0.3f &&
               b->shape_cluster_radius == 0.0f,
           "clusters: compliance %g, spacing %g m, radius %g m (0: the spacing)",
           (double)b->shape_compliance, (double)b->shape_cluster_spacing,
           (double)b->shape_cluster_radius);
    pbd_scene_free(&s);
    st = pbd_scene_load(PBD_SCENES_DIR "/balloon.json", &s, &err);
    expect(st == PBD_OK, "balloon.json: %s", err.message);
    b = &s.model.bodies[0];
    expect(b->shape_stiffness == 0.0f && b->pressure == 1.5f && b->pressure_compliance == 0.0f,
           "balloon: shape_stiffness %g pressure %g compliance %g", (double)b->shape_stiffness,
           (double)b->pressure, (double)b->pressure_compliance);
    expect(s.model.num_triangles == 320, "balloon: %d triangles, expected 320",
           s.model.num_triangles);
    pbd_scene_free(&s);
}

/* ---- malformed scenes ------------------------------------------------------------------- */

typedef struct bad_scene {
    const char *file;
    const char *message; /* a substring of the error message */
} bad_scene;

static const bad_scene bad[] = {
    {"unknown_top_key.json", ": gravty: unknown key (expected one of: description, dt,"},
    {"unknown_body_key.json", "bodies[0].colour: unknown key (expected one of: type, name,"},
    {"wrong_type.json", ": dt: found a string, expected a number"},
    {"nul_escape.json", ": line 1, column 5: found \\u0000 (NUL) in a string, expected no NUL"},
    {"bending_name.json", ": bodies[0].bending: found \"folds\", expected one of: none, springs, "
                          "dihedral, isometric"},
    {"bending_type.json", ": bodies[0].bending: found a number, expected true, false, or one of: "
                          "none, springs, dihedral, isometric"},
    {"body_kinetic_alone.json",
     ": bodies[0].kinetic_friction: found without \"friction\", expected both"},
    {"box_size.json", ": boxes[0].size[1]: found 0, expected a number in (0, 1000000000]"},
    {"capsule_radius.json", ": capsules[0].radius: missing (required for a capsule)"},
    {"kinetic_friction_above_static.json",
     ": planes[0].kinetic_friction: found 0.3, expected at most the static friction 0.2"},
    {"poisson_alone.json",
     ": bodies[0].poisson_ratio: found without \"young_modulus\", expected both or neither"},
    {"poisson_range.json", ": bodies[0].poisson_ratio: found 0.5, expected a number in [0, 0.49]"},
    {"young_with_volume.json", ": bodies[0].volume: found with \"young_modulus\", expected one "
                               "of them"},
    {"bending_compliance_alone.json",
     ": bodies[0].bending_compliance: found with no bending, expected \"bending\" too"},
    {"dt_range.json", ": dt: found 0, expected a number in (1e-09, 10]"},
    {"iterations_range.json", ": iterations: found 0, expected an integer in [1, 10000]"},
    {"resolution_range.json", "bodies[0].resolution[1]: found -3, expected an integer in [2, "
                              "4096]"},
    {"mass_range.json", "bodies[0].mass: found -1, expected a number > 0"},
    {"missing_bodies.json", ": bodies: missing"},
    {"empty_bodies.json", ": bodies: found an empty array"},
    {"bad_body_type.json", "bodies[0].type: found \"box\", expected one of: cloth, rope, "
                           "tet_box, particles, mesh"},
    {"stiffness_and_compliance.json", "bodies[0].stiffness: found together with compliance"},
    {"mass_and_density.json", "bodies[0].density: found together with mass"},
    {"pinned_out_of_range.json", "bodies[0].pinned[1]: found 16, expected an index in [0, 15]"},
    {"pinned_huge.json",
     "bodies[0].pinned[1]: found 10000000000, expected an integer index in [0, 2147483647]"},
    {"large_number.json", "bodies[0].mass: found 1e+39, expected a magnitude of at most"},
    {"constraint_out_of_range.json", "bodies[0].constraints[0][1]: found 5, expected an index "
                                     "in [0, 1]"},
    {"syntax_error.json", ": line 4, column 21: JSON syntax error"},
    {"non_integer.json", ": substeps: found 3.5, expected an integer in [1, 1000]"},
    {"zero_normal.json", "planes[0].normal: found [0, 0, 0], expected a non-zero vector"},
    {"duplicate_key.json", ": dt: duplicate key"},
    {"omega_rounds.json", ": omega: found 1.99999999999, 2 in float precision, expected a "
                          "number in (0, 2)"},
    {"compliance_huge.json", "bodies[0].compliance: found 1.00000004091848e+35, expected a "
                             "compliance in [0, 1e20]"},
    {"young_with_compliance.json", "bodies[0].stiffness: found with \"young_modulus\", expected "
                                   "one of them"},
    {"young_flat.json", "bodies[0].young_modulus: found tetrahedron 0 (from 0) flat in float "
                        "(rest volume 0)"},
    {"young_tiny.json", "bodies[0].young_modulus: found tetrahedron 0 (from 0) of rest volume "
                        "0.0208333 m^3 with a compliance 1 / (mu V) of 1.248e+22 m/N, expected "
                        "at most 1e20"},
    {"plane_far.json", "planes[0].offset: found 1e+36, expected a number in [-1000000000, "
                       "1000000000]"},
    {"position_far.json", "particle 1: position (1.35e+09, -0.5, -0.5) m"},
    {"velocity_far.json", "bodies[0].velocities[1][1]: found 1e+21, expected a number in "
                          "[-1000000000, 1000000000]"},
    {"sphere_radius.json", "spheres[0].radius: found 0, expected a number in (0, 1000000000]"},
    {"attachment_particle.json", "attachments[0].particle: found 16, expected a particle index "
                                 "in [0, 16) of bodies[0]"},
    {"attachment_both.json", "attachments[0].stiffness: found together with compliance"},
    {"top_not_object.json", ": top level: found an array, expected an object"},
    {"missing_positions.json", "bodies[0].positions: missing (required for type \"particles\")"},
    {"masses_length.json", "bodies[0].masses: found an array of 1, expected 2 entries"},
    {"rope_zero_length.json", "bodies[0].end: found [1, 2, 3]"},
    {"too_many_particles.json", "bodies[0].cells: found 135005697 particles"},
    {"scene_too_many_particles.json", "bodies[4].resolution: found 16777216 particles "
                                      "(83886080 in the scene up to this body), expected at "
                                      "most 67108864 in a scene"},
    {"non_finite.json", ": dt: found inf, expected a number in (1e-09, 10]"},
    {"duplicate_pinned.json", "bodies[0].pinned[1]: found 0 again, expected each index once"},
    {"bad_damping.json", ": damping: found \"viscous\", expected one of: none, point, rigid"},
    {"damping_k_range.json", ": damping_k: found 1.5, expected a number in [0, 1]"},
    {"serial_color_size_range.json", ": serial_color_size: found -1, expected an integer in "
                                     "[0, 1000000]"},
    {"body_momentum_type.json", "bodies[0].momentum: found a string, expected"},
    {"particle_radius_zero.json", "bodies[0].particle_radius: found 0, expected a number in (0, "},
    {"self_collision_type.json", "bodies[0].self_collision: found a string, expected true or"},
    {"self_collision_no_radius.json", "bodies[0].particle_radius: missing (required with "
                                      "\"self_collision\""},
    {"stiffness_range.json", "bodies[0].stiffness: found 1.5, expected a number in (0, 1]"},
    {"constraint_same_particle.json", "bodies[0].constraints[0][1]: found 1, expected an "
                                      "index in [0, 1] other than 1"},
    {"density_for_particles.json", "bodies[0].density: unknown key"},
    {"missing_type.json", "bodies[0].type: missing (required; one of: cloth,"},
    {"velocities_and_velocity.json", "bodies[0].velocities: found together with velocity"},
    {"bad_solver.json", ": solver: found \"newton\", expected one of: gs, jacobi"},
    {"vec_length.json", ": gravity: found an array of 2, expected an array of 3 numbers"},
    {"name_too_long.json", "bodies[0].name: found a string of 66 bytes, expected 1 to 63"},
    {"name_not_utf8.json",
     "bodies[0].name: found byte 0xff at byte 2, which is not UTF-8, expected UTF-8 text"},
    {"name_c1_control.json",
     "bodies[0].name: found control character U+0085 at byte 2, expected printable text"},
    {"name_control.json", "bodies[0].name: found control character 0x0a at byte 2, expected "
                          "printable text"},
    {"shape_matching_type.json", "bodies[0].shape_matching: found a number, expected an object"},
    {"shape_matching_stiffness.json",
     "bodies[0].shape_matching.stiffness: found 0, expected a number in (0, 1]"},
    {"shape_matching_key.json", "bodies[0].shape_matching.stifness: unknown key"},
    {"shape_matching_empty.json",
     "bodies[0].shape_matching.stiffness: missing (required: \"stiffness\" or \"compliance\")"},
    {"shape_matching_both.json",
     "bodies[0].shape_matching.compliance: found beside \"stiffness\", expected one of the two"},
    {"shape_matching_compliance.json",
     "bodies[0].shape_matching.compliance: found 0, expected a number in (0, 1e+20]"},
    {"shape_clusters_type.json",
     "bodies[0].shape_matching.clusters: found an array, expected an object"},
    {"shape_clusters_key.json", "bodies[0].shape_matching.clusters.radus: unknown key"},
    {"shape_clusters_no_spacing.json",
     "bodies[0].shape_matching.clusters.spacing: missing (required, in m)"},
    {"shape_clusters_spacing.json",
     "bodies[0].shape_matching.clusters.spacing: found 0, expected a number in (0, 1000000000]"},
    {"shape_clusters_radius.json",
     "bodies[0].shape_matching.clusters.radius: found -1, expected a number in (0, 1000000000]"},
    {"shape_clusters_reach.json",
     "bodies[0].shape_matching.clusters.radius: found 0.5, expected at most 4 times the spacing "
     "(0.1 m)"},
    {"pressure_range.json", "bodies[0].pressure: found -1, expected a number in (0, 1000]"},
    {"pressure_compliance_alone.json",
     "bodies[0].pressure_compliance: found without \"pressure\", expected both or neither"},
    {"bending_stiffness_and_compliance.json",
     "bodies[0].bending_stiffness: found together with bending_compliance, expected only one of "
     "bending_compliance and bending_stiffness"},
    {"tether_stiffness_alone.json",
     "bodies[0].tether_stiffness: found without \"tethers\": true, expected both or neither"},
    {"pressure_stiffness_range.json",
     "bodies[0].pressure_stiffness: found 0, expected a number in (0, 1]"},
    {"volume_stiffness_alone.json",
     "bodies[0].volume_stiffness: found without \"volume\": true, expected both or neither"},
    {"body_damping.json",
     "bodies[0].damping: found \"strong\", expected one of: none, point, rigid"},
    {"body_damping_k_range.json", "bodies[0].damping_k: found 1.5, expected a number in [0, 1]"},
    {"body_damping_no_k.json", "bodies[0].damping: found \"point\" with no \"damping_k\" on the "
                               "body or the scene, expected a fraction per substep for it"},
    {"damping_no_k.json", ": damping: found \"rigid\" with no \"damping_k\" on the body or the "
                          "scene, expected a fraction per substep for it"},
    {"gravity_huge.json", ": gravity[1]: found -1e+30, expected a number in [-1000000, "
                          "1000000]"},
    {"attachment_pinned.json", "attachments[0].particle: found 0, pinned (it never moves, so "
                               "an attachment would do nothing)"},
    {"rest_huge.json", "bodies[0].constraints[0][2]: found 1000000000000, expected a number in [0, "
                       "2000000000]"},
    {"damping_k_unused.json", ": damping_k: found 0.5, used by no body (each damps with "
                              "\"none\" or its own \"damping_k\")"},
    {"start_inside_plane.json", "bodies[0]: particle 0 at (-0.5, -5, -0.5) starts 5 m inside "
                                "planes[0], expected every free particle outside the colliders"},
    /* on a surface is outside; the centre is inside */
    {"start_inside_sphere_centre.json",
     "bodies[0]: particle 1 at (3, 0.5, 0) starts 0.3 m inside spheres[1]"},
    /* a pinned particle never moves: it may start inside */
    {"start_inside_capsule_axis.json",
     "bodies[1]: particle 1 at (0.5, 0, 0) starts 0.1 m inside capsules[0]"},
    /* inside the box only as it is turned */
    {"start_inside_box.json",
     "bodies[0]: particle 3 at (-0.75, -0.400000006, 0) starts 0.0914639 m "
     "inside boxes[1]"},
    /* two pinned particles, touching, or a body's own pair are not an overlap */
    {"start_overlapping.json", "bodies[3]: particle 1 at (3.1500001, 0, 0) starts 0.05 m into "
                               "bodies[4]'s particle 0 (radii's sum 0.2 m), expected the bodies "
                               "apart"},
    {"restitution_no_colliders.json",
     "bodies[0].restitution: found 0.8 with no colliders, expected a plane, sphere, box or "
     "capsule to bounce on"},
    {"particle_radius_alone.json",
     "bodies[0].particle_radius: found 0.05 with no other body with a particle_radius and no "
     "self_collision, expected it only for particle contacts"},
    {"momentum_false_pinned.json", "bodies[0].momentum: found false on a body with 1 pinned "
                                   "particle (held by the world, it is never corrected)"},
    {"velocity_all_pinned.json", "bodies[1].angular_velocity: found [0, 1, 0] on a body whose 2 "
                                 "particles are all pinned (never moving)"},
    {"solver_jacobi_no_distance.json",
     ": solver: found \"jacobi\" with no distance constraints, expected it only where a body "
     "has them"},
    /* under gs with distance constraints the command line's --solver decides: cli.omega_* */
    {"omega_unused.json", ": omega: found 1.5 with no distance constraints and no particle "
                          "contacts, expected it only where a Jacobi solve or contacts use it"},
    {"damping_unused.json", ": damping: found \"point\", used by no body (each gives its own "
                            "\"damping\")"},
    {"sphere_angular_velocity.json",
     "spheres[0].angular_velocity: found [0, 5, 3], expected none (a sphere turned about its "
     "centre is the same sphere"},
    /* each component within 1e9, the speed beyond: the run would stop at once */
    {"speed_huge.json", "bodies[0]: particle 0: velocity (9e+08, 9e+08, 9e+08) m/s, speed "
                        "1.55885e+09, expected at most 1e+09 m/s"},
    {"velocity_of_pinned.json", "bodies[0].velocities[1]: found [0, 2, 0] for a pinned "
                                "particle, expected [0, 0, 0]"},
    /* 5 is not a corner of the first row; 3 is */
    {"pinned_by_pin.json", "bodies[0].pinned[1]: found 3, which \"pin\": \"corners\" holds "
                           "already"},
    {"body_damping_k_unused.json",
     "bodies[1].damping_k: found 0.05 with damping \"none\", expected \"damping\": \"point\" or "
     "\"rigid\" on the body or the scene"},
};

static void bad_scenes(void **state)
{
    (void)state;
    char names[128][128], dir[512];
    join_path(dir, PBD_TESTS_DIR, "bad_scenes");
    int n = list_json(dir, names, 128);
    int count = (int)(sizeof bad / sizeof bad[0]);
    expect(n == count, "found %d files in %s, the table has %d", n, dir, count);
    for (int i = 0; i < n; ++i) {
        int b = find_name(names[i], &bad[0].file, sizeof bad[0], count);
        expect(b >= 0, "%s: not in the table of test_scene.c", names[i]);
    }
    for (int i = 0; i < count; ++i) {
        char path[512];
        pbd_scene s;
        pbd_error err = {0};
        join_path(path, dir, bad[i].file);
        pbd_status st = pbd_scene_load(path, &s, &err);
        expect(st == PBD_ERR_SCENE, "%s: status %d (expected %d): %s", bad[i].file, (int)st,
               (int)PBD_ERR_SCENE, err.message);
        expect(strncmp(err.message, path, strlen(path)) == 0 &&
                   strstr(err.message, bad[i].message) != NULL,
               "%s:\n  message  %s\n  expected %s...%s", bad[i].file, err.message, path,
               bad[i].message);
        expect(strchr(err.message, '\n') == NULL, "%s: message of more than one line", bad[i].file);
        expect(s.model.num_particles == 0 && s.model.x == NULL && s.model.distance == NULL &&
                   s.model.colliders == NULL,
               "%s: scene not left empty (%d particles)", bad[i].file, s.model.num_particles);
    }
}

/* Touching is not overlapping far from the origin either, where float rounding of the
 * positions passes 1e-5 m: two particles 3 km out, their radii's sum apart (4.9e-5 m into
 * each other in float), and a particle on a sphere of 200 m (1.5e-5 m inside) load; a 1 cm
 * overlap there is still refused. */
static void starts_touching_far_out(void **state)
{
    (void)state;
    const char *ok =
        "{\"gravity\": [0, 0, 0], \"spheres\": [{\"center\": [0, 0, 0], \"radius\": 200}], "
        "\"bodies\": [{\"type\": \"particles\", \"positions\": [[3000.1, 0, 0]], "
        "\"particle_radius\": 0.1}, {\"type\": \"particles\", \"positions\": "
        "[[3000.3, 0, 0]], \"particle_radius\": 0.1}, {\"type\": \"particles\", "
        "\"positions\": [[199.5173246463179, 6.278968079406268, 12.385948725615869]]}]}";
    pbd_scene s = {0};
    pbd_error err = {0};
    pbd_status st = pbd_scene_parse(ok, "far.json", &s, &err);
    expect(st == PBD_OK, "touching far out refused: %s", err.message);
    pbd_scene_free(&s);
    const char *bad_far = "{\"bodies\": [{\"type\": \"particles\", \"positions\": [[3000.1, 0, "
                          "0]], \"particle_radius\": 0.1}, {\"type\": \"particles\", "
                          "\"positions\": [[3000.29, 0, 0]], \"particle_radius\": 0.1}]}";
    st = pbd_scene_parse(bad_far, "far.json", &s, &err);
    expect(st == PBD_ERR_SCENE && strstr(err.message, "into bodies[1]'s particle 0"),
           "a 1 cm overlap far out: status %d, %s", (int)st, err.message);
}

static void unreadable(void **state)
{
    (void)state;
    pbd_scene s;
    pbd_error err = {0};
    const char *path = PBD_TESTS_DIR "/bad_scenes/no_such_file.json";
    pbd_status st = pbd_scene_load(path, &s, &err);
    expect(st == PBD_ERR_IO, "status %d: %s", (int)st, err.message);
    expect(strstr(err.message, path) && strstr(err.message, ": cannot read: "), "message %s",
           err.message);
    st = pbd_scene_load(PBD_TESTS_DIR "/bad_scenes", &s, &err);
    expect(st == PBD_ERR_IO, "a directory: status %d: %s", (int)st, err.message);
}

/* Messages from text: the name stands in for the file; defaults fill what is missing. */
static void parse_string(void **state)
{
    (void)state;
    pbd_scene s;
    pbd_error err = {0};
    pbd_status st = pbd_scene_parse(
        "{\"solver\": \"jacobi\", \"omega\": 1.5, \"bodies\": [{\"type\": \"rope\", "
        "\"segments\": 2, \"stiffness\": 0.25}, {\"type\": \"particles\", \"positions\": "
        "[[0, 0, 0], [0, 3, 4]], \"mass\": 4, \"constraints\": [[0, 1], [1, 0, 2.5]]}]}",
        "inline", &s, &err);
    expect(st == PBD_OK, "status %d: %s", (int)st, err.message);
    pbd_config def = pbd_config_default();
    expect(s.config.solver == PBD_SOLVER_JACOBI && s.config.omega == 1.5f &&
               s.config.dt == def.dt && s.config.iterations == def.iterations &&
               s.config.gravity[1] == def.gravity[1],
           "solver %d omega %g dt %g iterations %d", (int)s.config.solver, (double)s.config.omega,
           (double)s.config.dt, s.config.iterations);
    const pbd_model *m = &s.model;
    expect(m->num_bodies == 2 && strcmp(m->bodies[0].name, "rope") == 0 &&
               strcmp(m->bodies[1].name, "particles") == 0,
           "%d bodies, names %s, %s", m->num_bodies, m->bodies[0].name,
           m->num_bodies > 1 ? m->bodies[1].name : "-");
    expect(m->distance[0].compliance == -0.25f, "stiffness stored as %g, expected -0.25",
           (double)m->distance[0].compliance);
    expect(m->distance[2].rest == 5.0f && m->distance[3].rest == 2.5f && m->distance[3].a == 4 &&
               m->distance[3].b == 3,
           "rest %g and %g (a %d, b %d)", (double)m->distance[2].rest, (double)m->distance[3].rest,
           m->distance[3].a, m->distance[3].b);
    expect(m->v[3].w == 2.0f && m->x[4].w == 0.5f, "mass %g, inverse mass %g", (double)m->v[3].w,
           (double)m->x[4].w);
    pbd_scene_free(&s);

    st = pbd_scene_parse("{\"bodies\": [{\"type\": \"rope\", \"segments\": 0}]}", "inline", &s,
                         &err);
    expect(st == PBD_ERR_SCENE && strcmp(err.message, "inline: bodies[0].segments: found 0, "
                                                      "expected an integer in [1, 10000000]") == 0,
           "status %d: %s", (int)st, err.message);
    st = pbd_scene_parse("", "empty", &s, &err);
    expect(st == PBD_ERR_SCENE && strstr(err.message, "empty: line 1, column 1: JSON syntax"),
           "status %d: %s", (int)st, err.message);

    /* The PBD stiffness forms, stored as -k (the plan makes them per iteration). */
    st = pbd_scene_parse("{\"bodies\": [{\"type\": \"cloth\", \"resolution\": [3, 3], \"pin\": "
                         "\"edge\", \"bending\": \"dihedral\", \"bending_stiffness\": 0.5, "
                         "\"tethers\": true, \"tether_stiffness\": 0.25}, {\"type\": \"tet_box\", "
                         "\"cells\": [1, 1, 1], \"volume\": true, \"volume_stiffness\": 0.75, "
                         "\"pressure\": 1.5, \"pressure_stiffness\": 0.125}]}",
                         "inline", &s, &err);
    expect(st == PBD_OK, "status %d: %s", (int)st, err.message);
    int nd = 0, nt = 0, nv = 0;
    const pbd_dihedral *dh = pbd_model_constraints(&s.model, PBD_CONSTRAINT_DIHEDRAL, &nd);
    const pbd_tether *th = pbd_model_constraints(&s.model, PBD_CONSTRAINT_TETHER, &nt);
    const pbd_volume *vo = pbd_model_constraints(&s.model, PBD_CONSTRAINT_VOLUME, &nv);
    expect(nd > 0 && nt > 0 && nv > 0 && dh[nd - 1].compliance == -0.5f &&
               th[nt - 1].compliance == -0.25f && vo[nv - 1].compliance == -0.75f &&
               s.model.bodies[1].pressure_compliance == -0.125f,
           "%d dihedral, %d tethers, %d volumes; stiffness as %g, %g, %g, pressure %g", nd, nt, nv,
           nd ? (double)dh[nd - 1].compliance : 0.0, nt ? (double)th[nt - 1].compliance : 0.0,
           nv ? (double)vo[nv - 1].compliance : 0.0,
           (double)s.model.bodies[s.model.num_bodies - 1].pressure_compliance);
    pbd_scene_free(&s);

    /* A body's own damping: the model, the fraction, or neither (-1: the scene's). */
    st = pbd_scene_parse("{\"damping\": \"point\", \"damping_k\": 0.01, \"bodies\": ["
                         "{\"type\": \"rope\", \"segments\": 2, \"damping\": \"rigid\", "
                         "\"damping_k\": 0.2}, {\"type\": \"rope\", \"segments\": 2, "
                         "\"damping_k\": 0.05}, {\"type\": \"rope\", \"segments\": 2, "
                         "\"damping\": \"none\"}, {\"type\": \"rope\", \"segments\": 2}]}",
                         "inline", &s, &err);
    expect(st == PBD_OK, "status %d: %s", (int)st, err.message);
    const pbd_body *b = s.model.bodies;
    expect(b[0].damping == PBD_DAMPING_RIGID && b[0].damping_k == 0.2f && b[1].damping == -1 &&
               b[1].damping_k == 0.05f && b[2].damping == PBD_DAMPING_NONE &&
               b[2].damping_k == -1.0f && b[3].damping == -1 && b[3].damping_k == -1.0f &&
               s.config.damping == PBD_DAMPING_POINT && s.config.damping_k == 0.01f,
           "bodies' damping %d %g, %d %g, %d %g, %d %g", b[0].damping, (double)b[0].damping_k,
           b[1].damping, (double)b[1].damping_k, b[2].damping, (double)b[2].damping_k, b[3].damping,
           (double)b[3].damping_k);
    pbd_scene_free(&s);
}

/* ---- generators ------------------------------------------------------------------------- */

static double dist(const pbd_model *m, int a, int b)
{
    double dx = (double)m->x[a].x - m->x[b].x, dy = (double)m->x[a].y - m->x[b].y,
           dz = (double)m->x[a].z - m->x[b].z;
    return sqrt(dx * dx + dy * dy + dz * dz);
}

static double total_mass(const pbd_model *m)
{
    double total = 0.0;
    for (int i = 0; i < m->num_particles; ++i)
        total += m->v[i].w;
    return total;
}

/* Rest lengths are the initial distances. */
static void expect_rest_lengths(const pbd_model *m)
{
    for (int c = 0; c < m->num_distance; ++c) {
        const pbd_distance *d = &m->distance[c];
        double l = dist(m, d->a, d->b);
        expect(fabs(d->rest - l) <= 1e-6 * l, "constraint %d: rest %.9g, distance %.9g", c,
               (double)d->rest, l);
    }
}

/* The constraints are exactly the edges of the six Kuhn tetrahedra of every cell (built here
 * from the permutations of the axes), each once. */
static void expect_kuhn_edges(const pbd_model *m, const int cells[3])
{
    static const int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                    {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    int n[3] = {cells[0] + 1, cells[1] + 1, cells[2] + 1}, np = n[0] * n[1] * n[2];
    char *want = calloc((size_t)np * np, 1), *got = calloc((size_t)np * np, 1);
    assert_non_null(want);
    assert_non_null(got);
    int edges = 0;
    for (int k = 0; k < cells[2]; ++k)
        for (int j = 0; j < cells[1]; ++j)
            for (int i = 0; i < cells[0]; ++i)
                for (int p = 0; p < 6; ++p) {
                    int v[4], c[3] = {i, j, k};
                    for (int s = 0; s < 4; ++s) {
                        if (s > 0)
                            c[perms[p][s - 1]]++;
                        v[s] = (c[2] * n[1] + c[1]) * n[0] + c[0];
                    }
                    for (int a = 0; a < 4; ++a)
                        for (int b = a + 1; b < 4; ++b) {
                            int lo = v[a] < v[b] ? v[a] : v[b], hi = v[a] ^ v[b] ^ lo;
                            edges += !want[lo * np + hi];
                            want[lo * np + hi] = 1;
                        }
                }
    expect(m->num_distance == edges, "%d constraints, %d tetrahedron edges", m->num_distance,
           edges);
    for (int c = 0; c < m->num_distance; ++c) {
        int a = m->distance[c].a, b = m->distance[c].b, lo = a < b ? a : b, hi = a ^ b ^ lo;
        expect(want[lo * np + hi] && !got[lo * np + hi], "constraint %d (%d, %d): %s", c, a, b,
               got[lo * np + hi] ? "repeated" : "not a tetrahedron edge");
        got[lo * np + hi] = 1;
    }
    free(want);
    free(got);
}

/* The surface's enclosed volume (divergence theorem: sum of det(a, b, c) / 6) and area. */
static void surface_measures(const pbd_model *m, double *volume, double *area)
{
    *volume = *area = 0.0;
    for (int k = 0; k < m->num_triangles; ++k) {
        const int *t = m->triangles + 3 * k;
        double p[3][3];
        for (int c = 0; c < 3; ++c) {
            p[c][0] = m->x[t[c]].x;
            p[c][1] = m->x[t[c]].y;
            p[c][2] = m->x[t[c]].z;
        }
        double cx = p[1][1] * p[2][2] - p[1][2] * p[2][1];
        double cy = p[1][2] * p[2][0] - p[1][0] * p[2][2];
        double cz = p[1][0] * p[2][1] - p[1][1] * p[2][0];
        *volume += (p[0][0] * cx + p[0][1] * cy + p[0][2] * cz) / 6.0;
        double e1[3], e2[3];
        for (int q = 0; q < 3; ++q) {
            e1[q] = p[1][q] - p[0][q];
            e2[q] = p[2][q] - p[0][q];
        }
        double n[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                       e1[0] * e2[1] - e1[1] * e2[0]};
        *area += 0.5 * sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    }
}

/* Each directed edge of a closed, consistently oriented surface appears once, and its
 * reverse once: counts the edges that break that. */
static int open_edges(const pbd_model *m)
{
    int broken = 0;
    for (int k = 0; k < m->num_triangles; ++k)
        for (int e = 0; e < 3; ++e) {
            int a = m->triangles[3 * k + e], b = m->triangles[3 * k + (e + 1) % 3];
            int same = 0, reverse = 0;
            for (int j = 0; j < m->num_triangles; ++j)
                for (int f = 0; f < 3; ++f) {
                    int c = m->triangles[3 * j + f], d = m->triangles[3 * j + (f + 1) % 3];
                    same += c == a && d == b;
                    reverse += c == b && d == a;
                }
            broken += same != 1 || reverse != 1;
        }
    return broken;
}

/* The surfaces: a tet box's is closed, oriented outwards and encloses the box's volume with
 * its area; a cloth's covers its area with two triangles a quad, all facing one way. */
/* With "volume": six volume constraints a cell, whose rest volumes are a sixth of a cell's
 * each and fill the box; "volume_compliance" without "volume" is refused, and so are
 * tetrahedra flat in float. */
static void tet_volumes(void **state)
{
    (void)state;
    pbd_scene s = {0};
    pbd_error err = {0};
    const char *json = "{\"bodies\": [{\"type\": \"tet_box\", \"cells\": [2, 3, 4], "
                       "\"size\": [1, 2, 3], \"volume\": true, \"volume_compliance\": 1e-3}]}";
    assert_int_equal(pbd_scene_parse(json, "vol", &s, &err), PBD_OK);
    assert_int_equal(s.model.num_volume, 6 * 2 * 3 * 4);
    double total = 0.0;
    for (int k = 0; k < s.model.num_volume; ++k) {
        const pbd_volume *v = &s.model.volume[k];
        expect(fabs(fabs(v->rest) - 6.0 / 24.0 / 6.0) < 1e-6 && v->compliance == 1e-3f,
               "tet %d: rest %g, compliance %g", k, (double)v->rest, (double)v->compliance);
        total += fabs(v->rest);
    }
    expect(fabs(total - 6.0) < 1e-5, "the tets fill %g m^3 of 6", total);
    assert_int_equal(pbd_model_validate(&s.model, &err), PBD_OK);
    pbd_scene_free(&s);
    json = "{\"bodies\": [{\"type\": \"tet_box\", \"cells\": [1, 1, 1], "
           "\"volume_compliance\": 1e-3}]}";
    assert_int_equal(pbd_scene_parse(json, "vol", &s, &err), PBD_ERR_SCENE);
    expect(strstr(err.message, "bodies[0].volume_compliance: found without \"volume\": true"), "%s",
           err.message);
    /* a box so small that its tetrahedra are flat in float: named as the mesh's are */
    json = "{\"bodies\": [{\"type\": \"tet_box\", \"cells\": [1, 1, 1], \"size\": [1e-15, "
           "1e-15, 1e-15], \"volume\": true}]}";
    assert_int_equal(pbd_scene_parse(json, "vol", &s, &err), PBD_ERR_SCENE);
    expect(strstr(err.message, "bodies[0].volume: found tetrahedron 0 (from 0) with a rest volume "
                               "of 0 m^3 in float"),
           "%s", err.message);
    expect(s.model.num_particles == 0, "%d particles left", s.model.num_particles);
}

/* Young's modulus and Poisson's ratio become each Neo-Hookean element's compliances: Lame's
 * mu = E / (2 (1 + nu)) for the deviatoric part, and for the hydrostatic part the model's
 * lambda, the linear one plus mu (the stable Neo-Hookean energy's linearisation at rest has
 * lambda - mu where linear elasticity has lambda: Smith et al. 2018, Macklin and Mueller
 * 2021), over each element's volume; gamma = 1 + mu / lambda. At Poisson 0, 0.3 and 0.45. */
static void neo_hookean_moduli(void **state)
{
    (void)state;
    const double E = 2e4, nus[3] = {0.0, 0.3, 0.45};
    for (int k = 0; k < 3; ++k) {
        char json[256];
        snprintf(json, sizeof json,
                 "{\"bodies\": [{\"type\": \"tet_box\", \"cells\": [2, 1, 1], \"size\": [1, "
                 "0.5, 0.5], \"young_modulus\": %g, \"poisson_ratio\": %g}]}",
                 E, nus[k]);
        pbd_scene s = {0};
        pbd_error err = {0};
        assert_int_equal(pbd_scene_parse(json, "moduli", &s, &err), PBD_OK);
        double nu = nus[k], mu = E / (2.0 * (1.0 + nu));
        double lambda = E * nu / ((1.0 + nu) * (1.0 - 2.0 * nu)) + mu, total = 0.0;
        assert_int_equal(s.model.num_neo_hookean, 12);
        for (int e = 0; e < s.model.num_neo_hookean; ++e) {
            const pbd_neo_hookean *r = &s.model.neo_hookean[e];
            const float *d = r->dm_inv; /* the volume: 1 / (6 |det Dm^-1|) */
            double det = d[0] * ((double)d[4] * d[8] - (double)d[5] * d[7]) -
                         d[1] * ((double)d[3] * d[8] - (double)d[5] * d[6]) +
                         d[2] * ((double)d[3] * d[7] - (double)d[4] * d[6]);
            double vol = 1.0 / (6.0 * fabs(det));
            total += vol;
            expect(fabs(r->compliance * mu * vol - 1.0) < 1e-5 &&
                       fabs(r->compliance_h * lambda * vol - 1.0) < 1e-5 &&
                       fabs(r->gamma - (1.0 + mu / lambda)) < 1e-6,
                   "nu %g, element %d: compliances %g, %g (expected %g, %g), gamma %g", nu, e,
                   (double)r->compliance, (double)r->compliance_h, 1.0 / (mu * vol),
                   1.0 / (lambda * vol), (double)r->gamma);
        }
        expect(fabs(total - 0.25) < 1e-5, "the elements fill %g m^3 of 0.25", total);
        pbd_scene_free(&s);
    }
}

/* "tethers": every free particle of a pinned cloth gets one tether to a pinned particle, at
 * the distance they start apart; a cloth with nothing pinned is refused. */
static void cloth_tethers(void **state)
{
    (void)state;
    pbd_scene s = {0};
    pbd_error err = {0};
    const char *json = "{\"bodies\": [{\"type\": \"cloth\", \"resolution\": [6, 5], "
                       "\"size\": [1, 1], \"orientation\": \"xy\", \"pin\": \"corners\", "
                       "\"tethers\": true}]}";
    assert_int_equal(pbd_scene_parse(json, "tethers", &s, &err), PBD_OK);
    const pbd_model *m = &s.model;
    expect(m->num_tether == 6 * 5 - 2, "%d tethers, expected 28", m->num_tether);
    for (int k = 0; k < m->num_tether; ++k) {
        const pbd_tether *t = &m->tether[k];
        pbd_float4 a = m->x[t->a], b = m->x[t->b];
        double d = sqrt(((double)a.x - b.x) * (a.x - b.x) + ((double)a.y - b.y) * (a.y - b.y) +
                        ((double)a.z - b.z) * (a.z - b.z));
        expect(a.w > 0.0f && b.w == 0.0f && fabs(d - t->rest) < 1e-6,
               "tether %d: %d -> %d, rest %g, distance %g", k, t->a, t->b, (double)t->rest, d);
    }
    pbd_scene_free(&s);
    json = "{\"bodies\": [{\"type\": \"cloth\", \"resolution\": [4, 4], \"tethers\": "
           "true}]}";
    assert_int_equal(pbd_scene_parse(json, "tethers", &s, &err), PBD_ERR_SCENE);
    expect(strstr(err.message, "bodies[0].tethers: found true with no particle pinned, "
                               "expected a pinned particle"),
           "%s", err.message);
    expect(s.model.num_particles == 0, "%d particles left", s.model.num_particles);
}

static void surfaces(void **state)
{
    (void)state;
    pbd_tet_box_desc d = pbd_tet_box_desc_default();
    int cells[3] = {2, 3, 4};
    memcpy(d.cells, cells, sizeof cells);
    d.size[0] = 1.0f;
    d.size[1] = 2.0f;
    d.size[2] = 3.0f;
    pbd_model m = {0};
    pbd_error err = {0};
    assert_int_equal(pbd_scene_add_tet_box(&m, &d, &err), PBD_OK);
    double volume, area;
    surface_measures(&m, &volume, &area);
    expect(m.num_triangles == 4 * (2 * 3 + 3 * 4 + 4 * 2), "%d triangles", m.num_triangles);
    expect(fabs(volume - 6.0) < 1e-5 && fabs(area - 2.0 * (2 + 6 + 3)) < 1e-5,
           "volume %.9g (expected 6), area %.9g (expected 22)", volume, area);
    expect(open_edges(&m) == 0, "%d edges not shared by two opposite triangles", open_edges(&m));
    assert_int_equal(pbd_model_validate(&m, &err), PBD_OK);
    pbd_model_free(&m);

    pbd_cloth_desc c = pbd_cloth_desc_default();
    c.resolution[0] = 5;
    c.resolution[1] = 4;
    c.size[0] = 2.0f;
    c.size[1] = 3.0f;
    assert_int_equal(pbd_scene_add_cloth(&m, &c, &err), PBD_OK);
    surface_measures(&m, &volume, &area);
    expect(m.num_triangles == 2 * 4 * 3 && fabs(area - 6.0) < 1e-5, "%d triangles, area %.9g",
           m.num_triangles, area);
    for (int k = 0; k < m.num_triangles; ++k) { /* xz cloth: every normal along one y sign */
        const int *t = m.triangles + 3 * k;
        double ux = m.x[t[1]].x - m.x[t[0]].x, uz = m.x[t[1]].z - m.x[t[0]].z;
        double vx = m.x[t[2]].x - m.x[t[0]].x, vz = m.x[t[2]].z - m.x[t[0]].z;
        expect(uz * vx - ux * vz > 0.0, "triangle %d faces down", k);
    }
    /* A triangle across two bodies is refused. */
    assert_int_equal(pbd_scene_add_cloth(&m, &c, &err), PBD_OK);
    assert_int_equal(pbd_model_add_triangle(&m, 0, 1, 25), 0);
    assert_int_equal(pbd_model_validate(&m, &err), PBD_ERR_MODEL);
    expect(strstr(err.message, "expected three different particles of one body") != NULL, "%s",
           err.message);
    pbd_model_free(&m);
}

static void tet_box(void **state)
{
    (void)state;
    pbd_tet_box_desc d = pbd_tet_box_desc_default();
    pbd_model m = {0};
    pbd_error err = {0};
    assert_int_equal(pbd_scene_add_tet_box(&m, &d, &err), PBD_OK);
    assert_int_equal(m.num_particles, 8);
    assert_int_equal(m.num_distance, 19);
    int len[3] = {0, 0, 0}; /* edges of length 1, sqrt 2, sqrt 3 */
    for (int c = 0; c < m.num_distance; ++c) {
        double r2 = (double)m.distance[c].rest * m.distance[c].rest;
        int k = (int)lround(r2) - 1;
        expect(k >= 0 && k < 3 && fabs(r2 - (k + 1)) < 1e-5, "constraint %d: rest %g", c,
               (double)m.distance[c].rest);
        len[k]++;
    }
    expect(len[0] == 12 && len[1] == 6 && len[2] == 1, "%d edges, %d face, %d body diagonals",
           len[0], len[1], len[2]);
    expect_kuhn_edges(&m, d.cells);
    pbd_model_free(&m);

    int cells[3] = {2, 3, 4};
    memcpy(d.cells, cells, sizeof cells);
    d.size[0] = 1.0f;
    d.size[1] = 2.0f;
    d.size[2] = 3.0f;
    d.common.density = 10.0;
    assert_int_equal(pbd_scene_add_tet_box(&m, &d, &err), PBD_OK);
    assert_int_equal(m.num_particles, 3 * 4 * 5);
    assert_int_equal(m.num_distance, tet_constraints(2, 3, 4));
    expect_kuhn_edges(&m, cells);
    expect_rest_lengths(&m);
    /* index (k * (cy+1) + j) * (cx+1) + i, the box centred at the origin */
    pbd_float4 last = m.x[m.num_particles - 1], one = m.x[1];
    expect(last.x == 0.5f && last.y == 1.0f && last.z == 1.5f && one.x == 0.0f && one.y == -1.0f &&
               one.z == -1.5f,
           "corner (%g, %g, %g), particle 1 (%g, %g, %g)", (double)last.x, (double)last.y,
           (double)last.z, (double)one.x, (double)one.y, (double)one.z);
    double total = total_mass(&m);
    expect(fabs(total - 60.0) < 1e-4, "density 10 kg/m^3 x 6 m^3: mass %g kg", total);
    pbd_model_free(&m);
}

static void rope(void **state)
{
    (void)state;
    pbd_rope_desc d = pbd_rope_desc_default();
    pbd_model m = {0};
    pbd_error err = {0};
    d.segments = 10;
    d.end[0] = 3.0f;
    d.common.density = 2.0;
    assert_int_equal(pbd_scene_add_rope(&m, &d, &err), PBD_OK);
    assert_int_equal(m.num_particles, 11);
    assert_int_equal(m.num_distance, 10);
    expect_rest_lengths(&m);
    expect(fabs(m.distance[9].rest - 0.3) < 1e-6 && m.x[10].x == 3.0f,
           "rest %g, last particle x %g", (double)m.distance[9].rest, (double)m.x[10].x);
    double total = total_mass(&m);
    expect(fabs(total - 6.0) < 1e-5, "density 2 kg/m x 3 m: mass %g kg", total);
    d.bending = 1;
    d.common.density = 0.0;
    assert_int_equal(pbd_scene_add_rope(&m, &d, &err), PBD_OK);
    assert_int_equal(m.num_bodies, 2);
    assert_int_equal(m.num_distance, 10 + 19);
    assert_int_equal(m.distance[10].a, 11); /* body 2 starts at particle 11 */
    expect(m.v[11].w == 1.0f / 11.0f, "default mass 1 kg over 11 particles: %g", (double)m.v[11].w);
    assert_int_equal(pbd_model_validate(&m, &err), PBD_OK);
    pbd_model_free(&m);
}

/* Linear momentum is M v and angular momentum about the centre of mass is I w. */
static void angular_velocity(void **state)
{
    (void)state;
    pbd_cloth_desc d = pbd_cloth_desc_default();
    pbd_model m = {0};
    pbd_error err = {0};
    const double v[3] = {0.5, -1.0, 2.0}, w[3] = {1.0, 2.0, 3.0};
    d.resolution[0] = 8;
    d.resolution[1] = 6;
    d.size[0] = 1.4f;
    d.size[1] = 0.9f;
    d.center[1] = 2.0f;
    d.orientation = PBD_CLOTH_XY;
    d.common.mass = 2.0;
    for (int k = 0; k < 3; ++k) {
        d.common.velocity[k] = (float)v[k];
        d.common.angular_velocity[k] = (float)w[k];
    }
    assert_int_equal(pbd_scene_add_cloth(&m, &d, &err), PBD_OK);
    double mass = 0.0, com[3] = {0, 0, 0}, p[3] = {0, 0, 0}, l[3] = {0, 0, 0}, inertia[3][3];
    for (int i = 0; i < m.num_particles; ++i) {
        mass += m.v[i].w;
        for (int k = 0; k < 3; ++k)
            com[k] += m.v[i].w * (double)(&m.x[i].x)[k];
    }
    for (int k = 0; k < 3; ++k)
        com[k] /= mass;
    memset(inertia, 0, sizeof inertia);
    for (int i = 0; i < m.num_particles; ++i) {
        double mi = m.v[i].w, r[3], u[3];
        for (int k = 0; k < 3; ++k) {
            r[k] = (&m.x[i].x)[k] - com[k];
            u[k] = (&m.v[i].x)[k];
            p[k] += mi * u[k];
        }
        l[0] += mi * (r[1] * u[2] - r[2] * u[1]);
        l[1] += mi * (r[2] * u[0] - r[0] * u[2]);
        l[2] += mi * (r[0] * u[1] - r[1] * u[0]);
        double rr = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b)
                inertia[a][b] += mi * ((a == b ? rr : 0.0) - r[a] * r[b]);
    }
    expect(fabs(mass - 2.0) < 1e-5, "mass %g", mass);
    for (int k = 0; k < 3; ++k) {
        double iw = inertia[k][0] * w[0] + inertia[k][1] * w[1] + inertia[k][2] * w[2];
        expect(fabs(p[k] - mass * v[k]) < 1e-5, "p[%d] = %.9g, expected M v = %.9g", k, p[k],
               mass * v[k]);
        expect(fabs(l[k] - iw) < 1e-5 * (1.0 + fabs(iw)), "L[%d] = %.9g, expected (I w) = %.9g", k,
               l[k], iw);
    }
    /* xy orientation: row 0 is the top, u along x */
    expect(m.x[0].y > m.x[8].y && m.x[1].x > m.x[0].x && m.x[0].z == 0.0f, "row 0 y %g, row 1 y %g",
           (double)m.x[0].y, (double)m.x[8].y);
    pbd_model_free(&m);
}

static void cloth_density_and_counts(void **state)
{
    (void)state;
    pbd_cloth_desc d = pbd_cloth_desc_default();
    pbd_model m = {0};
    pbd_error err = {0};
    d.resolution[0] = 5;
    d.resolution[1] = 7;
    d.size[0] = 2.0f;
    d.size[1] = 3.0f;
    d.common.density = 0.5;
    assert_int_equal(pbd_scene_add_cloth(&m, &d, &err), PBD_OK);
    assert_int_equal(m.num_particles, 35);
    assert_int_equal(m.num_distance, cloth_constraints(5, 7));
    expect_rest_lengths(&m);
    double total = total_mass(&m);
    expect(fabs(total - 3.0) < 1e-5, "density 0.5 kg/m^2 x 6 m^2: mass %g kg", total);
    d.shear = 0;
    d.bending = 0;
    d.common.density = 0.0;
    d.common.compliance = 1e-3f;
    assert_int_equal(pbd_scene_add_cloth(&m, &d, &err), PBD_OK);
    assert_int_equal(m.num_distance - cloth_constraints(5, 7), 4 * 7 + 5 * 6);
    expect(m.distance[m.num_distance - 1].compliance == 1e-3f, "compliance %g",
           (double)m.distance[m.num_distance - 1].compliance);
    pbd_model_free(&m);
}

static void pins(void **state)
{
    (void)state;
    pbd_cloth_desc d = pbd_cloth_desc_default();
    pbd_model m = {0};
    pbd_error err = {0};
    const int extra[2] = {0, 7};
    d.resolution[0] = 6;
    d.resolution[1] = 4;
    d.common.velocity[1] = 3.0f;
    d.pin = PBD_PIN_CORNERS;
    assert_int_equal(pbd_scene_add_cloth(&m, &d, &err), PBD_OK);
    assert_int_equal(m.bodies[0].pinned, 2);
    expect(m.x[0].w == 0.0f && m.x[5].w == 0.0f && m.x[1].w > 0.0f && m.x[6].w > 0.0f,
           "inverse masses %g %g %g %g", (double)m.x[0].w, (double)m.x[5].w, (double)m.x[1].w,
           (double)m.x[6].w);
    expect(m.v[0].y == 0.0f && m.v[0].w == 1.0f / 24.0f && m.v[1].y == 3.0f,
           "pinned v.y %g mass %g, free v.y %g", (double)m.v[0].y, (double)m.v[0].w,
           (double)m.v[1].y);
    d.pin = PBD_PIN_EDGE;
    assert_int_equal(pbd_scene_add_cloth(&m, &d, &err), PBD_OK);
    assert_int_equal(m.bodies[1].pinned, 6);
    d.pin = PBD_PIN_CORNERS; /* union with the list: 0 is in both */
    d.common.pinned = extra;
    d.common.num_pinned = 2;
    assert_int_equal(pbd_scene_add_cloth(&m, &d, &err), PBD_OK);
    assert_int_equal(m.bodies[2].pinned, 3);
    expect(m.x[m.bodies[2].first + 7].w == 0.0f, "particle 7 inverse mass %g",
           (double)m.x[m.bodies[2].first + 7].w);
    /* a bad descriptor appends nothing */
    const int wrong[1] = {24};
    d.common.pinned = wrong;
    d.common.num_pinned = 1;
    int before = m.num_particles;
    assert_int_equal(pbd_scene_add_cloth(&m, &d, &err), PBD_ERR_ARGUMENT);
    expect(strstr(err.message, "pinned[0]: found 24") != NULL && m.num_particles == before &&
               m.num_bodies == 3,
           "%s (%d particles)", err.message, m.num_particles);
    pbd_model_free(&m);
}

static void particles(void **state)
{
    (void)state;
    pbd_particles_desc d = pbd_particles_desc_default();
    pbd_model m = {0};
    pbd_error err = {0};
    const float pos[3][3] = {{0, 0, 0}, {3, 4, 0}, {0, 0, 2}};
    const float masses[3] = {1.0f, 2.0f, 4.0f};
    const int pairs[2][2] = {{0, 1}, {2, 0}};
    const int pinned[1] = {2};
    d.count = 3;
    d.positions = pos;
    d.masses = masses;
    d.num_constraints = 2;
    d.constraints = pairs;
    d.common.pinned = pinned;
    d.common.num_pinned = 1;
    d.common.name = "three";
    assert_int_equal(pbd_scene_add_particles(&m, &d, &err), PBD_OK);
    expect(m.distance[0].rest == 5.0f && m.distance[1].rest == 2.0f, "rest %g %g",
           (double)m.distance[0].rest, (double)m.distance[1].rest);
    expect(m.x[1].w == 0.5f && m.v[2].w == 4.0f && m.x[2].w == 0.0f,
           "inverse mass %g, pinned mass %g inverse %g", (double)m.x[1].w, (double)m.v[2].w,
           (double)m.x[2].w);
    expect(strcmp(m.bodies[0].name, "three") == 0 && m.bodies[0].pinned == 1, "name %s pinned %d",
           m.bodies[0].name, m.bodies[0].pinned);
    d.common.density = 1.0;
    assert_int_equal(pbd_scene_add_particles(&m, &d, &err), PBD_ERR_ARGUMENT);
    expect(strncmp(err.message, "density: ", 9) == 0, "%s", err.message);
    pbd_model_free(&m);
}

/* @pile-N: N cubes of soft_pile.json's kind (512 particles, 2,058 Neo-Hookean elements, a
 * particle radius, friction) on a rough floor, starting apart: no two particles of
 * different cubes closer than their radii's sum. Sizes out of range are refused. */
static void builtin_pile(void **state)
{
    (void)state;
    pbd_scene s = {0};
    pbd_error err = {0};
    assert_int_equal(pbd_scene_builtin("@pile-9", &s, &err), PBD_OK);
    const pbd_model *m = &s.model;
    assert_int_equal(m->num_bodies, 9);
    assert_int_equal(m->num_particles, 9 * 512);
    assert_int_equal(m->num_neo_hookean, 9 * 2058);
    assert_int_equal(m->num_colliders, 1);
    expect(m->colliders[0].kind == PBD_COLLIDER_PLANE && m->colliders[0].friction == 0.6f,
           "floor: kind %d, friction %g", m->colliders[0].kind, (double)m->colliders[0].friction);
    for (int b = 0; b < m->num_bodies; ++b)
        expect(m->bodies[b].radius == 0.025f && m->bodies[b].friction == 0.6f &&
                   m->bodies[b].friction_kinetic == 0.4f,
               "cube %d: radius %g, friction %g / %g", b, (double)m->bodies[b].radius,
               (double)m->bodies[b].friction, (double)m->bodies[b].friction_kinetic);
    double closest = INFINITY;
    for (int i = 0; i < m->num_particles; ++i)
        for (int j = i + 1; j < m->num_particles; ++j)
            if (m->body[i] != m->body[j]) {
                double dx = m->x[i].x - m->x[j].x, dy = m->x[i].y - m->x[j].y,
                       dz = m->x[i].z - m->x[j].z;
                closest = fmin(closest, sqrt(dx * dx + dy * dy + dz * dz));
            }
    expect(closest >= 0.05, "cubes start %g m apart, expected at least 0.05", closest);
    expect(s.config.substeps == 8 && s.config.iterations == 4, "%d substeps, %d iterations",
           s.config.substeps, s.config.iterations);
    pbd_scene_free(&s);
    for (int k = 0; k < 2; ++k) {
        const char *name = k ? "@pile-20001" : "@pile-0";
        assert_int_equal(pbd_scene_builtin(name, &s, &err), PBD_ERR_SCENE);
        expect(strstr(err.message, "unknown built-in scene") != NULL, "%s", err.message);
    }
}

/* @boxes-BxP-asG keeps B boxes' particles and constraints and groups them into G bodies;
 * names it cannot build are refused with the reason. */
static void builtin_boxes(void **state)
{
    (void)state;
    pbd_scene a = {0}, g = {0};
    pbd_error err = {0};
    assert_int_equal(pbd_scene_builtin("@boxes-4x8", &a, &err), PBD_OK);
    assert_int_equal(pbd_scene_builtin("@boxes-4x8-as2", &g, &err), PBD_OK);
    assert_int_equal(a.model.num_bodies, 4);
    assert_int_equal(g.model.num_bodies, 2);
    assert_int_equal(g.model.num_particles, a.model.num_particles);
    assert_int_equal(g.model.num_distance, a.model.num_distance);
    for (int i = 0; i < g.model.num_particles; ++i)
        expect(g.model.body[i] == i / 16 && a.model.body[i] == i / 8, "particle %d: bodies %d, %d",
               i, g.model.body[i], a.model.body[i]);
    expect(g.model.bodies[1].first == 16 && g.model.bodies[1].count == 16, "body 1: [%d, +%d)",
           g.model.bodies[1].first, g.model.bodies[1].count);
    pbd_scene_free(&a);
    pbd_scene_free(&g);
    static const char *const refused[][2] = {
        {"@boxes-4x8-as3", "@boxes-4x8-as3: 4 boxes do not split into 3 bodies of equal size"},
        {"@boxes-4x8-as5", "@boxes-4x8-as5: unknown built-in scene"},
        {"@boxes-4x8-as", "@boxes-4x8-as: unknown built-in scene"},
        {"@boxes-4x7", "@boxes-4x7: unknown built-in scene"},
        {"@boxes-4x11", "@boxes-4x11: 11 particles per box do not factor"},
    };
    for (size_t k = 0; k < sizeof refused / sizeof refused[0]; ++k) {
        assert_int_equal(pbd_scene_builtin(refused[k][0], &a, &err), PBD_ERR_SCENE);
        expect(strncmp(err.message, refused[k][1], strlen(refused[k][1])) == 0, "%s", err.message);
    }
}

/* Validation catches a particle filed under the wrong body and a wrong pinned count, which
 * would otherwise index past the bodies or correct a body the world holds. */
static void validate_bodies(void **state)
{
    (void)state;
    pbd_scene s = {0};
    pbd_error err = {0};
    assert_int_equal(pbd_scene_builtin("@boxes-2x8", &s, &err), PBD_OK);
    s.model.body[9] = 2;
    assert_int_equal(pbd_model_validate(&s.model, &err), PBD_ERR_MODEL);
    expect(strcmp(err.message, "particle 9: body 2 (expected 1, the body whose range [8, 16) "
                               "holds it)") == 0,
           "%s", err.message);
    s.model.body[9] = 1;
    s.model.x[3].w = 0.0f;
    assert_int_equal(pbd_model_validate(&s.model, &err), PBD_ERR_MODEL);
    expect(strcmp(err.message, "body 0: 0 pinned particles recorded, 1 found (inverse mass 0)") ==
               0,
           "%s", err.message);
    s.model.bodies[0].pinned = 1;
    assert_int_equal(pbd_model_validate(&s.model, &err), PBD_OK);
    pbd_scene_free(&s);
}

/* A model built by hand is checked before anything trusts its counts: a negative count, a
 * missing array, a body range past the particles, a mass its inverse mass disagrees with, a
 * flag out of its range, a rest length beyond the coordinates. Each is one line, and the
 * model is left as it was (the check only reads). */
static void validate_by_hand(void **state)
{
    (void)state;
    pbd_scene s = {0};
    pbd_error err = {0};
    assert_int_equal(pbd_scene_builtin("@boxes-2x8", &s, &err), PBD_OK);
    pbd_model *m = &s.model;
    struct {
        int *field, value;
        const char *want;
    } counts[] = {
        {&m->num_colliders, -1, "-1 colliders (expected a count >= 0 and its array)"},
        {&m->num_distance, -3, "-3 distance constraints (expected a count >= 0 and its array)"},
        {&m->num_triangles, -1, "-1 triangles (expected a count >= 0 and its array)"},
        {&m->num_attachment, 2,
         "2 attachment constraints but no array (expected a count >= 0 "
         "and its array)"},
        {&m->bodies[1].count, 1 << 30,
         "body 1: first 8, count 1073741824 (expected first = 8, "
         "the end of the previous body, and a count in [1, 8])"},
        {&m->bodies[1].first, -2147483647, "body 1: first -2147483647, count 8"},
        {&m->bodies[0].momentum, 7, "body 0: momentum 7 (expected 0 or 1)"},
    };
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; ++k) {
        int kept = *counts[k].field;
        *counts[k].field = counts[k].value;
        assert_int_equal(pbd_model_validate(m, &err), PBD_ERR_MODEL);
        expect(strncmp(err.message, counts[k].want, strlen(counts[k].want)) == 0, "%s",
               err.message);
        *counts[k].field = kept;
    }
    /* the solver, too, refuses before it allocates by a negative count */
    pbd_solver *sv = NULL;
    pbd_solver_desc cpu = {.backend = PBD_BACKEND_CPU};
    pbd_solver_desc device = {.backend = PBD_BACKEND_CL};
    m->num_colliders = -1;
    assert_int_equal(pbd_solver_create(m, &s.config, &cpu, &sv, &err), PBD_ERR_MODEL);
    assert_null(sv);
    assert_int_equal(pbd_solver_create(m, &s.config, &device, &sv, &err), PBD_ERR_MODEL);
    assert_null(sv);
    m->num_colliders = 0;
    pbd_body *bodies = m->bodies; /* before the device's memory estimate reads them */
    m->bodies = NULL;
    assert_int_equal(pbd_solver_create(m, &s.config, &device, &sv, &err), PBD_ERR_MODEL);
    expect(strcmp(err.message, "2 bodies but no bodies array (expected at least one)") == 0, "%s",
           err.message);
    m->bodies = bodies;
    float w = m->x[3].w, mass = m->v[3].w;
    m->x[3].w = 1000.0f; /* mass 1/8 kg, inverse mass 1000 */
    assert_int_equal(pbd_model_validate(m, &err), PBD_ERR_MODEL);
    expect(strstr(err.message, "particle 3: mass 0.125, inverse mass 1000 (expected a finite "
                               "mass > 0, and its inverse") != NULL,
           "%s", err.message);
    m->x[3].w = w;
    m->v[3].w = INFINITY;
    assert_int_equal(pbd_model_validate(m, &err), PBD_ERR_MODEL);
    expect(strstr(err.message, "particle 3: mass inf") != NULL, "%s", err.message);
    m->v[3].w = mass;
    float rest = m->distance[0].rest;
    m->distance[0].rest = 1e30f;
    assert_int_equal(pbd_model_validate(m, &err), PBD_ERR_MODEL);
    expect(strstr(err.message, "a rest length >= 0, within 2e9 m") != NULL, "%s", err.message);
    m->distance[0].rest = rest;
    assert_int_equal(pbd_model_validate(m, &err), PBD_OK);
    /* a configuration beyond the scene's bounds, and a negative frame count */
    pbd_config c = s.config;
    c.dt = 1e10f;
    assert_int_equal(pbd_solver_create(m, &c, &cpu, &sv, &err), PBD_ERR_ARGUMENT);
    expect(strstr(err.message, "dt: found 1e+10, expected a time step in (0, 10] s") != NULL, "%s",
           err.message);
    c = s.config;
    c.gravity[1] = -1e30f;
    assert_int_equal(pbd_solver_create(m, &c, &cpu, &sv, &err), PBD_ERR_ARGUMENT);
    expect(strstr(err.message, "gravity[1]: found -1e+30, expected a number in [-1e6, 1e6]") !=
               NULL,
           "%s", err.message);
    c = s.config;
    c.iterations = 2147483647;
    assert_int_equal(pbd_solver_create(m, &c, &cpu, &sv, &err), PBD_ERR_ARGUMENT);
    pbd_solver_desc sums = {.backend = PBD_BACKEND_CPU, .sums = (pbd_sum_layout)7};
    assert_int_equal(pbd_solver_create(m, &s.config, &sums, &sv, &err), PBD_ERR_ARGUMENT);
    expect(strstr(err.message, "sums: found 7, expected tree or lanes") != NULL, "%s", err.message);
    assert_int_equal(pbd_solver_create(m, &s.config, &cpu, &sv, &err), PBD_OK);
    assert_int_equal(pbd_solver_step(sv, -5, &err), PBD_ERR_ARGUMENT);
    expect(strstr(err.message, "frames: found -5, expected >= 0") != NULL, "%s", err.message);
    assert_int_equal(pbd_solver_step(sv, 1, &err), PBD_OK);
    assert_int_equal(pbd_solver_update_constraint(sv, PBD_CONSTRAINT_DISTANCE, 0, NULL, &err),
                     PBD_ERR_ARGUMENT);
    expect(strcmp(err.message, "distance constraint 0: no record") == 0, "%s", err.message);
    pbd_solver_destroy(sv);
    pbd_scene_free(&s);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(good_scenes),
    cmocka_unit_test(two_particles),
    cmocka_unit_test(bad_scenes),
    cmocka_unit_test(starts_touching_far_out),
    cmocka_unit_test(body_constraint_keys),
    cmocka_unit_test(unreadable),
    cmocka_unit_test(parse_string),
    cmocka_unit_test(tet_box),
    cmocka_unit_test(surfaces),
    cmocka_unit_test(tet_volumes),
    cmocka_unit_test(neo_hookean_moduli),
    cmocka_unit_test(cloth_tethers),
    cmocka_unit_test(rope),
    cmocka_unit_test(angular_velocity),
    cmocka_unit_test(cloth_density_and_counts),
    cmocka_unit_test(pins),
    cmocka_unit_test(particles),
    cmocka_unit_test(builtin_boxes),
    cmocka_unit_test(builtin_pile),
    cmocka_unit_test(validate_bodies),
    cmocka_unit_test(validate_by_hand),
};

PBD_TEST_MAIN("scene", tests)
