/* A program built against an installed pbd only (tests/install_consumer.cmake): two particles
 * of 1 and 3 kg, 2 m apart, joined by one hard distance constraint of rest length 1 m, no
 * gravity, stepped on the CPU backend. The constraint must pull them towards 1 m, and with no
 * external force the total linear momentum (0) must not change. */
#include <math.h>
#include <stdio.h>

#include <pbd.h>

int main(void)
{
    pbd_model m = {0};
    pbd_error err = {0};
    pbd_solver *s = NULL;
    pbd_float4 x[2], v[2];
    if (pbd_model_add_particles(&m, 2, "pair") != 0 || pbd_model_add_distance(&m, 0, 1, 1.0f, 0.0f))
        return 1;
    const float mass[2] = {1.0f, 3.0f};
    for (int i = 0; i < 2; ++i) {
        m.x[i] = (pbd_float4){2.0f * (float)i, 0.0f, 0.0f, 1.0f / mass[i]};
        m.v[i] = (pbd_float4){0.0f, 0.0f, 0.0f, mass[i]};
    }
    pbd_config cfg = pbd_config_default();
    cfg.gravity[1] = 0.0f;
    pbd_solver_desc desc = {.backend = PBD_BACKEND_CPU};
    if (pbd_solver_create(&m, &cfg, &desc, &s, &err) != PBD_OK ||
        pbd_solver_step(s, 5, &err) != PBD_OK || pbd_solver_read(s, x, v, &err) != PBD_OK) {
        fprintf(stderr, "install_consumer: %s\n", err.message);
        return 1;
    }
    double d[3] = {x[1].x - x[0].x, x[1].y - x[0].y, x[1].z - x[0].z};
    double px = mass[0] * v[0].x + mass[1] * v[1].x, py = mass[0] * v[0].y + mass[1] * v[1].y,
           pz = mass[0] * v[0].z + mass[1] * v[1].z;
    double length = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    double p = sqrt(px * px + py * py + pz * pz);
    /* Halfway back to the rest length at least (a hard constraint gets there in one frame). */
    int ok = fabs(length - 1.0) < 0.5 && p <= 1e-6;
    printf("install_consumer: length %.9g m (rest 1, was 2), |momentum| %.3g kg m/s: %s\n", length,
           p, ok ? "ok" : "FAILED");
    pbd_solver_destroy(s);
    pbd_model_free(&m);
    return ok ? 0 : 1;
}
