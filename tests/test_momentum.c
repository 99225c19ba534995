/* Global momentum preservation (Dahl & Bargteil 2019) on both backends: what is preserved,
 * what is tracked through external impulses, what is left alone, and that the device's
 * corrections are the CPU reference's. */
#include <math.h>
#include <string.h>

#include "scene/generators.h"
#include "test_util.h"

static double norm3(const double *v)
{
    return sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
}

static double dist3(const double *a, const double *b)
{
    double d[3] = {a[0] - b[0], a[1] - b[1], a[2] - b[2]};
    return norm3(d);
}

static void load(const char *name, pbd_scene *s)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", PBD_SCENES_DIR, name);
    pbd_error err = {0};
    if (pbd_scene_load(path, s, &err) != PBD_OK)
        fail_msg("%s", err.message);
}

/* The order of the last device solver's per-body sums, which the CPU reference then follows,
 * and whether that device is asked for the reference's bits (pbd_test_exact). Tests that
 * compare make the device's solver first. */
static pbd_sum_layout device_sums;
static int device_exact;

static pbd_solver *create(const pbd_model *m, const pbd_config *c, pbd_backend_kind backend,
                          int float_sums)
{
    pbd_solver_desc desc = {.backend = backend, .float_sums = float_sums, .sums = device_sums};
    pbd_solver *sv = NULL;
    pbd_error err = {0};
    if (test_solver_create(m, c, &desc, &sv, &err) != PBD_OK)
        fail_msg("%s", err.message);
    if (backend == PBD_BACKEND_CL) {
        device_sums = pbd_solver_sum_layout(sv);
        device_exact = pbd_test_exact(sv);
    }
    return sv;
}

static void step(pbd_solver *sv, int frames)
{
    pbd_error err = {0};
    if (pbd_solver_step(sv, frames, &err) != PBD_OK)
        fail_msg("%s", err.message);
}

static pbd_body_stats stats0(pbd_solver *sv)
{
    pbd_body_stats st[8];
    pbd_error err = {0};
    if (pbd_solver_stats(sv, st, &err) != PBD_OK)
        fail_msg("%s", err.message);
    return st[0];
}

static const char *backend_name(pbd_backend_kind b)
{
    return b == PBD_BACKEND_CPU ? "cpu" : "cl";
}

/* The spinning soft box keeps P and L to 1e-5 of their size over 1,000 steps with the
 * correction; without it, PBD loses angular momentum (measured: see the message). */
static void spinning_box(pbd_backend_kind backend, int float_sums)
{
    pbd_scene s = {0};
    load("spinning_box.json", &s);
    double loss[2] = {0, 0};
    for (int on = 1; on >= 0; --on) {
        s.config.momentum = on;
        pbd_solver *sv = create(&s.model, &s.config, backend, float_sums);
        pbd_body_stats a = stats0(sv);
        double dp = 0.0, dl = 0.0;
        for (int k = 0; k < 10; ++k) {
            step(sv, 100);
            pbd_body_stats b = stats0(sv);
            dp = fmax(dp, dist3(a.p, b.p) / norm3(a.p));
            dl = fmax(dl, dist3(a.l, b.l) / norm3(a.l));
        }
        pbd_body_stats b = stats0(sv);
        loss[on] = 1.0 - norm3(b.l) / norm3(a.l);
        print_message("%s%s, momentum %s: over 1000 steps max |dP|/|P| = %.3g, max |dL|/|L| = "
                      "%.3g, |L| lost %.2f%%\n",
                      backend_name(backend), float_sums ? " (float sums)" : "", on ? "on" : "off",
                      dp, dl, 100.0 * loss[on]);
        if (on && (dp > 1e-5 || dl > 1e-5))
            fail_msg("momentum not kept: |dP|/|P| %.3g, |dL|/|L| %.3g (limit 1e-5)", dp, dl);
        pbd_solver_destroy(sv);
    }
    /* Plain PBD loses 63.6 % of |L| on this scene in 1,000 steps (measured on PoCL and the
     * CPU reference; the run is deterministic, so a band this narrow is safe). */
    if (!(loss[0] > 0.60 && loss[0] < 0.67))
        fail_msg("without the correction |L| lost %.3g%%, expected 60 to 67%%", 100.0 * loss[0]);
    pbd_scene_free(&s);
}

static void spinning_box_cpu(void **state)
{
    (void)state;
    spinning_box(PBD_BACKEND_CPU, 0);
}

static void spinning_box_cl(void **state)
{
    (void)state;
    spinning_box(PBD_BACKEND_CL, 0);
}

/* The path of devices without fp64: compensated float sums. */
static void spinning_box_cl_float_sums(void **state)
{
    (void)state;
    spinning_box(PBD_BACKEND_CL, 1);
}

/* Under gravity alone the tracked P_r grows by M g t, and the particles' P follows it. */
static void gravity_impulse(pbd_backend_kind backend)
{
    pbd_scene s = {0};
    load("spinning_box.json", &s);
    s.config.gravity[1] = -9.81f;
    pbd_solver *sv = create(&s.model, &s.config, backend, 0);
    pbd_body_stats a = stats0(sv);
    const int frames = 120;
    step(sv, frames);
    pbd_body_momentum mo[1];
    pbd_error err = {0};
    assert_int_equal(pbd_solver_momentum(sv, mo, &err), PBD_OK);
    pbd_body_stats b = stats0(sv);
    /* The solver's inputs are floats: g = -9.81f, h = dt / substeps in float. */
    double h = (double)(s.config.dt / (float)s.config.substeps);
    double expect = a.p[1] + a.mass * ((double)-9.81f * h) * frames * s.config.substeps;
    print_message("%s: P_r.y %.9g, P.y %.9g, expected M g t = %.9g\n", backend_name(backend),
                  mo[0].p_r[1], b.p[1], expect);
    if (fabs(mo[0].p_r[1] - expect) > 1e-9 * fabs(expect) + 1e-12)
        fail_msg("P_r.y %.12g, expected %.12g", mo[0].p_r[1], expect);
    if (fabs(b.p[1] - expect) > 1e-5 * fabs(expect))
        fail_msg("P.y %.9g, expected %.9g", b.p[1], expect);
    assert_true(fabs(mo[0].p_r[0] - a.p[0]) <= 1e-9 && fabs(mo[0].p_r[2] - a.p[2]) <= 1e-9);
    pbd_solver_destroy(sv);
    pbd_scene_free(&s);
}

static void gravity_impulse_cpu(void **state)
{
    (void)state;
    gravity_impulse(PBD_BACKEND_CPU);
}

static void gravity_impulse_cl(void **state)
{
    (void)state;
    gravity_impulse(PBD_BACKEND_CL);
}

/* A box thrown at a frictionless floor: the collisions' impulses are normal, so P's
 * tangential components stay what they were while P.y turns around. */
static void floor_bounce(pbd_backend_kind backend)
{
    pbd_model m = {0};
    pbd_error err = {0};
    pbd_tet_box_desc d = pbd_tet_box_desc_default();
    d.cells[0] = d.cells[1] = d.cells[2] = 4;
    d.size[0] = d.size[1] = d.size[2] = 0.5f;
    d.center[1] = 0.6f;
    d.common.velocity[0] = 1.0f;
    d.common.velocity[1] = -3.0f;
    d.common.velocity[2] = 0.5f;
    d.common.angular_velocity[1] = 1.0f;
    d.common.compliance = 1e-5f;
    assert_int_equal(pbd_scene_add_tet_box(&m, &d, &err), PBD_OK);
    assert_int_equal(pbd_model_add_plane(&m, 0.0f, 1.0f, 0.0f, 0.0f), 0);
    pbd_config c = pbd_config_default();
    c.gravity[1] = 0.0f;
    pbd_solver *sv = create(&m, &c, backend, 0);
    pbd_body_stats a = stats0(sv);
    step(sv, 30);
    pbd_body_stats b = stats0(sv);
    print_message("%s: P before (%.6g, %.6g, %.6g), after (%.6g, %.6g, %.6g)\n",
                  backend_name(backend), a.p[0], a.p[1], a.p[2], b.p[0], b.p[1], b.p[2]);
    assert_true(a.p[1] < 0.0 && b.p[1] > 0.0); /* it bounced */
    if (fabs(b.p[0] - a.p[0]) > 1e-5 * fabs(a.p[0]) || fabs(b.p[2] - a.p[2]) > 1e-5 * fabs(a.p[2]))
        fail_msg("tangential P changed: x %.9g -> %.9g, z %.9g -> %.9g", a.p[0], b.p[0], a.p[2],
                 b.p[2]);
    pbd_solver_destroy(sv);
    pbd_model_free(&m);
}

static void floor_bounce_cpu(void **state)
{
    (void)state;
    floor_bounce(PBD_BACKEND_CPU);
}

static void floor_bounce_cl(void **state)
{
    (void)state;
    floor_bounce(PBD_BACKEND_CL);
}

/* The device's tracked momenta and corrections are the CPU reference's (adding in the device's
 * order): the same bits on CPU devices, 1e-9 of each quantity's scale on GPUs
 * (pbd_test_exact says why). */
static void corrections_agree(void **state)
{
    (void)state;
    pbd_scene s = {0};
    load("spinning_box.json", &s);
    s.config.gravity[1] = -2.0f;
    pbd_body_momentum mo[2][1];
    pbd_error err = {0};
    for (int b = 1; b >= 0; --b) { /* the device first */
        pbd_solver *sv = create(&s.model, &s.config, b ? PBD_BACKEND_CL : PBD_BACKEND_CPU, 0);
        step(sv, 50);
        assert_int_equal(pbd_solver_momentum(sv, mo[b], &err), PBD_OK);
        pbd_solver_destroy(sv);
    }
    const double *c = mo[0][0].v_cor, *g = mo[1][0].v_cor;
    double worst = 0.0;
    for (int q = 0; q < 15; ++q) { /* p_r, l_r, v_cor, w_cor, com */
        double scale = fmax(fabs(mo[0][0].p_r[0]), 1e-3);
        const double *cq = &mo[0][0].p_r[0] + q, *gq = &mo[1][0].p_r[0] + q;
        scale = fmax(scale, fabs(*cq));
        worst = fmax(worst, fabs(*cq - *gq) / scale);
    }
    print_message("v_cor cpu (%.9g, %.9g, %.9g), cl (%.9g, %.9g, %.9g); worst relative "
                  "difference %.3g\n",
                  c[0], c[1], c[2], g[0], g[1], g[2], worst);
    assert_true(norm3(mo[0][0].w_cor) > 0.0); /* there was something to correct */
    if (worst > (device_exact ? 0.0 : 1e-9))
        fail_msg("device and CPU corrections differ by %.3g (relative)", worst);
    pbd_scene_free(&s);
}

/* A straight rope spinning end over end: its inertia tensor is singular (no inertia about
 * its axis). The pseudo-inverse corrects within the range; no NaN, no huge velocity, L kept. */
static void singular_inertia(pbd_backend_kind backend)
{
    pbd_model m = {0};
    pbd_error err = {0};
    pbd_rope_desc d = pbd_rope_desc_default();
    d.segments = 20;
    d.end[0] = 2.0f;
    d.common.angular_velocity[1] = 3.0f;
    d.common.angular_velocity[0] = 5.0f; /* about the axis: no effect on a line of points */
    assert_int_equal(pbd_scene_add_rope(&m, &d, &err), PBD_OK);
    pbd_config c = pbd_config_default();
    c.gravity[1] = 0.0f;
    pbd_solver *sv = create(&m, &c, backend, 0);
    pbd_body_stats a = stats0(sv);
    step(sv, 200);
    pbd_body_stats b = stats0(sv);
    pbd_float4 *x = malloc((size_t)m.num_particles * sizeof *x);
    pbd_float4 *v = malloc((size_t)m.num_particles * sizeof *v);
    assert_int_equal(pbd_solver_read(sv, x, v, &err), PBD_OK);
    double vmax = 0.0;
    for (int i = 0; i < m.num_particles; ++i) {
        assert_true(isfinite(v[i].x) && isfinite(v[i].y) && isfinite(v[i].z));
        vmax = fmax(vmax, sqrt(v[i].x * v[i].x + v[i].y * v[i].y + v[i].z * v[i].z));
    }
    double dl = dist3(a.l, b.l) / norm3(a.l);
    print_message("%s: |L| %.9g -> %.9g (|dL|/|L| %.3g), max |v| %.4g\n", backend_name(backend),
                  norm3(a.l), norm3(b.l), dl, vmax);
    assert_true(vmax < 10.0); /* the rope's ends move at 3 rad/s x 1 m */
    if (dl > 1e-5)
        fail_msg("|dL|/|L| = %.3g", dl);
    free(x);
    free(v);
    pbd_solver_destroy(sv);
    pbd_model_free(&m);
}

static void singular_inertia_cpu(void **state)
{
    (void)state;
    singular_inertia(PBD_BACKEND_CPU);
}

static void singular_inertia_cl(void **state)
{
    (void)state;
    singular_inertia(PBD_BACKEND_CL);
}

/* Bodies with pinned particles are held by the world and never corrected; a body can opt
 * out; the others are corrected. */
static void who_is_corrected(void **state)
{
    (void)state;
    pbd_model m = {0};
    pbd_error err = {0};
    pbd_rope_desc r = pbd_rope_desc_default();
    r.segments = 8;
    int pin = 0;
    r.common.pinned = &pin;
    r.common.num_pinned = 1;
    assert_int_equal(pbd_scene_add_rope(&m, &r, &err), PBD_OK);
    pbd_tet_box_desc b = pbd_tet_box_desc_default();
    b.common.angular_velocity[2] = 2.0f;
    assert_int_equal(pbd_scene_add_tet_box(&m, &b, &err), PBD_OK);
    b.center[0] = 3.0f;
    assert_int_equal(pbd_scene_add_tet_box(&m, &b, &err), PBD_OK);
    m.bodies[2].momentum = 0;
    pbd_config c = pbd_config_default();
    for (int backend = 0; backend < 2; ++backend) {
        pbd_solver *sv = create(&m, &c, (pbd_backend_kind)backend, 0);
        step(sv, 5);
        pbd_body_momentum mo[3];
        assert_int_equal(pbd_solver_momentum(sv, mo, &err), PBD_OK);
        assert_int_equal(mo[0].enabled, 0);
        assert_int_equal(mo[1].enabled, 1);
        assert_int_equal(mo[2].enabled, 0);
        assert_true(norm3(mo[0].v_cor) == 0.0 && norm3(mo[0].w_cor) == 0.0);
        assert_true(norm3(mo[2].v_cor) == 0.0 && norm3(mo[2].w_cor) == 0.0);
        pbd_solver_destroy(sv);
    }
    pbd_model_free(&m);
}

/* Point damping (v *= 1 - k) damps rigid motion too: |L| decays. With the correction the
 * tracked L_r is restored after the damping, as in the paper's damped comparisons; rigid
 * damping (Müller 2007) leaves L alone by construction. */
static void damping_models(void **state)
{
    (void)state;
    pbd_scene s = {0};
    load("spinning_box.json", &s);
    struct {
        pbd_damping_kind kind;
        int momentum;
        double max_loss, min_loss;
    } cases[] = {
        {PBD_DAMPING_POINT, 0, 1.0, 0.5},  /* (1 - 0.01)^300 = 5 % left of the rigid part */
        {PBD_DAMPING_POINT, 1, 1e-5, 0.0}, /* restored each substep */
        {PBD_DAMPING_RIGID, 1, 1e-5, 0.0}, /* never removed */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        s.config.damping = cases[k].kind;
        s.config.damping_k = 0.01f;
        s.config.momentum = cases[k].momentum;
        for (int backend = 0; backend < 2; ++backend) {
            pbd_solver *sv = create(&s.model, &s.config, (pbd_backend_kind)backend, 0);
            pbd_body_stats a = stats0(sv);
            step(sv, 300);
            pbd_body_stats b = stats0(sv);
            double loss = 1.0 - norm3(b.l) / norm3(a.l);
            print_message("%s damping, momentum %s, %s: |L| lost %.3g%%, KE %.4g -> %.4g\n",
                          cases[k].kind == PBD_DAMPING_POINT ? "point" : "rigid",
                          cases[k].momentum ? "on" : "off", backend ? "cl" : "cpu", 100.0 * loss,
                          a.kinetic_energy, b.kinetic_energy);
            if (!(fabs(loss) <= cases[k].max_loss &&
                  (cases[k].min_loss <= 0.0 || loss >= cases[k].min_loss)))
                fail_msg("|L| lost %.4g, expected in [%g, %g]", loss, cases[k].min_loss,
                         cases[k].max_loss);
            pbd_solver_destroy(sv);
        }
    }
    pbd_scene_free(&s);
}

/* BDF2 (the survey's second-order velocity update) runs on both backends to the same state
 * (the same bits on CPU devices, 1e-4 of the scene's size on GPUs: pbd_test_exact), and
 * keeps L with the correction. */
static void bdf2(void **state)
{
    (void)state;
    pbd_scene s = {0};
    load("spinning_box.json", &s);
    s.config.velocity_update = PBD_VELOCITY_BDF2;
    pbd_float4 *x[2], *v[2];
    int n = s.model.num_particles;
    for (int backend = 1; backend >= 0; --backend) { /* the device first */
        pbd_solver *sv = create(&s.model, &s.config, (pbd_backend_kind)backend, 0);
        pbd_body_stats a = stats0(sv);
        step(sv, 100);
        pbd_body_stats b = stats0(sv);
        assert_true(dist3(a.l, b.l) / norm3(a.l) < 1e-5);
        x[backend] = malloc((size_t)n * sizeof(pbd_float4));
        v[backend] = malloc((size_t)n * sizeof(pbd_float4));
        pbd_error err = {0};
        assert_int_equal(pbd_solver_read(sv, x[backend], v[backend], &err), PBD_OK);
        pbd_solver_destroy(sv);
    }
    double dx = 0.0;
    for (int i = 0; i < n; ++i)
        dx = fmax(dx, fabs((double)x[0][i].x - x[1][i].x) + fabs((double)x[0][i].y - x[1][i].y) +
                          fabs((double)x[0][i].z - x[1][i].z));
    print_message("BDF2: max |x_cpu - x_cl| = %.3g\n", dx);
    assert_true(dx <= (device_exact ? 0.0 : 1e-4 * pbd_model_extent(&s.model)));
    if (device_exact)
        assert_int_equal(memcmp(v[0], v[1], (size_t)n * sizeof(pbd_float4)), 0);
    for (int b = 0; b < 2; ++b) {
        free(x[b]);
        free(v[b]);
    }
    pbd_scene_free(&s);
}

/* Adds a free soft box of cells^3 cells (XPBD compliance 1e-3) at (x, y, 0), moving with v
 * and spinning with w. */
static void add_box(pbd_model *m, int cells, float x, float y, const float v[3], const float w[3])
{
    pbd_error err = {0};
    pbd_tet_box_desc box = pbd_tet_box_desc_default();
    box.cells[0] = box.cells[1] = box.cells[2] = cells;
    box.center[0] = x;
    box.center[1] = y;
    box.common.compliance = 1e-3f;
    for (int k = 0; k < 3; ++k) {
        box.common.velocity[k] = v[k];
        box.common.angular_velocity[k] = w[k];
    }
    assert_int_equal(pbd_scene_add_tet_box(m, &box, &err), PBD_OK);
}

/* Many free bodies whose sizes and starts are not multiples of 8 (the CPU devices' lanes:
 * segment tails, groups of 8 straddling two bodies), with `big` one more of two reduction
 * segments (the solve outside the velocity update): every body keeps P and L to 1e-5
 * relative over 100 frames with the correction, and loses L measurably without it. */
static void odd_bodies(pbd_backend_kind backend, int big, pbd_float4 *x_out)
{
    pbd_model m = {0};
    pbd_error err = {0};
    const int cells[] = {2, 3, 4, 2, 3, 10};
    int nb = big ? 6 : 5;
    for (int b = 0; b < nb; ++b)
        add_box(&m, cells[b], 3.0f * (float)b, 50.0f,
                (const float[3]){0.0f, 0.0f, 0.1f * (float)(b + 1)},
                (const float[3]){1.0f + (float)b, 2.0f, 0.0f});
    pbd_config cfg = pbd_config_default();
    cfg.gravity[1] = 0.0f;
    double worst_on = 0.0, worst_off = 0.0;
    for (int on = 1; on >= 0; --on) {
        cfg.momentum = on;
        pbd_solver *sv = create(&m, &cfg, backend, 0);
        pbd_body_stats a[6], z[6];
        assert_int_equal(pbd_solver_stats(sv, a, &err), PBD_OK);
        step(sv, 100);
        assert_int_equal(pbd_solver_stats(sv, z, &err), PBD_OK);
        if (on && x_out)
            assert_int_equal(pbd_solver_read(sv, x_out, NULL, &err), PBD_OK);
        pbd_solver_destroy(sv);
        for (int b = 0; b < nb; ++b) {
            double e =
                fmax(dist3(a[b].p, z[b].p) / norm3(a[b].p), dist3(a[b].l, z[b].l) / norm3(a[b].l));
            if (on)
                worst_on = fmax(worst_on, e);
            else
                worst_off = fmax(worst_off, e);
        }
    }
    print_message("%s, %d bodies: worst relative change of P or L over 100 frames %.3g with the "
                  "correction, %.3g without\n",
                  backend_name(backend), nb, worst_on, worst_off);
    assert_true(worst_on < 1e-5);
    assert_true(worst_off > 1e-3);
    pbd_model_free(&m);
}

static void odd_bodies_cpu(void **state)
{
    (void)state;
    odd_bodies(PBD_BACKEND_CPU, 1, NULL);
}

/* The same on the device, whose positions must also be the CPU reference's (the same bits on
 * CPU devices, 1e-6 of the scene's size on GPUs: pbd_test_exact): the correction keeps
 * whatever momenta its own sums say, so a sum that drops or repeats particles shows only
 * against the reference. */
static void odd_bodies_cl(void **state)
{
    (void)state;
    for (int big = 0; big < 2; ++big) {
        const int n = big ? 27 + 64 + 125 + 27 + 64 + 1331 : 27 + 64 + 125 + 27 + 64;
        pbd_float4 *xc = malloc((size_t)n * sizeof *xc), *xg = malloc((size_t)n * sizeof *xg);
        assert_non_null(xc);
        assert_non_null(xg);
        odd_bodies(PBD_BACKEND_CL, big, xg); /* the device first */
        odd_bodies(PBD_BACKEND_CPU, big, xc);
        double d = 0.0;
        for (int i = 0; i < n; ++i)
            d = fmax(d, fabs((double)xc[i].x - xg[i].x) + fabs((double)xc[i].y - xg[i].y) +
                            fabs((double)xc[i].z - xg[i].z));
        print_message("%d bodies: max |x_cpu - x_cl| = %.3g\n", big ? 6 : 5, d);
        assert_true(d <= (device_exact ? 0.0 : 1e-6 * 15.0)); /* the bodies span about 15 m */
        free(xc);
        free(xg);
    }
}

/* The device and the CPU reference in the device's order of the per-body sums
 * (pbd_solver_sum_layout) give the same bits: tracked momenta, corrections, statistics,
 * positions and velocities, with every path of the fused update (odd-sized bodies, a body
 * of two segments, a floor's collision impulses, BDF2 and rigid damping). On GPUs
 * (pbd_test_exact says why) 1e-9 relative is asked of the momentum records. */
static void same_bits_cl(void **state)
{
    (void)state;
    pbd_error err = {0};
    const int cells[] = {2, 3, 4, 10};
    for (int variant = 0; variant < 3; ++variant) {
        pbd_model m = {0};
        for (int b = 0; b < 4; ++b)
            add_box(
                &m, cells[b], 3.0f * (float)b, variant == 1 ? 0.4f + 0.1f * (float)cells[b] : 50.0f,
                (const float[3]){0.0f, -1.0f, 0.0f}, (const float[3]){1.0f + (float)b, 0.0f, 2.0f});
        pbd_config cfg = pbd_config_default();
        if (variant == 1) /* a floor: collision impulses in the sums */
            assert_int_equal(pbd_model_add_plane(&m, 0.0f, 1.0f, 0.0f, 0.0f), 0);
        if (variant == 2) {
            cfg.velocity_update = PBD_VELOCITY_BDF2;
            cfg.damping = PBD_DAMPING_RIGID;
            cfg.damping_k = 0.05f;
        }
        const int n = m.num_particles;
        pbd_solver *sv[2];
        sv[1] = create(&m, &cfg, PBD_BACKEND_CL, 0);
        pbd_solver_desc desc = {.backend = PBD_BACKEND_CPU, .sums = pbd_solver_sum_layout(sv[1])};
        assert_int_equal(test_solver_create(&m, &cfg, &desc, &sv[0], &err), PBD_OK);
        pbd_body_momentum mo[2][4];
        pbd_body_stats st[2][4];
        pbd_float4 *xv[2][2];
        for (int k = 0; k < 2; ++k) {
            step(sv[k], 40);
            assert_int_equal(pbd_solver_momentum(sv[k], mo[k], &err), PBD_OK);
            assert_int_equal(pbd_solver_stats(sv[k], st[k], &err), PBD_OK);
            xv[k][0] = malloc((size_t)n * sizeof(pbd_float4));
            xv[k][1] = malloc((size_t)n * sizeof(pbd_float4));
            assert_non_null(xv[k][0]);
            assert_non_null(xv[k][1]);
            assert_int_equal(pbd_solver_read(sv[k], xv[k][0], xv[k][1], &err), PBD_OK);
        }
        int exact = pbd_test_exact(sv[1]);
        double worst = 0.0;
        long differ = 0;
        for (int b = 0; b < 4; ++b) {
            const double *c = &mo[0][b].p_r[0], *g = &mo[1][b].p_r[0];
            for (int q = 0; q < 15; ++q) { /* p_r, l_r, v_cor, w_cor, com */
                differ += c[q] != g[q];
                worst = fmax(worst, fabs(c[q] - g[q]) / fmax(fabs(c[q]), 1e-3));
            }
            differ += memcmp(&st[0][b], &st[1][b], sizeof st[0][b]) != 0;
        }
        for (int i = 0; i < n; ++i)
            for (int k = 0; k < 2; ++k)
                differ += memcmp(&xv[0][k][i], &xv[1][k][i], sizeof(pbd_float4)) != 0;
        print_message("variant %d (%s sums): %ld values differ, worst relative difference of the "
                      "momentum records %.3g\n",
                      variant, pbd_solver_sum_layout(sv[1]) == PBD_SUMS_LANES ? "lanes" : "tree",
                      differ, worst);
        assert_true(mo[0][3].w_cor[0] != 0.0); /* there was something to correct */
        if (exact)
            assert_int_equal(differ, 0);
        else
            assert_true(worst <= 1e-9);
        for (int k = 0; k < 2; ++k) {
            free(xv[k][0]);
            free(xv[k][1]);
            pbd_solver_destroy(sv[k]);
        }
        pbd_model_free(&m);
    }
}

/* Positions and velocities of a run of `frames` frames (malloc'd, 2 x num_particles). */
static pbd_float4 *run_state(const pbd_model *m, const pbd_config *c, pbd_backend_kind backend,
                             int frames, pbd_body_stats *st)
{
    pbd_solver *sv = create(m, c, backend, 0);
    step(sv, frames);
    int n = m->num_particles;
    pbd_float4 *xv = malloc(2 * (size_t)n * sizeof *xv);
    pbd_error err = {0};
    assert_non_null(xv);
    assert_int_equal(pbd_solver_read(sv, xv, xv + n, &err), PBD_OK);
    assert_int_equal(pbd_solver_stats(sv, st, &err), PBD_OK);
    pbd_solver_destroy(sv);
    return xv;
}

/* A body's own damping is the run's damping for that body alone. Three free boxes, moving and
 * spinning alike: point damping of its own (k = 0.02, and no correction, which would restore
 * what it takes), rigid damping of its own (k = 0.1) and the run's (none). Each box gets, bit
 * for bit, what it gets where the run damps every box its way; point damping leaves
 * (1 - k)^substeps of the momentum, rigid damping and none (with the correction) P and L. The
 * device matches the CPU reference (pbd_test_exact). With `floor`, the boxes fall onto a
 * bouncing floor (the update with restitution), and only the bits are compared. */
static void body_damping_case(int floor)
{
    pbd_model m = {0};
    const float v[3] = {1.0f, 0.5f, 0.0f}, w[3] = {0.0f, 1.0f, 3.0f};
    for (int b = 0; b < 3; ++b)
        add_box(&m, 3, 2.0f * (float)b, 0.0f, v, w);
    const pbd_damping_kind kind[3] = {PBD_DAMPING_POINT, PBD_DAMPING_RIGID, PBD_DAMPING_NONE};
    const float k[3] = {0.02f, 0.1f, 0.0f};
    pbd_config c = pbd_config_default();
    c.gravity[1] = floor ? -9.81f : 0.0f;
    c.substeps = 2;
    if (floor) {
        int p = pbd_model_add_plane(&m, 0.0f, 1.0f, 0.0f, -0.7f);
        assert_true(p >= 0);
        m.colliders[p].restitution = 0.5f;
    }
    m.bodies[0].momentum = 0;
    const int frames = floor ? 40 : 20, substeps = frames * c.substeps;
    pbd_body_stats st0[3], st[3], one[3];
    pbd_float4 *ref = NULL;
    for (int backend = PBD_BACKEND_CL; backend <= PBD_BACKEND_CPU; ++backend) { /* device first */
        for (int b = 0; b < 2; ++b) {
            m.bodies[b].damping = kind[b];
            m.bodies[b].damping_k = k[b];
        }
        pbd_float4 *mixed = run_state(&m, &c, (pbd_backend_kind)backend, 0, st0);
        free(mixed);
        mixed = run_state(&m, &c, (pbd_backend_kind)backend, frames, st);
        int n = m.num_particles;
        if (backend == PBD_BACKEND_CL)
            ref = mixed;
        else if (device_exact)
            assert_int_equal(memcmp(ref, mixed, 2 * (size_t)n * sizeof *ref), 0);
        for (int b = 0; b < 3; ++b) {
            /* every box damped as box b, by the run */
            pbd_config cb = c;
            cb.damping = kind[b];
            cb.damping_k = k[b];
            for (int j = 0; j < 3; ++j) {
                m.bodies[j].damping = -1;
                m.bodies[j].damping_k = -1.0f;
            }
            pbd_float4 *alike = run_state(&m, &cb, (pbd_backend_kind)backend, frames, one);
            const pbd_body *bd = &m.bodies[b];
            for (int i = bd->first; i < bd->first + bd->count; ++i)
                if (memcmp(&alike[i], &mixed[i], sizeof *alike) ||
                    memcmp(&alike[n + i], &mixed[n + i], sizeof *alike))
                    fail_msg("%s: box %d, particle %d: (%.9g, %.9g, %.9g) with its own damping, "
                             "(%.9g, %.9g, %.9g) with the run's",
                             backend_name((pbd_backend_kind)backend), b, i, (double)mixed[i].x,
                             (double)mixed[i].y, (double)mixed[i].z, (double)alike[i].x,
                             (double)alike[i].y, (double)alike[i].z);
            free(alike);
            for (int j = 0; j < 2; ++j) {
                m.bodies[j].damping = kind[j];
                m.bodies[j].damping_k = k[j];
            }
            if (floor) {
                /* held by the floor (falling freely it would be 1.85 m down by now) */
                assert_true(st[b].com[1] > -0.5);
                continue;
            }
            double p_ratio = norm3(st[b].p) / norm3(st0[b].p);
            double want = kind[b] == PBD_DAMPING_POINT ? pow(1.0 - k[b], substeps) : 1.0;
            double l_drift = dist3(st[b].l, st0[b].l) / norm3(st0[b].l);
            print_message("%s: box %d: |P| x %.6f (expected %.6f), L moved %.3g of |L|\n",
                          backend_name((pbd_backend_kind)backend), b, p_ratio, want, l_drift);
            assert_true(fabs(p_ratio - want) <= 1e-5);
            if (kind[b] != PBD_DAMPING_POINT)
                assert_true(l_drift <= 1e-5);
            else
                assert_true(l_drift >= 0.1); /* point damping slows the spin too */
        }
        if (backend == PBD_BACKEND_CPU)
            free(mixed);
    }
    free(ref);
    pbd_model_free(&m);
}

static void body_damping(void **state)
{
    (void)state;
    body_damping_case(0);
    body_damping_case(1);
}

/* Reading the state between frames applies the pending momentum correction; the results
 * must not depend on it. A spinning box thrown onto a floor, bouncing (restitution 0.6, the
 * update that reads the velocity each substep began with) or not (the CPU variant's fused
 * update), with first-order and BDF2 updates, with and without rigid damping: 12 frames in
 * one call against 12 calls of a frame, each followed by a read, the same bits on the CPU
 * reference and on the device's and the GPU kernels. (The bounce read the velocity without
 * the correction unless a read had applied it, so the two runs differed.) */
static void reads_between_frames(void **state)
{
    (void)state;
    pbd_model m = {0};
    pbd_error err = {0};
    pbd_tet_box_desc d = pbd_tet_box_desc_default();
    d.cells[0] = d.cells[1] = d.cells[2] = 3;
    d.size[0] = d.size[1] = d.size[2] = 0.3f;
    d.center[1] = 0.3f;
    d.common.velocity[0] = 0.5f;
    d.common.velocity[1] = -2.0f;
    d.common.angular_velocity[0] = 2.0f;
    d.common.angular_velocity[2] = 3.0f;
    d.common.compliance = 1e-4f;
    assert_int_equal(pbd_scene_add_tet_box(&m, &d, &err), PBD_OK);
    assert_int_equal(pbd_model_add_plane(&m, 0.0f, 1.0f, 0.0f, 0.0f), 0);
    const int n = m.num_particles;
    const size_t bytes = 2 * (size_t)n * sizeof(pbd_float4);
    pbd_float4 *a = malloc(bytes), *b = malloc(bytes);
    assert_non_null(a && b);
    for (int run = 0; run < 24; ++run) {
        pbd_config c = pbd_config_default();
        c.substeps = 4;
        c.iterations = 4;
        c.velocity_update = run & 1 ? PBD_VELOCITY_BDF2 : PBD_VELOCITY_FIRST_ORDER;
        c.damping = run & 2 ? PBD_DAMPING_RIGID : PBD_DAMPING_NONE;
        c.damping_k = run & 2 ? 0.05f : 0.0f;
        int bounce = !(run & 4), kernels = run / 8; /* the reference, the device's, GPU */
        m.colliders[0].restitution = bounce ? 0.6f : 0.0f;
        pbd_backend_kind backend = kernels == 0 ? PBD_BACKEND_CPU : PBD_BACKEND_CL;
        pbd_solver_desc desc = {.backend = backend,
                                .variant = kernels < 2 ? PBD_VARIANT_AUTO : PBD_VARIANT_GPU};
        pbd_solver *whole = NULL, *framed = NULL;
        assert_int_equal(test_solver_create(&m, &c, &desc, &whole, &err), PBD_OK);
        assert_int_equal(test_solver_create(&m, &c, &desc, &framed, &err), PBD_OK);
        assert_int_equal(pbd_solver_step(whole, 12, &err), PBD_OK);
        double low = 1e9, rise = -1e9; /* over the frames: the lowest particle, the most
                                          upward mean velocity */
        for (int f = 0; f < 12; ++f) {
            assert_int_equal(pbd_solver_step(framed, 1, &err), PBD_OK);
            assert_int_equal(pbd_solver_read(framed, b, b + n, &err), PBD_OK);
            double vy = 0.0;
            for (int i = 0; i < n; ++i) {
                low = fmin(low, (double)b[i].y);
                vy += (double)b[n + i].y / n;
            }
            rise = fmax(rise, vy);
        }
        assert_int_equal(pbd_solver_read(whole, a, a + n, &err), PBD_OK);
        long differ = 0;
        for (int i = 0; i < 2 * n; ++i)
            differ += memcmp(&a[i], &b[i], sizeof a[i]) != 0;
        print_message("%s, %s kernels, %s%s%s: %ld of %d values differ; lowest particle "
                      "%.4f m, rising at %.3f m/s\n",
                      backend_name(backend), kernels < 2 ? "the device's" : "GPU",
                      run & 1 ? "BDF2" : "first order", run & 2 ? ", rigid damping" : "",
                      bounce ? ", bouncing" : "", differ, 2 * n, low, rise);
        assert_int_equal(differ, 0);
        /* it reached the floor (it starts 0.15 m above it) and came back up */
        assert_true(low < 0.01 && rise > 0.3);
        pbd_solver_destroy(whole);
        pbd_solver_destroy(framed);
    }
    free(a);
    free(b);
    pbd_model_free(&m);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(spinning_box_cpu),
    pbd_device_test(spinning_box_cl),
    pbd_device_test(spinning_box_cl_float_sums),
    cmocka_unit_test(gravity_impulse_cpu),
    pbd_device_test(gravity_impulse_cl),
    cmocka_unit_test(floor_bounce_cpu),
    pbd_device_test(floor_bounce_cl),
    pbd_device_test(corrections_agree),
    cmocka_unit_test(singular_inertia_cpu),
    pbd_device_test(singular_inertia_cl),
    pbd_device_test(who_is_corrected),
    pbd_device_test(damping_models),
    pbd_device_test(body_damping),
    pbd_device_test(bdf2),
    pbd_device_test(reads_between_frames),
    cmocka_unit_test(odd_bodies_cpu),
    pbd_device_test(odd_bodies_cl),
    pbd_device_test(same_bits_cl),
};

PBD_TEST_MAIN("momentum", tests)
