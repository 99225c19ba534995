/* PNG line plots (app/plot.h): files are read back, and decoded with stb_image, to check what
 * was drawn; failures leave no file behind. */
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

#include "app/plot.h"

#include <stb/stb_image.h>

#define N 200

typedef struct fixture {
    char dir[64];
    char path[128];
    double x[N], a[N], b[N];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "/tmp/pbd_test_plot.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/plot.png", f->dir);
    for (int i = 0; i < N; ++i) {
        f->x[i] = 0.05 * i;
        f->a[i] = 3.0 * exp(-0.4 * f->x[i]);
        f->b[i] = 1.5 + sin(f->x[i]);
    }
    *state = f;
    return 0;
}

/* Removes the directory; it must hold nothing but plot.png (no temporary left over). */
static int teardown(void **state)
{
    fixture *f = *state;
    remove(f->path);
    assert_int_equal(rmdir(f->dir), 0);
    free(f);
    return 0;
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Pixels of exactly `rgb` in an RGB image. */
static long count_rgb(const unsigned char *px, int w, int h, unsigned rgb)
{
    long n = 0;
    for (long i = 0; i < (long)w * h; ++i) {
        unsigned v = (unsigned)px[3 * i] << 16 | (unsigned)px[3 * i + 1] << 8 | px[3 * i + 2];
        n += v == rgb;
    }
    return n;
}

/* Draws p to f->path, which must succeed, and decodes it: RGB pixels (free with
 * stbi_image_free), *w by *h. */
static unsigned char *render(const fixture *f, const pbd_plot *p, int *w, int *h)
{
    pbd_error err = {0};
    assert_int_equal(pbd_plot_png(p, f->path, &err), PBD_OK);
    int comp = 0;
    unsigned char *px = stbi_load(f->path, w, h, &comp, 3);
    assert_non_null(px);
    return px;
}

static pbd_plot two_series(fixture *f, pbd_plot_series s[2])
{
    s[0] = (pbd_plot_series){"decay", f->x, f->a, N, 0xcc0000, 0};
    s[1] = (pbd_plot_series){"sine", f->x, f->b, N, 0, 1}; /* palette[1], 0xd62728 */
    return (pbd_plot){"Two series", "time (s)", "energy (J)", 640, 400, s, 2, 0, 0};
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void png_header(void **state)
{
    fixture *f = *state;
    pbd_plot_series s[2];
    pbd_plot p = two_series(f, s);
    pbd_error err = {0};
    assert_int_equal(pbd_plot_png(&p, f->path, &err), PBD_OK);

    unsigned char head[24];
    FILE *in = fopen(f->path, "rb");
    assert_non_null(in);
    assert_int_equal(fread(head, 1, sizeof head, in), sizeof head);
    fclose(in);
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    assert_memory_equal(head, sig, 8);
    assert_memory_equal(head + 12, "IHDR", 4);
    assert_int_equal(be32(head + 16), 640);
    assert_int_equal(be32(head + 20), 400);

    /* Zero size means the default. */
    p.width = p.height = 0;
    int w = 0, h = 0;
    unsigned char *px = render(f, &p, &w, &h);
    assert_int_equal(w, 900);
    assert_int_equal(h, 560);
    stbi_image_free(px);
}

static void series_colours(void **state)
{
    fixture *f = *state;
    pbd_plot_series s[2];
    pbd_plot p = two_series(f, s);

    int w = 0, h = 0;
    unsigned char *px = render(f, &p, &w, &h);
    assert_int_equal(w, 640);
    assert_int_equal(h, 400);
    long red = count_rgb(px, w, h, 0xcc0000), second = count_rgb(px, w, h, 0xd62728);
    long white = count_rgb(px, w, h, 0xffffff);
    stbi_image_free(px);
    /* Lines 2 px wide across ~500 px of plot: well over 300 pixels each, the dashed one too. */
    assert_true(red > 500);
    assert_true(second > 300);
    assert_true(white > (long)w * h * 6 / 10);
}

static void unwritable_path(void **state)
{
    fixture *f = *state;
    pbd_plot_series s[2];
    pbd_plot p = two_series(f, s);
    char bad[192];
    snprintf(bad, sizeof bad, "%s/no/such/dir/plot.png", f->dir);
    pbd_error err = {0};
    assert_int_equal(pbd_plot_png(&p, bad, &err), PBD_ERR_IO);
    assert_int_equal(err.status, PBD_ERR_IO);
    assert_non_null(strstr(err.message, bad));
    assert_non_null(strstr(err.message, "cannot write"));
    assert_false(file_exists(bad));
}

static void nan_point(void **state)
{
    fixture *f = *state;
    pbd_plot_series s[2];
    pbd_plot p = two_series(f, s);
    s[1].label = "bad";
    f->b[12] = NAN;
    pbd_error err = {0};
    assert_int_equal(pbd_plot_png(&p, f->path, &err), PBD_ERR_ARGUMENT);
    assert_non_null(strstr(err.message, f->path));
    assert_non_null(strstr(err.message, "series 'bad' point 12 is not finite"));
    assert_false(file_exists(f->path));

    f->b[12] = 0.0;
    f->x[3] = INFINITY;
    assert_int_equal(pbd_plot_png(&p, f->path, &err), PBD_ERR_ARGUMENT);
    assert_non_null(strstr(err.message, "point 3 is not finite"));
    assert_false(file_exists(f->path));
}

static void bad_arguments(void **state)
{
    fixture *f = *state;
    pbd_plot_series s[2];
    pbd_plot p = two_series(f, s);
    pbd_error err = {0};
    p.num_series = 0;
    assert_int_equal(pbd_plot_png(&p, f->path, &err), PBD_ERR_ARGUMENT);
    assert_non_null(strstr(err.message, "no series"));
    p.num_series = 2;
    s[0].n = 0;
    assert_int_equal(pbd_plot_png(&p, f->path, &err), PBD_ERR_ARGUMENT);
    assert_non_null(strstr(err.message, "series 'decay' has no points"));
    s[0].n = N;
    p.width = 10;
    assert_int_equal(pbd_plot_png(&p, f->path, &err), PBD_ERR_ARGUMENT);
    assert_false(file_exists(f->path));
}

static void constant_series(void **state)
{
    fixture *f = *state;
    for (int i = 0; i < N; ++i)
        f->a[i] = 2.5;
    double one_x = 4.0, one_y = 2.5;
    pbd_plot_series s[2] = {{"flat", f->x, f->a, N, 0x008800, 0},
                            {"one point", &one_x, &one_y, 1, 0x0000cc, 0}};
    pbd_plot p = {"Constant", "t", "y", 0, 0, s, 2, 0, 0};
    int w = 0, h = 0;
    unsigned char *px = render(f, &p, &w, &h);
    long green = count_rgb(px, w, h, 0x008800), blue = count_rgb(px, w, h, 0x0000cc);
    stbi_image_free(px);
    assert_true(green > 500);
    assert_true(blue >= 16); /* the lone point is a dot (and a legend sample) */
}

static void log_axis(void **state)
{
    fixture *f = *state;
    for (int i = 0; i < N; ++i)
        f->a[i] = 1e-7 * pow(10.0, 4.0 * i / (N - 1)); /* four decades */
    f->b[50] = 0.0;                                    /* skipped on a log axis, leaving a gap */
    pbd_plot_series s[2] = {{"|L|", f->x, f->a, N, 0xaa00aa, 0},
                            {"|P|", f->x, f->b, N, 0x00aaaa, 1}};
    pbd_plot p = {"Log", "step", "magnitude", 0, 0, s, 2, 1, 0};
    pbd_error err = {0};
    int w = 0, h = 0;
    unsigned char *px = render(f, &p, &w, &h);
    long purple = count_rgb(px, w, h, 0xaa00aa), cyan = count_rgb(px, w, h, 0x00aaaa);
    stbi_image_free(px);
    assert_true(purple > 500);
    assert_true(cyan > 300);

    /* Nothing positive to draw on a log axis. */
    for (int i = 0; i < N; ++i)
        f->a[i] = f->b[i] = -1.0;
    assert_int_equal(pbd_plot_png(&p, f->path, &err), PBD_ERR_ARGUMENT);
    assert_non_null(strstr(err.message, "logarithmic"));
}

/* Columns of an RGB image holding `rgb` somewhere; *first and *last the outermost of them. */
static int columns_with(const unsigned char *px, int w, int h, unsigned rgb, int *first, int *last)
{
    int n = 0;
    *first = w;
    *last = -1;
    for (int x = 0; x < w; ++x) {
        int hit = 0;
        for (int y = 0; y < h && !hit; ++y) {
            const unsigned char *q = px + 3 * ((long)y * w + x);
            hit = ((unsigned)q[0] << 16 | (unsigned)q[1] << 8 | q[2]) == rgb;
        }
        if (hit) {
            *first = x < *first ? x : *first;
            *last = x;
            n++;
        }
    }
    return n;
}

/* Mean row of the pixels of `rgb` in columns [x0, x1). */
static double mean_row(const unsigned char *px, int w, int h, unsigned rgb, int x0, int x1)
{
    double sum = 0.0;
    long n = 0;
    for (int y = 0; y < h; ++y)
        for (int x = x0; x < x1; ++x) {
            const unsigned char *q = px + 3 * ((long)y * w + x);
            if (((unsigned)q[0] << 16 | (unsigned)q[1] << 8 | q[2]) == rgb) {
                sum += y;
                n++;
            }
        }
    return n ? sum / n : -1.0;
}

static void log_x_axis(void **state)
{
    fixture *f = *state;
    for (int i = 0; i < N; ++i) {
        f->x[i] = 1e3 * pow(10.0, 3.0 * i / (N - 1)); /* 1e3 to 1e6 */
        f->a[i] = f->x[i] * f->x[i];
    }
    pbd_plot_series s[1] = {{"x^2", f->x, f->a, N, 0xaa00aa, 0}};
    pbd_plot p = {"Log-log", "particles", "cost", 0, 0, s, 1, 1, 1};
    pbd_error err = {0};
    int w = 0, h = 0, first = 0, last = 0;
    unsigned char *px = render(f, &p, &w, &h);
    assert_true(count_rgb(px, w, h, 0xaa00aa) > 500);
    /* A straight line corner to corner: the points spread over the width (on a linear x axis
     * most would crowd at the left), and the middle decade-and-a-half sits mid-height. */
    assert_true(columns_with(px, w, h, 0xaa00aa, &first, &last) > w * 3 / 4);
    assert_true(first < w / 6);
    assert_true(last > w * 5 / 6);
    double mid = mean_row(px, w, h, 0xaa00aa, (first + last) / 2 - 20, (first + last) / 2 + 20);
    assert_true(mid > h * 0.4 && mid < h * 0.6);
    stbi_image_free(px);

    /* Non-positive x is skipped, leaving a gap, on a log x axis with a linear y axis too. */
    f->x[0] = -5.0;
    f->x[100] = 0.0;
    assert_int_equal(pbd_plot_png(&p, f->path, &err), PBD_OK);
    p.log_y = 0;
    px = render(f, &p, &w, &h);
    assert_true(count_rgb(px, w, h, 0xaa00aa) > 500);
    stbi_image_free(px);

    /* Nothing positive to draw on a log x axis. */
    remove(f->path);
    for (int i = 0; i < N; ++i)
        f->x[i] = -1.0 * i;
    assert_int_equal(pbd_plot_png(&p, f->path, &err), PBD_ERR_ARGUMENT);
    assert_non_null(strstr(err.message, f->path));
    assert_non_null(strstr(err.message, "no positive x values for a logarithmic axis"));
    assert_false(file_exists(f->path));

    /* Many sorted points are drawn per pixel column of the log-transformed x: the curve covers
     * the width as the same points in reverse order (drawn one by one) do. */
    enum { BIG = 100000 };
    double *x = malloc(2 * BIG * sizeof *x), *y = malloc(2 * BIG * sizeof *y);
    assert_non_null(x);
    assert_non_null(y);
    for (int i = 0; i < BIG; ++i) {
        x[i] = x[2 * BIG - 1 - i] = 4096.0 * pow(2.0, 8.0 * i / (BIG - 1)); /* 4096 to 1048576 */
        y[i] = y[2 * BIG - 1 - i] = 1.0 + 0.5 * sin(log(x[i])) + ((i * 7919) % 13) * 0.002;
    }
    long count[2];
    for (int pass = 0; pass < 2; ++pass) {
        s[0] = (pbd_plot_series){"100k", x + pass * BIG, y + pass * BIG, BIG, 0x3344cc, 0};
        px = render(f, &p, &w, &h);
        count[pass] = count_rgb(px, w, h, 0x3344cc);
        assert_true(columns_with(px, w, h, 0x3344cc, &first, &last) > w * 3 / 4);
        assert_true(first < w / 6);
        assert_true(last > w * 5 / 6);
        stbi_image_free(px);
    }
    assert_true(count[0] > 5000);
    assert_true(labs(count[0] - count[1]) < count[1] / 10);
    free(x);
    free(y);
}

static void many_points(void **state)
{
    fixture *f = *state;
    enum { BIG = 100000 };
    double *x = malloc(BIG * sizeof *x), *y = malloc(BIG * sizeof *y);
    assert_non_null(x);
    assert_non_null(y);
    for (int i = 0; i < BIG; ++i) {
        x[i] = i;
        y[i] = sin(i * 1e-3) + ((i * 7919) % 13) * 0.01; /* wiggles within every column */
    }
    pbd_plot_series s[1] = {{"100k", x, y, BIG, 0x3344cc, 0}};
    pbd_plot p = {"Many points", "step", "y", 0, 0, s, 1, 0, 0};
    int w = 0, h = 0;
    unsigned char *px = render(f, &p, &w, &h);
    assert_true(count_rgb(px, w, h, 0x3344cc) > 5000);
    stbi_image_free(px);
    free(x);
    free(y);
}

static void overwrite(void **state)
{
    fixture *f = *state;
    FILE *old = fopen(f->path, "w");
    assert_non_null(old);
    fputs("not a png\n", old);
    fclose(old);
    pbd_plot_series s[2];
    pbd_plot p = two_series(f, s);
    int w = 0, h = 0;
    unsigned char *px = render(f, &p, &w, &h);
    stbi_image_free(px);
    /* teardown's rmdir fails if a temporary file was left beside it */
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(png_header, setup, teardown),
    cmocka_unit_test_setup_teardown(series_colours, setup, teardown),
    cmocka_unit_test_setup_teardown(unwritable_path, setup, teardown),
    cmocka_unit_test_setup_teardown(nan_point, setup, teardown),
    cmocka_unit_test_setup_teardown(bad_arguments, setup, teardown),
    cmocka_unit_test_setup_teardown(constant_series, setup, teardown),
    cmocka_unit_test_setup_teardown(log_axis, setup, teardown),
    cmocka_unit_test_setup_teardown(log_x_axis, setup, teardown),
    cmocka_unit_test_setup_teardown(many_points, setup, teardown),
    cmocka_unit_test_setup_teardown(overwrite, setup, teardown),
};

PBD_TEST_MAIN("plot", tests)
