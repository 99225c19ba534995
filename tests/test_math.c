/* The projection math of kernels/pbd_shared.h against values worked out by hand. */
#include <float.h>
#include <math.h>

#include "scene/generators.h"
#include "solver/solver_impl.h"
#include "test_util.h"

#define F4(a, b, c, d) ((pbd_float4){(a), (b), (c), (d)})
#define NO_MATERIAL    F4(-1, -1, -1, 0) /* a body with no surface of its own */

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
    assert_int_equal(pbd_plan_build(&m, &cfg, PBD_VARIANT_GPU, &plan, &err), PBD_OK);
    assert_near(-plan.type[PBD_CONSTRAINT_DISTANCE].distance[0].compliance, 1.0 - pow(0.5, 0.25),
                1e-7, "k per iteration");
    pbd_plan_free(&plan);
    pbd_model_free(&m);
}

/* pbd_collide at a substep's first push: no earlier pushes' depth. */
static pbd_float4 collide_fresh(pbd_float4 p, pbd_float4 x, const pbd_collider *colliders, int n,
                                pbd_float4 m)
{
    float pushed = 0.0f;
    return pbd_collide(p, x, colliders, n, m, &pushed);
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
    return (pbd_collider){.kind = PBD_COLLIDER_PLANE, .shape = F4(nx, ny, nz, offset)};
}

static void collide_planes_math(void **state)
{
    (void)state;
    pbd_collider planes[2] = {plane(0, 1, 0, 0), plane(1, 0, 0, -1)}; /* y >= 0, x >= -1 */
    pbd_float4 p = collide_fresh(F4(-3, -0.5f, 2, 1), F4(-3, -0.5f, 2, 1), planes, 2, NO_MATERIAL);
    assert_near(p.x, -1.0, 0.0, "x pushed to the wall");
    assert_near(p.y, 0.0, 0.0, "y pushed to the floor");
    assert_near(p.z, 2.0, 0.0, "z unchanged");
    p = collide_fresh(F4(-3, -0.5f, 2, 0), F4(-3, -0.5f, 2, 0), planes, 2, NO_MATERIAL);
    assert_near(p.y, -0.5, 0.0, "a pinned particle is not moved");
    p = collide_fresh(F4(0, 0.25f, 0, 1), F4(0, 0.25f, 0, 1), planes, 2, NO_MATERIAL);
    assert_near(p.y, 0.25, 0.0, "a particle above the floor is not moved");
}

/* A particle inside a sphere moves radially onto its surface; one outside, or at the
 * centre (no direction), stays. */
static void collide_sphere_math(void **state)
{
    (void)state;
    pbd_collider s = {.kind = PBD_COLLIDER_SPHERE, .shape = F4(1, 2, 3, 2)};
    pbd_float4 p = collide_fresh(F4(1, 2.5f, 3, 1), F4(1, 2.5f, 3, 1), &s, 1, NO_MATERIAL);
    assert_near(p.y, 4.0, 1e-6, "pushed out along +y to the radius");
    assert_near(p.x, 1.0, 0.0, "x unchanged");
    p = collide_fresh(F4(1 + 0.6f, 2 + 0.8f, 3, 1), F4(1 + 0.6f, 2 + 0.8f, 3, 1), &s, 1,
                      NO_MATERIAL);
    assert_near(p.x, 1.0 + 1.2, 1e-6, "radially: x");
    assert_near(p.y, 2.0 + 1.6, 1e-6, "radially: y");
    p = collide_fresh(F4(1, 5, 3, 1), F4(1, 5, 3, 1), &s, 1, NO_MATERIAL);
    assert_near(p.y, 5.0, 0.0, "outside: not moved");
    p = collide_fresh(F4(1, 2, 3, 1), F4(1, 2, 3, 1), &s, 1, NO_MATERIAL);
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

/* pbd_atan2f (basic operations only, the same bits everywhere) against libm's double atan2,
 * over every quadrant, the axes, the reduction's seams and a wide range of magnitudes. */
static void atan2_math(void **state)
{
    (void)state;
    double worst = 0.0;
    for (int k = 0; k <= 20000; ++k) {
        double t = -3.14159265358979 + 6.28318530717959 * k / 20000.0;
        for (int m = -3; m <= 3; m += 3) {
            double r = pow(10.0, m);
            float y = (float)(r * sin(t)), x = (float)(r * cos(t));
            double err = fabs((double)pbd_atan2f(y, x) - atan2((double)y, (double)x));
            worst = fmax(worst, err);
        }
    }
    print_message("pbd_atan2f: largest error %.3g rad\n", worst);
    expect(worst < 4e-7, "largest error %g rad", worst);
    expect(pbd_atan2f(0.0f, 0.0f) == 0.0f && pbd_atan2f(0.0f, -1.0f) == 3.1415927f &&
               pbd_atan2f(-1.0f, 0.0f) == -1.5707964f,
           "axes: %g %g %g", (double)pbd_atan2f(0.0f, 0.0f), (double)pbd_atan2f(0.0f, -1.0f),
           (double)pbd_atan2f(-1.0f, 0.0f));
}

/* The dihedral angle as pbd_dihedral_project measures it, in double. */
static double dihedral_angle(const pbd_float4 *p)
{
    double x[4][3];
    for (int i = 0; i < 4; ++i) {
        x[i][0] = p[i].x;
        x[i][1] = p[i].y;
        x[i][2] = p[i].z;
    }
    double e[3], ca[3], cb[3], db[3], da[3];
    for (int k = 0; k < 3; ++k) {
        e[k] = x[1][k] - x[0][k];
        ca[k] = x[2][k] - x[0][k];
        cb[k] = x[2][k] - x[1][k];
        db[k] = x[3][k] - x[1][k];
        da[k] = x[3][k] - x[0][k];
    }
#define CROSS(u, v, o)                                                                             \
    double o[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]}
    CROSS(ca, cb, n1);
    CROSS(db, da, n2);
    CROSS(n2, n1, s);
#undef CROSS
    double el = sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]);
    return atan2((s[0] * e[0] + s[1] * e[1] + s[2] * e[2]) / el,
                 n1[0] * n2[0] + n1[1] * n2[1] + n1[2] * n2[2]);
}

/* A pair of unit triangles on the edge (0,0,0)-(1,0,0), the opposite particles at angle
 * `fold` out of the plane each (their dihedral angle is 2 fold, up to sign). */
static void hinge(pbd_float4 *p, double fold, const float *w)
{
    p[0] = F4(0, 0, 0, w[0]);
    p[1] = F4(1, 0, 0, w[1]);
    p[2] = F4(0.5f, (float)cos(fold), (float)sin(fold), w[2]);
    p[3] = F4(0.4f, (float)-cos(fold), (float)sin(fold), w[3]);
}

/* The bending elements' record for particles 0..3 of `p` at rest (pbd_scene_add_bending_pair,
 * as the generators make them). */
static void bending_record(const pbd_float4 *p, pbd_bending kind, float compliance, void *out)
{
    pbd_model m = {0};
    assert_true(pbd_model_add_particles(&m, 4, "pair") == 0);
    memcpy(m.x, p, 4 * sizeof *p);
    assert_int_equal(pbd_scene_add_bending_pair(&m, kind, compliance, 0, 1, 2, 3), 0);
    if (kind == PBD_BENDING_DIHEDRAL) {
        assert_int_equal(m.num_dihedral, 1);
        memcpy(out, &m.dihedral[0], sizeof m.dihedral[0]);
    } else {
        assert_int_equal(m.num_isometric, 1);
        memcpy(out, &m.isometric[0], sizeof m.isometric[0]);
    }
    pbd_model_free(&m);
}

/* Dihedral bending: a flat pair at rest angles +0.5 and -0.5 rad is bent to them (the sign of
 * the gradient agrees with the angle's), a bent pair at rest 0 is flattened, a pinned
 * particle stays; PBD stiffness 0.5 takes a step about half way. */
static void dihedral_math(void **state)
{
    (void)state;
    const float w[4] = {1.0f, 0.5f, 2.0f, 0.25f};
    pbd_float4 p[4], dx[4];
    float lambda[1] = {0.0f};
    for (int sign = -1; sign <= 1; sign += 2) {
        pbd_float4 rest[4];
        hinge(rest, sign * 0.25, w);
        pbd_dihedral r;
        bending_record(rest, PBD_BENDING_DIHEDRAL, 0.0f, &r);
        assert_near(r.rest, dihedral_angle(rest), 1e-6, "the record's rest angle");
        expect(fabs(fabs(r.rest) - 0.5) < 1e-3, "rest %g, expected +-0.5", (double)r.rest);
        hinge(p, 0.0, w);
        for (int it = 0; it < 20; ++it)
            pbd_dihedral_project(p, dx, &r, lambda, 0, 100.0f, 1, 0);
        assert_near(dihedral_angle(p), r.rest, 1e-4, "bent to its rest angle");
    }
    pbd_dihedral flat;
    hinge(p, 0.0, w);
    bending_record(p, PBD_BENDING_DIHEDRAL, 0.0f, &flat);
    assert_near(flat.rest, 0.0, 1e-7, "a flat pair's rest angle");
    float wp[4] = {1.0f, 0.5f, 0.0f, 0.25f}; /* c pinned */
    hinge(p, 0.4, wp);
    pbd_float4 c0 = p[2];
    for (int it = 0; it < 20; ++it)
        pbd_dihedral_project(p, dx, &flat, lambda, 0, 100.0f, 1, 0);
    assert_near(dihedral_angle(p), 0.0, 1e-4, "flattened with a pin");
    expect(p[2].x == c0.x && p[2].y == c0.y && p[2].z == c0.z, "the pinned particle moved");
    hinge(p, 0.3, w);
    flat.compliance = -0.5f;
    double before = dihedral_angle(p);
    pbd_dihedral_project(p, dx, &flat, lambda, 0, 100.0f, 1, 0);
    double ratio = dihedral_angle(p) / before;
    expect(ratio > 0.4 && ratio < 0.6, "PBD stiffness 0.5: angle %g -> %g", before,
           dihedral_angle(p));
}

/* |v| of an isometric element on p. */
static double curvature(const pbd_isometric *r, const pbd_float4 *p)
{
    double v[3] = {0, 0, 0};
    for (int i = 0; i < 4; ++i) {
        v[0] += r->k[i] * (double)p[i].x;
        v[1] += r->k[i] * (double)p[i].y;
        v[2] += r->k[i] * (double)p[i].z;
    }
    return sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
}

/* Isometric bending: the weights of a flat pair sum to zero and give v = 0 there (the
 * cotangent Laplacian of a plane); a bent pair is flattened; a flat one does not move. */
static void isometric_math(void **state)
{
    (void)state;
    const float w[4] = {1.0f, 0.5f, 2.0f, 0.25f};
    pbd_float4 p[4], dx[4];
    float lambda[1] = {0.0f};
    hinge(p, 0.0, w);
    pbd_isometric r;
    bending_record(p, PBD_BENDING_ISOMETRIC, 0.0f, &r);
    double sum = (double)r.k[0] + r.k[1] + r.k[2] + r.k[3];
    assert_near(sum, 0.0, 1e-6, "the weights sum to zero");
    assert_near(curvature(&r, p), 0.0, 1e-6, "v of the flat pair");
    pbd_float4 flat[4];
    memcpy(flat, p, sizeof flat);
    pbd_isometric_project(p, dx, &r, lambda, 0, 100.0f, 1, 0);
    for (int i = 0; i < 4; ++i)
        expect(fabs(p[i].x - flat[i].x) + fabs(p[i].y - flat[i].y) + fabs(p[i].z - flat[i].z) <
                   1e-6,
               "flat particle %d moved", i);
    hinge(p, 0.35, w);
    double v0 = curvature(&r, p);
    for (int it = 0; it < 20; ++it)
        pbd_isometric_project(p, dx, &r, lambda, 0, 100.0f, 1, 0);
    double v1 = curvature(&r, p);
    print_message("isometric: |v| %.4g -> %.4g in 20 projections\n", v0, v1);
    expect(v0 > 0.5 && v1 < 1e-3 * v0, "|v| %g -> %g", v0, v1);
    assert_near(dihedral_angle(p), 0.0, 2e-3, "flattened");
}

/* A small deterministic generator for the random samples. */
static double uniform(unsigned long long *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 9007199254740992.0;
}

/* Projects constraint `type` of particles 0..3 of p in place (hard, or PBD 0.5 with `pbd`),
 * with its record made at the rest shape `rest`. */
static void project_sample(int type, const pbd_float4 *rest, pbd_float4 *p, int pbd)
{
    pbd_float4 dx[4];
    float lambda[1] = {0.0f}, compliance = pbd ? -0.5f : 0.0f;
    double d[3] = {(double)rest[1].x - rest[0].x, (double)rest[1].y - rest[0].y,
                   (double)rest[1].z - rest[0].z};
    float len = (float)sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    switch (type) {
    case PBD_CONSTRAINT_DISTANCE: {
        pbd_distance r = {0, 1, len, compliance};
        pbd_distance_project(p, dx, &r, lambda, 0, 100.0f, 1, 0);
        break;
    }
    case PBD_CONSTRAINT_ATTACHMENT: { /* particle 0 to the point rest[1] */
        pbd_attachment r = {0, compliance, 0, 0, F4(rest[1].x, rest[1].y, rest[1].z, 0.0f)};
        pbd_attachment_project(p, dx, &r, lambda, 0, 100.0f, 1, 0);
        break;
    }
    case PBD_CONSTRAINT_TETHER: {
        pbd_tether r = {0, 1, 0.5f * len, compliance};
        pbd_tether_project(p, dx, &r, lambda, 0, 100.0f, 1, 0);
        break;
    }
    case PBD_CONSTRAINT_VOLUME: {
        pbd_volume r = {0, 1, 2, 3, (float)tet_volume(rest), compliance, 0, 0};
        pbd_volume_project(p, dx, &r, lambda, 0, 100.0f, 1, 0);
        break;
    }
    case PBD_CONSTRAINT_DIHEDRAL: {
        pbd_dihedral r;
        bending_record(rest, PBD_BENDING_DIHEDRAL, compliance, &r);
        pbd_dihedral_project(p, dx, &r, lambda, 0, 100.0f, 1, 0);
        break;
    }
    case PBD_CONSTRAINT_ISOMETRIC: {
        pbd_isometric r;
        bending_record(rest, PBD_BENDING_ISOMETRIC, compliance, &r);
        pbd_isometric_project(p, dx, &r, lambda, 0, 100.0f, 1, 0);
        break;
    }
    case PBD_CONSTRAINT_NEO_HOOKEAN: {
        pbd_model m = {0};
        assert_true(pbd_model_add_particles(&m, 4, "tet") == 0);
        memcpy(m.x, rest, 4 * sizeof *rest);
        const int q[4] = {0, 1, 2, 3};
        assert_int_equal(pbd_scene_add_neo_hookean(&m, q, 1000.0, 3000.0, NULL), PBD_OK);
        float lam[2] = {0.0f, 0.0f};
        pbd_neo_hookean_project(p, dx, m.neo_hookean, lam, 0, pbd ? 60.0f : 3600.0f, 1, 0);
        pbd_model_free(&m);
        break;
    }
    default:
        fail_msg("no sample for constraint type %d", type);
    }
}

/* The momentum a correction carries: of n particles moved from `before` to `after` (w =
 * inverse mass), sum m dx into lin and the moment sum m r x dx about the initial centre of
 * mass into ang; *rmax gets the largest |r|. */
static void correction_sums(const pbd_float4 *before, const pbd_float4 *after, int n, double lin[3],
                            double ang[3], double *rmax)
{
    double mass = 0.0, com[3] = {0, 0, 0};
    for (int i = 0; i < n; ++i) {
        double m = 1.0 / before[i].w;
        mass += m;
        com[0] += m * before[i].x;
        com[1] += m * before[i].y;
        com[2] += m * before[i].z;
    }
    for (int k = 0; k < 3; ++k)
        lin[k] = ang[k] = 0.0;
    *rmax = 0.0;
    for (int i = 0; i < n; ++i) {
        double m = 1.0 / before[i].w;
        double d[3] = {(double)after[i].x - before[i].x, (double)after[i].y - before[i].y,
                       (double)after[i].z - before[i].z};
        double r[3] = {before[i].x - com[0] / mass, before[i].y - com[1] / mass,
                       before[i].z - com[2] / mass};
        for (int k = 0; k < 3; ++k)
            lin[k] += m * d[k];
        ang[0] += m * (r[1] * d[2] - r[2] * d[1]);
        ang[1] += m * (r[2] * d[0] - r[0] * d[2]);
        ang[2] += m * (r[0] * d[1] - r[1] * d[0]);
        *rmax = fmax(*rmax, sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]));
    }
}

/* Every constraint type between particles: on random samples (shapes, masses, a random
 * deformation) a projection keeps linear momentum (sum m dx = 0) and angular momentum
 * (sum m x x dx = 0 about the centre of mass), to float rounding of the correction, and it
 * rotates with the body: the corrections of a rotated and moved sample are the rotated
 * corrections, to 1e-4 of their size (measured: 1.4e-5 at worst, the rotated sample being
 * rounded to float). The attachment, where the world pulls, is exempt from the momenta; it
 * rotates with its target. */
static void projection_invariants(void **state)
{
    (void)state;
    unsigned long long seed = 12345;
    int checked = 0;
    for (int type = 0; type < PBD_CONSTRAINT_COUNT; ++type) {
        int world = pbd_constraint_types[type].world;
        double worst_lin = 0.0, worst_ang = 0.0, worst_rot = 0.0;
        for (int sample = 0; sample < 200; ++sample) {
            pbd_float4 rest[4], p[4], q[4];
            for (int i = 0; i < 4; ++i) {
                float w = (float)(0.5 + 1.5 * uniform(&seed));
                rest[i] = F4((float)(2 * uniform(&seed) - 1), (float)(2 * uniform(&seed) - 1),
                             (float)(2 * uniform(&seed) - 1), w);
            }
            if (type == PBD_CONSTRAINT_DIHEDRAL || type == PBD_CONSTRAINT_ISOMETRIC) {
                /* a hinge: c and d on opposite sides of the edge a-b, nearly in a plane */
                rest[0] = F4(0, 0, 0, rest[0].w);
                rest[1] = F4(1, 0, 0, rest[1].w);
                rest[2].y = 0.3f + fabsf(rest[2].y);
                rest[3].y = -0.3f - fabsf(rest[3].y);
                rest[2].z *= 0.3f;
                rest[3].z *= 0.3f;
            }
            for (int i = 0; i < 4; ++i)
                p[i] = F4(rest[i].x + (float)(0.4 * uniform(&seed) - 0.2),
                          rest[i].y + (float)(0.4 * uniform(&seed) - 0.2),
                          rest[i].z + (float)(0.4 * uniform(&seed) - 0.2), rest[i].w);
            /* a random rotation (unit quaternion) and shift */
            double qw = uniform(&seed) - 0.5, qx = uniform(&seed) - 0.5, qy = uniform(&seed) - 0.5,
                   qz = uniform(&seed) - 0.5;
            double qn = sqrt(qw * qw + qx * qx + qy * qy + qz * qz);
            qw /= qn, qx /= qn, qy /= qn, qz /= qn;
            double R[3][3] = {
                {1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), 2 * (qx * qz + qy * qw)},
                {2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw)},
                {2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy)}};
            double shift[3] = {uniform(&seed) - 0.5, uniform(&seed) - 0.5, uniform(&seed) - 0.5};
            pbd_float4 rest_r[4];
            for (int i = 0; i < 4; ++i) {
                const pbd_float4 *src[2] = {&p[i], &rest[i]};
                pbd_float4 *dst[2] = {&q[i], &rest_r[i]};
                for (int k = 0; k < 2; ++k) {
                    double x[3] = {src[k]->x, src[k]->y, src[k]->z};
                    *dst[k] =
                        F4((float)(R[0][0] * x[0] + R[0][1] * x[1] + R[0][2] * x[2] + shift[0]),
                           (float)(R[1][0] * x[0] + R[1][1] * x[1] + R[1][2] * x[2] + shift[1]),
                           (float)(R[2][0] * x[0] + R[2][1] * x[1] + R[2][2] * x[2] + shift[2]),
                           src[k]->w);
                }
            }
            pbd_float4 before[4], before_r[4];
            memcpy(before, p, sizeof p);
            memcpy(before_r, q, sizeof q);
            int pbd = sample & 1;
            project_sample(type, rest, p, pbd);
            project_sample(type, rest_r, q, pbd);
            double lin[3], ang[3], rmax, scale = 0.0, rot = 0.0;
            correction_sums(before, p, 4, lin, ang, &rmax);
            for (int i = 0; i < 4; ++i) {
                double m = 1.0 / before[i].w;
                double d[3] = {(double)p[i].x - before[i].x, (double)p[i].y - before[i].y,
                               (double)p[i].z - before[i].z};
                scale = fmax(scale, m * sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]));
                double dr[3] = {(double)q[i].x - before_r[i].x, (double)q[i].y - before_r[i].y,
                                (double)q[i].z - before_r[i].z};
                for (int k = 0; k < 3; ++k) {
                    double rd = R[k][0] * d[0] + R[k][1] * d[1] + R[k][2] * d[2];
                    rot = fmax(rot, fabs(rd - dr[k]));
                }
            }
            if (scale < 1e-3)
                continue; /* nothing to project (a slack tether) */
            ++checked;
            /* The new positions are rounded to float: each coordinate by up to an ulp of its
             * size, weighted by mass, so the sums can be off by that much and no more. */
            double round = 0.0;
            for (int i = 0; i < 4; ++i) {
                double ext = fmax(fabs(before[i].x), fmax(fabs(before[i].y), fabs(before[i].z)));
                ext = fmax(ext, fmax(fabs(p[i].x), fmax(fabs(p[i].y), fabs(p[i].z))));
                round += 2.0 * FLT_EPSILON * (ext + 1.0) / before[i].w;
            }
            double l = sqrt(lin[0] * lin[0] + lin[1] * lin[1] + lin[2] * lin[2]) / round;
            double a = sqrt(ang[0] * ang[0] + ang[1] * ang[1] + ang[2] * ang[2]) / (round * rmax);
            worst_lin = world ? 0.0 : fmax(worst_lin, l);
            worst_ang = world ? 0.0 : fmax(worst_ang, a);
            /* the rotated sample is itself rounded to float: allow that, relative and absolute */
            worst_rot = fmax(worst_rot, rot / (1e-4 * scale + 1e-6));
        }
        if (world)
            print_message("%-10s (the world pulls: no momenta to keep); rotated corrections off "
                          "by %.2f of the allowance\n",
                          pbd_constraint_types[type].name, worst_rot);
        else
            print_message("%-10s in units of float rounding: |sum m dx| %.2f, |sum m r x dx| "
                          "%.2f; rotated corrections off by %.2f of the allowance\n",
                          pbd_constraint_types[type].name, worst_lin, worst_ang, worst_rot);
        expect(worst_lin <= 1.0, "%s: linear momentum off by %g roundings",
               pbd_constraint_types[type].name, worst_lin);
        expect(worst_ang <= 1.0, "%s: angular momentum off by %g roundings",
               pbd_constraint_types[type].name, worst_ang);
        expect(worst_rot <= 1.0, "%s: not invariant under rotation (%g of the allowance)",
               pbd_constraint_types[type].name, worst_rot);
    }
    expect(checked > 1000, "only %d samples had a correction", checked);
}

/* A random unit quaternion's rotation matrix. */
static void random_rotation(unsigned long long *seed, double R[3][3])
{
    double qw = uniform(seed) - 0.5, qx = uniform(seed) - 0.5, qy = uniform(seed) - 0.5,
           qz = uniform(seed) - 0.5;
    double qn = sqrt(qw * qw + qx * qx + qy * qy + qz * qz);
    qw /= qn, qx /= qn, qy /= qn, qz /= qn;
    double r[3][3] = {
        {1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), 2 * (qx * qz + qy * qw)},
        {2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw)},
        {2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy)}};
    memcpy(R, r, sizeof r);
}

static pbd_float4 rotate_shift(double R[3][3], const double *t, pbd_float4 p)
{
    double x[3] = {p.x, p.y, p.z};
    return F4((float)(R[0][0] * x[0] + R[0][1] * x[1] + R[0][2] * x[2] + t[0]),
              (float)(R[1][0] * x[0] + R[1][1] * x[1] + R[1][2] * x[2] + t[1]),
              (float)(R[2][0] * x[0] + R[2][1] * x[1] + R[2][2] * x[2] + t[2]), p.w);
}

#define BODY_N 12 /* particles of a shape-matching sample; an octahedron has 6 */

/* One body constraint iteration on p (n particles, one body, one segment: the stages'
 * order), with `solves` solves first so the polar decomposition converges from goal[0].
 * pairs/offsets: the pressure CSR (NULL for shape matching alone). */
static void body_iteration(pbd_float4 *p, int n, const pbd_float4 *rest, pbd_body_constraint bc,
                           pbd_float4 *goal, const int *offsets, const int *pairs, int solves)
{
    float sums[PBD_BSUM_COUNT] = {0};
    pbd_float4 grad[BODY_N], r = p[0];
    for (int i = 0; i < n; ++i) {
        grad[i] =
            pairs ? pbd_volume_gradient(p, r, pairs, offsets[i], offsets[i + 1]) : F4(0, 0, 0, 0);
        pbd_body_constraint_sums(p[i], r, rest[i], grad[i], bc.flags, sums);
    }
    for (int k = 0; k < solves; ++k)
        pbd_body_constraint_solve(sums, bc, r, p[bc.base], goal, 3600.0f, 1);
    static const int no_set[BODY_N] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
    for (int i = 0; i < n; ++i)
        p[i] = pbd_body_constraint_apply(p[i], i, 0, &bc, rest, grad, no_set, NULL, NULL, goal);
}

/* A sample's deformed and moved copy p of its rest positions x0 (each coordinate moved by up
 * to 0.3 m, then turned and shifted at random), and q: p turned by Q and shifted. */
static void deform_and_turn(unsigned long long *seed, const pbd_float4 *x0, int n, pbd_float4 *p,
                            pbd_float4 *q, double Q[3][3])
{
    double R0[3][3], t0[3], t[3];
    random_rotation(seed, R0);
    random_rotation(seed, Q);
    for (int k = 0; k < 3; ++k) {
        t0[k] = 4 * uniform(seed) - 2;
        t[k] = uniform(seed) - 0.5;
    }
    for (int i = 0; i < n; ++i) {
        pbd_float4 d = F4(x0[i].x + (float)(0.6 * uniform(seed) - 0.3),
                          x0[i].y + (float)(0.6 * uniform(seed) - 0.3),
                          x0[i].z + (float)(0.6 * uniform(seed) - 0.3), x0[i].w);
        p[i] = rotate_shift(R0, t0, d);
        q[i] = rotate_shift(Q, t, p[i]);
    }
}

/* A body constraint sample's corrections against the allowances of
 * body_constraint_invariants: worst[0] |sum m dp|, worst[1] |sum m r x dp| in units of float
 * rounding, worst[2] how far the turned sample's corrections (before_r -> q) are from the
 * turned corrections (before -> p, turned by Q), as a fraction of 1e-5 of their size; each
 * raised to this sample's where larger. */
static void body_worst(const pbd_float4 *before, const pbd_float4 *p, const pbd_float4 *before_r,
                       const pbd_float4 *q, int n, double Q[3][3], double worst[3])
{
    double lin[3], ang[3], rmax, scale = 0.0, rot = 0.0, round = 0.0;
    correction_sums(before, p, n, lin, ang, &rmax);
    for (int i = 0; i < n; ++i) {
        double m = 1.0 / before[i].w;
        double d[3] = {(double)p[i].x - before[i].x, (double)p[i].y - before[i].y,
                       (double)p[i].z - before[i].z};
        scale = fmax(scale, sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]));
        double dr[3] = {(double)q[i].x - before_r[i].x, (double)q[i].y - before_r[i].y,
                        (double)q[i].z - before_r[i].z};
        for (int k = 0; k < 3; ++k)
            rot = fmax(rot, fabs(Q[k][0] * d[0] + Q[k][1] * d[1] + Q[k][2] * d[2] - dr[k]));
        double ext = fmax(fabs(before[i].x), fmax(fabs(before[i].y), fabs(before[i].z)));
        round += FLT_EPSILON * (ext + 1.0) * m;
    }
    worst[0] = fmax(worst[0], sqrt(lin[0] * lin[0] + lin[1] * lin[1] + lin[2] * lin[2]) / round);
    worst[1] =
        fmax(worst[1], sqrt(ang[0] * ang[0] + ang[1] * ang[1] + ang[2] * ang[2]) / (round * rmax));
    worst[2] = fmax(worst[2], rot / (1e-5 * (scale + 1.0)));
}

#define CLUSTERS 4 /* clusters of a cluster sample, over BODY_N particles */

/* Shape matching on overlapping clusters keeps momentum and turns with the body too: 200
 * samples of BODY_N particles of random masses, each in its home cluster and in each other of
 * CLUSTERS at random (three to eight particles a cluster), weighed m / n in each, every other
 * sample in the XPBD form; one iteration as the stages run it, every particle moved by the
 * mean of its clusters' pulls. The polar decompositions are run to convergence: small random
 * clusters deformed by up to 30 % of their size converge slowly (after 30 solves of
 * PBD_POLAR_ITERATIONS steps from the identity, 18 of the 200 samples are not there yet), so
 * 2000 solves. The allowances are body_constraint_invariants'. */
static void cluster_invariants(void **state)
{
    (void)state;
    unsigned long long seed = 4242;
    double worst[3] = {0.0, 0.0, 0.0};
    for (int sample = 0; sample < 200; ++sample) {
        int in[CLUSTERS][BODY_N] = {{0}}, ncl[BODY_N] = {0};
        for (int i = 0; i < BODY_N; ++i) { /* a home cluster, and maybe two more */
            in[i % CLUSTERS][i] = 1;
            for (int k = 0; k < CLUSTERS; ++k)
                if (uniform(&seed) < 0.35)
                    in[k][i] = 1;
        }
        pbd_float4 x0[BODY_N], p[BODY_N], q[BODY_N];
        for (int i = 0; i < BODY_N; ++i) {
            float m = (float)(0.5 + 1.5 * uniform(&seed));
            x0[i] = F4((float)(2 * uniform(&seed) - 1), (float)(2 * uniform(&seed) - 1),
                       (float)(2 * uniform(&seed) - 1), 1.0f / m);
            for (int k = 0; k < CLUSTERS; ++k)
                ncl[i] += in[k][i];
        }
        /* members after the particles, cluster by cluster; constraint 0 is the body's (none) */
        int member_particle[BODY_N * (CLUSTERS + 1)], first[CLUSTERS + 1], nm = BODY_N;
        int offsets[BODY_N + 1] = {0}, pairs[2 * BODY_N * CLUSTERS], fill[BODY_N];
        pbd_float4 rest[BODY_N * (CLUSTERS + 1)];
        pbd_body_constraint bc[CLUSTERS + 1] = {{0}};
        /* the particles' rest offsets from the body's centre, each cluster's centre from it */
        double mb = 0.0, cb[3] = {0, 0, 0};
        pbd_float4 centre[CLUSTERS + 1] = {{0}}; /* goal[PBD_GOAL_CENTRE] */
        for (int i = 0; i < BODY_N; ++i) {
            mb += 1.0 / x0[i].w;
            for (int k = 0; k < 3; ++k)
                cb[k] += (1.0 / x0[i].w) * (double)(&x0[i].x)[k];
        }
        for (int i = 0; i < BODY_N; ++i)
            rest[i] = F4((float)(x0[i].x - cb[0] / mb), (float)(x0[i].y - cb[1] / mb),
                         (float)(x0[i].z - cb[2] / mb), 0.0f);
        for (int k = 0; k < CLUSTERS; ++k) {
            first[k] = nm;
            double mass = 0.0, c0[3] = {0, 0, 0};
            for (int i = 0; i < BODY_N; ++i)
                if (in[k][i]) {
                    float w = (1.0f / x0[i].w) / (float)ncl[i];
                    member_particle[nm] = i;
                    rest[nm++].w = w;
                    mass += w;
                    c0[0] += w * (double)x0[i].x;
                    c0[1] += w * (double)x0[i].y;
                    c0[2] += w * (double)x0[i].z;
                    offsets[i + 1]++;
                }
            for (int e = first[k]; e < nm; ++e) {
                pbd_float4 x = x0[member_particle[e]];
                rest[e] = F4((float)(x.x - c0[0] / mass), (float)(x.y - c0[1] / mass),
                             (float)(x.z - c0[2] / mass), rest[e].w);
            }
            double qc[3] = {0, 0, 0};
            for (int e = first[k]; e < nm; ++e)
                for (int j = 0; j < 3; ++j)
                    qc[j] += rest[e].w * (double)(&rest[member_particle[e]].x)[j];
            for (int j = 0; j < 3; ++j)
                qc[j] /= mass;
            centre[k + 1] = F4((float)qc[0], (float)qc[1], (float)qc[2], 0.0f);
            bc[k + 1] = (pbd_body_constraint){
                PBD_BODY_SHAPE, member_particle[first[k]], 0.5f, 0.0f, 0.0f, 0.0f, 0, 0};
            if (sample & 1) {
                bc[k + 1].flags |= PBD_BODY_SHAPE_XPBD;
                bc[k + 1].shape_compliance = 1e-4f;
                bc[k + 1].shape_mqq = pbd_shape_mqq(rest, first[k], nm);
            }
        }
        first[CLUSTERS] = nm;
        for (int i = 0; i < BODY_N; ++i)
            offsets[i + 1] += offsets[i];
        memcpy(fill, offsets, sizeof fill);
        for (int k = 0; k < CLUSTERS; ++k)
            for (int e = first[k]; e < first[k + 1]; ++e) {
                int slot = fill[member_particle[e]]++;
                pairs[2 * slot] = k + 1;
                pairs[2 * slot + 1] = e;
            }
        double Q[3][3];
        deform_and_turn(&seed, x0, BODY_N, p, q, Q);
        pbd_float4 before[BODY_N], before_r[BODY_N];
        memcpy(before, p, sizeof p);
        memcpy(before_r, q, sizeof q);
        for (int turned = 0; turned < 2; ++turned) {
            pbd_float4 *x = turned ? q : p, goal[(CLUSTERS + 1) * PBD_GOAL_COUNT];
            for (int k = 0; k <= CLUSTERS; ++k) {
                goal[k * PBD_GOAL_COUNT] = F4(0, 0, 0, 1);
                goal[k * PBD_GOAL_COUNT + PBD_GOAL_CENTRE] = centre[k];
            }
            for (int k = 1; k <= CLUSTERS; ++k) {
                float sums[PBD_BSUM_COUNT] = {0};
                pbd_float4 r = x[bc[k].first];
                for (int e = first[k - 1]; e < first[k]; ++e)
                    pbd_body_constraint_sums(x[member_particle[e]], r, rest[e], F4(0, 0, 0, 0),
                                             bc[k].flags, sums);
                for (int it = 0; it < 2000; ++it)
                    pbd_body_constraint_solve(sums, bc[k], r, x[bc[k].base],
                                              goal + k * PBD_GOAL_COUNT, 3600.0f, 1);
            }
            pbd_float4 out[BODY_N];
            int set[BODY_N], set_constraints[BODY_N * CLUSTERS]; /* a set a particle */
            for (int i = 0; i < BODY_N; ++i)
                set[i] = i;
            for (int e = 0; e < offsets[BODY_N]; ++e)
                set_constraints[e] = pairs[2 * e];
            for (int i = 0; i < BODY_N; ++i)
                out[i] = pbd_body_constraint_apply(x[i], i, 0, bc, rest, NULL, set, offsets,
                                                   set_constraints, goal);
            memcpy(x, out, sizeof out);
        }
        body_worst(before, p, before_r, q, BODY_N, Q, worst);
    }
    print_message("clusters in units of float rounding: |sum m dp| %.3f, |sum m r x dp| %.3f; "
                  "turned corrections off by %.3f of the allowance\n",
                  worst[0], worst[1], worst[2]);
    expect(worst[0] <= 1.0, "linear momentum off by %g roundings", worst[0]);
    expect(worst[1] <= 1.0, "angular momentum off by %g roundings", worst[1]);
    expect(worst[2] <= 1.0, "not invariant under rotation (%g of the allowance)", worst[2]);
}

/* The body constraints on random samples keep momentum and turn with the body, as the
 * per-element types do (projection_invariants): shape matching of 12 particles of random
 * masses (every other sample in its XPBD form, 1e-4 s^2), deformed, turned and moved at
 * random, with the polar decomposition run to
 * convergence (30 solves of PBD_POLAR_ITERATIONS steps from the identity); and the pressure
 * of a randomly dented octahedron. Sum m dp and sum m (p - c) x dp are zero up to float
 * rounding: the allowance is FLT_EPSILON times sum_i m_i (|p_i|_max + 1), one rounding of
 * each coordinate (shape matching's centre and A_pq are n-term float sums, yet it stays within
 * half of that: 0.5 and 0.16 of it at worst here). The correction of the turned sample is the
 * turned correction within 1e-5 of its size (the samples are themselves rounded to float when
 * turned). With stiffness 1 a shape-matched sample lands on its goal: a rigid copy of its rest
 * shape. */
static void body_constraint_invariants(void **state)
{
    (void)state;
    unsigned long long seed = 777;
    /* the octahedron: vertices +-x, +-y, +-z; triangles counter-clockwise from outside */
    static const int tri[8][3] = {{0, 2, 4}, {2, 1, 4}, {1, 3, 4}, {3, 0, 4},
                                  {2, 0, 5}, {1, 2, 5}, {3, 1, 5}, {0, 3, 5}};
    int offsets[7] = {0}, pairs[48], fill[6];
    for (int t = 0; t < 8; ++t)
        for (int k = 0; k < 3; ++k)
            offsets[tri[t][k] + 1]++;
    for (int i = 0; i < 6; ++i)
        offsets[i + 1] += offsets[i];
    memcpy(fill, offsets, sizeof fill);
    for (int t = 0; t < 8; ++t)
        for (int k = 0; k < 3; ++k) {
            int e = fill[tri[t][k]]++;
            pairs[2 * e] = tri[t][(k + 1) % 3];
            pairs[2 * e + 1] = tri[t][(k + 2) % 3];
        }
    for (int pressure = 0; pressure < 2; ++pressure) {
        int n = pressure ? 6 : BODY_N;
        double worst[3] = {0.0, 0.0, 0.0}, worst_goal = 0.0;
        for (int sample = 0; sample < 200; ++sample) {
            pbd_float4 rest[BODY_N], x0[BODY_N], p[BODY_N], q[BODY_N];
            double mass = 0.0, c0[3] = {0, 0, 0};
            for (int i = 0; i < n; ++i) {
                float m = (float)(0.5 + 1.5 * uniform(&seed));
                if (pressure) {
                    float s = (i & 1) ? -1.0f : 1.0f;
                    x0[i] = F4(i / 2 == 0 ? s : 0.0f, i / 2 == 1 ? s : 0.0f, i / 2 == 2 ? s : 0.0f,
                               1.0f / m);
                } else
                    x0[i] = F4((float)(2 * uniform(&seed) - 1), (float)(2 * uniform(&seed) - 1),
                               (float)(2 * uniform(&seed) - 1), 1.0f / m);
                mass += m;
                c0[0] += m * (double)x0[i].x;
                c0[1] += m * (double)x0[i].y;
                c0[2] += m * (double)x0[i].z;
            }
            for (int i = 0; i < n; ++i)
                rest[i] = F4((float)(x0[i].x - c0[0] / mass), (float)(x0[i].y - c0[1] / mass),
                             (float)(x0[i].z - c0[2] / mass), 1.0f / x0[i].w);
            double Q[3][3];
            deform_and_turn(&seed, x0, n, p, q, Q);
            pbd_body_constraint bc = {
                pressure ? PBD_BODY_PRESSURE : PBD_BODY_SHAPE, 0, 0.5f, 0.0f, 0.0f, 0.0f, 0, 0};
            if (!pressure && (sample & 1)) { /* shape matching's XPBD form */
                bc.flags |= PBD_BODY_SHAPE_XPBD;
                bc.shape_compliance = 1e-4f;
                bc.shape_mqq = pbd_shape_mqq(rest, 0, n);
            }
            if (pressure) { /* 1.3 times the octahedron's volume, 4/3 */
                bc.volume = 1.3f * 4.0f / 3.0f;
                bc.compliance = (sample & 1) ? 0.0f : -0.5f; /* XPBD hard, or PBD 0.5 */
            }
            pbd_float4 goal[PBD_GOAL_COUNT] = {F4(0, 0, 0, 1)},
                       goal_r[PBD_GOAL_COUNT] = {F4(0, 0, 0, 1)};
            pbd_float4 before[BODY_N], before_r[BODY_N];
            memcpy(before, p, sizeof p);
            memcpy(before_r, q, sizeof q);
            body_iteration(p, n, rest, bc, goal, offsets, pressure ? pairs : NULL, 30);
            body_iteration(q, n, rest, bc, goal_r, offsets, pressure ? pairs : NULL, 30);
            body_worst(before, p, before_r, q, n, Q, worst);
            if (!pressure) { /* stiffness 1 from there: every particle on its goal, rigidly */
                bc.shape_k = 1.0f;
                bc.flags = PBD_BODY_SHAPE;
                bc.shape_compliance = 0.0f;
                body_iteration(p, n, rest, bc, goal, offsets, NULL, 30);
                for (int i = 0; i < n; ++i)
                    for (int j = i + 1; j < n; ++j) {
                        double dp =
                            sqrt(pow((double)p[i].x - p[j].x, 2) + pow((double)p[i].y - p[j].y, 2) +
                                 pow((double)p[i].z - p[j].z, 2));
                        double d0 = sqrt(pow((double)x0[i].x - x0[j].x, 2) +
                                         pow((double)x0[i].y - x0[j].y, 2) +
                                         pow((double)x0[i].z - x0[j].z, 2));
                        worst_goal = fmax(worst_goal, fabs(dp - d0));
                    }
            }
        }
        print_message("%s in units of float rounding: |sum m dp| %.3f, |sum m r x dp| %.3f; "
                      "turned corrections off by %.3f of the allowance; rigid goal's distances "
                      "off by %.3g m\n",
                      pressure ? "pressure" : "shape matching", worst[0], worst[1], worst[2],
                      worst_goal);
        expect(worst[0] <= 1.0, "linear momentum off by %g roundings", worst[0]);
        expect(worst[1] <= 1.0, "angular momentum off by %g roundings", worst[1]);
        expect(worst[2] <= 1.0, "not invariant under rotation (%g of the allowance)", worst[2]);
        expect(worst_goal <= 1e-5, "the goal is no rigid copy of the rest shape: %g m", worst_goal);
    }
}

/* det F and |F|^2 of an element on p. */
static void deformation_invariants(const pbd_neo_hookean *r, const pbd_float4 *p, double *det,
                                   double *norm2)
{
    float f[9];
    pbd_tet_deformation(p, *r, f);
    *det = (double)f[0] * ((double)f[4] * f[8] - (double)f[7] * f[5]) -
           (double)f[3] * ((double)f[1] * f[8] - (double)f[7] * f[2]) +
           (double)f[6] * ((double)f[1] * f[5] - (double)f[4] * f[2]);
    *norm2 = 0.0;
    for (int k = 0; k < 9; ++k)
        *norm2 += (double)f[k] * f[k];
}

/* The Neo-Hookean element of a tet (pbd_scene_add_neo_hookean): F = I at rest, compliances
 * 1/(mu V) and 1/(lambda V), gamma = 1 + mu/lambda; at rest the two parts balance, so a
 * projection moves nothing; a tet stretched 10 % along x comes back to det F = 1 and
 * |F|^2 = 3 (its rest shape, turned) in 200 time steps of 1/60 s with the velocity damped
 * away. */
static void neo_hookean_math(void **state)
{
    (void)state;
    pbd_model m = {0};
    assert_true(pbd_model_add_particles(&m, 4, "tet") == 0);
    const pbd_float4 rest[4] = {F4(0.1f, 0.2f, -0.1f, 1.0f), F4(1.2f, 0.1f, 0.3f, 0.5f),
                                F4(0.3f, 0.9f, 0.2f, 2.0f), F4(0.2f, 0.4f, 1.1f, 0.25f)};
    memcpy(m.x, rest, sizeof rest);
    const int q[4] = {0, 1, 2, 3};
    double mu = 1e3, lambda = 3 * mu; /* h^2 mu V sum w |grad C_D|^2 = 0.1: stable */
    assert_int_equal(pbd_scene_add_neo_hookean(&m, q, mu, lambda, NULL), PBD_OK);
    assert_int_equal(m.num_neo_hookean, 1);
    pbd_neo_hookean r = m.neo_hookean[0];
    float f[9];
    pbd_tet_deformation(rest, r, f);
    for (int k = 0; k < 9; ++k)
        assert_near(f[k], k % 4 == 0 ? 1.0 : 0.0, 1e-6, "F = I at rest");
    double vol = fabs(tet_volume(rest));
    assert_near(r.gamma, 1.0 + mu / lambda, 1e-6, "gamma = 1 + mu / lambda");
    assert_near(r.compliance_h * lambda * vol, 1.0, 1e-6, "hydrostatic compliance");
    assert_near(r.compliance * mu * vol, 1.0, 1e-6, "deviatoric compliance");
    pbd_float4 p[4], dx[4];
    float lam[2] = {0.0f, 0.0f};
    memcpy(p, rest, sizeof p);
    for (int it = 0; it < 10; ++it)
        pbd_neo_hookean_project(p, dx, &r, lam, 0, 3600.0f, 0, 0);
    double moved = 0.0;
    for (int i = 0; i < 4; ++i)
        moved = fmax(moved, fabs(p[i].x - rest[i].x) + fabs(p[i].y - rest[i].y) +
                                fabs(p[i].z - rest[i].z));
    expect(moved < 1e-5, "a tet at rest moved by %g m", moved);
    for (int i = 0; i < 4; ++i)
        p[i].x *= 1.1f;
    double det0, n0, det1, n1;
    deformation_invariants(&r, p, &det0, &n0);
    for (int step = 0; step < 200; ++step) { /* time steps with the velocity damped away */
        lam[0] = lam[1] = 0.0f;
        for (int it = 0; it < 10; ++it)
            pbd_neo_hookean_project(p, dx, &r, lam, 0, 3600.0f, 0, 0);
    }
    deformation_invariants(&r, p, &det1, &n1);
    print_message("Neo-Hookean: stretched 10 %%: det F %.4f -> %.6f, |F|^2 %.4f -> %.6f\n", det0,
                  det1, n0, n1);
    expect(fabs(det1 - 1.0) < 1e-3 && fabs(n1 - 3.0) < 3e-3, "det F %g, |F|^2 %g", det1, n1);
    pbd_model_free(&m);
}

/* Coulomb friction of a contact with the floor: a particle that came from x = (0, 0.1, 0)
 * and was predicted 0.04 m into the floor and 0.01 m sideways sticks with mu_s 0.5 (0.01 <
 * 0.5 x 0.04: back over its start, on the floor); with mu_s = mu_k = 0.1 its sideways
 * motion shrinks by 0.1 x 0.04; with mu_k 0 (mu_s 0.1) it keeps it all; a frictionless floor
 * gives the plane's own result bit for bit. */
static void friction_math(void **state)
{
    (void)state;
    pbd_collider floor = plane(0, 1, 0, 0);
    pbd_float4 x = F4(0, 0.1f, 0, 1), p = F4(0.01f, -0.04f, 0, 1);
    pbd_float4 q = collide_fresh(p, x, &floor, 1, NO_MATERIAL),
               plain = pbd_collide_plane(p, &floor);
    expect(q.x == plain.x && q.y == plain.y && q.z == plain.z, "frictionless: (%g, %g)",
           (double)q.x, (double)q.y);
    floor.friction = 0.5f;
    floor.friction_kinetic = 0.5f;
    q = collide_fresh(p, x, &floor, 1, NO_MATERIAL);
    assert_near(q.x, 0.0, 1e-7, "static: back over its start");
    assert_near(q.y, 0.0, 1e-7, "static: on the floor");
    floor.friction = floor.friction_kinetic = 0.1f;
    q = collide_fresh(p, x, &floor, 1, NO_MATERIAL);
    assert_near(q.x, 0.01 - 0.1 * 0.04, 1e-7, "kinetic: sideways motion less mu_k depth");
    /* A contact starts sticking: static friction takes back up to mu_s depth, whatever mu_k;
     * keeping more than that (0.006 > 0.004) it slides, and from then on mu_k applies. */
    floor.friction_kinetic = 0.0f;
    float st = 0.0f;
    q = pbd_collide(p, x, &floor, 1, NO_MATERIAL, &st);
    assert_near(q.x, 0.01 - 0.1 * 0.04, 1e-7, "mu_k 0, sticking: mu_s depth taken back");
    expect(st < 0.0f, "kept 0.006 against a budget of 0.004, yet not sliding (%g)", (double)st);
    st = pbd_friction_carry(st); /* the next substep */
    expect(st == PBD_SLIDING, "the next substep forgot the slide (%g)", (double)st);
    q = pbd_collide(p, x, &floor, 1, NO_MATERIAL, &st);
    assert_near(q.x, 0.01, 1e-7, "mu_k 0, sliding: sideways motion kept");
    /* back within the budget, it sticks again */
    q = pbd_collide(F4(0.001f, -0.04f, 0, 1), x, &floor, 1, NO_MATERIAL, &st);
    assert_near(q.x, 0.0, 1e-7, "a slide within mu_s depth stops");
    expect(st > 0.0f, "stopped, yet still sliding (%g)", (double)st);
    pbd_float4 pinned = F4(0.01f, -0.04f, 0, 0);
    q = collide_fresh(pinned, x, &floor, 1, NO_MATERIAL);
    expect(q.x == pinned.x && q.y == pinned.y, "a pinned particle moved");
}

/* Static friction over the substep's pushes together: a resting particle of a body, pushed
 * out by 0.04 m (its weight and its load) and then dragged 0.01 m sideways by its
 * constraints and pressed in again by 0.001 m, stays put with mu_s 0.5 (0.01 within the
 * budget 0.5 x 0.041), where that last push alone (0.5 x 0.001) would let it slide; what it
 * takes back is spent from the budget. Alone, that push holds it by mu_s times its depth and
 * leaves it sliding: the next push takes back mu_k times its depth. */
static void friction_over_the_substep(void **state)
{
    (void)state;
    pbd_collider floor = plane(0, 1, 0, 0);
    floor.friction = 0.5f;
    floor.friction_kinetic = 0.3f;
    pbd_float4 x = F4(0, 0, 0, 1);
    float pushed = 0.0f;
    pbd_float4 q = pbd_collide(F4(0, -0.04f, 0, 1), x, &floor, 1, NO_MATERIAL, &pushed);
    assert_near(pushed, 0.02, 1e-7, "the first push's budget");
    q = pbd_collide(F4(q.x + 0.01f, q.y - 0.001f, 0, 1), x, &floor, 1, NO_MATERIAL, &pushed);
    assert_near(pushed, 0.0205 - 0.01, 1e-7, "the budget less the motion taken back");
    assert_near(q.x, 0.0, 1e-7, "static over the substep: back over its start");
    float alone = 0.0f;
    q = pbd_collide(F4(0.01f, -0.001f, 0, 1), x, &floor, 1, NO_MATERIAL, &alone);
    assert_near(q.x, 0.01 - 0.5 * 0.001, 1e-7, "one shallow push alone: static to its limit");
    q = pbd_collide(F4(q.x + 0.01f, -0.001f, 0, 1), x, &floor, 1, NO_MATERIAL, &alone);
    assert_near(q.x, 0.0195 - 0.3 * 0.001, 1e-7, "then sliding: kinetic");
}

/* Boxes: a particle inside an axis-aligned box leaves through its nearest face; turned 90
 * degrees about z the box moves it along the turned axis; outside, nothing moves; the
 * distance outside a corner is the length to the corner. Capsules: a particle inside moves
 * radially from the axis, past an end from the end's centre; one on the axis stays. */
static void box_capsule_math(void **state)
{
    (void)state;
    pbd_collider box = {.kind = PBD_COLLIDER_BOX,
                        .shape = F4(1, 2, 3, 0),
                        .shape2 = F4(0.5f, 1.0f, 2.0f, 0),
                        .shape3 = F4(0, 0, 0, 1)};
    pbd_float4 p = pbd_collide_one(F4(1.3f, 2.1f, 3.2f, 1), &box);
    assert_near(p.x, 1.5, 1e-6, "through the nearest face (+x, 0.2 away)");
    assert_near(p.y, 2.1, 1e-6, "y kept");
    p = pbd_collide_one(F4(1.1f, 1.2f, 3.0f, 1), &box);
    assert_near(p.y, 1.0, 1e-6, "through -y (0.2 away)");
    p = pbd_collide_one(F4(2.0f, 2.0f, 3.0f, 1), &box);
    expect(p.x == 2.0f && p.y == 2.0f && p.z == 3.0f, "outside moved to (%g, %g, %g)", (double)p.x,
           (double)p.y, (double)p.z);
    float n[3];
    double d = pbd_collider_distance(F4(1.8f, 3.4f, 3.0f, 1), &box, n);
    assert_near(d, sqrt(0.3 * 0.3 + 0.4 * 0.4), 1e-6, "distance to the corner's edge");
    assert_near(n[0], 0.6, 1e-6, "normal x");
    assert_near(n[1], 0.8, 1e-6, "normal y");
    /* turned 90 degrees about z: the half extent 0.5 now lies along y */
    box.shape3 = F4(0, 0, (float)sin(3.14159265358979 / 4), (float)cos(3.14159265358979 / 4));
    p = pbd_collide_one(F4(1.0f, 2.3f, 3.0f, 1), &box);
    assert_near(p.y, 2.5, 1e-6, "turned: through the face at y + 0.5");
    assert_near(p.x, 1.0, 1e-6, "turned: x kept");
    pbd_collider cap = {
        .kind = PBD_COLLIDER_CAPSULE, .shape = F4(0, 0, 0, 0.5f), .shape2 = F4(2, 0, 0, 0)};
    p = pbd_collide_one(F4(1.0f, 0.3f, 0.0f, 1), &cap);
    assert_near(p.y, 0.5, 1e-6, "radially from the axis");
    assert_near(p.x, 1.0, 1e-6, "along the axis kept");
    p = pbd_collide_one(F4(2.3f, 0.0f, 0.0f, 1), &cap);
    assert_near(p.x, 2.5, 1e-6, "past an end: from the end's centre");
    p = pbd_collide_one(F4(1.0f, 0.0f, 0.0f, 1), &cap);
    expect(p.x == 1.0f && p.y == 0.0f && p.z == 0.0f, "on the axis moved");
    p = pbd_collide_one(F4(1.0f, 0.7f, 0.0f, 1), &cap);
    expect(p.y == 0.7f && p.x == 1.0f, "outside moved to (%g, %g)", (double)p.x, (double)p.y);
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
    pbd_float4 dx =
        pbd_add_displacement(F4(1, 0, 0, 0), q, collide_fresh(q, q, &floor, 1, NO_MATERIAL));
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

/* The fused form of the sums (the CPU devices' lanes): on random particles with collisions,
 * with statistics and without, every sum within rounding of pbd_particle_sums' terms added
 * one by one, and the exact one where no product rounds. */
static void particle_accumulate(void **state)
{
    (void)state;
    double s[PBD_SUM_COUNT], acc[PBD_SUM_COUNT];
    double fused[PBD_SUM_COUNT] = {0};
    pbd_particle_accumulate(fused, F4(2, 0, 0, 0.5f), F4(0, 3, 0, 2), F4(0, 0, 0.5f, 0),
                            F4(1, 0, 0, 0), 0.25f, 1, 2.0f);
    pbd_particle_sums(F4(2, 0, 0, 0.5f), F4(0, 3, 0, 2), F4(0, 0, 0.5f, 0), F4(1, 0, 0, 0), 0.25f,
                      1, 2.0f, s);
    for (int q = 0; q < PBD_SUM_COUNT; ++q)
        expect(fused[q] == s[q], "sum %d: %.17g, the terms give %.17g", q, fused[q], s[q]);
    unsigned long long seed = 7;
    for (int stats = 0; stats < 2; ++stats) {
        memset(acc, 0, sizeof acc);
        memset(fused, 0, sizeof fused);
        double scale[PBD_SUM_COUNT] = {0};
        pbd_float4 r = F4(0.3f, -1.2f, 2.0f, 0);
        for (int i = 0; i < 200; ++i) {
            pbd_float4 x = F4((float)(uniform(&seed) * 4 - 2), (float)(uniform(&seed) * 4 - 2),
                              (float)(uniform(&seed) * 4 - 2), 1);
            pbd_float4 v = F4((float)(uniform(&seed) * 6 - 3), (float)(uniform(&seed) * 6 - 3),
                              (float)(uniform(&seed) * 6 - 3), (float)(0.1 + uniform(&seed)));
            pbd_float4 dx =
                F4((float)(uniform(&seed) * 0.02 - 0.01), (float)(uniform(&seed) * 0.02 - 0.01),
                   (float)(uniform(&seed) * 0.02 - 0.01), 0);
            float e = (float)uniform(&seed);
            pbd_particle_sums(x, v, dx, r, e, stats, 240.0f, s);
            pbd_sums_add(acc, s);
            for (int q = 0; q < PBD_SUM_COUNT; ++q)
                scale[q] += fabs(s[q]);
            pbd_particle_accumulate(fused, x, v, dx, r, e, stats, 240.0f);
        }
        for (int q = 0; q < PBD_SUM_COUNT; ++q) {
            expect(scale[q] > 0.0 || (!stats && (q == PBD_SUM_KE || q == PBD_SUM_ERR)),
                   "stats %d, sum %d: no terms", stats, q);
            expect(fabs(fused[q] - acc[q]) <= 1e-14 * scale[q],
                   "stats %d, sum %d: fused %.17g, terms %.17g", stats, q, fused[q], acc[q]);
        }
    }
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

/* The volume gradient reads a neighbour once where a pair starts at the last one's end, and
 * afresh where a ring closes and the next starts (a particle where two surfaces meet): the
 * same bits as the sum of each pair's own cross product, for every prefix of rings (1 2 3)
 * and (4 5 6 7 8) and a lone pair after them. */
static void volume_gradient_rings(void **state)
{
    (void)state;
    pbd_float4 p[9];
    for (int i = 0; i < 9; ++i)
        p[i] = F4(0.37f * (float)i - 1.1f, 0.61f * (float)((i * 5) % 9) - 2.3f,
                  0.29f * (float)((i * 7) % 9) + 0.4f, 1.0f);
    const int pairs[] = {1, 2, 2, 3, 3, 1, 4, 5, 5, 6, 6, 7, 7, 8, 8, 4, 2, 6};
    const int n = (int)(sizeof pairs / sizeof pairs[0]) / 2;
    pbd_float4 r = p[0];
    for (int end = 1; end <= n; ++end) {
        float g[3] = {0.0f, 0.0f, 0.0f};
        for (int s = 0; s < end; ++s) {
            pbd_float4 a = p[pairs[2 * s]], b = p[pairs[2 * s + 1]];
            float ax = a.x - r.x, ay = a.y - r.y, az = a.z - r.z;
            float bx = b.x - r.x, by = b.y - r.y, bz = b.z - r.z;
            g[0] = g[0] + (ay * bz - az * by);
            g[1] = g[1] + (az * bx - ax * bz);
            g[2] = g[2] + (ax * by - ay * bx);
        }
        pbd_float4 got = pbd_volume_gradient(p, r, pairs, 0, end);
        const float sixth = 1.0f / 6.0f, want[3] = {g[0] * sixth, g[1] * sixth, g[2] * sixth};
        expect(memcmp(&got.x, want, sizeof want) == 0 && got.w == 0.0f,
               "%d pairs: (%.9g, %.9g, %.9g), each pair's own sum (%.9g, %.9g, %.9g)", end,
               (double)got.x, (double)got.y, (double)got.z, (double)want[0], (double)want[1],
               (double)want[2]);
    }
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
    cmocka_unit_test(volume_gradient_rings),
    cmocka_unit_test(tether_math),
    cmocka_unit_test(atan2_math),
    cmocka_unit_test(dihedral_math),
    cmocka_unit_test(isometric_math),
    cmocka_unit_test(projection_invariants),
    cmocka_unit_test(body_constraint_invariants),
    cmocka_unit_test(cluster_invariants),
    cmocka_unit_test(neo_hookean_math),
    cmocka_unit_test(friction_math),
    cmocka_unit_test(friction_over_the_substep),
    cmocka_unit_test(box_capsule_math),
    cmocka_unit_test(predict_and_update),
    cmocka_unit_test(gather_average),
    cmocka_unit_test(particle_sums),
    cmocka_unit_test(particle_accumulate),
    cmocka_unit_test(bdf2_constant_acceleration),
    cmocka_unit_test(pseudo_inverse),
    cmocka_unit_test(body_solve_two_particles),
    cmocka_unit_test(rigid_damping_keeps_momentum),
};

PBD_TEST_MAIN("math", tests)
