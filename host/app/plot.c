/* Line plots (plot.h), drawn by PLplot's cairo drivers: pngcairo for PNG, pdfcairo for PDF.
 * Each figure is a PLplot stream of its own (plmkstrm ... plend1), so figures never share
 * state. PLplot writes the file by name: it is given the temporary file of a pbd_output, and
 * the result is checked for its format's last bytes before the rename, since PLplot and
 * cairo do not report a failed write. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "app/output.h"
#include "app/plot.h"

#ifdef PBD_HAVE_PLPLOT
#include <plplot.h>
#endif

#define DEFAULT_W       900
#define DEFAULT_H       560
#define DEFAULT_PANEL_H 330
#define MIN_SIZE        160
#define MAX_SIZE        8192
#define MAX_LEGEND      12 /* series in a legend; more are drawn without one */

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

int pbd_plot_name_ok(const char *path)
{
    return ends_with(path, ".png") || ends_with(path, ".pdf");
}

/* Checks what can be checked without drawing: the extension, the size and the data. */
static pbd_status check(const pbd_plot *panels, int num_panels, const char *path, int *w, int *h,
                        pbd_error *err)
{
    if (!pbd_plot_name_ok(path))
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "%s: found no .png or .pdf at the end, expected OUT.png or OUT.pdf",
                             path);
    if (num_panels < 1)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "%s: no panels to draw", path);
    *w = panels[0].width ? panels[0].width : DEFAULT_W;
    *h = panels[0].height ? panels[0].height
                          : (num_panels == 1 ? DEFAULT_H : DEFAULT_PANEL_H * num_panels);
    if (*w < MIN_SIZE || *w > MAX_SIZE || *h < MIN_SIZE || *h > MAX_SIZE)
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "%s: found a size of %d x %d, expected each in [%d, %d]", path, *w, *h,
                             MIN_SIZE, MAX_SIZE);
    for (int k = 0; k < num_panels; ++k) {
        const pbd_plot *p = &panels[k];
        if (p->num_series < 1)
            return pbd_error_set(err, PBD_ERR_ARGUMENT, "%s: no series to plot", path);
        int positive_x = 0, positive_y = 0;
        for (int s = 0; s < p->num_series; ++s) {
            const pbd_plot_series *ser = &p->series[s];
            const char *label = ser->label ? ser->label : "";
            if (ser->n < 1)
                return pbd_error_set(err, PBD_ERR_ARGUMENT, "%s: series '%s' has no points", path,
                                     label);
            for (int i = 0; i < ser->n; ++i) {
                if (!isfinite(ser->x[i]) || !isfinite(ser->y[i]))
                    return pbd_error_set(err, PBD_ERR_ARGUMENT,
                                         "%s: series '%s' point %d is not finite", path, label, i);
                positive_x |= ser->x[i] > 0.0;
                positive_y |= ser->y[i] > 0.0;
            }
        }
        if ((p->log_x && !positive_x) || (p->log_y && !positive_y))
            return pbd_error_set(err, PBD_ERR_ARGUMENT,
                                 "%s: no positive %s values for a logarithmic axis", path,
                                 p->log_x && !positive_x ? "x" : "y");
    }
    return PBD_OK;
}

int pbd_plot_available(void)
{
#ifdef PBD_HAVE_PLPLOT
    return 1;
#else
    return 0;
#endif
}

#ifdef PBD_HAVE_PLPLOT

/* Tableau-like colours: distinguishable from each other and from the black frame. */
static const unsigned palette[8] = {0x1f77b4, 0xd62728, 0x2ca02c, 0xff7f0e,
                                    0x9467bd, 0x17becf, 0x8c564b, 0xe377c2};

/* Whether PLplot has the device `name` (its drivers are packages of their own). */
static int have_device(const char *name)
{
    enum { MAX_DEVICES = 128 };
    const char *menu[MAX_DEVICES], *names[MAX_DEVICES];
    const char **pm = menu, **pn = names;
    int n = MAX_DEVICES;
    plgDevs(&pm, &pn, &n);
    for (int k = 0; k < n; ++k)
        if (strcmp(names[k], name) == 0)
            return 1;
    return 0;
}

/* The value drawn for v on an axis: log10 on a logarithmic one; NAN for a skipped point. */
static double axis_value(double v, int log_axis)
{
    return log_axis ? (v > 0.0 ? log10(v) : NAN) : v;
}

static void draw_panel(const pbd_plot *p)
{
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (int s = 0; s < p->num_series; ++s)
        for (int i = 0; i < p->series[s].n; ++i) {
            double x = axis_value(p->series[s].x[i], p->log_x);
            double y = axis_value(p->series[s].y[i], p->log_y);
            if (isnan(x) || isnan(y))
                continue;
            x0 = fmin(x0, x);
            x1 = fmax(x1, x);
            y0 = fmin(y0, y);
            y1 = fmax(y1, y);
        }
    /* A flat series gets a band around its value: a range under 1 % of the values (a
     * conserved momentum's rounding noise) is widened to that, so that flat looks flat
     * rather than magnified rounding; the y range gets a margin of 5 %. */
    if (x1 - x0 <= 1e-12 * fmax(1.0, fabs(x0))) {
        double d = fmax(fabs(x0) * 0.05, p->log_x ? 0.5 : 1.0);
        x0 -= d;
        x1 += d;
    }
    double ymag = fmax(fabs(y0), fabs(y1));
    if (y1 - y0 <= 1e-300 || (!p->log_y && y1 - y0 < 1e-2 * ymag)) {
        double mid = 0.5 * (y0 + y1);
        double d = ymag > 0.0 ? fmax(5e-3 * ymag, 0.5 * (y1 - y0)) : 1.0;
        if (p->log_y && y1 - y0 <= 1e-300)
            d = 0.5;
        y0 = mid - d;
        y1 = mid + d;
    } else {
        double d = 0.05 * (y1 - y0);
        y0 -= d;
        y1 += d;
    }
    pladv(0);
    plvsta();
    plwind(x0, x1, y0, y1);
    plcol0(1);
    plwidth(1.0);
    pllsty(1);
    plbox(p->log_x ? "bcnstl" : "bcnst", 0.0, 0, p->log_y ? "bcnstvl" : "bcnstv", 0.0, 0);
    pllab(p->xlabel ? p->xlabel : "", p->ylabel ? p->ylabel : "", p->title ? p->title : "");

    enum { LEGEND = MAX_LEGEND };
    PLINT opt[LEGEND], colors[LEGEND], styles[LEGEND], text_colors[LEGEND];
    PLFLT widths[LEGEND];
    const char *text[LEGEND];
    int nl = p->num_series <= LEGEND ? p->num_series : 0;
    for (int s = 0; s < p->num_series; ++s) {
        const pbd_plot_series *ser = &p->series[s];
        unsigned rgb = ser->rgb ? ser->rgb : palette[s % 8];
        /* Colour map 0: 0 the background, 1 the frame and text, 2.. the series. */
        plscol0(2 + s % 14, (PLINT)(rgb >> 16 & 0xff), (PLINT)(rgb >> 8 & 0xff),
                (PLINT)(rgb & 0xff));
        plcol0(2 + s % 14);
        plwidth(2.0);
        pllsty(ser->dashed ? 2 : 1);
        /* Runs of drawable points: a point skipped on a logarithmic axis leaves a gap. */
        PLFLT *xs = malloc((size_t)ser->n * sizeof *xs), *ys = malloc((size_t)ser->n * sizeof *ys);
        if (xs && ys) {
            int m = 0;
            for (int i = 0; i <= ser->n; ++i) {
                double x = i < ser->n ? axis_value(ser->x[i], p->log_x) : NAN;
                double y = i < ser->n ? axis_value(ser->y[i], p->log_y) : NAN;
                if (!isnan(x) && !isnan(y)) {
                    xs[m] = x;
                    ys[m++] = y;
                    continue;
                }
                if (m == 1) /* a lone point */
                    plstring(1, xs, ys, "#(728)");
                else if (m > 1)
                    plline(m, xs, ys);
                m = 0;
            }
        }
        free(xs);
        free(ys);
        if (s < nl) {
            opt[s] = PL_LEGEND_LINE;
            colors[s] = 2 + s % 14;
            styles[s] = ser->dashed ? 2 : 1;
            widths[s] = 2.0;
            text_colors[s] = 1;
            text[s] = ser->label ? ser->label : "";
        }
    }
    pllsty(1);
    plwidth(1.0);
    if (nl > 0) {
        PLFLT lw, lh;
        pllegend(&lw, &lh, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX,
                 (p->legend_bottom ? PL_POSITION_BOTTOM : PL_POSITION_TOP) | PL_POSITION_RIGHT |
                     PL_POSITION_INSIDE,
                 0.01, 0.01, 0.06, 0, 1, 1, 0, 0, nl, opt, 0.8, 0.8, 1.6, 0.0, text_colors, text,
                 NULL, NULL, NULL, NULL, colors, styles, widths, NULL, NULL, NULL, NULL);
    }
}

/* The last bytes of a complete file of each format: PNG's IEND chunk, PDF's %%EOF. */
static int complete(const char *path, int pdf)
{
    FILE *f = fopen(path, "rb");
    char tail[16] = {0};
    int ok = f && fseek(f, -(long)sizeof tail, SEEK_END) == 0 &&
             fread(tail, 1, sizeof tail, f) == sizeof tail;
    if (f)
        fclose(f);
    if (!ok)
        return 0;
    if (pdf) {
        for (size_t k = 0; k + 5 <= sizeof tail; ++k)
            if (memcmp(tail + k, "%%EOF", 5) == 0)
                return 1;
        return 0;
    }
    return memcmp(tail + 8, "IEND\xae\x42\x60\x82", 8) == 0;
}

pbd_status pbd_plot_write(const pbd_plot *panels, int num_panels, const char *path, pbd_error *err)
{
    int w = 0, h = 0;
    pbd_status st = check(panels, num_panels, path, &w, &h, err);
    if (st != PBD_OK)
        return st;
    int pdf = ends_with(path, ".pdf");
    const char *device = pdf ? "pdfcairo" : "pngcairo";
    if (!have_device(device))
        return pbd_error_set(err, PBD_ERR_IO,
                             "%s: PLplot has no %s driver: install plplot-driver-cairo", path,
                             device);
    pbd_output o;
    if ((st = pbd_output_open(&o, path, err)) != PBD_OK)
        return st;
    /* PLplot opens the temporary file by name and writes it; o.f stays open, unused, so that
     * the commit syncs and renames what PLplot wrote. */
    char geometry[32], msg[256] = "";
    PLINT code = 0, stream = 0;
    snprintf(geometry, sizeof geometry, "%dx%d", w, h);
    plmkstrm(&stream);
    plsError(&code, msg); /* PLplot's recoverable errors land here, not on stderr */
    plsdev(device);
    plsfnam(o.tmp);
    plsetopt("geometry", geometry);
    plscolbg(255, 255, 255);
    plscmap0n(16);
    plscol0(1, 0, 0, 0);
    plinit();
    plssub(1, num_panels);
    for (int k = 0; k < num_panels; ++k)
        draw_panel(&panels[k]);
    plend1();
    if (code != 0) {
        pbd_output_abort(&o);
        return pbd_error_set(err, PBD_ERR_IO, "%s: PLplot failed: %s", path, msg);
    }
    if (!complete(o.tmp, pdf)) {
        pbd_output_abort(&o);
        return pbd_error_set(err, PBD_ERR_IO, "%s: write failed: the %s is incomplete (disk full?)",
                             path, pdf ? "PDF" : "PNG");
    }
    return pbd_output_commit(&o, err);
}

#else

pbd_status pbd_plot_write(const pbd_plot *panels, int num_panels, const char *path, pbd_error *err)
{
    int w = 0, h = 0;
    pbd_status st = check(panels, num_panels, path, &w, &h, err);
    if (st != PBD_OK)
        return st;
    return pbd_error_set(err, PBD_ERR_ARGUMENT,
                         "%s: this build draws no plots (PLplot was not found): install "
                         "libplplot-dev and plplot-driver-cairo, then configure and build again",
                         path);
}

#endif

/* ---- pbd plot STATS.csv OUT ------------------------------------------------------------- */

#define STATS_FIELDS 15
static const char stats_header[] =
    "step,time,body,mass,com_x,com_y,com_z,p_x,p_y,p_z,l_x,l_y,l_z,kinetic_energy,"
    "max_constraint_error";

typedef struct stats_row {
    double time, ke, p, l;
    int body;
} stats_row;

static int cmp_body_time(const void *pa, const void *pb)
{
    const stats_row *a = pa, *b = pb;
    if (a->body != b->body)
        return a->body < b->body ? -1 : 1;
    return (a->time > b->time) - (a->time < b->time);
}

/* |(a0, a1, a2)|, scaled by the largest component so that the squares do not overflow. */
static double magnitude(const double *a)
{
    double m = fmax(fabs(a[0]), fmax(fabs(a[1]), fabs(a[2])));
    if (m == 0.0)
        return 0.0;
    double x = a[0] / m, y = a[1] / m, z = a[2] / m;
    return m * sqrt(x * x + y * y + z * z);
}

/* Parses one data line (NUL-terminated, no newline) into r. */
static pbd_status parse_row(const char *csv, long line, char *s, stats_row *r, pbd_error *err)
{
    static const char *const names[STATS_FIELDS] = {"step",
                                                    "time",
                                                    "body",
                                                    "mass",
                                                    "com_x",
                                                    "com_y",
                                                    "com_z",
                                                    "p_x",
                                                    "p_y",
                                                    "p_z",
                                                    "l_x",
                                                    "l_y",
                                                    "l_z",
                                                    "kinetic_energy",
                                                    "max_constraint_error"};
    double v[STATS_FIELDS];
    int n = 0;
    for (char *f = s;; ++n) {
        char *comma = strchr(f, ',');
        if (comma)
            *comma = '\0';
        if (n < STATS_FIELDS) {
            char *end;
            errno = 0;
            v[n] = strtod(f, &end);
            if (end == f || *end || errno == ERANGE || !isfinite(v[n]))
                return pbd_error_set(err, PBD_ERR_ARGUMENT,
                                     "%s:%ld: %s: found '%.40s', expected a finite number", csv,
                                     line, names[n], f);
        }
        if (!comma)
            break;
        f = comma + 1;
    }
    if (n + 1 != STATS_FIELDS)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "%s:%ld: found %d fields, expected %d", csv,
                             line, n + 1, STATS_FIELDS);
    if (v[2] < 0.0 || v[2] > 1e7 || v[2] != floor(v[2]))
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "%s:%ld: body: found %g, expected a body index (an integer >= 0)", csv,
                             line, v[2]);
    r->time = v[1];
    r->body = (int)v[2];
    r->p = magnitude(v + 7);
    r->l = magnitude(v + 10);
    r->ke = v[13];
    if (!isfinite(r->p) || !isfinite(r->l))
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "%s:%ld: %s: the magnitude of (%g, %g, %g) is beyond a double, "
                             "expected a finite |%c|",
                             csv, line, isfinite(r->p) ? "l_x, l_y, l_z" : "p_x, p_y, p_z",
                             v[isfinite(r->p) ? 10 : 7], v[isfinite(r->p) ? 11 : 8],
                             v[isfinite(r->p) ? 12 : 9], isfinite(r->p) ? 'L' : 'P');
    return PBD_OK;
}

pbd_status pbd_plot_stats(const char *csv, const char *out, pbd_error *err)
{
    void *data = NULL;
    size_t size = 0;
    stats_row *rows = NULL;
    double *buf = NULL;
    pbd_plot_series *ser = NULL;
    char **labels = NULL;
    int nb = 0;
    if (!ends_with(out, ".png") && !ends_with(out, ".pdf"))
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "%s: found no .png or .pdf at the end, expected OUT.png or OUT.pdf",
                             out);
    /* A regular file is read whole (the buffer is its size); anything else up to 64 MiB. */
    struct stat sb;
    size_t max = stat(csv, &sb) == 0 && S_ISREG(sb.st_mode) ? (size_t)sb.st_size : (size_t)64 << 20;
    pbd_status st = pbd_read_file(csv, max, "a pbd run --stats file", &data, &size, err);
    if (st != PBD_OK)
        return st;
    char *text = data;
    text[size] = '\0'; /* pbd_read_file leaves room for one more byte */
    if (memchr(text, '\0', size))
        st = pbd_error_set(err, PBD_ERR_ARGUMENT, "%s: found a NUL byte, expected CSV text", csv);
    /* Lines: the header, then one row per body and step. */
    long cap = 1, n = 0, line = 0;
    for (size_t k = 0; k < size; ++k)
        cap += text[k] == '\n';
    rows = st == PBD_OK ? malloc((size_t)cap * sizeof *rows) : NULL;
    if (st == PBD_OK && !rows)
        st = pbd_error_set(err, PBD_ERR_MEMORY, "%s: out of memory", csv);
    for (char *s = text; st == PBD_OK && *s;) {
        char *nl = strchr(s, '\n');
        if (nl)
            *nl = '\0';
        size_t len = strlen(s);
        if (len && s[len - 1] == '\r')
            s[len - 1] = '\0';
        ++line;
        if (line == 1) {
            if (strcmp(s, stats_header) != 0)
                st = pbd_error_set(err, PBD_ERR_ARGUMENT,
                                   "%s:1: found '%.60s', expected the pbd run --stats header "
                                   "'%s'",
                                   csv, s, stats_header);
        } else if (*s) {
            st = parse_row(csv, line, s, &rows[n], err);
            n++;
        } else {
            st = pbd_error_set(err, PBD_ERR_ARGUMENT, "%s:%ld: found an empty line, expected a row",
                               csv, line);
        }
        s = nl ? nl + 1 : s + strlen(s);
    }
    if (st == PBD_OK && line == 0)
        st = pbd_error_set(err, PBD_ERR_ARGUMENT,
                           "%s: found an empty file, expected the pbd run --stats header", csv);
    else if (st == PBD_OK && n == 0)
        st = pbd_error_set(err, PBD_ERR_ARGUMENT, "%s: found no rows after the header", csv);
    if (st != PBD_OK)
        goto done;
    /* One line per body: rows sorted by body, then time. */
    qsort(rows, (size_t)n, sizeof *rows, cmp_body_time);
    for (long k = 0; k < n; ++k)
        nb += k == 0 || rows[k].body != rows[k - 1].body;
    buf = malloc((size_t)n * 4 * sizeof *buf);
    ser = calloc((size_t)nb * 3, sizeof *ser);
    labels = calloc((size_t)nb, sizeof *labels);
    if (!buf || !ser || !labels) {
        st = pbd_error_set(err, PBD_ERR_MEMORY, "%s: out of memory", csv);
        goto done;
    }
    double *t = buf, *ke = buf + n, *p = buf + 2 * n, *l = buf + 3 * n;
    for (long k = 0, b = -1; k < n; ++k) {
        t[k] = rows[k].time;
        ke[k] = rows[k].ke;
        p[k] = rows[k].p;
        l[k] = rows[k].l;
        if (k == 0 || rows[k].body != rows[k - 1].body) {
            ++b;
            labels[b] = malloc(32);
            if (!labels[b]) {
                st = pbd_error_set(err, PBD_ERR_MEMORY, "%s: out of memory", csv);
                goto done;
            }
            snprintf(labels[b], 32, "body %d", rows[k].body);
            for (int q = 0; q < 3; ++q)
                ser[q * nb + b] = (pbd_plot_series){
                    labels[b], t + k, (q == 0 ? ke : q == 1 ? p : l) + k, 0, 0, 0};
        }
        for (int q = 0; q < 3; ++q)
            ser[q * nb + b].n++;
    }
    pbd_plot panels[3] = {
        {"Kinetic energy", "time (s)", "kinetic energy (J)", 0, 0, ser, nb, 0, 0, 0},
        {"Linear momentum", "time (s)", "|P| (kg m/s)", 0, 0, ser + nb, nb, 0, 0, 0},
        {"Angular momentum about the centre of mass", "time (s)", "|L| (kg m^2/s)", 0, 0,
         ser + 2 * nb, nb, 0, 0, 0}};
    st = pbd_plot_write(panels, 3, out, err);
done:
    if (labels)
        for (int b = 0; b < nb; ++b)
            free(labels[b]);
    free(labels);
    free(ser);
    free(buf);
    free(rows);
    free(data);
    return st;
}
