/* The projection math of kernels/pbd_shared.h against values worked out by hand. */
#include <math.h>

#include "solver/solver_impl.h"
#include "test_util.h"

#define F4(a, b, c, d) ((pbd_float4){(a), (b), (c), (d)})

static void assert_near(double got, double want, double tol, const char *what)
{
    if (!(fabs(got - want) <= tol)) {
        print_error("%s: got %.9g, expected %.9g (tolerance %g)\n", what, got, want, tol);
        fail();
    }
}

/* Hard constraint, equal masses: both ends move half of C along the axis. */
static void distance_hard_equal_masses(void **state)
{
    (void)state;
    pbd_float4 da, db;
    float dl;
    pbd_project_distance(F4(3, 0, 0, 1), F4(0, 0, 0, 1), 2.0f, 0.0f, 0.0f, 3600.0f, &da, &db, &dl);
    assert_near(da.x, -0.5, 1e-7, "da.x");
    assert_near(db.x, 0.5, 1e-7, "db.x");
    assert_near(da.y + da.z + db.y + db.z, 0.0, 0.0, "off-axis");
    assert_near(dl, -0.5, 1e-7, "dlambda = -C / (wa + wb)");
}

/* Inverse masses 1 and 3: the corrections split 1:3 and the mass-weighted sum is zero. */
static void distance_mass_weighting(void **state)
{
    (void)state;
    pbd_float4 da, db;
    float dl;
    pbd_project_distance(F4(0, 0, 0, 1), F4(0, 4, 0, 3), 2.0f, 0.0f, 0.0f, 1.0f, &da, &db, &dl);
    assert_near(da.y, 0.5, 1e-7, "da.y"); /* C = 2, s = -0.5, n = (0,-1,0) */
    assert_near(db.y, -1.5, 1e-7, "db.y");
    assert_near(da.y / 1.0 + db.y / 3.0, 0.0, 1e-7, "momentum of the correction");
}

/* A pinned end (inverse mass 0) does not move; the free end takes all of C. */
static void distance_pinned_end(void **state)
{
    (void)state;
    pbd_float4 da, db;
    float dl;
    pbd_project_distance(F4(0, 0, 0, 0), F4(0, 0, 3, 2), 1.0f, 0.0f, 0.0f, 1.0f, &da, &db, &dl);
    assert_near(da.z, 0.0, 0.0, "pinned da.z");
    assert_near(db.z, -2.0, 1e-7, "free db.z");
    pbd_project_distance(F4(0, 0, 0, 0), F4(0, 0, 3, 0), 1.0f, 0.0f, 0.0f, 1.0f, &da, &db, &dl);
    assert_near(fabs(da.z) + fabs(db.z) + fabs(dl), 0.0, 0.0, "both pinned");
}

/* XPBD (Macklin 2016 eq. 18): at = alpha / h^2, dlambda = (-C - at lambda) / (wsum + at). */
static void distance_xpbd_compliance(void **state)
{
    (void)state;
    pbd_float4 da, db;
    float dl;
    float alpha = 1e-3f, inv_h2 = 1e4f; /* h = 0.01 s: at = 10 */
    pbd_project_distance(F4(3, 0, 0, 1), F4(0, 0, 0, 1), 2.0f, alpha, 0.0f, inv_h2, &da, &db, &dl);
    assert_near(dl, -1.0 / 12.0, 1e-7, "dlambda, first iteration");
    assert_near(da.x, -1.0 / 12.0, 1e-7, "da.x");
    /* A second iteration continues from lambda. */
    float lambda = dl;
    pbd_project_distance(F4(3, 0, 0, 1), F4(0, 0, 0, 1), 2.0f, alpha, lambda, inv_h2, &da, &db,
                         &dl);
    assert_near(dl, (-1.0 - 10.0 * (-1.0 / 12.0)) / 12.0, 1e-7, "dlambda, with lambda");
}

/* PBD stiffness k scales the hard correction; the plan turns k into 1 - (1-k)^(1/n). */
static void distance_pbd_stiffness(void **state)
{
    (void)state;
    pbd_float4 da, db;
    float dl;
    pbd_project_distance(F4(3, 0, 0, 1), F4(0, 0, 0, 1), 2.0f, -0.25f, 0.0f, 1.0f, &da, &db, &dl);
    assert_near(da.x, -0.125, 1e-7, "da.x with k = 0.25");
    assert_near(dl, 0.0, 0.0, "PBD keeps no multiplier");

    pbd_model m = {0};
    assert_int_equal(pbd_model_add_particles(&m, 2, "pair"), 0);
    m.x[1].x = 1.0f;
    assert_int_equal(pbd_model_add_distance(&m, 0, 1, 1.0f, -0.5f), 0);
    pbd_config cfg = pbd_config_default();
    cfg.iterations = 4;
    pbd_plan plan;
    pbd_error err = {0};
    assert_int_equal(pbd_plan_build(&m, &cfg, &plan, &err), PBD_OK);
    assert_near(-plan.distance[0].compliance, 1.0 - pow(0.5, 0.25), 1e-7, "k per iteration");
    pbd_plan_free(&plan);
    pbd_model_free(&m);
}

/* Coincident particles have no direction: no correction and no NaN. */
static void distance_degenerate(void **state)
{
    (void)state;
    pbd_float4 da, db;
    float dl;
    pbd_project_distance(F4(1, 1, 1, 1), F4(1, 1, 1, 1), 1.0f, 0.0f, 0.0f, 1.0f, &da, &db, &dl);
    assert_true(da.x == 0.0f && db.x == 0.0f && dl == 0.0f);
    assert_near(pbd_distance_error(F4(0, 0, 0, 1), F4(0, 3, 4, 1), 2.0f), 3.0, 1e-7, "|C|");
}

static void collide_planes_math(void **state)
{
    (void)state;
    pbd_float4 planes[2] = {F4(0, 1, 0, 0), F4(1, 0, 0, -1)}; /* y >= 0, x >= -1 */
    pbd_float4 p = pbd_collide_planes(F4(-3, -0.5f, 2, 1), planes, 2);
    assert_near(p.x, -1.0, 0.0, "x pushed to the wall");
    assert_near(p.y, 0.0, 0.0, "y pushed to the floor");
    assert_near(p.z, 2.0, 0.0, "z unchanged");
    p = pbd_collide_planes(F4(-3, -0.5f, 2, 0), planes, 2);
    assert_near(p.y, -0.5, 0.0, "a pinned particle is not moved");
    p = pbd_collide_planes(F4(0, 0.25f, 0, 1), planes, 2);
    assert_near(p.y, 0.25, 0.0, "a particle above the floor is not moved");
}

static void predict_and_update(void **state)
{
    (void)state;
    pbd_float4 v = F4(1, 0, 0, 2), p;
    pbd_predict(F4(0, 0, 0, 0.5f), &v, &p, 0.0f, -10.0f, 0.0f, 0.1f);
    assert_near(v.y, -1.0, 1e-7, "v += h g");
    assert_near(p.x, 0.1, 1e-7, "p = x + h v (x)");
    assert_near(p.y, -0.1, 1e-7, "p = x + h v (y)");
    assert_near(p.w, 0.5, 0.0, "p keeps the inverse mass");
    assert_near(v.w, 2.0, 0.0, "v keeps the mass");
    v = F4(0, 0, 0, 2);
    pbd_predict(F4(0, 0, 0, 0.0f), &v, &p, 0.0f, -10.0f, 0.0f, 0.1f);
    assert_near(v.y + p.y, 0.0, 0.0, "gravity does not move a pinned particle");
    pbd_float4 u = pbd_update_velocity(F4(1, 1, 1, 1), F4(1.5f, 1, 0.5f, 1), 3.0f, 10.0f);
    assert_near(u.x, 5.0, 1e-6, "v = (p - x) / h");
    assert_near(u.z, -5.0, 1e-6, "v = (p - x) / h");
    assert_near(u.w, 3.0, 0.0, "v.w stays the mass");
}

/* Jacobi gather: sum of the slots in row order, times omega / n, then planes. */
static void gather_average(void **state)
{
    (void)state;
    pbd_float4 delta[4] = {F4(1, 0, 0, 0), F4(9, 9, 9, 0), F4(0, 2, 0, 0), F4(0, 0, 4, 0)};
    int slots[3] = {0, 2, 3};
    pbd_float4 plane = F4(0, 1, 0, -100);
    pbd_float4 p = pbd_gather(F4(0, 0, 0, 1), delta, slots, 0, 3, 1.5f, &plane, 1);
    assert_near(p.x, 0.5, 1e-7, "x");
    assert_near(p.y, 1.0, 1e-7, "y");
    assert_near(p.z, 2.0, 1e-7, "z");
    p = pbd_gather(F4(0, -200, 0, 1), delta, slots, 0, 0, 1.0f, &plane, 1);
    assert_near(p.y, -100.0, 0.0, "no constraints: planes only");
}

/* One particle's sums: m, m r, m v, m r x v, m v.v / 2. */
static void particle_sums(void **state)
{
    (void)state;
    double s[PBD_SUM_COUNT];
    pbd_particle_sums(F4(2, 0, 0, 0.5f), F4(0, 3, 0, 2), F4(1, 0, 0, 0), 0.25f, s);
    assert_near(s[PBD_SUM_M], 2.0, 0.0, "m");
    assert_near(s[PBD_SUM_MX], 2.0, 0.0, "m r.x");
    assert_near(s[PBD_SUM_P + 1], 6.0, 0.0, "p.y");
    assert_near(s[PBD_SUM_XCP + 2], 6.0, 0.0, "(r x p).z");
    assert_near(s[PBD_SUM_KE], 9.0, 0.0, "kinetic energy");
    assert_near(s[PBD_SUM_ERR], 0.25, 0.0, "error");
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(distance_hard_equal_masses),
    cmocka_unit_test(distance_mass_weighting),
    cmocka_unit_test(distance_pinned_end),
    cmocka_unit_test(distance_xpbd_compliance),
    cmocka_unit_test(distance_pbd_stiffness),
    cmocka_unit_test(distance_degenerate),
    cmocka_unit_test(collide_planes_math),
    cmocka_unit_test(predict_and_update),
    cmocka_unit_test(gather_average),
    cmocka_unit_test(particle_sums),
};

PBD_TEST_MAIN("math", tests, 0)
