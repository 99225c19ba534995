/* Particle contacts: the hash against a brute-force search, momentum through contacts between
 * bodies, a pile that stays apart, run-to-run determinism, and the device against the CPU
 * reference with both kernel variants and both solvers. */
#include <math.h>

#include "solver/solver_impl.h"
#include "test_util.h"

/* A deterministic generator (xorshift32), so a failing cloud can be rebuilt. */
static unsigned next_random(unsigned *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static float uniform(unsigned *s, float lo, float hi)
{
    return lo + (hi - lo) * (float)(next_random(s) >> 8) / 16777216.0f;
}

/* Whether the pair (i, j) on positions p is a contact candidate (within PBD_CONTACT_REACH
 * radii's sums; `touching`: a contact, within the radii's sum): the rules of
 * pbd_contact_search written out plainly. */
static int brute_pair(const pbd_plan *pl, const pbd_model *m, const pbd_float4 *p, int i, int j,
                      int touching)
{
    float ri = pl->particle_radius[i], rj = pl->particle_radius[j], rs = ri + rj;
    int bi = m->body[i], bj = m->body[j];
    if (i == j || !(ri > 0.0f) || !(rj > 0.0f) || (bi == bj && !pl->body_self[bi]))
        return 0;
    if (bi == bj) {
        pbd_float4 a = pl->contact_rest[i], b = pl->contact_rest[j];
        float ex = a.x - b.x, ey = a.y - b.y, ez = a.z - b.z;
        if (ex * ex + ey * ey + ez * ez < rs * rs)
            return 0;
    }
    float ex = p[i].x - p[j].x, ey = p[i].y - p[j].y, ez = p[i].z - p[j].z;
    float l2 = ex * ex + ey * ey + ez * ez, reach = PBD_CONTACT_REACH * rs;
    if (!(p[i].w + p[j].w > 0.0f))
        return 0;
    return touching ? l2 < rs * rs && l2 > 0.0f : l2 < reach * reach;
}

/* Random clouds of four bodies (radii r, f r and none, and 4.5 r or none; the first and the
 * last with self-collision and a rest shape of other random positions), in boxes small enough
 * for crowded cells and large enough for cells that share table entries: every particle's
 * candidates and contacts through the hash are exactly those a search over all pairs finds,
 * and its list holds candidates only, each once. f = 1/2 and no fourth body: one radius class,
 * each particle searching its 27 cells; f = 1/5 and 3/1000 with the fourth: three classes,
 * coarse particles searching finer cells several wide (R = 3), or a class's whole part of
 * the table (R over 128 too). */
static void hash_finds_all_pairs(void **state)
{
    (void)state;
    const int sizes[] = {10, 300, 1000, 3000};
    const float radii[] = {0.01f, 0.05f, 0.2f}, fine[] = {0.5f, 0.2f, 0.003f};
    unsigned seed = 12345u;
    long pairs_total = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; ++si)
        for (size_t ri = 0; ri < sizeof radii / sizeof radii[0]; ++ri) {
            int n = sizes[si];
            float r = radii[ri], side = 0.6f * cbrtf((float)n) * 2.0f * r;
            pbd_model m = {0};
            int quarter = n / 4;
            assert_true(pbd_model_add_particles(&m, quarter, "a") >= 0);
            assert_true(pbd_model_add_particles(&m, quarter, "b") >= 0);
            assert_true(pbd_model_add_particles(&m, quarter, "c") >= 0);
            assert_true(pbd_model_add_particles(&m, n - 3 * quarter, "d") >= 0);
            m.bodies[0].radius = r;
            m.bodies[0].self_collision = 1;
            m.bodies[1].radius = fine[ri] * r;
            m.bodies[3].radius = ri == 0 ? 0.0f : 4.5f * r;
            m.bodies[3].self_collision = ri != 0;
            for (int i = 0; i < n; ++i)
                m.x[i] = (pbd_float4){uniform(&seed, -side, side), uniform(&seed, -side, side),
                                      uniform(&seed, -side, side), i % 7 == 0 ? 0.0f : 1.0f};
            for (int i = 0; i < n; ++i)
                m.bodies[m.body[i]].pinned += m.x[i].w == 0.0f;
            pbd_config cfg = pbd_config_default();
            pbd_plan pl = {0};
            pbd_error err = {0};
            if (pbd_plan_build(&m, &cfg, PBD_VARIANT_GPU, &pl, &err) != PBD_OK)
                fail_msg("%s", err.message);
            assert_int_equal(pl.contacts, 1);
            /* the classes: (f r, r) and none, or f r, r and 4.5 r */
            assert_true(ri == 0 ? pl.grid_r.x == r && pl.grid_r.y == 0.0f
                                : pl.grid_r.x == fine[ri] * r && pl.grid_r.y == r &&
                                      pl.grid_r.z == 4.5f * r && pl.grid_r.w == 0.0f);
            /* each class's part of the table: a power of two, at least its particles */
            int parts = ri == 0 ? 1 : 3, in_part[3] = {n, 0, 0}, size = 0;
            if (ri != 0)
                in_part[0] = 2 * quarter, in_part[1] = quarter, in_part[2] = n - 3 * quarter;
            for (int k = 0; k < PBD_CONTACT_CLASSES; ++k) {
                int mask, base = pbd_grid_part(pl.grid_bits, k, &mask);
                if (k >= parts) {
                    assert_int_equal((pl.grid_bits >> (8 * k)) & 255, 0);
                    continue;
                }
                assert_int_equal(base, size);
                assert_true(mask + 1 >= in_part[k] && mask >= 15 && (mask & (mask + 1)) == 0);
                size += mask + 1;
            }
            assert_int_equal(pl.table_size, size);
            /* the positions now: the rest shape stays the initial one */
            pbd_float4 *p = malloc((size_t)n * sizeof *p);
            int *cell = malloc(4 * (size_t)n * sizeof *cell), *sorted = malloc(n * sizeof *sorted);
            int *fill = malloc((size_t)pl.table_size * sizeof *fill);
            int *start = malloc(((size_t)pl.table_size + 1) * sizeof *start);
            assert_true(p && cell && sorted && fill && start);
            pbd_float4 *x0 = malloc((size_t)n * sizeof *x0);
            assert_non_null(x0);
            for (int i = 0; i < n; ++i) {
                p[i] = (pbd_float4){uniform(&seed, -side, side), uniform(&seed, -side, side),
                                    uniform(&seed, -side, side), m.x[i].w};
                x0[i] = (pbd_float4){p[i].x + uniform(&seed, -r, r), p[i].y, p[i].z, p[i].w};
            }
            pbd_contact_hash_build(&pl, p, cell, fill, start, sorted);
            /* each entry's particles ascending, each particle once */
            assert_int_equal(start[pl.table_size], n);
            for (int h = 0; h < pl.table_size; ++h)
                for (int k = start[h]; k < start[h + 1]; ++k) {
                    assert_int_equal(cell[4 * sorted[k] + 3], h);
                    assert_true(k == start[h] || sorted[k - 1] < sorted[k]);
                }
            long pairs = 0;
            int *other = malloc((size_t)n * PBD_CONTACT_LIST * sizeof *other);
            assert_non_null(other);
            for (int i = 0; i < n; ++i) {
                int want = 0, want_cand = 0, active;
                float o[9];
                for (int j = 0; j < n; ++j) {
                    want += brute_pair(&pl, &m, p, i, j, 1);
                    want_cand += brute_pair(&pl, &m, p, i, j, 0);
                }
                int got =
                    pbd_contact_search(p, pl.contact_rest, pl.particle_radius, m.body, pl.body_self,
                                       cell, start, sorted, pl.grid_bits, pl.grid_inv, pl.grid_r, i,
                                       1, other, &active, 0, p, p, p, NULL, 1.0f, o);
                expect(got == want_cand && active == want,
                       "%d particles, radius %g: particle %d has %d candidates and %d contacts "
                       "through the hash, %d and %d by brute force",
                       n, (double)r, i, got, active, want_cand, want);
                /* a listed particle's contacts through its list and through the cells again
                 * (as one with more than the list holds) are the same bits, friction too,
                 * where its partners list more than the list holds (friction without a
                 * pair's state, as the cells have it) */
                if (got <= PBD_CONTACT_LIST) {
                    float a[9], b[9];
                    int *num = calloc((size_t)n, sizeof *num);
                    int *cand = malloc((size_t)n * sizeof *cand);
                    float *slots = calloc((size_t)n * PBD_CONTACT_LIST, sizeof *slots);
                    assert_true(num && cand && slots);
                    for (int q = 0; q < n; ++q)
                        cand[q] = PBD_CONTACT_LIST + 1;
                    cand[i] = got;
                    const pbd_float4 mat[4] = {{0.5f, 0.3f, 0.0f, 0.0f},
                                               {0.8f, 0.8f, 0.0f, 0.0f},
                                               {-1, -1, -1, 0},
                                               {0.3f, 0.2f, 0.0f, 0.0f}};
                    for (int q = 0; q < n; ++q)
                        num[q] = q % 3;
                    pbd_contacts(p, x0, p, pl.contact_rest, pl.particle_radius, m.body,
                                 pl.body_self, mat, cell, start, sorted, pl.grid_bits, pl.grid_inv,
                                 pl.grid_r, cand, other, num, slots, 1.0f, i, a);
                    for (int q = 0; q < 9; ++q)
                        b[q] = 0.0f;
                    pbd_contact_search(p, pl.contact_rest, pl.particle_radius, m.body, pl.body_self,
                                       cell, start, sorted, pl.grid_bits, pl.grid_inv, pl.grid_r, i,
                                       0, NULL, &active, 1, p, x0, mat, num, 1.0f, b);
                    expect(memcmp(a, b, sizeof a) == 0, "particle %d: list and cells differ", i);
                    free(num);
                    free(cand);
                    free(slots);
                }
                /* the listed ones are candidates, each once */
                for (int k = 0; k < got && k < PBD_CONTACT_LIST; ++k) {
                    int j = other[i * PBD_CONTACT_LIST + k];
                    expect(brute_pair(&pl, &m, p, i, j, 0), "particle %d lists %d", i, j);
                    for (int q = 0; q < k; ++q)
                        expect(other[i * PBD_CONTACT_LIST + q] != j, "%d listed twice", j);
                }
                pairs += want;
            }
            free(other);
            free(x0);
            pairs_total += pairs;
            free(p);
            free(cell);
            free(sorted);
            free(fill);
            free(start);
            pbd_plan_free(&pl);
            pbd_model_free(&m);
        }
    print_message("%ld contacts found by both\n", pairs_total / 2);
    assert_true(pairs_total > 1000); /* the clouds are crowded enough to say something */
}

/* Two soft cubes (a Neo-Hookean one and one of edges and volumes), no gravity, one thrown
 * off-centre and spinning at the other, with friction between them: with momentum
 * preservation the pair's total P and L (about the origin) stay as they were to 1e-5
 * relative, while the struck cube takes a good part of the momentum. */
static const char two_cubes[] =
    "{\"dt\": 0.016666666666666666, \"substeps\": 8, \"iterations\": 4, \"solver\": \"%s\", "
    "\"gravity\": [0, 0, 0], \"bodies\": ["
    "{\"type\": \"tet_box\", \"cells\": [3, 3, 3], \"size\": [0.3, 0.3, 0.3], \"center\": "
    "[-0.5, 0.1, 0], \"density\": 500, \"young_modulus\": 40000, \"poisson_ratio\": 0.4, "
    "\"velocity\": [2, 0, 0.2], \"angular_velocity\": [0, 1, 2], \"particle_radius\": 0.05, "
    "\"friction\": 0.6},"
    "{\"type\": \"tet_box\", \"cells\": [3, 3, 3], \"size\": [0.3, 0.3, 0.3], \"center\": "
    "[0.2, -0.05, 0.05], \"density\": 800, \"volume\": true, \"particle_radius\": 0.05, "
    "\"friction\": 0.4, \"kinetic_friction\": 0.3}]}";

static void totals(const pbd_body_stats *st, int n, double *p, double *l)
{
    for (int q = 0; q < 3; ++q)
        p[q] = l[q] = 0.0;
    for (int b = 0; b < n; ++b) {
        const double *c = st[b].com, *pb = st[b].p;
        double cross[3] = {c[1] * pb[2] - c[2] * pb[1], c[2] * pb[0] - c[0] * pb[2],
                           c[0] * pb[1] - c[1] * pb[0]};
        for (int q = 0; q < 3; ++q) {
            p[q] += pb[q];
            l[q] += st[b].l[q] + cross[q];
        }
    }
}

static double norm3(const double *a)
{
    return sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
}

static void momentum_through_contacts(pbd_backend_kind backend)
{
    /* Gauss-Seidel: the Jacobi average of the distance constraints moves a body's centre of
     * mass by more than its momentum says, which turns its c x P about the origin whether
     * or not it touches anything (1e-5 relative over these frames, without contacts). */
    for (int jacobi = 0; jacobi < 1; ++jacobi) {
        char json[2048];
        snprintf(json, sizeof json, two_cubes, jacobi ? "jacobi" : "gs");
        pbd_scene sc = {0};
        pbd_error err = {0};
        assert_int_equal(pbd_scene_parse(json, "two_cubes", &sc, &err), PBD_OK);
        pbd_solver_desc desc = {.backend = backend};
        pbd_solver *sv = NULL;
        assert_int_equal(test_solver_create(&sc.model, &sc.config, &desc, &sv, &err), PBD_OK);
        pbd_body_stats st0[2], st1[2];
        double p0[3], l0[3], p1[3], l1[3];
        assert_int_equal(pbd_solver_stats(sv, st0, &err), PBD_OK);
        assert_int_equal(pbd_solver_step(sv, 40, &err), PBD_OK);
        assert_int_equal(pbd_solver_stats(sv, st1, &err), PBD_OK);
        totals(st0, 2, p0, l0);
        totals(st1, 2, p1, l1);
        double dp[3], dl[3];
        for (int q = 0; q < 3; ++q)
            dp[q] = p1[q] - p0[q], dl[q] = l1[q] - l0[q];
        double ep = norm3(dp) / norm3(p0), el = norm3(dl) / norm3(l0);
        double struck = norm3(st1[1].p) / norm3(p0);
        print_message("%s: |dP|/|P| = %.3g, |dL|/|L| = %.3g; the struck cube has %.3g of |P|\n",
                      jacobi ? "jacobi" : "gs", ep, el, struck);
        expect(struck > 0.3, "the struck cube took %.3g of the momentum", struck);
        expect(ep <= 1e-5 && el <= 1e-5, "|dP|/|P| = %.3g, |dL|/|L| = %.3g", ep, el);
        pbd_solver_destroy(sv);
        pbd_scene_free(&sc);
    }
}

static void momentum_through_contacts_cpu(void **state)
{
    (void)state;
    momentum_through_contacts(PBD_BACKEND_CPU);
}

static void momentum_through_contacts_cl(void **state)
{
    (void)state;
    momentum_through_contacts(PBD_BACKEND_CL);
}

/* A stiff box on a floor of pinned particles (0.06 m apart, radius 0.05: each of the box's
 * particles lists its partners), the slope tilted into gravity at tan = 0.85 mu_s. With
 * mu_s 0.6 the box must hold as well with mu_k 0.4 as with mu_k 0.6: static friction
 * holds over the substep's passes, not one pass (deciding each pass afresh, the box with
 * mu_k 0.4 slid 90 mm in the second against 17 mm). */
static double slide_on_particles(double mu_k)
{
    char json[65536];
    double tilt = atan(0.85 * 0.6), g = 9.81;
    int len = snprintf(json, sizeof json,
                       "{\"dt\": 0.016666666666666666, \"substeps\": 20, \"iterations\": 4, "
                       "\"momentum\": false, \"gravity\": [%.17g, %.17g, 0], \"bodies\": ["
                       "{\"type\": \"tet_box\", \"cells\": [2, 2, 2], \"size\": [0.2, 0.2, "
                       "0.2], \"center\": [0, 0.1501, 0], \"mass\": 1, \"compliance\": 0, "
                       "\"particle_radius\": 0.05, \"friction\": 0.6, \"kinetic_friction\": "
                       "%g}, {\"type\": \"particles\", \"particle_radius\": 0.05, "
                       "\"friction\": 0.6, \"kinetic_friction\": %g, \"positions\": [",
                       g * sin(tilt), -g * cos(tilt), mu_k, mu_k);
    for (int k = 0; k < 21 * 21; ++k)
        len += snprintf(json + len, sizeof json - (size_t)len, "%s[%g, -0.05, %g]", k ? ", " : "",
                        0.06 * (k % 21 - 10), 0.06 * (k / 21 - 10));
    len += snprintf(json + len, sizeof json - (size_t)len, "], \"pinned\": [");
    for (int k = 0; k < 21 * 21; ++k)
        len += snprintf(json + len, sizeof json - (size_t)len, "%s%d", k ? ", " : "", k);
    snprintf(json + len, sizeof json - (size_t)len, "]}]}");
    pbd_scene sc = {0};
    pbd_error err = {0};
    expect(pbd_scene_parse(json, "slope", &sc, &err) == PBD_OK, "%s", err.message);
    pbd_solver_desc desc = {.backend = PBD_BACKEND_CPU};
    pbd_solver *sv = NULL;
    assert_int_equal(pbd_solver_create(&sc.model, &sc.config, &desc, &sv, &err), PBD_OK);
    pbd_body_stats st0[2], st1[2];
    assert_int_equal(pbd_solver_stats(sv, st0, &err), PBD_OK);
    assert_int_equal(pbd_solver_step(sv, 60, &err), PBD_OK);
    assert_int_equal(pbd_solver_stats(sv, st1, &err), PBD_OK);
    pbd_solver_destroy(sv);
    pbd_scene_free(&sc);
    return st1[0].com[0] - st0[0].com[0];
}

static void friction_between_bodies(void **state)
{
    (void)state;
    double same = slide_on_particles(0.6), lower = slide_on_particles(0.4);
    print_message("tan = 0.85 mu_s: the box slides %.4g m with mu_k 0.6, %.4g m with 0.4\n", same,
                  lower);
    expect(same < 0.03, "mu_k = mu_s: the box slid %.4g m", same);
    expect(lower < 1.25 * same + 0.002, "mu_k 0.4: the box slid %.4g m, against %.4g m", lower,
           same);
}

/* A pile: 27 small soft cubes with friction dropped in a 3 x 3 x 3 stack with gaps onto a
 * floor with friction. After 1.5 s, when it has landed and tumbled, no two particles of
 * different cubes are closer than 90 % of their radii's sum. */
static void pile_stays_apart(void **state)
{
    (void)state;
    char json[16384];
    int len = snprintf(json, sizeof json,
                       "{\"dt\": 0.016666666666666666, \"substeps\": 8, \"iterations\": 6, "
                       "\"planes\": [{\"normal\": [0, 1, 0], \"offset\": 0, \"friction\": "
                       "0.8}], \"bodies\": [");
    for (int k = 0; k < 27; ++k)
        len += snprintf(json + len, sizeof json - (size_t)len,
                        "%s{\"type\": \"tet_box\", \"cells\": [2, 2, 2], \"size\": [0.2, 0.2, "
                        "0.2], \"center\": [%g, %g, %g], \"density\": 500, \"young_modulus\": "
                        "50000, \"poisson_ratio\": 0.4, \"particle_radius\": 0.05}",
                        k ? ", " : "", -0.31 + 0.31 * (k % 3) + 0.02 * (k / 9), 0.2 + 0.3 * (k / 9),
                        -0.31 + 0.31 * (k / 3 % 3));
    snprintf(json + len, sizeof json - (size_t)len, "]}");
    pbd_scene sc = {0};
    pbd_error err = {0};
    assert_int_equal(pbd_scene_parse(json, "pile", &sc, &err), PBD_OK);
    pbd_solver_desc desc = {.backend = PBD_BACKEND_CPU};
    pbd_solver *sv = NULL;
    assert_int_equal(pbd_solver_create(&sc.model, &sc.config, &desc, &sv, &err), PBD_OK);
    assert_int_equal(pbd_solver_step(sv, 90, &err), PBD_OK);
    int n = sc.model.num_particles;
    pbd_float4 *x = malloc((size_t)n * sizeof *x);
    assert_non_null(x);
    assert_int_equal(pbd_solver_read(sv, x, NULL, &err), PBD_OK);
    double worst = 1e30, top = 0.0;
    for (int i = 0; i < n; ++i) {
        top = fmax(top, x[i].y);
        for (int j = i + 1; j < n; ++j) {
            if (sc.model.body[i] == sc.model.body[j])
                continue;
            double ex = x[i].x - x[j].x, ey = x[i].y - x[j].y, ez = x[i].z - x[j].z;
            worst = fmin(worst, sqrt(ex * ex + ey * ey + ez * ez) / 0.1);
        }
    }
    print_message("closest particles of two cubes: %.4g of their radii's sum; top %.3g m\n", worst,
                  top);
    expect(top < 0.75, "the pile has landed (its top at %.3g m)", top);
    expect(worst >= 0.9, "closest pair at %.4g of the radii's sum", worst);
    free(x);
    pbd_solver_destroy(sv);
    pbd_scene_free(&sc);
}

/* The scenes of these tests: the two cubes (with a floor and gravity too), and a cloth that
 * falls in folds onto itself with self-collision. */
static const char folding_cloth[] =
    "{\"dt\": 0.016666666666666666, \"substeps\": 4, \"iterations\": 6, \"solver\": \"%s\", "
    "\"spheres\": [{\"center\": [0, 0, 0], \"radius\": 0.2}], \"bodies\": [{\"type\": "
    "\"cloth\", \"resolution\": [16, 16], \"size\": [1, 1], \"center\": [0.1, 0.4, 0], "
    "\"mass\": 0.5, \"self_collision\": true}, {\"type\": \"tet_box\", \"cells\": [2, 2, 2], "
    "\"size\": [0.2, 0.2, 0.2], \"center\": [0, 0.8, 0], \"density\": 300, \"young_modulus\": "
    "30000, \"poisson_ratio\": 0.3, \"particle_radius\": 0.04}]}";

static const char *const scene_names[] = {"two cubes", "folding cloth", "crowded cubes",
                                          "cloth 0.03 m, box 0.08 m", "cloth 0.012 m, box 0.1 m"};
#define CONTACT_SCENES 5

/* 0: the two cubes; 1: the folding cloth; 2: the two cubes with radii large enough that
 * particles have more candidates than their list holds (0.18 m, 1.8 times the spacing: up
 * to 36 candidates, 128 times more than 32 in 50 frames); 3 and 4: the folding cloth with
 * radii in two classes, the box's particles searching the cloth's cells two wide (5 x 5
 * rows of 5), or the cloth's whole part of the table. */
static void scene_for(int which, int jacobi, pbd_scene *sc)
{
    char json[4096];
    snprintf(json, sizeof json, which == 1 || which >= 3 ? folding_cloth : two_cubes,
             jacobi ? "jacobi" : "gs");
    for (char *r = json; which == 2 && (r = strstr(r, "\"particle_radius\": 0.05")) != NULL;)
        memcpy(r + strlen("\"particle_radius\": "), "0.18", 4);
    if (which >= 3) {
        char *r = strstr(json, "\"particle_radius\": 0.04}");
        assert_non_null(r);
        memcpy(r + strlen("\"particle_radius\": "), which == 3 ? "0.08" : "0.10", 4);
        const char *self = "\"self_collision\": true}";
        r = strstr(json, self);
        assert_non_null(r);
        char rest[4096];
        snprintf(rest, sizeof rest, "%s", r + strlen(self));
        snprintf(r, sizeof json - (size_t)(r - json),
                 "\"self_collision\": true, "
                 "\"particle_radius\": %s}%s",
                 which == 3 ? "0.03" : "0.012", rest);
    }
    pbd_error err = {0};
    assert_int_equal(pbd_scene_parse(json, "contacts", sc, &err), PBD_OK);
}

/* A body with self-collision and no radius takes half its shortest distance constraint: the
 * folding cloth's spacing (1 m over 15 cells) halved; a given radius stays. */
static void default_radius(void **state)
{
    (void)state;
    pbd_scene sc = {0};
    scene_for(1, 0, &sc);
    assert_int_equal(sc.model.num_bodies, 2);
    assert_near(sc.model.bodies[0].radius, 0.5 / 15.0, 1e-7, "the cloth's default radius");
    assert_int_equal(sc.model.bodies[0].self_collision, 1);
    assert_near(sc.model.bodies[1].radius, 0.04, 1e-9, "the box's radius");
    assert_int_equal(sc.model.bodies[1].self_collision, 0);
    pbd_scene_free(&sc);
}

/* Contacts cost nothing where no body asks for them: the same scene without radii runs no
 * contact stage on the device (counted launches) and as many launches a frame fewer as the
 * contact stages take; with them, the device counts what pbd_step_launches says. */
static void contacts_cost_nothing_off(void **state)
{
    (void)state;
    long planned[2];
    for (int on = 0; on < 2; ++on) {
        pbd_scene sc = {0};
        scene_for(0, 0, &sc);
        for (int b = 0; b < sc.model.num_bodies && !on; ++b)
            sc.model.bodies[b].radius = 0.0f;
        pbd_error err = {0};
        pbd_solver *sv = NULL;
        pbd_solver_desc d = {.backend = PBD_BACKEND_CL, .profile = 1};
        assert_int_equal(test_solver_create(&sc.model, &sc.config, &d, &sv, &err), PBD_OK);
        assert_int_equal(pbd_solver_step(sv, 2, &err), PBD_OK);
        planned[on] = pbd_solver_launches_per_frame(sv);
        const pbd_kernel_time *t = NULL;
        int count = 0;
        long contact = 0, all = 0;
        assert_int_equal(pbd_solver_kernel_times(sv, &t, &count, &err), PBD_OK);
        for (int k = 0; k < count; ++k) {
            all += t[k].launches;
            if (strncmp(t[k].name, "contact", 7) == 0)
                contact += t[k].launches;
        }
        /* two frames of 8 substeps: the hash and lists (6), 4 iterations of 2, the moments */
        long want = on ? 2 * 8 * (6 + 4 * 2 + 1) : 0;
        print_message("contacts %s: %ld contact launches of %ld, %ld a frame by the plan\n",
                      on ? "on" : "off", contact, all, pbd_solver_launches_per_frame(sv));
        expect(contact == want && all > 0, "%ld contact launches, expected %ld", contact, want);
        pbd_solver_destroy(sv);
        pbd_scene_free(&sc);
    }
    expect(planned[1] - planned[0] == 8 * (6 + 4 * 2 + 1), "the plan says %ld and %ld a frame",
           planned[0], planned[1]);
}

/* The device gives the CPU reference's bits (on a CPU device; elsewhere within 1e-4 of the
 * scene's size), both solvers, on the test's kernel variant, and the contacts did act. */
static void contacts_same_bits(void **state)
{
    (void)state;
    for (int which = 0; which < CONTACT_SCENES; ++which)
        for (int jacobi = 0; jacobi < 2; ++jacobi) {
            pbd_scene sc = {0};
            scene_for(which, jacobi, &sc);
            const pbd_model *m = &sc.model;
            int n = m->num_particles;
            pbd_error err = {0};
            pbd_solver *cl = NULL, *cpu = NULL;
            pbd_solver_desc dcl = {.backend = PBD_BACKEND_CL};
            assert_int_equal(test_solver_create(m, &sc.config, &dcl, &cl, &err), PBD_OK);
            pbd_solver_desc dcpu = {.backend = PBD_BACKEND_CPU, .sums = pbd_solver_sum_layout(cl)};
            assert_int_equal(pbd_solver_create(m, &sc.config, &dcpu, &cpu, &err), PBD_OK);
            pbd_float4 *x[2], *v[2];
            pbd_solver *sv[2] = {cpu, cl};
            for (int k = 0; k < 2; ++k) {
                x[k] = malloc((size_t)n * sizeof *x[k]);
                v[k] = malloc((size_t)n * sizeof *v[k]);
                assert_true(x[k] && v[k]);
                assert_int_equal(pbd_solver_step(sv[k], 50, &err), PBD_OK);
                assert_int_equal(pbd_solver_read(sv[k], x[k], v[k], &err), PBD_OK);
            }
            long differ = 0;
            double worst = 0.0;
            for (int i = 0; i < n; ++i) {
                differ += memcmp(&x[0][i], &x[1][i], sizeof x[0][i]) != 0 ||
                          memcmp(&v[0][i], &v[1][i], sizeof v[0][i]) != 0;
                worst = fmax(worst, fabs((double)x[0][i].x - x[1][i].x) +
                                        fabs((double)x[0][i].y - x[1][i].y) +
                                        fabs((double)x[0][i].z - x[1][i].z));
            }
            /* the contacts acted: without them the reference ends elsewhere */
            for (int b = 0; b < m->num_bodies; ++b) {
                sc.model.bodies[b].radius = 0.0f;
                sc.model.bodies[b].self_collision = 0;
            }
            pbd_solver *off = NULL;
            pbd_float4 *xo = malloc((size_t)n * sizeof *xo);
            assert_non_null(xo);
            assert_int_equal(pbd_solver_create(m, &sc.config, &dcpu, &off, &err), PBD_OK);
            assert_int_equal(pbd_solver_step(off, 50, &err), PBD_OK);
            assert_int_equal(pbd_solver_read(off, xo, NULL, &err), PBD_OK);
            double moved = 0.0;
            for (int i = 0; i < n; ++i)
                moved = fmax(moved, fabs((double)xo[i].x - x[0][i].x) +
                                        fabs((double)xo[i].y - x[0][i].y) +
                                        fabs((double)xo[i].z - x[0][i].z));
            pbd_solver_destroy(off);
            free(xo);
            print_message("%s, %s on %s: %ld particles differ, by %.3g at most; contacts "
                          "moved a particle by %.3g m\n",
                          scene_names[which], jacobi ? "jacobi" : "gs", pbd_solver_device_name(cl),
                          differ, worst, moved);
            expect(moved > 0.05, "contacts moved no particle by 5 cm: %.3g", moved);
            if (pbd_test_exact(cl))
                expect(differ == 0, "%ld particles differ", differ);
            else
                expect(worst <= 1e-4 * pbd_model_extent(m), "differ by %.3g", worst);
            for (int k = 0; k < 2; ++k) {
                free(x[k]);
                free(v[k]);
                pbd_solver_destroy(sv[k]);
            }
            pbd_scene_free(&sc);
        }
}

/* Two device runs of the same scene end in the same bits: the hash's atomic scatter is
 * sorted back into one order. */
static void contacts_deterministic(void **state)
{
    (void)state;
    for (int which = 0; which < 3; ++which) {
        pbd_scene sc = {0};
        scene_for(which, which, &sc);
        int n = sc.model.num_particles;
        pbd_float4 *x[2];
        for (int k = 0; k < 2; ++k) {
            pbd_error err = {0};
            pbd_solver *sv = NULL;
            pbd_solver_desc d = {.backend = PBD_BACKEND_CL};
            assert_int_equal(test_solver_create(&sc.model, &sc.config, &d, &sv, &err), PBD_OK);
            x[k] = malloc((size_t)n * sizeof *x[k]);
            assert_non_null(x[k]);
            assert_int_equal(pbd_solver_step(sv, 40, &err), PBD_OK);
            assert_int_equal(pbd_solver_read(sv, x[k], NULL, &err), PBD_OK);
            pbd_solver_destroy(sv);
        }
        expect(memcmp(x[0], x[1], (size_t)n * sizeof *x[0]) == 0, "%s: two runs differ",
               scene_names[which]);
        free(x[0]);
        free(x[1]);
        pbd_scene_free(&sc);
    }
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(hash_finds_all_pairs),        cmocka_unit_test(momentum_through_contacts_cpu),
    pbd_device_test(momentum_through_contacts_cl), cmocka_unit_test(pile_stays_apart),
    cmocka_unit_test(friction_between_bodies),     cmocka_unit_test(default_radius),
    pbd_device_test(contacts_cost_nothing_off),    pbd_device_test(contacts_same_bits),
    pbd_device_test(contacts_deterministic),
};

PBD_TEST_MAIN("contacts", tests)
