/* The projection math of kernels/pbd_shared.h against values worked out by hand. */
#include <float.h>
#include <math.h>

#include "solver/solver_impl.h"
#include "test_util.h"

#define F4(a, b, c, d) ((pbd_float4){(a), (b), (c), (d)})

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
    assert_near(-plan.type[PBD_CONSTRAINT_DISTANCE].distance[0].compliance, 1.0 - pow(0.5, 0.25),
                1e-7, "k per iteration");
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

static pbd_collider plane(float nx, float ny, float nz, float offset)
{
    return (pbd_collider){PBD_COLLIDER_PLANE, 0.0f, 0.0f, 0, F4(nx, ny, nz, offset)};
}

static void collide_planes_math(void **state)
{
    (void)state;
    pbd_collider planes[2] = {plane(0, 1, 0, 0), plane(1, 0, 0, -1)}; /* y >= 0, x >= -1 */
    pbd_float4 p = pbd_collide(F4(-3, -0.5f, 2, 1), planes, 2);
    assert_near(p.x, -1.0, 0.0, "x pushed to the wall");
    assert_near(p.y, 0.0, 0.0, "y pushed to the floor");
    assert_near(p.z, 2.0, 0.0, "z unchanged");
    p = pbd_collide(F4(-3, -0.5f, 2, 0), planes, 2);
    assert_near(p.y, -0.5, 0.0, "a pinned particle is not moved");
    p = pbd_collide(F4(0, 0.25f, 0, 1), planes, 2);
    assert_near(p.y, 0.25, 0.0, "a particle above the floor is not moved");
}

/* A particle inside a sphere moves radially onto its surface; one outside, or at the
 * centre (no direction), stays. */
static void collide_sphere_math(void **state)
{
    (void)state;
    pbd_collider s = {PBD_COLLIDER_SPHERE, 0.0f, 0.0f, 0, F4(1, 2, 3, 2)};
    pbd_float4 p = pbd_collide(F4(1, 2.5f, 3, 1), &s, 1);
    assert_near(p.y, 4.0, 1e-6, "pushed out along +y to the radius");
    assert_near(p.x, 1.0, 0.0, "x unchanged");
    p = pbd_collide(F4(1 + 0.6f, 2 + 0.8f, 3, 1), &s, 1);
    assert_near(p.x, 1.0 + 1.2, 1e-6, "radially: x");
    assert_near(p.y, 2.0 + 1.6, 1e-6, "radially: y");
    p = pbd_collide(F4(1, 5, 3, 1), &s, 1);
    assert_near(p.y, 5.0, 0.0, "outside: not moved");
    p = pbd_collide(F4(1, 2, 3, 1), &s, 1);
    assert_near(p.y, 2.0, 0.0, "the centre: not moved");
}

/* An attachment is a zero-length distance constraint to a fixed point: a hard one puts the
 * particle on its target in one projection, a compliant one moves it by
 * |C| w / (w + alpha / h^2), and with `track` its displacement is recorded. */
static void attachment_math(void **state)
{
    (void)state;
    pbd_float4 p[1] = {F4(1, 2, 2, 0.5f)}, dx[1] = {F4(0, 0, 0, 0)};
    pbd_attachment a = {0, 0.0f, 0, 0, F4(1, 2, 5, 0)};
    float lambda[1] = {7.0f};
    pbd_attachment_project(p, dx, &a, lambda, 0, 100.0f, 1, 1);
    assert_near(p[0].z, 5.0, 1e-6, "hard: on the target");
    assert_near(p[0].w, 0.5, 0.0, "the inverse mass is kept");
    assert_near(dx[0].z, 3.0, 1e-6, "the displacement is recorded");
    assert_near(lambda[0], -3.0 / 0.5, 1e-5, "multiplier from 0: -C / w");
    /* Compliance 0.01 m/N at h = 0.1 s: alpha / h^2 = 1, so w / (w + 1) = 1/3 of |C| = 3. */
    p[0] = F4(1, 2, 2, 0.5f);
    dx[0] = F4(0, 0, 0, 0);
    a.compliance = 0.01f;
    pbd_attachment_project(p, dx, &a, lambda, 0, 100.0f, 1, 0);
    assert_near(p[0].z, 3.0, 1e-6, "compliant: a third of the way");
    assert_near(dx[0].z, 0.0, 0.0, "not tracked: nothing recorded");
}

/* Signed volume of the tet of p[0..3]. */
static double tet_volume(const pbd_float4 *p)
{
    double e[3][3];
    for (int r = 0; r < 3; ++r) {
        e[r][0] = (double)p[r + 1].x - p[0].x;
        e[r][1] = (double)p[r + 1].y - p[0].y;
        e[r][2] = (double)p[r + 1].z - p[0].z;
    }
    return (e[0][0] * (e[1][1] * e[2][2] - e[1][2] * e[2][1]) +
            e[0][1] * (e[1][2] * e[2][0] - e[1][0] * e[2][2]) +
            e[0][2] * (e[1][0] * e[2][1] - e[1][1] * e[2][0])) /
           6.0;
}

/* The volume constraint: a squashed tet of unequal masses, projected hard, moves no centre of
 * mass and turns nothing (sum m dx = 0, sum m x x dx = 0, to rounding) and comes most of the
 * way back to its rest volume (the projection is linearised); PBD stiffness 0.5 takes it
 * about half way; a pinned particle stays; an inverted tet is pushed back toward its rest
 * sign; a flat one is left alone. */
static void volume_math(void **state)
{
    (void)state;
    const pbd_float4 rest[4] = {F4(0, 0, 0, 1.0f), F4(1, 0, 0, 0.5f), F4(0, 1, 0, 2.0f),
                                F4(0, 0, 1, 0.25f)};
    pbd_volume v = {0, 1, 2, 3, (float)tet_volume(rest), 0.0f, 0, 0};
    pbd_float4 p[4], dx[4];
    memcpy(p, rest, sizeof p);
    p[3].z = 0.7f; /* squashed to 70 % */
    p[1].y = 0.05f;
    pbd_float4 before[4];
    memcpy(before, p, sizeof p);
    float lambda[1] = {3.0f};
    double c0 = tet_volume(p) - v.rest;
    pbd_volume_project(p, dx, &v, lambda, 0, 100.0f, 1, 0);
    double c1 = tet_volume(p) - v.rest, lin[3] = {0, 0, 0}, ang[3] = {0, 0, 0}, scale = 0.0;
    for (int i = 0; i < 4; ++i) {
        double m = 1.0 / p[i].w, d[3] = {(double)p[i].x - before[i].x, (double)p[i].y - before[i].y,
                                         (double)p[i].z - before[i].z};
        double x[3] = {before[i].x, before[i].y, before[i].z};
        for (int k = 0; k < 3; ++k)
            lin[k] += m * d[k];
        ang[0] += m * (x[1] * d[2] - x[2] * d[1]);
        ang[1] += m * (x[2] * d[0] - x[0] * d[2]);
        ang[2] += m * (x[0] * d[1] - x[1] * d[0]);
        scale = fmax(scale, m * sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]));
    }
    print_message("C %.6g -> %.6g; sum m dx (%.3g, %.3g, %.3g), sum m x x dx (%.3g, %.3g, %.3g) "
                  "of %.3g\n",
                  c0, c1, lin[0], lin[1], lin[2], ang[0], ang[1], ang[2], scale);
    /* To the rounding of the new positions: 2 ulp of each coordinate, weighted by mass. */
    double round = 0.0;
    for (int i = 0; i < 4; ++i)
        round += 2.0 * FLT_EPSILON * (1.0 / before[i].w) * 2.0;
    for (int k = 0; k < 3; ++k) {
        assert_near(lin[k], 0.0, round, "linear momentum kept");
        assert_near(ang[k], 0.0, round, "angular momentum kept");
    }
    expect(scale > 1000.0 * round, "the correction %g is not far above rounding %g", scale, round);
    expect(fabs(c1) < 0.1 * fabs(c0), "hard: C %g -> %g", c0, c1);
    /* PBD stiffness 0.5: about half way. */
    memcpy(p, before, sizeof p);
    v.compliance = -0.5f;
    pbd_volume_project(p, dx, &v, lambda, 0, 100.0f, 1, 0);
    double half = (tet_volume(p) - v.rest) / c0;
    expect(half > 0.4 && half < 0.6, "stiffness 0.5: C kept %g of itself", half);
    /* A pinned particle stays. */
    memcpy(p, before, sizeof p);
    p[2].w = 0.0f;
    v.compliance = 0.0f;
    pbd_volume_project(p, dx, &v, lambda, 0, 100.0f, 1, 0);
    expect(p[2].x == before[2].x && p[2].y == before[2].y && p[2].z == before[2].z,
           "the pinned particle moved");
    expect(fabs(tet_volume(p) - v.rest) < 0.1 * fabs(c0), "with a pin: C %g",
           tet_volume(p) - v.rest);
    /* Inverted (d below the base): pushed back toward the rest sign. */
    memcpy(p, rest, sizeof p);
    p[3].z = -0.2f;
    double inv0 = tet_volume(p);
    pbd_volume_project(p, dx, &v, lambda, 0, 100.0f, 1, 0);
    expect(inv0 < 0.0 && tet_volume(p) > inv0 + 0.5 * (v.rest - inv0),
           "inverted: V %g -> %g, rest %g", inv0, tet_volume(p), (double)v.rest);
    /* Flat (all four in a line): no gradient, left alone. */
    pbd_float4 flat[4] = {F4(0, 0, 0, 1), F4(1, 0, 0, 1), F4(2, 0, 0, 1), F4(3, 0, 0, 1)};
    memcpy(p, flat, sizeof p);
    pbd_volume_project(p, dx, &v, lambda, 0, 100.0f, 1, 0);
    expect(memcmp(p, flat, sizeof p) == 0, "a flat tet moved");
}

/* A tether acts only when stretched: a free particle 3 m from its pinned anchor with a rest
 * of 2 m comes back to 2 m (hard), one at 1.5 m is left where it is; between two free
 * particles of masses 1 and 3 the correction moves no centre of mass. */
static void tether_math(void **state)
{
    (void)state;
    pbd_float4 p[2] = {F4(3, 0, 0, 1.0f), F4(0, 0, 0, 0.0f)}, dx[2];
    pbd_tether t = {0, 1, 2.0f, 0.0f};
    float lambda[1] = {5.0f};
    pbd_tether_project(p, dx, &t, lambda, 0, 100.0f, 1, 0);
    assert_near(p[0].x, 2.0, 1e-6, "stretched: back to the longest length");
    assert_near(p[1].x, 0.0, 0.0, "the pinned anchor stays");
    expect(lambda[0] < 0.0f, "multiplier %g, expected < 0 (a pull)", (double)lambda[0]);
    p[0] = F4(1.5f, 0, 0, 1.0f);
    lambda[0] = 0.0f;
    pbd_tether_project(p, dx, &t, lambda, 0, 100.0f, 1, 0);
    expect(p[0].x == 1.5f && lambda[0] == 0.0f, "slack: moved to %g, multiplier %g", (double)p[0].x,
           (double)lambda[0]);
    pbd_float4 q[2] = {F4(0, 0, 0, 1.0f), F4(0, 4, 0, 1.0f / 3.0f)};
    pbd_tether_project(q, dx, &t, lambda, 0, 100.0f, 1, 0);
    double len = (double)q[1].y - q[0].y, moment = 1.0 * q[0].y + 3.0 * ((double)q[1].y - 4.0);
    assert_near(len, 2.0, 1e-6, "free pair: at the longest length");
    assert_near(moment, 0.0, 1e-6, "free pair: sum m dx = 0");
}

static void predict_and_update(void **state)
{
    (void)state;
    pbd_float4 v = F4(1, 0, 0, 2), z = F4(0, 0, 0, 0);
    pbd_float4 p = pbd_predict(F4(0, 0, 0, 0.5f), v, z, z, 0, 0.0f, -10.0f, 0.0f, 0.1f);
    assert_near(p.x, 0.1, 1e-7, "p = x + h (v + h g) (x)");
    assert_near(p.y, -0.1, 1e-7, "p = x + h (v + h g) (y)");
    assert_near(p.w, 0.5, 0.0, "p keeps the inverse mass");
    p = pbd_predict(F4(1, 2, 3, 0.0f), F4(0, 0, 0, 2), z, z, 0, 0.0f, -10.0f, 0.0f, 0.1f);
    assert_near(p.y, 2.0, 0.0, "gravity does not move a pinned particle");
    pbd_float4 u =
        pbd_update_velocity(F4(1, 1, 1, 1), F4(1.5f, 1, 0.5f, 1), z, 0, 3.0f, 10.0f, 0.0f);
    assert_near(u.x, 5.0, 1e-6, "v = (p - x) / h");
    assert_near(u.z, -5.0, 1e-6, "v = (p - x) / h");
    assert_near(u.w, 3.0, 0.0, "v.w stays the mass");
    u = pbd_update_velocity(F4(1, 1, 1, 1), F4(1.5f, 1, 0.5f, 1), z, 0, 3.0f, 10.0f, 0.1f);
    assert_near(u.x, 4.5, 1e-6, "point damping: v *= 1 - k");
}

/* BDF2 is exact for constant acceleration: from x(t) = t^2 / 2 sampled at t = 0 and h, the
 * prediction with g = 1 lands on x(2h) and the update recovers v(2h) = 2h. */
static void bdf2_constant_acceleration(void **state)
{
    (void)state;
    const float h = 0.1f;
    pbd_float4 x0 = F4(0, 0, 0, 1), v0 = F4(0, 0, 0, 1);
    pbd_float4 x1 = F4(0.5f * h * h, 0, 0, 1), v1 = F4(h, 0, 0, 1);
    pbd_float4 p = pbd_predict(x1, v1, x0, v0, 1, 1.0f, 0.0f, 0.0f, h);
    /* BDF2 on x'' = 1 gives x = 4/3 x1 - 1/3 x0 + 2/3 h (4/3 v1 - 1/3 v0 + 2/3 h) = 2 h^2,
     * the exact 2 h^2 = (2h)^2 / 2. */
    assert_near(p.x, 2.0 * h * h, 1e-7, "BDF2 prediction");
    pbd_float4 v = pbd_update_velocity(x1, p, x0, 1, 1.0f, 1.0f / h, 0.0f);
    assert_near(v.x, 2.0 * h, 1e-6, "BDF2 velocity");
}
/* Jacobi gather: each slot's correction from its gain and both ends' positions, summed in row
 * order, times omega / n, then planes. */
static void gather_average(void **state)
{
    (void)state;
    /* Particle 0 is end a of constraint 0 (to particle 1) and end b of constraint 1 (from
     * particle 2); constraint 2 is not in its row. */
    pbd_float4 p[3] = {F4(0, 0, 0, 1), F4(2, 0, 0, 1), F4(0, 3, 0, 0.5f)};
    float gain[3] = {0.25f, -0.5f, 99.0f};
    int slots[2] = {0, 3}, other[2] = {1, 2};
    pbd_collider floor = plane(0, 1, 0, -100);
    /* a: 1 * 0.25 * (0 - 2, 0, 0) = (-0.5, 0, 0); b: -1 * -0.5 * (0, 3 - 0, 0) = (0, 1.5, 0);
     * their sum times 1.5 / 2. */
    pbd_float4 q = pbd_gather(p, 0, gain, slots, other, 0, 2, 1.5f);
    assert_near(q.x, -0.375, 0.0, "x");
    assert_near(q.y, 1.125, 0.0, "y");
    assert_near(q.z, 0.0, 0.0, "z");
    assert_near(q.w, 1.0, 0.0, "the inverse mass is kept");
    /* The same corrections as pbd_project_distance writes for the constraint's two ends. */
    pbd_float4 da, db;
    float dl, g = pbd_distance_gain4(p[0], p[1], 1.0f, 0.0f, 0.0f, 100.0f, &dl);
    pbd_project_distance(p[0], p[1], 1.0f, 0.0f, 0.0f, 100.0f, &da, &db, &dl);
    gain[0] = g;
    q = pbd_gather(p, 0, gain, slots, other, 0, 1, 1.0f);
    assert_near(q.x, da.x, 0.0, "end a as projected");
    int slot_b = 1, other_b = 0;
    q = pbd_gather(p, 1, gain, &slot_b, &other_b, 0, 1, 1.0f);
    assert_near(q.x, p[1].x + db.x, 0.0, "end b as projected");
    p[0].y = -200.0f;
    q = pbd_gather(p, 0, gain, slots, other, 0, 0, 1.0f);
    assert_near(q.y, -200.0, 0.0, "no constraints: unchanged");
    pbd_float4 dx = pbd_add_displacement(F4(1, 0, 0, 0), q, pbd_collide(q, &floor, 1));
    assert_near(dx.y, 100.0, 0.0, "the collision's displacement is recorded");
    assert_near(dx.x, 1.0, 0.0, "and added to what was there");
}

/* One particle's sums: m, m r, m v, m r x v, m v.v / 2, m r r^T, J, r x J. */
static void particle_sums(void **state)
{
    (void)state;
    double s[PBD_SUM_COUNT];
    /* m = 2 at r = (1, 0, 0) from the reference, v = (0, 3, 0); collision dx = (0, 0, 0.5)
     * over h = 0.5: J = m dx / h = (0, 0, 2). */
    pbd_particle_sums(F4(2, 0, 0, 0.5f), F4(0, 3, 0, 2), F4(0, 0, 0.5f, 0), F4(1, 0, 0, 0), 0.25f,
                      1, 2.0f, s);
    assert_near(s[PBD_SUM_M], 2.0, 0.0, "m");
    assert_near(s[PBD_SUM_MX], 2.0, 0.0, "m r.x");
    assert_near(s[PBD_SUM_P + 1], 6.0, 0.0, "p.y");
    assert_near(s[PBD_SUM_XCP + 2], 6.0, 0.0, "(r x p).z");
    assert_near(s[PBD_SUM_KE], 9.0, 0.0, "kinetic energy");
    assert_near(s[PBD_SUM_XX], 2.0, 0.0, "m r.x r.x");
    assert_near(s[PBD_SUM_J + 1], 0.0, 0.0, "J.y");
    assert_near(s[PBD_SUM_J + 2], 2.0, 0.0, "J.z (collision)");
    assert_near(s[PBD_SUM_XCJ + 1], -2.0, 0.0, "(r x J).y");
    assert_near(s[PBD_SUM_XX + 3] + s[PBD_SUM_XX + 1], 0.0, 0.0, "m r.y r.y, m r.x r.y");
    assert_near(s[PBD_SUM_ERR], 0.25, 0.0, "error");
    /* Outside statistics, no kinetic energy or error is taken. */
    pbd_particle_sums(F4(2, 0, 0, 0.5f), F4(0, 3, 0, 2), F4(0, 0, 0, 0), F4(1, 0, 0, 0), 0.25f, 0,
                      2.0f, s);
    assert_near(s[PBD_SUM_KE] + s[PBD_SUM_ERR], 0.0, 0.0, "no statistics");
}

/* The pseudo-inverse: the inverse for a full-rank tensor, and for a singular one (a line of
 * points along x) the least-norm solution with no component along the null axis. */
static void pseudo_inverse(void **state)
{
    (void)state;
    double a[6] = {4, 1, 0, 3, 0, 2}; /* [[4,1,0],[1,3,0],[0,0,2]] */
    double b[3] = {1, 2, 3}, x[3];
    pbd_sym3_pinv_apply(a, b, x);
    double r0 = 4 * x[0] + 1 * x[1] - 1, r1 = 1 * x[0] + 3 * x[1] - 2, r2 = 2 * x[2] - 3;
    assert_near(fabs(r0) + fabs(r1) + fabs(r2), 0.0, 1e-12, "A x = b");
    double line[6] = {0, 0, 0, 5, 0, 5}; /* inertia of points on the x axis */
    double bl[3] = {7, 10, -5};
    pbd_sym3_pinv_apply(line, bl, x);
    assert_near(x[0], 0.0, 0.0, "no rotation about the line");
    assert_near(x[1], 2.0, 1e-12, "w.y");
    assert_near(x[2], -1.0, 1e-12, "w.z");
    double zero[6] = {0, 0, 0, 0, 0, 0};
    pbd_sym3_pinv_apply(zero, bl, x);
    assert_true(x[0] == 0.0 && x[1] == 0.0 && x[2] == 0.0);
    /* A rotated full-rank tensor (eigenvalues 1, 2, 3 in another basis). */
    double rot[6] = {2, 0.5, 0.5, 2, -0.5, 2}; /* symmetric, positive definite */
    pbd_sym3_pinv_apply(rot, b, x);
    double y0 = 2 * x[0] + 0.5 * x[1] + 0.5 * x[2], y1 = 0.5 * x[0] + 2 * x[1] - 0.5 * x[2];
    double y2 = 0.5 * x[0] - 0.5 * x[1] + 2 * x[2];
    assert_near(fabs(y0 - 1) + fabs(y1 - 2) + fabs(y2 - 3), 0.0, 1e-12, "rotated A x = b");
}

/* Section 3.2 after the PBD step: particles at +-(1, 1)/sqrt(2) with velocities
 * +-(1/sqrt(2) - 1, 1/sqrt(2)); tracked P_r = 0, L_r = (0, 0, 2). The correction restores
 * |L| = 2 exactly and leaves P = 0. */
static void body_solve_two_particles(void **state)
{
    (void)state;
    double q = 1.0 / sqrt(2.0);
    float xs[2][3] = {{(float)q, (float)q, 0}, {(float)-q, (float)-q, 0}};
    float vs[2][3] = {{(float)(q - 1), (float)q, 0}, {(float)(1 - q), (float)-q, 0}};
    double acc[PBD_SUM_COUNT] = {0}, s[PBD_SUM_COUNT], out[PBD_OUT_COUNT];
    pbd_float4 ref = F4(0.1f, -0.2f, 0, 0); /* any reference point */
    for (int i = 0; i < 2; ++i) {
        pbd_particle_sums(F4(xs[i][0], xs[i][1], xs[i][2], 1), F4(vs[i][0], vs[i][1], vs[i][2], 1),
                          F4(0, 0, 0, 0), ref, 0.0f, 1, 1.0f, s);
        pbd_sums_add(acc, s);
    }
    double track[6] = {0, 0, 0, 0, 0, 2};
    pbd_body_solve(acc, ref, track, PBD_BODY_MOMENTUM, PBD_SOLVE_STEP, 0, 0, 0, 1, out);
    assert_near(out[PBD_OUT_COM] + out[PBD_OUT_COM + 1], 0.0, 1e-7, "com at the origin");
    assert_near(out[PBD_OUT_L + 2], sqrt(2.0), 1e-6, "L_pbd = sqrt(2)");
    /* I about z is 2 (two unit masses at distance 1): w_cor = (2 - sqrt 2) / 2. */
    assert_near(out[PBD_OUT_WCOR + 2], (2.0 - sqrt(2.0)) / 2.0, 1e-6, "w_cor.z");
    assert_near(fabs(out[PBD_OUT_WCOR]) + fabs(out[PBD_OUT_WCOR + 1]), 0.0, 1e-6, "w_cor xy");
    assert_near(fabs(out[PBD_OUT_VCOR]) + fabs(out[PBD_OUT_VCOR + 1]), 0.0, 1e-7, "v_cor = 0");
    /* Applying it gives L = 2 and P = 0. */
    double l = 0.0, p[2] = {0, 0};
    pbd_float4 com = F4((float)out[PBD_OUT_COM], (float)out[PBD_OUT_COM + 1], 0, 0);
    pbd_float4 w = F4(0, 0, (float)out[PBD_OUT_WCOR + 2], 0), z = F4(0, 0, 0, 0);
    for (int i = 0; i < 2; ++i) {
        pbd_float4 x = F4(xs[i][0], xs[i][1], 0, 1);
        pbd_float4 rec[PBD_APPLY_COUNT] = {com, z, w, z, z};
        pbd_float4 v = pbd_apply_rigid(x, F4(vs[i][0], vs[i][1], 0, 1), rec, 0.0f);
        l += (double)x.x * v.y - (double)x.y * v.x;
        p[0] += v.x;
        p[1] += v.y;
    }
    assert_near(l, 2.0, 1e-6, "|L| restored");
    assert_near(fabs(p[0]) + fabs(p[1]), 0.0, 1e-6, "P = 0");
    /* Without the flag (or in statistics mode) there is no correction. */
    pbd_body_solve(acc, ref, track, 0, PBD_SOLVE_STEP, 0, 0, 0, 1, out);
    assert_near(out[PBD_OUT_WCOR + 2], 0.0, 0.0, "no correction for an opted-out body");
}

/* Rigid-preserving damping (Müller 2007 sec. 3.5) removes deformation velocity only: the
 * damped velocities keep the body's P and L. */
static void rigid_damping_keeps_momentum(void **state)
{
    (void)state;
    pbd_float4 x[3] = {F4(1, 0, 0, 1), F4(-1, 0.5f, 0, 1), F4(0, -0.5f, 1, 1)};
    pbd_float4 v[3] = {F4(0, 1, 0, 1), F4(0.3f, -1, 0.2f, 1), F4(-0.1f, 0, 0.5f, 1)};
    double acc[PBD_SUM_COUNT] = {0}, s[PBD_SUM_COUNT], out[PBD_OUT_COUNT];
    pbd_float4 z = F4(0, 0, 0, 0);
    for (int i = 0; i < 3; ++i) {
        pbd_particle_sums(x[i], v[i], z, z, 0.0f, 1, 1.0f, s);
        pbd_sums_add(acc, s);
    }
    double track[6];
    pbd_body_solve(acc, z, track, 0, PBD_SOLVE_INIT, 0, 0, 0, 1, out);
    pbd_float4 com =
        F4((float)out[PBD_OUT_COM], (float)out[PBD_OUT_COM + 1], (float)out[PBD_OUT_COM + 2], 0);
    pbd_float4 vr =
        F4((float)out[PBD_OUT_VRIG], (float)out[PBD_OUT_VRIG + 1], (float)out[PBD_OUT_VRIG + 2], 0);
    pbd_float4 wr =
        F4((float)out[PBD_OUT_WRIG], (float)out[PBD_OUT_WRIG + 1], (float)out[PBD_OUT_WRIG + 2], 0);
    double acc2[PBD_SUM_COUNT] = {0}, ke0 = out[PBD_OUT_KE];
    for (int i = 0; i < 3; ++i) {
        pbd_float4 rec[PBD_APPLY_COUNT] = {com, z, z, vr, wr};
        pbd_float4 vd = pbd_apply_rigid(x[i], v[i], rec, 0.5f);
        pbd_particle_sums(x[i], vd, z, z, 0.0f, 1, 1.0f, s);
        pbd_sums_add(acc2, s);
    }
    for (int k = 0; k < 3; ++k) {
        assert_near(acc2[PBD_SUM_P + k], acc[PBD_SUM_P + k], 1e-6, "P kept");
        assert_near(acc2[PBD_SUM_XCP + k], acc[PBD_SUM_XCP + k], 1e-6, "L kept");
    }
    assert_true(acc2[PBD_SUM_KE] < ke0 - 1e-3); /* and energy in the deformation is removed */
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(distance_hard_equal_masses),
    cmocka_unit_test(distance_mass_weighting),
    cmocka_unit_test(distance_pinned_end),
    cmocka_unit_test(distance_xpbd_compliance),
    cmocka_unit_test(distance_pbd_stiffness),
    cmocka_unit_test(distance_degenerate),
    cmocka_unit_test(collide_planes_math),
    cmocka_unit_test(collide_sphere_math),
    cmocka_unit_test(attachment_math),
    cmocka_unit_test(volume_math),
    cmocka_unit_test(tether_math),
    cmocka_unit_test(predict_and_update),
    cmocka_unit_test(gather_average),
    cmocka_unit_test(particle_sums),
    cmocka_unit_test(bdf2_constant_acceleration),
    cmocka_unit_test(pseudo_inverse),
    cmocka_unit_test(body_solve_two_particles),
    cmocka_unit_test(rigid_damping_keeps_momentum),
};

PBD_TEST_MAIN("math", tests)
