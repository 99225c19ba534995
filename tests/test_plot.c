/* Plots (app/plot.h, drawn by PLplot): PNGs are decoded with stb_image to check their size
 * and that each series is drawn where it should be; PDFs are checked for their header and
 * trailer; bad data, a bad path and malformed --stats files are refused with one line and
 * leave no file. Without PLplot in the build every case is a skip. */
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
    char path[128], pdf[128], csv[128];
    double x[N], a[N], b[N];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "/tmp/pbd_test_plot.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/plot.png", f->dir);
    snprintf(f->pdf, sizeof f->pdf, "%s/plot.pdf", f->dir);
    snprintf(f->csv, sizeof f->csv, "%s/stats.csv", f->dir);
    for (int i = 0; i < N; ++i) {
        f->x[i] = 0.05 * i;
        f->a[i] = 3.0 * exp(-0.4 * f->x[i]);
        f->b[i] = 1.5 + sin(f->x[i]);
    }
    *state = f;
    return 0;
}

/* Removes the directory; it must hold nothing but the files the cases write (no temporary
 * left over). */
static int teardown(void **state)
{
    fixture *f = *state;
    remove(f->path);
    remove(f->pdf);
    remove(f->csv);
    assert_int_equal(rmdir(f->dir), 0);
    free(f);
    return 0;
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Pixels within a small distance of `rgb` in the columns [x0, x1) and rows [y0, y1) (the
 * lines are anti-aliased: their middle keeps the colour, their edges blend). */
static long count_near(const unsigned char *px, int w, unsigned rgb, int x0, int x1, int y0, int y1)
{
    long n = 0;
    int r = (int)(rgb >> 16 & 0xff), g = (int)(rgb >> 8 & 0xff), b = (int)(rgb & 0xff);
    for (int y = y0; y < y1; ++y)
        for (int x = x0; x < x1; ++x) {
            const unsigned char *q = px + 3 * ((long)y * w + x);
            n += abs(q[0] - r) + abs(q[1] - g) + abs(q[2] - b) < 60;
        }
    return n;
}

/* Pixels that are not the white background. */
static long count_ink(const unsigned char *px, int w, int x0, int x1, int y0, int y1)
{
    long n = 0;
    for (int y = y0; y < y1; ++y)
        for (int x = x0; x < x1; ++x) {
            const unsigned char *q = px + 3 * ((long)y * w + x);
            n += q[0] < 250 || q[1] < 250 || q[2] < 250;
        }
    return n;
}

/* Draws to f->path, which must succeed, and decodes it: RGB pixels (free with
 * stbi_image_free), *w by *h. */
static unsigned char *render(const char *path, const pbd_plot *p, int panels, int *w, int *h)
{
    pbd_error err = {0};
    pbd_status st = pbd_plot_write(p, panels, path, &err);
    expect(st == PBD_OK, "pbd_plot_write: %s\n", err.message);
    int comp = 0;
    unsigned char *px = stbi_load(path, w, h, &comp, 3);
    assert_non_null(px);
    return px;
}

static pbd_plot two_series(fixture *f, pbd_plot_series s[2])
{
    s[0] = (pbd_plot_series){"decay", f->x, f->a, N, 0xcc0000, 0};
    s[1] = (pbd_plot_series){"sine", f->x, f->b, N, 0x0000cc, 1};
    return (pbd_plot){"Two series", "time (s)", "energy (J)", 640, 400, s, 2, 0, 0, 0};
}

static int skip_without_plplot(void)
{
    if (pbd_plot_available())
        return 0;
    print_message("skipped: this build has no PLplot\n");
    return 1;
}
#define NEEDS_PLPLOT                                                                               \
    if (skip_without_plplot())                                                                     \
    exit(PBD_SKIP)

static void png_size(void **state)
{
    NEEDS_PLPLOT;
    fixture *f = *state;
    pbd_plot_series s[2];
    pbd_plot p = two_series(f, s);
    int w = 0, h = 0;
    unsigned char *px = render(f->path, &p, 1, &w, &h);
    expect(w == 640 && h == 400, "size %d x %d\n", w, h);
    stbi_image_free(px);
    /* Zero size means the default. */
    p.width = p.height = 0;
    px = render(f->path, &p, 1, &w, &h);
    expect(w == 900 && h == 560, "size %d x %d\n", w, h);
    stbi_image_free(px);
}

/* Both series are drawn in their colours inside the plot area: the decay high on the left and
 * low on the right, the dashed sine across the width; the corners are background. */
static void series_drawn(void **state)
{
    NEEDS_PLPLOT;
    fixture *f = *state;
    pbd_plot_series s[2];
    pbd_plot p = two_series(f, s);
    p.width = 800;
    p.height = 600;
    int w = 0, h = 0;
    unsigned char *px = render(f->path, &p, 1, &w, &h);
    long red_top_left = count_near(px, w, 0xcc0000, w / 8, w / 3, h / 8, h / 3);
    long red_bottom_right = count_near(px, w, 0xcc0000, 2 * w / 3, 7 * w / 8, h / 2, 7 * h / 8);
    long red_bottom_left = count_near(px, w, 0xcc0000, w / 8, w / 3, 2 * h / 3, 7 * h / 8);
    long blue_left = count_near(px, w, 0x0000cc, w / 8, w / 2, 0, h);
    long blue_right = count_near(px, w, 0x0000cc, w / 2, 7 * w / 8, 0, h);
    long corner = count_ink(px, w, 0, 20, 0, 20);
    stbi_image_free(px);
    expect(red_top_left > 50 && red_bottom_right > 50, "decay: %ld top left, %ld bottom right\n",
           red_top_left, red_bottom_right);
    expect(red_bottom_left < 5, "decay drawn bottom left: %ld pixels\n", red_bottom_left);
    expect(blue_left > 50 && blue_right > 50, "sine: %ld left, %ld right\n", blue_left, blue_right);
    expect(corner == 0, "%ld non-background pixels in the top-left corner\n", corner);
}

static void pdf_file(void **state)
{
    NEEDS_PLPLOT;
    fixture *f = *state;
    pbd_plot_series s[2];
    pbd_plot p = two_series(f, s);
    pbd_error err = {0};
    assert_int_equal(pbd_plot_write(&p, 1, f->pdf, &err), PBD_OK);
    FILE *in = fopen(f->pdf, "rb");
    assert_non_null(in);
    char head[5], tail[6];
    assert_int_equal(fread(head, 1, 5, in), 5);
    assert_int_equal(fseek(in, -6, SEEK_END), 0);
    assert_int_equal(fread(tail, 1, 6, in), 6);
    long size = ftell(in);
    fclose(in);
    assert_memory_equal(head, "%PDF-", 5);
    assert_memory_equal(tail, "%%EOF\n", 6);
    expect(size > 2000, "PDF of %ld bytes\n", size);
}

static void bad_path(void **state)
{
    fixture *f = *state;
    pbd_plot_series s[2];
    pbd_plot p = two_series(f, s);
    pbd_error err = {0};
    char bad[192];
    snprintf(bad, sizeof bad, "%s/plot.svg", f->dir);
    assert_int_equal(pbd_plot_write(&p, 1, bad, &err), PBD_ERR_ARGUMENT);
    assert_non_null(strstr(err.message, "expected OUT.png or OUT.pdf"));
    assert_false(file_exists(bad));
    NEEDS_PLPLOT;
    snprintf(bad, sizeof bad, "%s/no/such/dir/plot.png", f->dir);
    assert_int_equal(pbd_plot_write(&p, 1, bad, &err), PBD_ERR_IO);
    assert_non_null(strstr(err.message, bad));
    assert_non_null(strstr(err.message, "cannot write"));
    assert_false(file_exists(bad));
}

static void bad_data(void **state)
{
    fixture *f = *state;
    pbd_plot_series s[2];
    pbd_plot p = two_series(f, s);
    pbd_error err = {0};
    s[1].label = "bad";
    f->b[12] = NAN;
    assert_int_equal(pbd_plot_write(&p, 1, f->path, &err), PBD_ERR_ARGUMENT);
    assert_non_null(strstr(err.message, f->path));
    assert_non_null(strstr(err.message, "series 'bad' point 12 is not finite"));
    f->b[12] = 0.0;
    p.num_series = 0;
    assert_int_equal(pbd_plot_write(&p, 1, f->path, &err), PBD_ERR_ARGUMENT);
    assert_non_null(strstr(err.message, "no series"));
    p.num_series = 2;
    s[0].n = 0;
    assert_int_equal(pbd_plot_write(&p, 1, f->path, &err), PBD_ERR_ARGUMENT);
    assert_non_null(strstr(err.message, "series 'decay' has no points"));
    s[0].n = N;
    p.width = 10;
    assert_int_equal(pbd_plot_write(&p, 1, f->path, &err), PBD_ERR_ARGUMENT);
    assert_non_null(strstr(err.message, "found a size of 10 x 400"));
    p.width = 640;
    p.log_y = 1;
    for (int i = 0; i < N; ++i)
        f->a[i] = f->b[i] = -1.0;
    assert_int_equal(pbd_plot_write(&p, 1, f->path, &err), PBD_ERR_ARGUMENT);
    assert_non_null(strstr(err.message, "no positive y values for a logarithmic axis"));
    assert_false(file_exists(f->path));
}

/* A log-log line through four decades is straight: its middle sits mid-height; a flat
 * series and a lone point are drawn too. */
static void log_axes_and_flat(void **state)
{
    NEEDS_PLPLOT;
    fixture *f = *state;
    for (int i = 0; i < N; ++i) {
        f->x[i] = 1e3 * pow(10.0, 3.0 * i / (N - 1));
        f->a[i] = f->x[i] * f->x[i];
        f->b[i] = 2.5;
    }
    f->a[50] = 0.0; /* skipped on a log axis, leaving a gap */
    pbd_plot_series s[1] = {{"x^2", f->x, f->a, N, 0xaa00aa, 0}};
    pbd_plot p = {"Log-log", "particles", "cost", 600, 600, s, 1, 1, 1, 0};
    int w = 0, h = 0;
    unsigned char *px = render(f->path, &p, 1, &w, &h);
    long mid = count_near(px, w, 0xaa00aa, w / 2 - 20, w / 2 + 20, h / 3, 2 * h / 3);
    long off = count_near(px, w, 0xaa00aa, w / 2 - 20, w / 2 + 20, 0, h / 4);
    stbi_image_free(px);
    expect(mid > 20 && off == 0, "log-log middle: %ld pixels mid-height, %ld near the top\n", mid,
           off);

    double one_x = 2.0, one_y = 2.5;
    pbd_plot_series flat[2] = {{"flat", f->x, f->b, N, 0x008800, 0},
                               {"one point", &one_x, &one_y, 1, 0x0000cc, 0}};
    pbd_plot q = {"Constant", "t", "y", 0, 0, flat, 2, 0, 0, 0};
    px = render(f->path, &q, 1, &w, &h);
    long green = count_near(px, w, 0x008800, 0, w, 0, h);
    stbi_image_free(px);
    expect(green > 300, "flat series: %ld pixels\n", green);
}

static void write_text(const char *path, const char *text)
{
    FILE *out = fopen(path, "w");
    assert_non_null(out);
    fputs(text, out);
    fclose(out);
}

/* pbd plot: three panels, each with the two bodies' lines. */
static void stats_plot(void **state)
{
    NEEDS_PLPLOT;
    fixture *f = *state;
    FILE *out = fopen(f->csv, "w");
    assert_non_null(out);
    fputs("step,time,body,mass,com_x,com_y,com_z,p_x,p_y,p_z,l_x,l_y,l_z,kinetic_energy,"
          "max_constraint_error\n",
          out);
    for (int k = 0; k <= 100; ++k)
        for (int b = 0; b < 2; ++b)
            fprintf(out, "%d,%.17g,%d,1,0,0,0,%g,0,0,0,%g,0,%g,0\n", k, k * 0.01, b,
                    b ? 1.0 + k * 0.01 : 2.0, b ? 3.0 : 3.0 - k * 0.01, 0.5 + b + sin(k * 0.1));
    fclose(out);
    pbd_error err = {0};
    pbd_status st = pbd_plot_stats(f->csv, f->path, &err);
    expect(st == PBD_OK, "%s\n", err.message);
    int w = 0, h = 0, comp = 0;
    unsigned char *px = stbi_load(f->path, &w, &h, &comp, 3);
    assert_non_null(px);
    expect(w == 900 && h == 990, "size %d x %d\n", w, h);
    /* The default palette's first two colours, in the middle of each panel's plot area. */
    for (int panel = 0; panel < 3; ++panel) {
        int y0 = panel * h / 3, y1 = y0 + h / 3;
        long first = count_near(px, w, 0x1f77b4, w / 6, 5 * w / 6, y0, y1);
        long second = count_near(px, w, 0xd62728, w / 6, 5 * w / 6, y0, y1);
        expect(first > 100 && second > 100, "panel %d: %ld and %ld pixels of the bodies' colours\n",
               panel, first, second);
    }
    stbi_image_free(px);
}

/* Malformed --stats files: FILE:LINE, what was found and what was expected; no plot. */
static void stats_malformed(void **state)
{
    fixture *f = *state;
    static const char header[] = "step,time,body,mass,com_x,com_y,com_z,p_x,p_y,p_z,l_x,l_y,l_z,"
                                 "kinetic_energy,max_constraint_error\n";
    char text[1024];
    static const struct {
        const char *rows, *message;
    } cases[] = {
        {"0,0,0,1,0,0,0,0,0,0,0,0,0,0,0\n0,0.1,0,1,0,0,0,abc,0,0,0,0,0,0,0\n",
         "stats.csv:3: p_x: found 'abc', expected a finite number"},
        {"0,0,0,1,0,0,0,0,0,0,0,0,0,0\n", "stats.csv:2: found 14 fields, expected 15"},
        {"0,0,0,1,0,0,0,0,0,0,0,0,0,0,0,7\n", "stats.csv:2: found 16 fields, expected 15"},
        {"0,0,-1,1,0,0,0,0,0,0,0,0,0,0,0\n", "stats.csv:2: body: found -1, expected a body"},
        {"0,nan,0,1,0,0,0,0,0,0,0,0,0,0,0\n", "stats.csv:2: time: found 'nan'"},
        {"0,0,0,1,0,0,0,0,0,0,0,0,0,0,0\n\n", "stats.csv:3: found an empty line"},
        {"", "stats.csv: found no rows after the header"},
    };
    pbd_error err = {0};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        snprintf(text, sizeof text, "%s%s", header, cases[k].rows);
        write_text(f->csv, text);
        assert_int_equal(pbd_plot_stats(f->csv, f->path, &err), PBD_ERR_ARGUMENT);
        expect(strstr(err.message, cases[k].message) != NULL, "case %zu: %s\n", k, err.message);
        assert_false(file_exists(f->path));
    }
    write_text(f->csv, "time,ke\n0,1\n");
    assert_int_equal(pbd_plot_stats(f->csv, f->path, &err), PBD_ERR_ARGUMENT);
    expect(strstr(err.message, "stats.csv:1: found 'time,ke', expected the pbd run --stats "
                               "header") != NULL,
           "%s\n", err.message);
    write_text(f->csv, "");
    assert_int_equal(pbd_plot_stats(f->csv, f->path, &err), PBD_ERR_ARGUMENT);
    expect(strstr(err.message, "found an empty file") != NULL, "%s\n", err.message);
    remove(f->csv);
    assert_int_equal(pbd_plot_stats(f->csv, f->path, &err), PBD_ERR_IO);
    expect(strstr(err.message, "stats.csv: cannot read") != NULL, "%s\n", err.message);
    assert_false(file_exists(f->path));
}

/* An existing file is replaced whole, and no temporary is left (teardown's rmdir). */
static void overwrite(void **state)
{
    NEEDS_PLPLOT;
    fixture *f = *state;
    write_text(f->path, "not a png\n");
    pbd_plot_series s[2];
    pbd_plot p = two_series(f, s);
    int w = 0, h = 0;
    unsigned char *px = render(f->path, &p, 1, &w, &h);
    stbi_image_free(px);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(png_size, setup, teardown),
    cmocka_unit_test_setup_teardown(series_drawn, setup, teardown),
    cmocka_unit_test_setup_teardown(pdf_file, setup, teardown),
    cmocka_unit_test_setup_teardown(bad_path, setup, teardown),
    cmocka_unit_test_setup_teardown(bad_data, setup, teardown),
    cmocka_unit_test_setup_teardown(log_axes_and_flat, setup, teardown),
    cmocka_unit_test_setup_teardown(stats_plot, setup, teardown),
    cmocka_unit_test_setup_teardown(stats_malformed, setup, teardown),
    cmocka_unit_test_setup_teardown(overwrite, setup, teardown),
};

PBD_TEST_MAIN("plot", tests)
